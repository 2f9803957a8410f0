package erabridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"

	"github.com/mcpwrap/mcpwrap/internal/era"
	"github.com/mcpwrap/mcpwrap/internal/framing"
	"github.com/mcpwrap/mcpwrap/middleware"
)

// The era is found out from the Session's handshake, the first request it
// writes on a connection, as the go-sdk client does (mcp/client.go
// Connect): server/discover first, a version the server offers on -32022
// tried once, and initialize on any other refusal.
//
//   - A client's server/discover is sent as it is (pinned to the session
//     era: not at all). A result: both speak 2026-07-28. A refusal that
//     offers a 2026-07-28 version is the client's to retry. Any other
//     refusal: the upstream is initialised with the client's info and
//     capabilities from the discover's _meta, sent
//     notifications/initialized, and the discover answered from the
//     initialize result (modernClient).
//   - A client's initialize is sent as it is (pinned to 2026-07-28: not at
//     all). A result: both speak the session era. A refusal: the bridge
//     sends its own server/discover, with the client's info and
//     capabilities in its _meta; a result answers the initialize
//     (modernServer), a refusal leaves the initialize's refusal as its
//     answer. A server that speaks both eras must be asked initialize
//     first when the connection is a session (stdio): the go-sdk's takes
//     a server/discover for the session's handshake and refuses an
//     initialize after it as a duplicate.
//   - With [Options.DiscoverFirst] (HTTP, where a discover commits no
//     session), a client's initialize waits for the bridge's own
//     server/discover, as the go-sdk client opens: a result listing a
//     2026-07-28 version answers the initialize (modernServer), a -32022
//     offer is tried once, and anything else (another refusal, a lost
//     answer, a result of the session era) sends the client's initialize
//     as it is, whose answer is then the client's.

// step is where a handshake's negotiation is.
type step int

const (
	stepForward    step = iota // the client's server/discover was sent as is
	stepInitialize             // the bridge's initialize, for a client's discover
	stepInitFirst              // the client's initialize was sent as is
	stepDiscover               // the bridge's discover, for a client's initialize (refused, or not sent yet: first)
)

// handshake is the Session's handshake request under negotiation.
type handshake struct {
	id      []byte // the Session's request id
	method  string
	params  []byte
	msg     []byte // the request as the Session wrote it
	step    step
	probe   []byte // the id of the bridge's own request
	version string // the stateless version the bridge's discover asked for
	retried bool   // it was retried with a version the server offered
	refusal []byte // the upstream's refusal of the client's initialize
	first   bool   // the bridge's discover went first: the client's initialize is still to send
	probed  bool   // the bridge's discover went first and was refused: the client's initialize is the last try
}

// writeNegotiating writes msg while no handshake has been answered.
func (c *Conn) writeNegotiating(ctx context.Context, msg []byte) error {
	env, err := framing.Peek(msg)
	if err != nil || env.Kind != framing.Request || (env.Method != "initialize" && env.Method != "server/discover") {
		return c.inner.WriteMessage(ctx, msg)
	}
	hs := &handshake{id: bytes.Clone(env.ID), method: env.Method, params: bytes.Clone(env.Params), msg: bytes.Clone(msg)}
	pin := c.opts.Pin
	if env.Method == "server/discover" && pin == Stateless || env.Method == "initialize" && pin == Session {
		version := stringMember(env.Params, "protocolVersion")
		if m, _, _ := ParseMeta(env.Params); m.ProtocolVersion != "" {
			version = m.ProtocolVersion
		}
		c.settle(version, "pinned to "+string(pin))
		return c.inner.WriteMessage(ctx, msg)
	}
	var out []byte
	switch {
	case env.Method == "server/discover" && pin == Session:
		hs.step, out = stepInitialize, c.initializeFor(hs)
	case env.Method == "server/discover":
		hs.step, out = stepForward, msg
	case pin == Stateless:
		hs.step, out = stepDiscover, c.discoverFor(hs, era.StatelessVersion)
	case c.opts.DiscoverFirst && pin == Auto:
		hs.step, hs.first, out = stepDiscover, true, c.discoverFor(hs, era.StatelessVersion)
	default:
		hs.step, out = stepInitFirst, msg
	}
	c.mu.Lock()
	busy := c.hs != nil
	if !busy {
		c.hs = hs // complete before it is published
	}
	c.mu.Unlock()
	if busy { // one at a time: another goes as it is
		return c.inner.WriteMessage(ctx, msg)
	}
	if err := c.inner.WriteMessage(ctx, out); err != nil {
		c.mu.Lock()
		if c.hs == hs {
			c.hs = nil
		}
		c.mu.Unlock()
		return err
	}
	return nil
}

