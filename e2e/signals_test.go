package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/internal/upstream"
)

const (
	// shutdownBudget is how long mcpwrap may take to exit after SIGTERM or SIGINT, whatever its
	// upstream does (close stdin, short grace, SIGTERM, SIGKILL to its process group).
	shutdownBudget = 3 * time.Second
	// orphanGrace is how long an upstream may outlive a SIGKILLed mcpwrap: the guardian gives a
	// server that ignores SIGTERM the documented orphan grace before SIGKILL, and the kernel's
	// parent-death signal is asynchronous, so allow that grace and a moment on a loaded machine,
	// but nothing like a timeout. (It was the grace alone: with no margin, the guardian of a
	// stubborn server outlived it on a loaded CI run.)
	orphanGrace = upstream.DefaultOrphanGrace + 3*time.Second
)

// signalUpstream is an upstream for the signal tests.
type signalUpstream struct {
	name    string
	command func(t *testing.T) []string
	// reportsPID is true when the upstream answers fixturePIDTool, so the test can check that the
	// process tree it watches really contains the upstream.
	reportsPID bool
}

var signalUpstreams = []signalUpstream{
	{
		name:       "go fixture ignoring EOF and SIGTERM",
		command:    func(t *testing.T) []string { return fixtureCommand(t, fixtureStubborn) },
		reportsPID: true,
	},
	{
		name: "server-everything (ignores EOF)",
		command: func(t *testing.T) []string {
			return []string{nodePath(t), npmBin(t, "@modelcontextprotocol/server-everything", "mcp-server-everything")}
		},
	},
}

// TestSIGKILLLeavesNoOrphan kills mcpwrap with SIGKILL, which it cannot handle, and requires
// its upstream to die with it.
func TestSIGKILLLeavesNoOrphan(t *testing.T) {
	t.Parallel()
	for _, up := range signalUpstreams {
		t.Run(up.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
			defer cancel()
			s, tree := startWrappedUpstream(ctx, t, up)

			require.NoError(t, s.proc.Cmd.Process.Signal(syscall.SIGKILL))
			require.Error(t, s.proc.Wait(ctx), "mcpwrap survived SIGKILL")

			for _, pid := range tree {
				assert.True(t, waitExited(t, pid, orphanGrace), "pid %d (%s) outlived mcpwrap's SIGKILL", pid, command(pid))
			}
		})
	}
}

// TestTerminationSignalExitsPromptly sends SIGTERM or SIGINT to mcpwrap and requires it to exit
// within shutdownBudget, taking its upstream along, even when the upstream ignores stdin EOF
// (and, for the Go fixture, SIGTERM too).
func TestTerminationSignalExitsPromptly(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		for _, up := range signalUpstreams {
			t.Run(sig.String()+"/"+up.name, func(t *testing.T) {
				t.Parallel()
				ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
				defer cancel()
				s, tree := startWrappedUpstream(ctx, t, up)

				start := time.Now()
				require.NoError(t, s.proc.Cmd.Process.Signal(sig))
				select {
				case <-s.proc.Done():
				case <-time.After(shutdownBudget):
					require.FailNow(t, "mcpwrap still running", "%v after %s", shutdownBudget, sig)
				}
				t.Logf("mcpwrap exited %v after %s", time.Since(start).Round(time.Millisecond), sig)

				for _, pid := range tree {
					assert.True(t, waitExited(t, pid, orphanGrace), "pid %d (%s) outlived mcpwrap's shutdown", pid, command(pid))
				}
			})
		}
	}
}

// TestTerminationSignalDrainsInFlightCalls sends SIGTERM or SIGINT to mcpwrap while six calls
// are in flight: five that the upstream answers within the drain time (DefaultDrainTimeout, one
// second) get the upstream's real answer, one that would take a minute gets the session's error;
// each is answered exactly once, then mcpwrap exits and its upstream is stopped.
func TestTerminationSignalDrainsInFlightCalls(t *testing.T) {
	t.Parallel()
	const (
		quick           = 5
		quickMS, hungMS = 300, 60_000
	)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
			defer cancel()
			s, tree := startWrappedUpstream(ctx, t, signalUpstreams[0])

			call := func(id string, ms int) {
				s.Send(t, map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": map[string]any{
					"name": fixtureSleepTool, "arguments": fixtureSleepArgs{MS: ms}, "_meta": map[string]any{"progressToken": id},
				}})
			}
			for i := range quick {
				call(fmt.Sprintf("quick-%d", i), quickMS)
			}
			call("hung", hungMS)
			// Every call has reached the upstream once its progress notification comes back.
			started := map[string]bool{}
			for len(started) < quick+1 {
				select {
				case line, ok := <-s.lines:
					require.True(t, ok, "stdout closed before the calls started")
					var msg struct {
						Method string `json:"method"`
						Params struct {
							ProgressToken string `json:"progressToken"`
						} `json:"params"`
					}
					require.NoError(t, json.Unmarshal(line, &msg), "%s", line)
					require.Equal(t, "notifications/progress", msg.Method, "%s", line)
					started[msg.Params.ProgressToken] = true
				case <-ctx.Done():
					require.FailNow(t, "the calls did not start", "started: %v", started)
				}
			}

			require.NoError(t, s.proc.Cmd.Process.Signal(sig))
			answers := map[string][]string{}
			for line := range s.lines {
				var resp struct {
					ID     string `json:"id"`
					Result *struct {
						Content []struct {
							Text string `json:"text"`
						} `json:"content"`
					} `json:"result"`
					Error *struct {
						Message string `json:"message"`
					} `json:"error"`
				}
				require.NoError(t, json.Unmarshal(line, &resp), "%s", line)
				switch {
				case resp.Result != nil && len(resp.Result.Content) == 1:
					answers[resp.ID] = append(answers[resp.ID], resp.Result.Content[0].Text)
				case resp.Error != nil:
					answers[resp.ID] = append(answers[resp.ID], "error: "+resp.Error.Message)
				default:
					require.FailNow(t, "unexpected message after the signal", "%s", line)
				}
			}
			require.NoError(t, s.proc.Wait(ctx), "mcpwrap exits cleanly after %s", sig)

			want := map[string][]string{"hung": {"error: the session ended before the request was answered"}}
			for i := range quick {
				want[fmt.Sprintf("quick-%d", i)] = []string{fmt.Sprintf("slept %d ms", quickMS)}
			}
			assert.Equal(t, want, answers, "each call answered exactly once")
			for _, pid := range tree {
				assert.True(t, waitExited(t, pid, orphanGrace), "pid %d (%s) outlived mcpwrap's shutdown", pid, command(pid))
			}
		})
	}
}

