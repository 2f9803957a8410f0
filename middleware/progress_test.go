package middleware

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/internal/framing"
	"github.com/mcpwrap/mcpwrap/internal/syncbuf"
)

// useProgressTimers makes every Session's progress timers c's until the
// test ends.
func useProgressTimers(t *testing.T, c *fakeClock) {
	t.Helper()
	arm := armFunc(c.afterFunc)
	progressTimers.Store(&arm)
	t.Cleanup(func() { progressTimers.Store(nil) })
}

// TestSlowStartLogsProgress: while the upstream has not answered its
// handshake, and then its tool list, the load logs at info every
// progressInterval what it waits for and for how long; once answered, it
// stops.
func TestSlowStartLogsProgress(t *testing.T) {
	clock := &fakeClock{}
	useProgressTimers(t, clock)
	logs := &syncbuf.Buffer{}
	client, clientConn := newPeer(t, 0)
	up, upConn := newPeer(t, 0)
	s := &Session{Name: "slow", Client: clientConn, Dial: dialOnce(upConn), Tools: &fakePolicy{status: map[string]string{}},
		Logger: slog.New(slog.NewTextHandler(logs, nil))}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go s.Run(ctx)

	client.send(clientInitialize + "\n")
	hs, err := framing.Peek(up.next()) // the upstream takes its time
	require.NoError(t, err)
	require.Equal(t, 1, clock.fire(), "one progress timer armed")
	require.Equal(t, 1, clock.fire(), "re-armed")
	assert.Contains(t, logs.String(), `level=INFO msg="still waiting for the server's handshake" waited_ms=5000 attempt=1`)
	assert.Contains(t, logs.String(), `msg="still waiting for the server's handshake" waited_ms=10000 attempt=1`)

	up.send(`{"jsonrpc":"2.0","id":` + string(hs.ID) + `,"result":` + initializeResult + "}\n")
	client.next()
	up.next() // notifications/initialized
	list, err := framing.Peek(up.next())
	require.NoError(t, err)
	require.Equal(t, "tools/list", list.Method)
	require.Eventually(t, func() bool { return clock.fire() == 1 }, timeout, tick, "the tool list's progress timer")
	assert.Contains(t, logs.String(), `msg="still waiting for the server's tool list" waited_ms=5000 attempt=1`)

	up.send(`{"jsonrpc":"2.0","id":` + string(list.ID) + `,"result":{"tools":[]}}` + "\n")
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "upstream loaded") }, timeout, tick)
	assert.Zero(t, clock.fire(), "no progress once loaded")
	assert.Equal(t, 1, strings.Count(logs.String(), "tool list\" waited_ms"), "nothing after the answer")
}
