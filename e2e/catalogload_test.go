package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Fixture modes of runListFault: a server whose handshake succeeds and whose tools/list does not.
const (
	// fixtureListFails answers tools/list with a JSON-RPC error, every time.
	fixtureListFails = "list-fails"
	// fixtureListCut writes the start of its tools/list answer and exits: cut off mid-answer.
	fixtureListCut = "list-cut"
)

// listFaultError is what fixtureListFails answers tools/list with.
const listFaultError = "database schema missing"

// runListFault is a raw line server that answers initialize and ping, and fails tools/list as
// mode says.
func runListFault(mode string) int {
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(sc.Bytes(), &msg) != nil || msg.ID == nil {
			continue
		}
		switch msg.Method {
		case "initialize":
			fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"%s","capabilities":{"tools":{}},"serverInfo":{"name":"fault","version":"1"}}}`+"\n", msg.ID, protocolVersionInitialize)
		case "tools/list":
			if mode == fixtureListCut {
				fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"ec`, msg.ID)
				return 1
			}
			fmt.Printf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32603,"message":"%s"}}`+"\n", msg.ID, listFaultError)
		default:
			fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":{}}`+"\n", msg.ID)
		}
	}
	return 0
}

// TestFailedCatalogIsAFailedLoad: a server whose handshake succeeds but whose tools/list fails
// (an error answer, or cut off mid-answer) has not loaded. The agent's call is told the class
// and the cause (not "disabled_unknown, check mcpwrap's log"), discover_tools and `mcpwrap
// status` show the failure, and a transient one is retried.
func TestFailedCatalogIsAFailedLoad(t *testing.T) {
	t.Parallel()
	tests := []struct {
		mode      string
		class     string
		says      string // in the call's text, discovery's server.error and status's error
		retryable bool
	}{
		{mode: fixtureListFails, class: "permanent", says: "cannot list its tools: JSON-RPC error -32603: " + listFaultError},
		{mode: fixtureListCut, class: "transient", says: "cannot list its tools: the server exited", retryable: true},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
			defer cancel()
			env := mcpwrapEnv(t, `{}`)
			s := startLineSession(ctx, t, env, mcpwrapPath, wrapArgs("fault", fixtureCommand(t, tt.mode)...)...)
			requireResult(t, s.Initialize(ctx, t))

			res := callResult(ctx, t, s, 1, map[string]any{"name": "echo"})
			assert.True(t, res.IsError)
			assert.Contains(t, res.text(), tt.says)
			assert.NotContains(t, res.text(), "check mcpwrap's log")
			assert.Equal(t, tt.class, res.Meta["class"], "%s", res.text())
			assert.Equal(t, tt.retryable, res.Meta["retryable"])

			var found struct {
				StructuredContent struct {
					Server struct {
						Status string `json:"status"`
						Error  string `json:"error"`
					} `json:"server"`
				} `json:"structuredContent"`
			}
			raw := decodeResponse(t, s.Call(ctx, t, 2, "tools/call", map[string]any{"name": "discover_tools", "arguments": map[string]any{}}))
			require.NoError(t, json.Unmarshal(raw.Result, &found), "%s", raw.Result)
			assert.Equal(t, tt.class, found.StructuredContent.Server.Status, "%s", raw.Result)
			assert.Contains(t, found.StructuredContent.Server.Error, tt.says)

			// `mcpwrap status` shows the failure (polled: a retry's handshake may be under way).
			var st sidecarStatus
			require.Eventually(t, func() bool {
				st = statusByServer(ctx, t, env)["fault"]
				return st.Status == tt.class && st.Attempts > 1 == tt.retryable
			}, 10*time.Second, 100*time.Millisecond, "status: %+v", st)
			assert.Contains(t, st.Error, tt.says)
		})
	}
}
