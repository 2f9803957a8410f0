// Package middleware interposes between an MCP client and one upstream MCP
// server.
//
// A [Session] pumps newline-delimited JSON-RPC messages in both directions.
// Messages it does not intercept are forwarded byte for byte: same bytes,
// same order, ids of any JSON type and unknown members untouched. It
// intercepts only the handshake (to capture and replay it), tools/list,
// tools/call and its own requests, whose ids live in a reserved space that
// cannot collide with the client's.
package middleware
