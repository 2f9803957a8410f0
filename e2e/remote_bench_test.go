package e2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// The remote benchmarks compare the two ways a stdio-only client reaches a
// remote streamable-HTTP server: through `mcpwrap --url` and through
// `mcp-remote` (npm), against the same loopback go-sdk server in one run.
// Sub-benchmark names: "mcp-remote" is the baseline, "mcpwrap" the one
// measured against it (see e2e/benchtable).

// remoteServer starts a go-sdk streamable-HTTP server with an echo tool on
// 127.0.0.1 and returns its URL.
func remoteServer(b *testing.B) string {
	b.Helper()
	server := mcp.NewServer(&mcp.Implementation{Name: "remote-bench", Version: "1"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "echo", Description: "echo"},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct {
			Text string `json:"text"`
		}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	b.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

// remoteModes are the two stdio-to-HTTP bridges.
func remoteModes(b *testing.B, url string) []struct {
	name string
	argv []string
	env  []string
} {
	requireNodeModules(b)
	return []struct {
		name string
		argv []string
		env  []string
	}{
		{"mcp-remote", []string{nodePath(b), npmBin(b, "mcp-remote", "mcp-remote"), url, "--transport", "http-only"},
			[]string{"MCP_REMOTE_CONFIG_DIR=" + b.TempDir(), "NPM_CONFIG_UPDATE_NOTIFIER=false"}},
		{"mcpwrap", []string{mcpwrapPath, "--name", "remote", "--log-level", "warn", "--url", url}, mcpwrapEnv(b, `{}`)},
	}
}

func remoteSession(ctx context.Context, b *testing.B, argv, env []string) (*mcp.ClientSession, int) {
	b.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: protocolVersionInitialize})
	require.NoError(b, err)
	b.Cleanup(func() { cs.Close() })
	return cs, cmd.Process.Pid
}

// BenchmarkRemoteCall measures sequential tools/call round trips, and the
// bridge's peak RSS.
func BenchmarkRemoteCall(b *testing.B) {
	url := remoteServer(b)
	for _, m := range remoteModes(b, url) {
		b.Run(m.name, func(b *testing.B) {
			cs, pid := remoteSession(context.Background(), b, m.argv, m.env)
			args := map[string]any{"text": "ping"}
			callTool(b, cs, "echo", args)
			for b.Loop() {
				callTool(b, cs, "echo", args)
			}
			if kib, err := procStatusKiB(pid, "VmHWM:"); err == nil {
				b.ReportMetric(float64(kib)/1024, "peak-RSS-MiB")
			}
		})
	}
}

// BenchmarkRemoteFirstList measures the time from starting the bridge to
// the first tools/list answer.
func BenchmarkRemoteFirstList(b *testing.B) {
	url := remoteServer(b)
	for _, m := range remoteModes(b, url) {
		b.Run(m.name, func(b *testing.B) {
			for b.Loop() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				cs, _ := remoteSession(ctx, b, m.argv, m.env)
				if _, err := cs.ListTools(ctx, nil); err != nil {
					b.Fatal(err)
				}
				cs.Close()
				cancel()
			}
		})
	}
}

func callTool(b *testing.B, cs *mcp.ClientSession, name string, args map[string]any) {
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		b.Fatal(err)
	}
	if res.IsError {
		b.Fatalf("%s: tool error", name)
	}
}
