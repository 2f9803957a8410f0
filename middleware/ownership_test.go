package middleware

import (
	"context"
	"log/slog"
	"testing"

	"github.com/mcpwrap/mcpwrap/internal/syncbuf"
	"github.com/mcpwrap/mcpwrap/resilience"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Sessions may share what their caller hands them (the --listen front gives
// every HTTP session the same settings): a Session reads its caller's
// values and never writes them, so sharing is safe under -race and every
// Session logs through its own logger.
func TestSessionsSharingRetrierCrashBudgetAndThrottleLeaveThemUnchanged(t *testing.T) {
	shared := &resilience.Retrier{} // no Logger: each Session supplies its own
	budget := &resilience.CrashBudget{}
	reconnect := &resilience.Throttle{}

	type run struct {
		client, up *peer
		session    *Session
		logs       *syncbuf.Buffer
		done       chan error
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runs := make([]*run, 2)
	for i := range runs {
		r := &run{logs: &syncbuf.Buffer{}, done: make(chan error, 1)}
		var clientConn, upConn Conn
		r.client, clientConn = newPeer(t, 0)
		r.up, upConn = newPeer(t, 0)
		r.session = &Session{Name: "fixture", Client: clientConn, Dial: dialOnce(upConn),
			Logger:  slog.New(slog.NewTextHandler(r.logs, nil)),
			Retrier: shared, CrashBudget: budget, Reconnect: reconnect}
		runs[i] = r
	}
	// Both start before either handshakes, so nothing orders their
	// initialisation: a write into a shared value is a data race.
	for _, r := range runs {
		go func() { r.done <- r.session.Run(ctx) }()
	}
	for _, r := range runs {
		handshake(t, r.client, r.up)
	}
	for _, r := range runs {
		r.client.closeSend()
		require.NoError(t, <-r.done)
	}

	assert.Equal(t, resilience.Retrier{}, *shared, "the caller's Retrier is unchanged")
	for i, r := range runs {
		assert.Same(t, shared, r.session.Retrier, "session %d keeps the caller's Retrier", i)
		assert.Same(t, budget, r.session.CrashBudget, "session %d keeps the caller's CrashBudget", i)
		assert.Same(t, reconnect, r.session.Reconnect, "session %d keeps the caller's Throttle", i)
		assert.Contains(t, r.logs.String(), "upstream loaded", "session %d's load is logged through its own logger", i)
	}
}

// A Session given no Retrier, CrashBudget or Throttle uses defaults of its
// own without filling in its caller's fields.
func TestSessionLeavesItsNilFieldsNil(t *testing.T) {
	h := start(t, 0)
	h.client.closeSend()
	require.NoError(t, <-h.done)
	assert.Nil(t, h.session.Retrier)
	assert.Nil(t, h.session.CrashBudget)
	assert.Nil(t, h.session.Reconnect)
}
