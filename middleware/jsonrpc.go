package middleware

import (
	"encoding/json"
	"fmt"

	"github.com/mcpwrap/mcpwrap/internal/jsonrpc"
)

// The JSON-RPC error codes the sidecar writes, named as the rest of the
// package reads them; internal/jsonrpc owns them.
const (
	codeParseError     = jsonrpc.CodeParseError
	codeInvalidRequest = jsonrpc.CodeInvalidRequest
	codeInternalError  = jsonrpc.CodeInternalError
	codeInvalidParams  = jsonrpc.CodeInvalidParams
	codeMethodNotFound = jsonrpc.CodeMethodNotFound
	codeRequestTimeout = jsonrpc.CodeRequestTimeout
)

// RPCError is a JSON-RPC error object, as returned by [Session.Call] when the
// upstream answers with an error.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *RPCError) Error() string { return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message) }

// errorResponse encodes a JSON-RPC error response (internal/jsonrpc's
// one encoder). A nil id is sent as null.
func errorResponse(id []byte, code int, message string, data json.RawMessage) []byte {
	return jsonrpc.ErrorResponse(id, code, message, data)
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
