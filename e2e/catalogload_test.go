package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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

// fixtureListFailsUntil (argument: a file) answers tools/list with a transient JSON-RPC error
// ("request timed out") until the file exists, then with a catalog of one tool, "echo".
const fixtureListFailsUntil = "list-fails-until"

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

// runListFailsUntil is fixtureListFailsUntil: a raw line server that answers initialize and
// ping, and tools/list as the file named by args[0] says.
func runListFailsUntil(args []string) int {
	if len(args) != 1 {
		fmt.Fprintf(os.Stderr, "usage: %s %s FILE\n", fixtureArg, fixtureListFailsUntil)
		return 2
	}
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
			fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"%s","capabilities":{"tools":{}},"serverInfo":{"name":"flaky","version":"1"}}}`+"\n", msg.ID, protocolVersionInitialize)
		case "tools/list":
			if _, err := os.Stat(args[0]); err != nil {
				fmt.Printf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32001,"message":"request timed out"}}`+"\n", msg.ID)
				continue
			}
			fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"echo","inputSchema":{"type":"object"}}]}}`+"\n", msg.ID)
		default:
			fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":{}}`+"\n", msg.ID)
		}
	}
	return 0
}

// TestFailingCatalogIsLoadingUntilItLoads: a server whose handshake succeeds and whose
// tools/list fails transiently, retried, is loading until a tools/list succeeds: `mcpwrap
// status`, discover_tools and tools/list say it is still starting up (attempt N, the last
// error), never available, and once its catalog loads they say available and show its tools.
// The client hears tools/list_changed once when its tools go (its initialize was answered by
// the server) and once when they come. Before, each retry's handshake made the server
// available until its tools/list failed: the client got two tools/list_changed per retry.
func TestFailingCatalogIsLoadingUntilItLoads(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	env := mcpwrapEnv(t, `{}`)
	works := filepath.Join(t.TempDir(), "works")
	s := startLineSession(ctx, t, env, mcpwrapPath, wrapArgs("flaky", append(fixtureCommand(t, fixtureListFailsUntil), works)...)...)
	requireResult(t, s.Initialize(ctx, t))

	// Retried: loading, whenever `mcpwrap status` looks.
	var st loadingStatus
	require.Eventually(t, func() bool {
		st = loadingStatusOf(ctx, t, env, "flaky")
		if st.Status != "" { // published
			assert.Equal(t, "transient", st.Status, "while its tools/list fails: %+v", st)
		}
		return st.Attempts >= 3
	}, 20*time.Second, 50*time.Millisecond, "status: %+v", st)
	assert.Contains(t, st.Message, "Server 'flaky' is still starting up (attempt ")
	assert.Contains(t, st.Error, "cannot list its tools: JSON-RPC error -32001: request timed out")

	var found struct {
		StructuredContent struct {
			Server struct {
				Status  string `json:"status"`
				Message string `json:"message"`
			} `json:"server"`
		} `json:"structuredContent"`
	}
	raw := decodeResponse(t, s.Call(ctx, t, 1, "tools/call", map[string]any{"name": "discover_tools", "arguments": map[string]any{}}))
	require.NoError(t, json.Unmarshal(raw.Result, &found), "%s", raw.Result)
	assert.Equal(t, "transient", found.StructuredContent.Server.Status, "%s", raw.Result)
	assert.Contains(t, found.StructuredContent.Server.Message, "still starting up")
	assert.Equal(t, []string{"discover_tools"}, listedTools(ctx, t, s, 2), "the discovery tool alone")

	require.NoError(t, os.WriteFile(works, nil, 0o600))
	require.Eventually(t, func() bool {
		st = loadingStatusOf(ctx, t, env, "flaky")
		return st.Status == "available"
	}, 20*time.Second, 50*time.Millisecond, "status: %+v", st)
	assert.Empty(t, st.Message)
	assert.Equal(t, []string{"echo"}, listedTools(ctx, t, s, 3), "its tools, and no discovery tool")

	changed := 0
	for _, line := range s.All() {
		if strings.Contains(string(line), `"notifications/tools/list_changed"`) {
			changed++
		}
	}
	assert.Equal(t, 2, changed, "one when its tools went, one when they came; not two per retry")
}

// loadingStatus is one sidecar's entry in `mcpwrap status --json`, with what the agent is told.
type loadingStatus struct {
	Status   string `json:"status"`
	Attempts int    `json:"attempts"`
	Error    string `json:"error"`
	Message  string `json:"message"`
}

// loadingStatusOf reads server's entry in `mcpwrap status --json`.
func loadingStatusOf(ctx context.Context, t *testing.T, env []string, server string) loadingStatus {
	t.Helper()
	p := startProcess(ctx, t, processOptions{Env: env}, mcpwrapPath, "status", "--json")
	require.NoError(t, p.Wait(ctx), "mcpwrap status: %s", p.Stderr())
	var list []struct {
		Server string `json:"server"`
		loadingStatus
	}
	require.NoError(t, json.Unmarshal([]byte(p.Output()), &list), "%s", p.Output())
	for _, s := range list {
		if s.Server == server {
			return s.loadingStatus
		}
	}
	return loadingStatus{}
}

// listedTools returns the names of the tools a tools/list with id shows (one page).
func listedTools(ctx context.Context, t *testing.T, s *lineSession, id int) []string {
	t.Helper()
	raw := decodeResponse(t, s.Call(ctx, t, id, "tools/list", map[string]any{}))
	require.Nil(t, raw.Error, "tools/list answered with an error")
	var list struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	require.NoError(t, json.Unmarshal(raw.Result, &list), "%s", raw.Result)
	names := []string{}
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	return names
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
