package e2e

import (
	"context"
	"encoding/json"
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
	initResp := decodeResponse(t, s.Initialize(ctx, t))
	require.Nil(t, initResp.Error, "initialize failed")
	var initResult struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	require.NoError(t, json.Unmarshal(initResp.Result, &initResult))
	require.Equal(t, protocolVersionInitialize, initResult.ProtocolVersion)
	setLevel := decodeResponse(t, s.Call(ctx, t, 1, "logging/setLevel", map[string]any{"level": "debug"}))
	require.Nil(t, setLevel.Error, "logging/setLevel failed: the flood's notifications would never be sent")
	require.JSONEq(t, `{}`, string(setLevel.Result))

	// 16384 notifications of 64 KiB: 1 GiB.
	const count, size = 16384, 64 << 10
	s.Send(t, map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call",
		"params": map[string]any{"name": "flood", "arguments": map[string]any{"count": count, "bytes": size}}})

	// The flood has started once its first notification reaches the client. Nobody reads from
	// here on.
	awaitFlood(ctx, t, s, size)

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

// awaitFlood reads s until the first flood notification (a notifications/message whose data is
// size bytes) arrives; it fails the test if the flood's call is answered (with an error, or done)
// first, or nothing comes.
func awaitFlood(ctx context.Context, t *testing.T, s *lineSession, size int) {
	t.Helper()
	for {
		select {
		case line, ok := <-s.lines:
			require.True(t, ok, "stdout closed before the flood started")
			var msg struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Params struct {
					Data string `json:"data"`
				} `json:"params"`
			}
			require.NoError(t, json.Unmarshal(line, &msg), "%.200s", line)
			if msg.Method == "notifications/message" && len(msg.Params.Data) == size {
				return
			}
			require.NotEqual(t, "2", string(msg.ID), "the flood call was answered before any notification: %.500s", line)
		case <-ctx.Done():
			require.FailNow(t, "the flood never started", "no notification: %v", ctx.Err())
		}
	}
}
