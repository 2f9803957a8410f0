package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHungToolIsAnsweredOnceWithinCallTimeout: with --call-timeout 3s, a call to a tool that
// never answers (demo-server's wait with ms 0) is answered once, as an isError result, within
// its bound; the server receives notifications/cancelled for it; the session goes on.
func TestHungToolIsAnsweredOnceWithinCallTimeout(t *testing.T) {
	t.Parallel()
	const callTimeout = 3 * time.Second
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	record := filepath.Join(t.TempDir(), "record")
	rec := &transcript{}
	cs := connectWrapped(ctx, t, newClient(nil), wrapOptions{Name: "hung", Config: transparentConfig,
		Flags: []string{"--call-timeout", callTimeout.String()}, Record: rec},
		mcpwrapPath, "demo-server", "--record", record)
	rec.Take()

	start := time.Now()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "wait", Arguments: map[string]any{"ms": 0}})
	elapsed := time.Since(start)
	require.NoError(t, err)
	assert.True(t, res.IsError)
	assert.Contains(t, contentText(res.Content), "did not answer this tool call within 3s")
	assert.GreaterOrEqual(t, elapsed, callTimeout)
	assert.Less(t, elapsed, callTimeout+promptAnswer, "answered within its bound")

	// The session goes on, and the hung call got no second answer meanwhile.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "still here"}})
	require.NoError(t, err)
	assert.Equal(t, "still here", contentText(res.Content))
	var answers []string
	for _, msg := range rec.Take() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		require.NoError(t, json.Unmarshal(msg, &m))
		if m.Method == "" && m.ID != nil {
			answers = append(answers, string(m.ID))
		}
	}
	require.Len(t, answers, 2, "one answer per call: %v", answers)
	assert.NotEqual(t, answers[0], answers[1])

	require.Eventually(t, func() bool {
		data, _ := os.ReadFile(record)
		for line := range strings.Lines(string(data)) {
			if strings.HasPrefix(line, "notifications/cancelled ") && strings.Contains(line, `"requestId":`+answers[0]) {
				return true
			}
		}
		return false
	}, promptAnswer, pollEvery, "the server got notifications/cancelled for the hung call")
}

// TestMcpwrapBehindMcpwrap: an mcpwrap wrapping another mcpwrap works, over stdio
// (`mcpwrap -- mcpwrap -- server`) and over HTTP (`mcpwrap --url` to an `mcpwrap --listen`):
// the inner one does not take the outer one's own requests for its own.
func TestMcpwrapBehindMcpwrap(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		upstream func(ctx context.Context, t *testing.T) (flags, command []string)
	}{
		{name: "stdio", upstream: func(ctx context.Context, t *testing.T) ([]string, []string) {
			return nil, []string{mcpwrapPath, "--name", "inner", "--", mcpwrapPath, "demo-server"}
		}},
		{name: "url to listen", upstream: func(ctx context.Context, t *testing.T) ([]string, []string) {
			srv := startListen(ctx, t, listenOptions{Name: "inner"}, mcpwrapPath, "demo-server")
			return []string{"--url", srv.URL}, nil
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
			defer cancel()
			flags, command := tt.upstream(ctx, t)
			cs := connectWrapped(ctx, t, newClient(nil), wrapOptions{Name: "outer", Flags: flags}, command...)
			require.NotEqual(t, degradedVersion, cs.InitializeResult().ServerInfo.Version, "the upstream answered the handshake")

			tools, err := cs.ListTools(ctx, nil)
			require.NoError(t, err)
			var names []string
			for _, tool := range tools.Tools {
				names = append(names, tool.Name)
			}
			assert.Contains(t, names, "echo")
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "through two"}})
			require.NoError(t, err)
			assert.False(t, res.IsError, contentText(res.Content))
			assert.Equal(t, "through two", contentText(res.Content))
		})
	}
}

// TestProgressKeepsALongCallAlive: a call that outlasts --call-timeout but reports progress more
// often than that is not cut off: each progress notification restarts the bound.
func TestProgressKeepsALongCallAlive(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	progressed := make(chan float64, 100)
	client := newClient(&mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		progressed <- req.Params.Progress
	}})
	cs := connectWrapped(ctx, t, client, wrapOptions{Name: "slow", Config: transparentConfig,
		Flags: []string{"--call-timeout", "2s"}}, mcpwrapPath, "demo-server")

	params := &mcp.CallToolParams{Name: "wait", Arguments: map[string]any{"ms": 4000, "progress_ms": 250}}
	params.SetProgressToken("long-job")
	res, err := cs.CallTool(ctx, params)
	require.NoError(t, err)
	assert.False(t, res.IsError, contentText(res.Content))
	assert.Equal(t, "waited", contentText(res.Content))
	assert.NotEmpty(t, progressed, "the progress reached the client")
}