// TestListenTerminationSignalDrainsInFlightCalls: in --listen mode too, SIGTERM lets the calls
// in flight get the upstream's real answers before the sessions' children are stopped.
func TestListenTerminationSignalDrainsInFlightCalls(t *testing.T) {
	t.Parallel()
	const calls, sleepMS = 5, 300
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	srv := startListen(ctx, t, listenOptions{Name: "fixture"}, fixtureCommand(t, fixtureStubborn)...)
	started := make(chan any, calls)
	client := newClient(&mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		started <- req.Params.ProgressToken
	}})
	cs, err := connectHTTP(ctx, t, client, &mcp.StreamableClientTransport{Endpoint: srv.URL}, "")
	require.NoError(t, err)
	child := fixturePIDOf(ctx, t, cs)

	answers := make(chan string, calls)
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() {
			params := &mcp.CallToolParams{Name: fixtureSleepTool, Arguments: fixtureSleepArgs{MS: sleepMS}}
			params.SetProgressToken(fmt.Sprintf("call-%d", i))
			res, err := cs.CallTool(ctx, params)
			switch {
			case err != nil:
				answers <- "error: " + err.Error()
			case len(res.Content) != 1:
				answers <- fmt.Sprintf("unexpected result: %+v", res)
			default:
				text, _ := res.Content[0].(*mcp.TextContent)
				answers <- fmt.Sprintf("isError=%v %q", res.IsError, text.Text)
			}
		})
	}
	for range calls { // every call has reached the upstream
		select {
		case <-started:
		case <-ctx.Done():
			require.FailNow(t, "the calls did not start")
		}
	}

	srv.Stop(t) // SIGTERM, then a clean exit
	wg.Wait()
	close(answers)
	want := fmt.Sprintf("isError=false %q", fmt.Sprintf("slept %d ms", sleepMS))
	var got []string
	for a := range answers {
		got = append(got, a)
	}
	assert.Equal(t, slices.Repeat([]string{want}, calls), got, "each call got the upstream's answer")
	assert.True(t, waitExited(t, child, orphanGrace), "the session's child outlived mcpwrap's shutdown")
}

// startWrappedUpstream starts `mcpwrap -- upstream`, completes the handshake (so the upstream
// is up) and returns the session and the process tree below mcpwrap. t.Cleanup kills whatever
// of that tree is left.
func startWrappedUpstream(ctx context.Context, t *testing.T, up signalUpstream) (*lineSession, []int) {
	t.Helper()
	s := startLineSession(ctx, t, mcpwrapEnv(t, `{}`), mcpwrapPath, wrapArgs("signals", up.command(t)...)...)
	requireResult(t, s.Initialize(ctx, t))

	tree := descendants(t, s.proc.Cmd.Process.Pid)
	t.Cleanup(func() { killPIDs(tree) })
	require.NotEmpty(t, tree, "no upstream process below mcpwrap")

	if up.reportsPID {
		raw := s.Call(ctx, t, "pid", "tools/call", map[string]any{"name": fixturePIDTool, "arguments": map[string]any{}})
		var resp struct {
			Result struct {
				StructuredContent fixturePID `json:"structuredContent"`
			} `json:"result"`
		}
		require.NoError(t, json.Unmarshal(raw, &resp), "%s", raw)
		require.Contains(t, tree, resp.Result.StructuredContent.PID, "the upstream's pid is not below mcpwrap")
	}
	return s, tree
}

// command returns pid's command line, for failure messages.
func command(pid int) string {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return "gone"
	}
	return strings.TrimSpace(string(bytes.ReplaceAll(raw, []byte{0}, []byte{' '})))
}
