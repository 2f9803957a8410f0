package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSlowClientKeepsMemoryBounded has the upstream stream 1 GiB of
// notifications to a client that stops reading: backpressure must stall the
// upstream rather than let mcpwrap buffer, so mcpwrap's RSS stays small.
func TestSlowClientKeepsMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("streams a lot of data")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := startLineSession(ctx, t, mcpwrapEnv(t, `{}`), mcpwrapPath, wrapArgs("flood", mcpwrapPath, "demo-server")...)
	s.Initialize(ctx, t)
	s.Call(ctx, t, 1, "logging/setLevel", map[string]any{"level": "debug"})

	// 16384 notifications of 64 KiB: 1 GiB. Nobody reads them from here on.
	s.Send(t, map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call",
		"params": map[string]any{"name": "flood", "arguments": map[string]any{"count": 16384, "bytes": 64 << 10}}})

	pid := s.proc.Cmd.Process.Pid
	peak := 0
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	window := time.After(3 * time.Second) // the upstream pushes against the stalled client meanwhile
sampling:
	for {
		select {
		case <-tick.C:
			rss, err := procStatusKiB(pid, "VmRSS:")
			require.NoError(t, err)
			peak = max(peak, rss)
		case <-window:
			break sampling
		}
	}
	hwm, err := procStatusKiB(pid, "VmHWM:")
	require.NoError(t, err)
	t.Logf("mcpwrap RSS while stalled: peak sampled %d KiB, high-water mark %d KiB", peak, hwm)
	assert.Less(t, hwm, 64<<10, "mcpwrap's peak RSS must stay under 64 MiB")
	assert.Less(t, len(s.All()), 64, "the client read almost nothing: the stream was stalled, not buffered")
}