// readNegotiating reads on the Session's reader until the handshake is
// answered, taking the answers to the bridge's own requests.
func (c *Conn) readNegotiating() ([]byte, error) {
	for {
		msg, err := c.inner.ReadMessage()
		c.mu.Lock()
		hs := c.hs
		c.mu.Unlock()
		if err != nil {
			f, ok := errors.AsType[*middleware.RequestFailedError](err)
			if !ok || hs == nil || hs.probe == nil || framing.IDKey(f.ID) != framing.IDKey(hs.probe) {
				return nil, err
			}
			// The answer to the bridge's own request was lost.
			if hs.first {
				if err := c.sendInitialize(hs); err != nil {
					return nil, err
				}
				continue
			}
			c.clearHandshake(hs) // the Session's handshake fails with it
			return nil, &middleware.RequestFailedError{ID: hs.id, Err: f.Err}
		}
		if hs == nil {
			return msg, nil
		}
		env, err := framing.Peek(msg)
		if err != nil || env.Kind != framing.Response {
			return msg, nil
		}
		key := framing.IDKey(env.ID)
		switch {
		case hs.probe != nil && key == framing.IDKey(hs.probe):
		case (hs.step == stepForward || hs.step == stepInitFirst) && key == framing.IDKey(hs.id):
		default:
			return msg, nil
		}
		out, err := c.negotiate(hs, msg, env)
		if err != nil {
			return nil, err
		}
		if out != nil {
			return out, nil
		}
	}
}

// negotiate takes the upstream's answer msg (env) to the handshake hs and
// returns the message the Session reads for it, or nil when the bridge
// sent another request instead.
func (c *Conn) negotiate(hs *handshake, msg []byte, env framing.Envelope) ([]byte, error) {
	switch hs.step {
	case stepForward:
		if env.Result != nil {
			m, _, _ := ParseMeta(hs.params)
			c.settle(m.ProtocolVersion, "the upstream speaks 2026-07-28")
			return msg, nil
		}
		e := parseError(env.Error)
		if e.offeredStateless() != "" {
			c.clearHandshake(hs) // the client retries with a version offered
			return msg, nil
		}
		c.log.Info("the upstream refused server/discover; initializing it for the 2026-07-28 client", "code", e.Code)
		hs.step = stepInitialize
		return nil, c.inner.WriteMessage(c.ctx, c.initializeFor(hs))
	case stepInitialize:
		if env.Error != nil {
			c.clearHandshake(hs)
			return framing.Splice(msg, env.ID, hs.id), nil
		}
		if err := c.inner.WriteMessage(c.ctx, notification("notifications/initialized", nil)); err != nil {
			return nil, err
		}
		result := c.discoverResult(hs, env.Result)
		c.log.Info("bridging a 2026-07-28 client to a session-era upstream")
		c.startReader(modernClient)
		return response(hs.id, result), nil
	case stepInitFirst:
		if env.Result != nil {
			c.settle(stringMember(env.Result, "protocolVersion"), "the upstream speaks the session era")
			return msg, nil
		}
		if hs.probed { // and refused server/discover before
			c.clearHandshake(hs)
			return msg, nil
		}
		c.log.Info("the upstream refused initialize; asking it server/discover for the session-era client", "code", parseError(env.Error).Code)
		hs.refusal = bytes.Clone(msg)
		hs.step = stepDiscover
		return nil, c.inner.WriteMessage(c.ctx, c.discoverFor(hs, era.StatelessVersion))
	default: // stepDiscover
		var r struct {
			SupportedVersions []string `json:"supportedVersions"`
		}
		if env.Error != nil {
			e := parseError(env.Error)
			// Tried once, even the version asked: a server may refuse a
			// first request whatever it asks for.
			if v := e.offeredStateless(); v != "" && !hs.retried {
				hs.retried = true
				return nil, c.inner.WriteMessage(c.ctx, c.discoverFor(hs, v))
			}
		} else {
			_ = json.Unmarshal(env.Result, &r)
		}
		// Pinned to 2026-07-28, a result is taken as it is; otherwise it
		// must name a 2026-07-28 version.
		pinned := hs.refusal == nil && !hs.first
		if env.Error != nil || !pinned && !slices.ContainsFunc(r.SupportedVersions, era.IsStateless) {
			if hs.first {
				return nil, c.sendInitialize(hs)
			}
			c.clearHandshake(hs)
			if hs.refusal != nil {
				return hs.refusal, nil
			}
			return framing.Splice(msg, env.ID, hs.id), nil
		}
		result := c.initializeResult(hs, env.Result, r.SupportedVersions)
		c.log.Info("bridging a session-era client to a 2026-07-28 upstream")
		c.startReader(modernServer)
		c.openUpstreamListen()
		return response(hs.id, result), nil
	}
}

// settle ends the negotiation with both sides speaking version.
func (c *Conn) settle(version, why string) {
	c.mu.Lock()
	c.hs = nil
	c.clientVersion, c.serverVersion = version, version
	c.mode.Store(int32(same))
	c.mu.Unlock()
	c.log.Debug("upstream era found out", "how", why, "protocol_version", version)
}

// sendInitialize sends the client's initialize hs as it is, the bridge's
// discover having gone first and been refused: its answer is the
// client's.
func (c *Conn) sendInitialize(hs *handshake) error {
	c.log.Info("the upstream does not speak 2026-07-28; sending the client's initialize")
	hs.step, hs.probe, hs.first, hs.probed = stepInitFirst, nil, false, true
	return c.inner.WriteMessage(c.ctx, hs.msg)
}

