// Preloaded into Node servers by the e2e tests (node --require): pins every listening TCP
// socket that names no host to 127.0.0.1, so a server that listens on every interface (such as
// server-everything's HTTP modes, which only read PORT) opens no port to the network, and
// reports the bound address on stderr as "mcpwrap-e2e-listening ADDRESS PORT", so tests can
// use PORT=0.
"use strict";

const net = require("node:net");

const loopback = "127.0.0.1";
const listen = net.Server.prototype.listen;

net.Server.prototype.listen = function (...args) {
  const [first] = args;
  if (first !== null && typeof first === "object" && !("fd" in first) && !("_handle" in first)) {
    // listen(options[, callback])
    if (first.path === undefined && first.host === undefined) {
      args[0] = { ...first, host: loopback };
    }
  } else if (typeof first === "number" || (typeof first === "string" && /^\d+$/.test(first))) {
    // listen(port[, host][, backlog][, callback])
    if (typeof args[1] !== "string") {
      args.splice(1, 0, loopback);
    }
  }
  this.once("listening", () => {
    const address = this.address();
    if (address !== null && typeof address === "object") {
      process.stderr.write(`mcpwrap-e2e-listening ${address.address} ${address.port}\n`);
    }
  });
  return listen.apply(this, args);
};
