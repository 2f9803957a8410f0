package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// These tests hold mcpwrap to what it promises about its stdio child as a process: a child whose
// pipe closes is dead even if it runs on, no descendant outlives it, and no secret of mcpwrap's
// reaches its environment.

// Tools of fixturePipeCloser besides fixturePIDTool.
const (
	pipeCloserWait        = "wait"         // never answered: stays in flight
	pipeCloserCloseStdin  = "close_stdin"  // closes the fixture's stdin; never answered
	pipeCloserCloseStdout = "close_stdout" // closes the fixture's stdout; never answered
)

// runPipeCloser serves a minimal MCP server with raw newline-delimited JSON-RPC, one message at
// a time, so that no read is in progress when it closes its stdin. After closing a pipe it runs
// on (for fixtureLifetime) until a signal ends it, like a server whose output thread died.
func runPipeCloser() int {
	in := bufio.NewReader(os.Stdin)
	out := json.NewEncoder(os.Stdout)
	reply := func(id json.RawMessage, result any) {
		_ = out.Encode(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
	}
	tool := func(name string) map[string]any {
		return map[string]any{"name": name, "inputSchema": map[string]any{"type": "object"}}
	}
	for {
		line, err := in.ReadBytes('\n')
		if err != nil {
			return 0
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name            string `json:"name"`
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"params"`
		}
		if json.Unmarshal(line, &req) != nil || req.ID == nil {
			continue // notifications, and responses it never asked for
		}
		switch req.Method {
		case "initialize":
			reply(req.ID, map[string]any{
				"protocolVersion": req.Params.ProtocolVersion,
				"capabilities":    map[string]any{"tools": map[string]any{}},
				"serverInfo":      map[string]any{"name": fixturePipeCloser, "version": "1.0.0"},
			})
		case "tools/list":
			reply(req.ID, map[string]any{"tools": []any{
				tool(fixturePIDTool), tool(pipeCloserWait), tool(pipeCloserCloseStdin), tool(pipeCloserCloseStdout),
			}})
		case "tools/call":
			switch req.Params.Name {
			case fixturePIDTool:
				pid := os.Getpid()
				reply(req.ID, map[string]any{
					"content":           []any{map[string]any{"type": "text", "text": fmt.Sprint(pid)}},
					"structuredContent": fixturePID{PID: pid},
				})
			case pipeCloserWait:
			case pipeCloserCloseStdin, pipeCloserCloseStdout:
				f := os.Stdin
				if req.Params.Name == pipeCloserCloseStdout {
					f = os.Stdout
				}
				_ = f.Close()
				fmt.Fprintf(os.Stderr, "%s: %s closed; running on\n", fixturePipeCloser, f.Name())
				<-time.After(fixtureLifetime)
				return 0
			}
		case "ping":
			reply(req.ID, map[string]any{})
		default:
			_ = out.Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID,
				"error": map[string]any{"code": -32601, "message": "Method not found"}})
		}
	}
}

// TestDeadPipeFailsInflightAndRestarts: the child closes its stdout, or its stdin, with 20 calls
// in flight and goes on running. mcpwrap must treat it as crashed: every request in flight
// (the one that made it close included) is answered exactly once with the restart error, the
// child is killed, a new one started, and the session goes on.
func TestDeadPipeFailsInflightAndRestarts(t *testing.T) {
	t.Parallel()
	for _, closer := range []string{pipeCloserCloseStdout, pipeCloserCloseStdin} {
		t.Run(closer, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
			defer cancel()
			s := startLineSession(ctx, t, mcpwrapEnv(t, transparentConfig), mcpwrapPath,
				wrapArgs("closer", fixtureCommand(t, fixturePipeCloser)...)...)
			requireResult(t, s.Initialize(ctx, t))
			call := func(id, tool string) map[string]any {
				return map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call",
					"params": map[string]any{"name": tool, "arguments": map[string]any{}}}
			}
			firstPID := pidResult(t, s.Call(ctx, t, "pid-0", "tools/call", map[string]any{"name": fixturePIDTool, "arguments": map[string]any{}}))

			const inflight = 20
			var ids []string
			for i := range inflight {
				ids = append(ids, fmt.Sprintf("wait-%d", i))
				s.Send(t, call(ids[i], pipeCloserWait))
			}
			ids = append(ids, "close")
			s.Send(t, call("close", closer)) // read after the waits: the child reads in order

			answered := map[string]bool{}
			for len(answered) < len(ids) {
				select {
				case line, ok := <-s.lines:
					require.True(t, ok, "mcpwrap's stdout closed")
					var resp struct {
						ID    string `json:"id"`
						Error *struct {
							Code    int    `json:"code"`
							Message string `json:"message"`
						} `json:"error"`
					}
					if json.Unmarshal(line, &resp) != nil || !slices.Contains(ids, resp.ID) {
						continue
					}
					require.False(t, answered[resp.ID], "request %s answered twice", resp.ID)
					answered[resp.ID] = true
					require.NotNil(t, resp.Error, "request %s: %s", resp.ID, line)
					assert.Equal(t, -32603, resp.Error.Code)
					assert.Equal(t, restartedMessage, resp.Error.Message)
				case <-ctx.Done():
					require.FailNow(t, "requests in flight not answered", "%d of %d answered", len(answered), len(ids))
				}
			}
			assert.True(t, waitExited(t, firstPID, promptAnswer), "the child whose pipe closed still runs")

			// The session goes on with a new child. A call during the restart may be answered with
			// the restart status; there is no event for "ready" on this session but a later call.
			var newPID int
			n := 0
			require.Eventually(t, func() bool {
				n++
				raw := s.Call(ctx, t, fmt.Sprintf("pid-%d", n), "tools/call", map[string]any{"name": fixturePIDTool, "arguments": map[string]any{}})
				newPID = pidResultOrZero(raw)
				return newPID != 0
			}, promptAnswer, pollEvery, "no answer from a restarted child")
			assert.NotEqual(t, firstPID, newPID)

			// Exactly once, also counting everything that arrived after.
			count := map[string]int{}
			for _, line := range s.All() {
				var resp struct {
					ID     json.RawMessage `json:"id"`
					Method string          `json:"method"`
				}
				if json.Unmarshal(line, &resp) == nil && resp.Method == "" && resp.ID != nil {
					count[string(resp.ID)]++
				}
			}
			for _, id := range ids {
				assert.Equal(t, 1, count[`"`+id+`"`], "answers to %s", id)
			}
			assert.Contains(t, s.proc.Stderr(), "still running; stopping it as crashed")
		})
	}
}

// pidResult returns the pid in a fixturePIDTool response.
func pidResult(t testing.TB, raw json.RawMessage) int {
	t.Helper()
	pid := pidResultOrZero(raw)
	require.NotZero(t, pid, "not a pid result: %s", raw)
	return pid
}

// pidResultOrZero returns the pid in a fixturePIDTool response, 0 for any other answer.
func pidResultOrZero(raw json.RawMessage) int {
	var resp struct {
		Result struct {
			IsError           bool       `json:"isError"`
			StructuredContent fixturePID `json:"structuredContent"`
		} `json:"result"`
	}
	if json.Unmarshal(raw, &resp) != nil || resp.Result.IsError {
		return 0
	}
	return resp.Result.StructuredContent.PID
}

// TestChildEnvLacksAuthToken: the HTTP front's bearer token (--auth-token-env) is a secret of
// mcpwrap's: the server it runs must not find it in its environment.
func TestChildEnvLacksAuthToken(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	const token = "e2e-bearer-child-env-51c0ffee"
	srv := startListen(ctx, t, listenOptions{
		Name:  "fixture",
		Flags: []string{"--auth-token-env", "MCPWRAP_E2E_TOKEN"},
		Env:   []string{"MCPWRAP_E2E_TOKEN=" + token, "MCPWRAP_E2E_NOT_SECRET=visible"},
	}, fixtureCommand(t, fixtureBanner)...)
	cs, err := connectHTTP(ctx, t, newClient(nil), &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: httpClient(token, nil)}, "")
	require.NoError(t, err)

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: fixtureEnvTool})
	require.NoError(t, err)
	require.False(t, res.IsError, "%v", res.Content)
	raw, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	var got fixtureEnv
	require.NoError(t, json.Unmarshal(raw, &got))

	assert.Contains(t, got.Env, "MCPWRAP_E2E_NOT_SECRET=visible", "the rest is inherited")
	for _, kv := range got.Env {
		assert.False(t, strings.HasPrefix(kv, "MCPWRAP_E2E_TOKEN="), "the token variable reached the child")
		assert.NotContains(t, kv, token, "the token reached the child")
	}
}

// setsidServer returns a shell server that first starts a grandchild in a session of its own
// (as daemons do), holding the server's stdout, writes its pid to pidFile, and then becomes
// mcpwrap's demo server.
func setsidServer(pidFile string) []string {
	script := `setsid sh -c 'echo $$ > "$0"; exec sleep 1000' "$1" & exec "$2" demo-server`
	return []string{"sh", "-c", script, "sh", pidFile, mcpwrapPath}
}

// TestSetsidGrandchildDiesWithMcpwrap: a descendant of the server that left its process group
// and session is gone once mcpwrap has exited at stdin EOF, and when mcpwrap is SIGKILLed.
func TestSetsidGrandchildDiesWithMcpwrap(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		stop func(ctx context.Context, t *testing.T, s *lineSession)
	}{
		{name: "stdin EOF", stop: func(ctx context.Context, t *testing.T, s *lineSession) {
			s.CloseAndDrain(ctx, t)
			require.NoError(t, s.proc.Wait(ctx))
		}},
		{name: "SIGKILL", stop: func(ctx context.Context, t *testing.T, s *lineSession) {
			require.NoError(t, s.proc.Cmd.Process.Signal(syscall.SIGKILL))
			require.Error(t, s.proc.Wait(ctx), "mcpwrap survived SIGKILL")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
			defer cancel()
			pidFile := filepath.Join(t.TempDir(), "grandchild.pid")
			s := startLineSession(ctx, t, mcpwrapEnv(t, `{}`), mcpwrapPath, wrapArgs("daemonizing", setsidServer(pidFile)...)...)
			requireResult(t, s.Initialize(ctx, t))
			grandchild := readPID(t, pidFile, 0)
			t.Cleanup(func() { killPIDs([]int{grandchild}) })
			require.Contains(t, descendants(t, s.proc.Cmd.Process.Pid), grandchild, "the grandchild runs under mcpwrap")
			sid, err := unix.Getsid(grandchild)
			require.NoError(t, err)
			require.Equal(t, grandchild, sid, "the grandchild leads a session of its own")

			tt.stop(ctx, t, s)

			assert.True(t, waitExited(t, grandchild, orphanGrace), "the setsid grandchild (%s) outlived mcpwrap", command(grandchild))
		})
	}
}

// TestGuardianHoldsNoChildPipe: on Linux the server runs under a guardian (mcpwrap re-executed);
// the guardian must hold neither the server's stdin nor its stdout, or a server closing either
// would go unnoticed.
func TestGuardianHoldsNoChildPipe(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	s := startLineSession(ctx, t, mcpwrapEnv(t, `{}`), mcpwrapPath, wrapArgs("pipes", mcpwrapPath, "demo-server")...)
	requireResult(t, s.Initialize(ctx, t))

	var guardian, child int
	for _, pid := range descendants(t, s.proc.Cmd.Process.Pid) {
		if strings.HasPrefix(command(pid), "mcpwrap-guardian ") {
			guardian = pid
		}
	}
	require.NotZero(t, guardian, "no guardian below mcpwrap")
	for _, pid := range descendants(t, guardian) {
		child = pid
	}
	require.NotZero(t, child, "no server below the guardian")

	fds := func(pid int) map[string]string {
		dir := fmt.Sprintf("/proc/%d/fd", pid)
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		links := map[string]string{}
		for _, e := range entries {
			if target, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil {
				links[e.Name()] = target
			}
		}
		return links
	}
	server := fds(child)
	require.True(t, strings.HasPrefix(server["0"], "pipe:") && strings.HasPrefix(server["1"], "pipe:"), "the server's stdio: %v", server)
	for fd, target := range fds(guardian) {
		assert.NotEqual(t, server["0"], target, "the guardian's fd %s is the server's stdin", fd)
		assert.NotEqual(t, server["1"], target, "the guardian's fd %s is the server's stdout", fd)
	}
}
