// Package jsonrpc owns the JSON-RPC error codes mcpwrap writes or reads
// and the one encoder of an error response, as the go-sdk's
// internal/jsonrpc2/wire.go owns its codes. Every other package imports
// them; TestCodesHaveOneOwner fails on a code spelled elsewhere.
//
// middleware and resilience may import it because it is internal to this
// module; their exported APIs never name it (the codes are untyped
// constants).
package jsonrpc

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// Error codes of JSON-RPC 2.0 (https://www.jsonrpc.org/specification#error_object).
const (
	// CodeParseError: the message is not JSON.
	CodeParseError = -32700
	// CodeInvalidRequest: the message is JSON but not a valid request.
	CodeInvalidRequest = -32600
	// CodeMethodNotFound: the method does not exist or is not available.
	// A server that does not know server/discover answers it, which tells
	// a 2026-07-28 client to fall back to initialize.
	CodeMethodNotFound = -32601
	// CodeInvalidParams: the method's params are invalid.
	CodeInvalidParams = -32602
	// CodeInternalError: the request could not be answered; mcpwrap's
	// answer when the upstream cannot give one.
	CodeInternalError = -32603
)

// Codes in the range JSON-RPC 2.0 reserves for implementation-defined
// server errors (-32000 to -32099).
const (
	// CodeServerError: a transport-level refusal by mcpwrap's HTTP front
	// (forbidden, unauthorised, unavailable).
	CodeServerError = -32000
	// CodeRequestTimeout: a request that timed out, as the TypeScript
	// SDK's ErrorCode.RequestTimeout and servers built on it spell it.
	CodeRequestTimeout = -32001
)

// Error codes of MCP's 2026-07-28 protocol (SEP-2575; the go-sdk's
// mcp.Code* of the same names).
const (
	// CodeHeaderMismatch: the Mcp-Method or Mcp-Name header is missing, or
	// disagrees with the body.
	CodeHeaderMismatch = -32020
	// CodeMissingClientCapabilities: the request needs a capability the
	// client's _meta does not declare.
	CodeMissingClientCapabilities = -32021
	// CodeUnsupportedProtocolVersion: the server does not speak the
	// version asked for; the error's data.supported lists the ones it does.
	CodeUnsupportedProtocolVersion = -32022
)

// ErrorResponse encodes a JSON-RPC error response on one line:
//
//	{"jsonrpc":"2.0","id":ID,"error":{"code":CODE,"message":MESSAGE,"data":DATA}}
//
// The result is valid JSON whatever its arguments. id and data are written
// compacted and otherwise as given, so that a peer that matches ids by
// their bytes finds its own; a nil id, or one that is not JSON, is sent as
// null (the id of an answer to a message whose id could not be read). data
// is left out when empty or not JSON. message is escaped as encoding/json
// escapes a string (invalid UTF-8 becomes U+FFFD).
func ErrorResponse(id []byte, code int, message string, data json.RawMessage) []byte {
	text, _ := json.Marshal(message) // a string always encodes
	var b bytes.Buffer
	b.Grow(len(`{"jsonrpc":"2.0","id":,"error":{"code":-32000,"message":,"data":}}`) + len(id) + len(text) + len(data))
	b.WriteString(`{"jsonrpc":"2.0","id":`)
	if len(id) == 0 || json.Compact(&b, id) != nil { // Compact writes nothing when it fails
		b.WriteString("null")
	}
	b.WriteString(`,"error":{"code":`)
	b.Write(strconv.AppendInt(b.AvailableBuffer(), int64(code), 10))
	b.WriteString(`,"message":`)
	b.Write(text)
	if len(data) > 0 {
		n := b.Len()
		b.WriteString(`,"data":`)
		if json.Compact(&b, data) != nil {
			b.Truncate(n)
		}
	}
	b.WriteString("}}")
	return b.Bytes()
}
