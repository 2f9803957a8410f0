package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/middleware"
)

// TestHeldCallsKeepMemoryBounded sends 400 tool calls of 2 MiB while mcpwrap's catalog load never
// finishes (the upstream never answers tools/list), so that every call must wait for the catalog:
// mcpwrap holds only as many as max_held_requests and max_held_bytes allow and answers the rest at
// once with a retryable error, so its RSS stays small; and every call gets exactly one answer,
// the held ones at the latest when the client leaves.
func TestHeldCallsKeepMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("sends 800 MiB")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := startLineSession(ctx, t, mcpwrapEnv(t, `{}`), mcpwrapPath, wrapArgs("hang", fixtureCommand(t, fixtureHangToolsList)...)...)
	initResp := decodeResponse(t, s.Initialize(ctx, t))
	require.Nil(t, initResp.Error, "initialize failed")

	const calls, size = 400, 2 << 20
	pad := strings.Repeat("x", size)
	line := func(id int) []byte {
		return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"%s","arguments":{"pad":"%s"}}}`+"\n", id, fixturePIDTool, pad)
	}
	// With the default bounds, these many fit; the rest are refused at once.
	held := min(middleware.DefaultMaxHeldRequests, middleware.DefaultMaxHeldBytes/len(line(calls)))
	require.Less(t, held, calls)

	sent := make(chan error, 1)
	go func() {
		for id := 1; id <= calls; id++ {
			if _, err := s.proc.Stdin.Write(line(id)); err != nil {
				sent <- err
				return
			}
		}
		sent <- nil
	}()

	answers := map[string]int{}
	refused := 0
	read := func(line []byte) {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Result *toolResult     `json:"result"`
		}
		require.NoError(t, json.Unmarshal(line, &msg), "%.300s", line)
		if msg.ID == nil || msg.Method != "" {
			return // a notification
		}
		answers[string(msg.ID)]++
		if msg.Result != nil && msg.Result.IsError && msg.Result.Meta["retryable"] == true &&
			msg.Result.Meta["status"] == "too_many_waiting" {
			refused++
		}
	}
	// The refusals come at once, while the calls are still being sent.
	quick := time.After(30 * time.Second)
collect:
	for refused < calls-held {
		select {
		case l, ok := <-s.lines:
			require.True(t, ok, "stdout closed")
			read(l)
		case <-quick:
			break collect
		}
	}
	require.NoError(t, <-sent)
	hwm, err := procStatusKiB(s.proc.Cmd.Process.Pid, "VmHWM:")
	require.NoError(t, err)
	t.Logf("%d calls of %d bytes, %d refused at once; mcpwrap's peak RSS %d KiB", calls, len(line(1)), refused, hwm)
	assert.Less(t, hwm, 256<<10, "mcpwrap's peak RSS must stay under 256 MiB")
	require.Equal(t, calls-held, refused, "the calls past the bounds are refused at once, retryably")

	// The held calls are answered once the client leaves (their wait ends with the session).
	all := s.CloseAndDrain(ctx, t)
	answers, refused = map[string]int{}, 0
	for _, l := range all {
		read(l)
	}
	for id := 1; id <= calls; id++ {
		assert.Equal(t, 1, answers[fmt.Sprint(id)], "answers to call %d", id)
	}
}
