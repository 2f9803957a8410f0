package pgstore

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/internal/gate"
	"github.com/mcpwrap/mcpwrap/internal/pgtest"
	"github.com/mcpwrap/mcpwrap/internal/policy"
	"github.com/mcpwrap/mcpwrap/internal/state"
	"github.com/mcpwrap/mcpwrap/middleware"
	"github.com/mcpwrap/mcpwrap/resilience"
)

// heldTimer is a reconnect timer that fires only when the test sends on
// fire; started receives once per Start.
type heldTimer struct {
	fire    chan time.Time
	started chan struct{}
}

func (h *heldTimer) Start(time.Duration) {
	select {
	case h.started <- struct{}{}:
	default:
	}
}
func (h *heldTimer) Stop()               {}
func (h *heldTimer) C() <-chan time.Time { return h.fire }

func def(name, desc string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"name": name, "description": desc, "inputSchema": map[string]any{"type": "object"}})
	return b
}

func verdicts(avail []middleware.Availability) []string {
	out := make([]string, len(avail))
	for i, a := range avail {
		out[i] = a.Status
		if a.Status == "" {
			out[i] = "callable"
		}
	}
	return out
}

// watchGate runs g.Watch until the test ends.
func watchGate(t *testing.T, g *gate.Gate) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		g.Watch(ctx, func() {})
	}()
	t.Cleanup(func() { cancel(); <-done })
}

// Stopping PostgreSQL mid-run: a gate that loaded its server's state keeps
// judging by it and says the store is unavailable; a server never loaded
// fails closed; writes fail with ErrUnavailable; once the database is back
// and the notification connection reconnects (held here until the test
// lets the backoff timer fire), every watcher resyncs with no change
// announced: the never-loaded server unlocks, the store error clears.
func TestDatabaseOutage(t *testing.T) {
	c := pgtest.Own(t)
	t.Setenv("PGPASSFILE", c.PassFile)
	dsn, err := c.CreateDB(t.Context())
	require.NoError(t, err)
	timer := &heldTimer{fire: make(chan time.Time), started: make(chan struct{}, 1)}
	s := open(t, dsn, Options{NewTimer: func() resilience.Timer { return timer }})
	writer := open(t, dsn, Options{})
	require.NoError(t, writer.Update(t.Context(), "known", func(srv *state.Server) error {
		srv.Disable("write")
		return nil
	}))
	eval, err := policy.NewEvaluator(policy.Options{Approval: policy.ApprovalOff})
	require.NoError(t, err)
	catalog := []json.RawMessage{def("read", "reads"), def("write", "writes")}
	known := gate.New("known", eval, s, nil)
	known.Reload(t.Context())
	watchGate(t, known)
	waitListening(t, c, dsn)
	require.Equal(t, []string{"callable", "disabled_by_user"}, verdicts(known.Evaluate(catalog)))

	require.NoError(t, c.Stop())
	require.Eventually(t, func() bool { return known.StoreErr() != nil }, 20*time.Second, 10*time.Millisecond,
		"the lost connection makes the gate look again")
	assert.ErrorIs(t, known.StoreErr(), state.ErrUnavailable)
	assert.Equal(t, []string{"callable", "disabled_by_user"}, verdicts(known.Evaluate(catalog)),
		"the state loaded last still decides")
	<-timer.started // the listener waits to reconnect

	fresh := gate.New("fresh", eval, s, nil) // a server first seen during the outage
	fresh.Reload(t.Context())
	watchGate(t, fresh)
	assert.Equal(t, []string{"disabled_unknown", "disabled_unknown"}, verdicts(fresh.Evaluate(catalog)))
	err = writer.Update(t.Context(), "known", func(srv *state.Server) error { srv.Enable("write"); return nil })
	assert.ErrorIs(t, err, state.ErrUnavailable)

	require.NoError(t, c.Start())
	assert.Equal(t, []string{"disabled_unknown", "disabled_unknown"}, verdicts(fresh.Evaluate(catalog)),
		"nothing resyncs before the notification connection is back")
	timer.fire <- time.Now()
	require.Eventually(t, func() bool { return fresh.StoreErr() == nil && known.StoreErr() == nil }, 20*time.Second, 10*time.Millisecond,
		"the reconnect resyncs every watcher")
	assert.Equal(t, []string{"callable", "callable"}, verdicts(fresh.Evaluate(catalog)))

	require.NoError(t, writer.Update(t.Context(), "known", func(srv *state.Server) error { srv.Enable("write"); return nil }))
	require.Eventually(t, func() bool { return verdicts(known.Evaluate(catalog))[1] == "callable" }, 20*time.Second, 10*time.Millisecond,
		"changes flow again")
}
