package middleware

import (
	"encoding/json"
	"fmt"
)

// JSON-RPC error codes used by the sidecar.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
	codeInternalError  = -32603
	codeInvalidParams  = -32602
	codeMethodNotFound = -32601
	// codeRequestTimeout is the code MCP SDKs use for a request that timed
	// out (the TypeScript SDK's ErrorCode.RequestTimeout).
	codeRequestTimeout = -32001
)

// RPCError is a JSON-RPC error object, as returned by [Session.Call] when the
// upstream answers with an error.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *RPCError) Error() string { return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message) }

// errorResponse encodes a JSON-RPC error response. A nil id is sent as null.
func errorResponse(id []byte, code int, message string, data json.RawMessage) []byte {
	if id == nil {
		id = []byte("null")
	}
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   RPCError        `json:"error"`
	}{"2.0", id, RPCError{Code: code, Message: message, Data: data}})
	return b
}

// replyError sends the client an error response.
func (s *Session) replyError(id []byte, code int, message string) {
	s.replyErrorData(id, code, message, nil)
}

// replyErrorData sends the client an error response with data.
func (s *Session) replyErrorData(id []byte, code int, message string, data json.RawMessage) {
	if err := s.Client.WriteMessage(s.life, errorResponse(id, code, message, data)); err != nil {
		s.log.Debug("cannot answer the client", "error", err)
	}
}
