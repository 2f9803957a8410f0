package httpfront

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpwrap/mcpwrap/internal/era"
	"github.com/mcpwrap/mcpwrap/internal/jsonrpc"
)

// writeError answers with an HTTP error status and a JSON-RPC error body,
// which clients can show as is.
func writeError(w http.ResponseWriter, status int, id []byte, code int, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(jsonrpc.ErrorResponse(id, code, message, nil))
}

// writeBusy answers 503 with Retry-After: the request may succeed once
// others are done.
func writeBusy(w http.ResponseWriter, id []byte, err error) {
	w.Header().Set("Retry-After", retryAfter)
	writeError(w, http.StatusServiceUnavailable, id, jsonrpc.CodeServerError, "Service Unavailable: "+err.Error())
}

// writeSessionNotFound answers 404 for an unknown or ended session. The body
// is plain text on purpose: some clients (the go-sdk's) read a JSON-RPC
// body as the rejection of one request, and would miss that the session is
// gone and a new one must be opened.
func writeSessionNotFound(w http.ResponseWriter) {
	http.Error(w, "Not Found: no such session (it ended, or never existed); open a new one with initialize", http.StatusNotFound)
}

// writeDiscoverUnsupported answers a 2026-07-28 request that cannot be
// served without a session (an old client's discover, or any request when
// the upstream speaks only the session era): it lists the versions that
// open a session with initialize, on which clients fall back to it.
func writeDiscoverUnsupported(w http.ResponseWriter, status, code int, id []byte, requested string) {
	var legacy []string
	for _, v := range protocolVersions {
		if v < era.StatelessVersion {
			legacy = append(legacy, v)
		}
	}
	data, _ := json.Marshal(mcp.UnsupportedProtocolVersionData{Supported: legacy, Requested: requested})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(jsonrpc.ErrorResponse(id, code,
		"mcpwrap serves MCP sessions: open one with initialize (supported: "+strings.Join(legacy, ", ")+")", data))
}
