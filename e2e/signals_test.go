package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	// shutdownBudget is how long mcpwrap may take to exit after SIGTERM or SIGINT, whatever its
	// upstream does (close stdin, short grace, SIGTERM, SIGKILL to its process group).
	shutdownBudget = 3 * time.Second
	// orphanGrace is how long an upstream may outlive a SIGKILLed mcpwrap: the kernel's
	// parent-death signal is asynchronous, so allow a moment, but nothing like a timeout.
	orphanGrace = 2 * time.Second
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