func (c *Conn) clearHandshake(hs *handshake) {
	c.mu.Lock()
	if c.hs == hs {
		c.hs = nil
	}
	c.mu.Unlock()
}

// initializeFor returns the bridge's initialize for the client's
// server/discover hs: the client's info and capabilities from its _meta.
func (c *Conn) initializeFor(hs *handshake) []byte {
	m, _, _ := ParseMeta(hs.params)
	info := m.ClientInfo
	if info == nil {
		info = []byte(`{"name":"mcpwrap","version":"erabridge"}`)
	}
	params := []byte(`{"protocolVersion":"` + era.SessionVersion + `","capabilities":`)
	params = append(params, orEmpty(m.ClientCapabilities)...)
	params = append(params, `,"clientInfo":`...)
	params = append(params, info...)
	params = append(params, '}')
	hs.probe = c.newID()
	return request(hs.probe, "initialize", params)
}

// discoverFor returns the bridge's server/discover, asking for version,
// for the client's initialize hs, and keeps the _meta every later request
// carries.
func (c *Conn) discoverFor(hs *handshake, version string) []byte {
	info := member(hs.params, "clientInfo")
	if info == nil {
		info = []byte(`{"name":"mcpwrap","version":"erabridge"}`)
	}
	caps := orEmpty(member(hs.params, "capabilities"))
	v, _ := json.Marshal(version)
	kv := [][2][]byte{
		{[]byte(era.MetaProtocolVersion), v},
		{[]byte(era.MetaClientInfo), info},
		{[]byte(era.MetaClientCapabilities), caps},
	}
	meta := []byte("{}")
	for _, p := range kv {
		meta, _ = framing.SetMember(meta, string(p[0]), p[1])
	}
	c.mu.Lock()
	c.up.meta = kv
	c.mu.Unlock()
	hs.probe, hs.version = c.newID(), version
	return request(hs.probe, "server/discover", append(append([]byte(`{"_meta":`), meta...), '}'))
}

// discoverResult answers the client's server/discover hs from the
// upstream's initialize result.
func (c *Conn) discoverResult(hs *handshake, initResult []byte) []byte {
	m, _, _ := ParseMeta(hs.params)
	version := m.ProtocolVersion
	if !era.IsStateless(version) {
		version = era.StatelessVersion
	}
	caps := orEmpty(member(initResult, "capabilities"))
	res := map[string]any{
		"resultType":        "complete",
		"supportedVersions": []string{version},
		"capabilities":      json.RawMessage(caps),
		"ttlMs":             0,
		"cacheScope":        "private",
	}
	if info := member(initResult, "serverInfo"); info != nil {
		res["_meta"] = map[string]any{era.MetaServerInfo: json.RawMessage(info)}
	}
	if instr := member(initResult, "instructions"); instr != nil {
		res["instructions"] = json.RawMessage(instr)
	}
	out, _ := json.Marshal(res)
	c.mu.Lock()
	c.down.discover = out
	c.down.caps = parseCaps(caps)
	c.clientVersion, c.serverVersion = version, stringMember(initResult, "protocolVersion")
	c.mu.Unlock()
	return out
}

// initializeResult answers the client's initialize hs from the upstream's
// server/discover result.
func (c *Conn) initializeResult(hs *handshake, discover []byte, supported []string) []byte {
	asked := stringMember(hs.params, "protocolVersion")
	version := era.SessionVersion
	if slices.Contains(era.SessionVersions, asked) {
		version = asked
	}
	// The stateless version every later request carries: the one asked
	// for, unless the server lists others only, then the newest of those.
	server := hs.version
	if !slices.Contains(supported, hs.version) {
		for _, v := range supported {
			if era.IsStateless(v) && v > server {
				server = v
			}
		}
		if server != hs.version {
			c.setMetaVersion(server)
		}
	}
	caps := orEmpty(member(discover, "capabilities"))
	info := member(member(discover, "_meta"), era.MetaServerInfo)
	if info == nil {
		info = []byte(`{"name":"unknown","version":""}`)
	}
	res := map[string]any{
		"protocolVersion": version,
		"capabilities":    json.RawMessage(caps),
		"serverInfo":      json.RawMessage(info),
	}
	if instr := member(discover, "instructions"); instr != nil {
		res["instructions"] = json.RawMessage(instr)
	}
	out, _ := json.Marshal(res)
	c.mu.Lock()
	c.up.init = out
	c.up.caps = parseCaps(caps)
	c.clientVersion, c.serverVersion = version, server
	c.mu.Unlock()
	return out
}

func (c *Conn) setMetaVersion(v string) {
	raw, _ := json.Marshal(v)
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range c.up.meta {
		if string(c.up.meta[i][0]) == era.MetaProtocolVersion {
			c.up.meta[i][1] = raw
		}
	}
}
