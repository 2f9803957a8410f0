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
func errorResponse(id []byte, code int, message string) []byte {
	if id == nil {
		id = []byte("null")
	}
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   RPCError        `json:"error"`
	}{"2.0", id, RPCError{Code: code, Message: message}})
	return b
}

// replyError sends the client an error response.
func (s *Session) replyError(id []byte, code int, message string) {
	if err := s.Client.WriteMessage(errorResponse(id, code, message)); err != nil {
		s.log.Debug("cannot answer the client", "error", err)
	}
}
