package pgstore

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/internal/pgtest"
	"github.com/mcpwrap/mcpwrap/internal/state"
	"github.com/mcpwrap/mcpwrap/resilience"
)

// TestDocLocksAcrossReplicas: a sign-in lock taken by one replica (its own
// Store and pool) is not granted to another until it is released, and a
// lock of another name or document is independent.
func TestDocLocksAcrossReplicas(t *testing.T) {
	dsn := newDB(t)
	a, b := open(t, dsn, Options{}).Doc("signins"), open(t, dsn, Options{}).Doc("signins")

	unlock, ok, err := a.TryLock(t.Context(), "refresh-1.lock")
	require.NoError(t, err)
	require.True(t, ok)
	_, ok, err = b.TryLock(t.Context(), "refresh-1.lock")
	require.NoError(t, err)
	assert.False(t, ok, "held by the other replica")
	other, ok, err := b.TryLock(t.Context(), "refresh-2.lock")
	require.NoError(t, err)
	assert.True(t, ok, "another lock name is free")
	other()
	elsewhere, ok, err := open(t, dsn, Options{}).Doc("registrations").TryLock(t.Context(), "refresh-1.lock")
	require.NoError(t, err)
	assert.True(t, ok, "another document's lock is free")
	elsewhere()

	unlock()
	again, err := b.Lock(t.Context(), "refresh-1.lock")
	require.NoError(t, err, "released: the waiting replica gets it")
	again()
}

// TestDocUpdateAndGeneration: an update is seen by another replica, moves
// the generation, and an fn error writes nothing.
func TestDocUpdateAndGeneration(t *testing.T) {
	dsn := newDB(t)
	a, b := open(t, dsn, Options{}).Doc("registrations"), open(t, dsn, Options{}).Doc("registrations")
	g0, err := b.Generation(t.Context())
	require.NoError(t, err)
	assert.Empty(t, g0)
	got, err := b.Load(t.Context())
	require.NoError(t, err)
	assert.Nil(t, got)

	require.NoError(t, a.Update(t.Context(), func(old []byte) ([]byte, error) {
		assert.Nil(t, old)
		return []byte(`{"version":1}`), nil
	}))
	got, err = b.Load(t.Context())
	require.NoError(t, err)
	assert.Equal(t, `{"version":1}`, string(got))
	g1, err := b.Generation(t.Context())
	require.NoError(t, err)
	assert.NotEqual(t, g0, g1)

	require.Error(t, a.Update(t.Context(), func([]byte) ([]byte, error) { return nil, assert.AnError }))
	got, err = b.Load(t.Context())
	require.NoError(t, err)
	assert.Equal(t, `{"version":1}`, string(got), "an fn error writes nothing")
	g2, err := b.Generation(t.Context())
	require.NoError(t, err)
	assert.Equal(t, g1, g2)
	assert.Equal(t, "PostgreSQL "+a.s.where, a.String())
}

// watchDoc runs d.Watch until the test ends; each call loads the document
// and sends what it read on the returned channel.
func watchDoc(t *testing.T, d *Doc) <-chan string {
	t.Helper()
	seen := make(chan string, 64)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		d.Watch(ctx, func() {
			doc, err := d.Load(ctx)
			if err != nil {
				doc = []byte("error: " + err.Error())
			}
			select {
			case seen <- string(doc):
			case <-ctx.Done():
			}
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	return seen
}

// waitDoc waits until seen delivers want.
func waitDoc(t *testing.T, seen <-chan string, want, why string) {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case got := <-seen:
			if got == want {
				return
			}
		case <-timeout:
			t.Fatalf("%s: never saw %q", why, want)
		}
	}
}

// TestDocWatchSeesAnotherReplicasUpdate: an Update of a sign-in document by
// one replica calls the Watch of another back, announced by NOTIFY on the
// Store's one notification connection: Doc does not poll, so without the
// notification the second write would never be seen (the first may be
// found by the resync that follows the connection's start).
func TestDocWatchSeesAnotherReplicasUpdate(t *testing.T) {
	dsn := newDB(t)
	writer := open(t, dsn, Options{}).Doc("signins")
	reader := open(t, dsn, Options{}).Doc("signins")
	seen := watchDoc(t, reader)
	waitDoc(t, seen, "", "the watch begins with a call")
	waitListening(t, cluster, dsn)

	for _, doc := range []string{`{"v":1}`, `{"v":2}`} {
		require.NoError(t, writer.Update(t.Context(), func([]byte) ([]byte, error) { return []byte(doc), nil }))
		waitDoc(t, seen, doc, "the other replica's update is announced")
	}
}

// TestDocWatchResyncsAfterAnOutage: an update made while the notification
// connection was down (its NOTIFY lost) is found after the reconnect, which
// calls every watch back; the loss itself calls back once, and the Load
// then reports the database unavailable.
func TestDocWatchResyncsAfterAnOutage(t *testing.T) {
	c := pgtest.Own(t)
	t.Setenv("PGPASSFILE", c.PassFile)
	dsn, err := c.CreateDB(t.Context())
	require.NoError(t, err)
	timer := &heldTimer{fire: make(chan time.Time), started: make(chan struct{}, 1)}
	reader := open(t, dsn, Options{NewTimer: func() resilience.Timer { return timer }})
	writer := open(t, dsn, Options{}).Doc("signins")
	require.NoError(t, writer.Update(t.Context(), func([]byte) ([]byte, error) { return []byte(`{"v":1}`), nil }))
	seen := watchDoc(t, reader.Doc("signins"))
	waitDoc(t, seen, `{"v":1}`, "the watch begins with a call")
	waitListening(t, c, dsn)

	require.NoError(t, c.Stop())
	timeout := time.After(20 * time.Second)
	for lost := false; !lost; {
		select {
		case got := <-seen:
			lost = strings.HasPrefix(got, "error: ")
			if lost {
				assert.Contains(t, got, state.ErrUnavailable.Error(), "the loss calls back; the load says why")
			}
		case <-timeout:
			t.Fatal("the lost connection never called the watch back")
		}
	}
	<-timer.started // the listener waits to reconnect
	require.NoError(t, c.Start())
	// Written while nobody listens: its NOTIFY reaches no one. The writer's
	// pool drops the connections the stop broke as it meets them.
	require.Eventually(t, func() bool {
		return writer.Update(t.Context(), func([]byte) ([]byte, error) { return []byte(`{"v":2}`), nil }) == nil
	}, 20*time.Second, 10*time.Millisecond)
	timer.fire <- time.Now()
	waitDoc(t, seen, `{"v":2}`, "the reconnect calls the watch back")
}
