package middleware

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/resilience"
)

// TestFailedCatalogFailsTheLoad: after a good handshake, an upstream whose
// tools/list fails has not loaded (the catalog is part of the load): the
// call waiting for the catalog is told the classified failure and its
// cause, never "disabled_unknown, check mcpwrap's log", and the status is
// not "available" but the failure's class.
func TestFailedCatalogFailsTheLoad(t *testing.T) {
	tests := []struct {
		name   string
		err    string // the upstream's JSON-RPC error to tools/list
		class  resilience.Class
		reason string
	}{
		{name: "permanent", err: `{"code":-32603,"message":"database schema missing"}`, class: resilience.Permanent,
			reason: "cannot list its tools: JSON-RPC error -32603: database schema missing"},
		{name: "denied", err: `{"code":-32001,"message":"Unauthorized: token expired"}`, class: resilience.Denied,
			reason: "cannot list its tools: JSON-RPC error -32001: Unauthorized: token expired"},
		{name: "transient", err: `{"code":-32001,"message":"request timed out"}`, class: resilience.Transient,
			reason: "cannot list its tools: JSON-RPC error -32001: request timed out"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := startRaw(t, rawOptions{policy: lockedSecret})
			list := h.expect("tools/list")
			h.client.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"open"}}` + "\n")
			h.up.send(`{"jsonrpc":"2.0","id":` + string(list) + `,"error":` + tt.err + "}\n")

			var resp struct {
				Result struct {
					Content []struct{ Text string } `json:"content"`
					IsError bool                    `json:"isError"`
					Meta    map[string]any          `json:"_meta"`
				} `json:"result"`
			}
			for {
				msg := h.client.next()
				require.NoError(t, json.Unmarshal(msg, &resp))
				if resp.Result.IsError {
					break
				}
			}
			require.Len(t, resp.Result.Content, 1)
			text := resp.Result.Content[0].Text
			assert.NotContains(t, text, "check mcpwrap's log")
			assert.Contains(t, text, tt.reason)
			assert.Equal(t, tt.class.String(), resp.Result.Meta["class"])
			assert.Equal(t, tt.class.Retryable(), resp.Result.Meta["retryable"])
			// Not available; its class may have moved on since (the call may
			// have asked for a reconnect, whose dial the fixture refuses).
			require.Eventually(t, func() bool { return h.session.Status().Class != resilience.Available }, timeout, tick)
		})
	}
}
