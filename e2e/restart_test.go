package e2e

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests hold mcpwrap to "a restart is not a failure the agent must handle": a call sent
// right after a crash's tools/list_changed waits for the restarted upstream (up to ready_timeout)
// instead of being told to retry.

// restartDelay is how long the slow-restart fixture takes to serve again after a crash.
const restartDelay = 4 * time.Second

// startSlowRestart connects a client to mcpwrap wrapping the slow-restart fixture, with
// readyTimeout, and returns the session, the fixture's first pid and a channel signalled on
// tools/list_changed.
func startSlowRestart(ctx context.Context, t *testing.T, readyTimeout time.Duration) (*mcp.ClientSession, int, chan struct{}) {
	t.Helper()
	changed, signal := signalOn()
	client := newClient(&mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { signal() },
	})
	starts := filepath.Join(t.TempDir(), "starts")
	session := sidecar{
		Name:         "slowrestart",
		ReadyTimeout: readyTimeout,
		Upstream:     append([]string{"--"}, append(fixtureCommand(t, fixtureSlowRestart), starts, restartDelay.String())...),
	}.connect(ctx, t, client)
	return session, fixturePIDOf(ctx, t, session), changed
}

// TestCallDuringRestartWaitsForIt: a call sent right after the crash's tools/list_changed is held
// until the restarted upstream is ready, then forwarded, and succeeds.
func TestCallDuringRestartWaitsForIt(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	session, first, changed := startSlowRestart(ctx, t, slowReadyTimeout)

	require.NoError(t, syscall.Kill(first, syscall.SIGKILL))
	awaitChange(ctx, t, changed, "tools/list_changed after the crash")
	start := time.Now()
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: fixturePIDTool})
	require.NoError(t, err)
	require.False(t, res.IsError, "the call must wait for the restart, not fail: %s", contentText(res.Content))
	assert.NotEqual(t, first, fixturePIDOf(ctx, t, session), "the restarted upstream answers")
	t.Logf("the call waited %s for the restart", time.Since(start).Round(time.Millisecond))
}

// TestCallPastReadyTimeoutDuringRestart: a call that waits for a restart longer than
// ready_timeout is answered with the status, which says the server is restarting and counts its
// attempts.
func TestCallPastReadyTimeoutDuringRestart(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	const readyTimeout = 1500 * time.Millisecond
	session, first, changed := startSlowRestart(ctx, t, readyTimeout)

	require.NoError(t, syscall.Kill(first, syscall.SIGKILL))
	awaitChange(ctx, t, changed, "tools/list_changed after the crash")
	start := time.Now()
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: fixturePIDTool})
	require.NoError(t, err)
	waited := time.Since(start)
	meta := requireStatusResult(t, res, "transient", "Server 'slowrestart' is restarting after a crash (restart 1 of 5")
	assert.Positive(t, meta.Attempts, "_meta.attempts")
	assert.EqualValues(t, 1, res.Meta["restart"], "_meta.restart")
	assert.GreaterOrEqual(t, waited, readyTimeout, "the call waited for the restart first")
	t.Logf("answered after %s: %s", waited.Round(time.Millisecond), contentText(res.Content))
}
