package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/mcpwrap/mcpwrap/internal/state"
)

// Backend is one store's shared storage (a directory, a database), as
// [MakeBackend] returns it for one test.
type Backend struct {
	// Open returns a new handle on the storage, standing for a process of
	// its own: handles share nothing but the storage. The test releases
	// it (t.Cleanup) when it needs to.
	Open func(t *testing.T) state.Store
	// Corrupt replaces the named server's stored document with doc, which
	// is valid JSON but no valid document, bypassing the store.
	Corrupt func(t *testing.T, server string, doc []byte)
}

// MakeBackend returns new, empty storage for one test.
type MakeBackend func(t *testing.T) Backend

// WatchTimeout bounds the wait for a Watch call in the suite: far above any
// store's delay, so a busy machine does not fail it.
const WatchTimeout = 20 * time.Second

// Run runs the conformance suite of [state.Store] against the stores mk
// makes, each case on storage of its own: an empty store, a round trip of
// every field, no lost update under concurrent Update from many handles, an
// fn error that writes nothing, Watch called for another handle's write
// and ending with its context, WatchAll called for another handle's write
// to any server and ending with its context and its goroutines, and a
// corrupt document that fails closed.
func Run(t *testing.T, mk MakeBackend) {
	cases := []struct {
		name string
		fn   func(t *testing.T, b Backend)
	}{
		{name: "Empty", fn: testEmpty},
		{name: "RoundTrip", fn: testRoundTrip},
		{name: "EmptiedServerIsForgotten", fn: testEmptied},
		{name: "LoadIsTheCallersOwn", fn: testOwnSnapshot},
		{name: "FnErrorWritesNothing", fn: testFnError},
		{name: "NoLostUpdate", fn: testNoLostUpdate},
		{name: "WatchSeesAnotherHandlesWrite", fn: testWatch},
		{name: "WatchEndsWithItsContext", fn: testWatchEnds},
		{name: "WatchAllSeesAnotherHandlesWrites", fn: testWatchAll},
		{name: "WatchAllEndsWithItsContext", fn: testWatchAllEnds},
		{name: "CorruptFailsClosed", fn: testCorrupt},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.fn(t, mk(t)) })
	}
}

// Names that stores must keep apart and give back as they are.
var names = []string{"github", "Git Hub", "a/b", "../x", "ünïcode", "x.json", "with\"quote"}

func sample(tool string) *state.Server {
	def := json.RawMessage(fmt.Sprintf(`{"name":%q,"description":"d","inputSchema":{"type":"object"}}`, tool))
	seen := time.Date(2026, 7, 28, 10, 0, 0, 0, time.UTC)
	srv := &state.Server{Catalog: &state.Catalog{SeenAt: seen, Tools: map[string]state.CatalogTool{
		tool:    {Definition: def, Hash: "sha256:1"},
		"other": {Definition: json.RawMessage(`{"name":"other"}`), Hash: "sha256:2"},
	}}}
	srv.Disable("zeta")
	srv.Disable("alpha")
	srv.Approve(tool, state.Approval{ApprovedAt: seen, Hash: "sha256:1", Definition: def})
	srv.Approve("gone", state.Approval{ApprovedAt: seen, Hash: "sha256:3", Definition: json.RawMessage(`{"name":"gone"}`)})
	return srv
}

// requireSame asserts that got is the state want, compared as documents:
// stores may re-indent definitions.
func requireSame(t *testing.T, server string, want, got *state.Server) {
	t.Helper()
	w, err := state.Marshal(server, want)
	require.NoError(t, err)
	g, err := state.Marshal(server, got)
	require.NoError(t, err)
	require.Equal(t, string(w), string(g))
}

func set(t *testing.T, s state.Store, server string, want *state.Server) {
	t.Helper()
	require.NoError(t, s.Update(t.Context(), server, func(srv *state.Server) error {
		*srv = *want
		return nil
	}))
}

func testEmpty(t *testing.T, b Backend) {
	s := b.Open(t)
	srv, err := s.Load(t.Context(), "nothing")
	require.NoError(t, err)
	require.NotNil(t, srv)
	assert.True(t, srv.Empty())
	list, err := s.Servers(t.Context())
	require.NoError(t, err)
	assert.Empty(t, list)
}

func testRoundTrip(t *testing.T, b Backend) {
	writer, reader := b.Open(t), b.Open(t)
	for i, name := range names {
		set(t, writer, name, sample(fmt.Sprintf("tool-%d", i)))
	}
	for i, name := range names {
		got, err := reader.Load(t.Context(), name)
		require.NoError(t, err, name)
		requireSame(t, name, sample(fmt.Sprintf("tool-%d", i)), got)
	}
	list, err := reader.Servers(t.Context())
	require.NoError(t, err)
	want := append([]string(nil), names...)
	slices.Sort(want)
	assert.Equal(t, want, list)
}

func testEmptied(t *testing.T, b Backend) {
	s := b.Open(t)
	set(t, s, "a", sample("t"))
	set(t, s, "b", sample("t"))
	set(t, s, "a", &state.Server{})
	list, err := s.Servers(t.Context())
	require.NoError(t, err)
	assert.Equal(t, []string{"b"}, list)
	srv, err := b.Open(t).Load(t.Context(), "a")
	require.NoError(t, err)
	assert.True(t, srv.Empty())
}

func testOwnSnapshot(t *testing.T, b Backend) {
	s := b.Open(t)
	set(t, s, "a", sample("t"))
	srv, err := s.Load(t.Context(), "a")
	require.NoError(t, err)
	srv.Disable("mine")
	srv.Catalog.Tools["mine"] = state.CatalogTool{Hash: "x"}
	again, err := s.Load(t.Context(), "a")
	require.NoError(t, err)
	requireSame(t, "a", sample("t"), again)
}

func testFnError(t *testing.T, b Backend) {
	s := b.Open(t)
	set(t, s, "a", sample("t"))
	boom := errors.New("boom")
	for _, server := range []string{"a", "new"} {
		err := s.Update(t.Context(), server, func(srv *state.Server) error {
			srv.Disable("written")
			srv.Catalog = nil
			return boom
		})
		require.Equal(t, boom, err, "Update returns fn's error unchanged")
	}
	got, err := b.Open(t).Load(t.Context(), "a")
	require.NoError(t, err)
	requireSame(t, "a", sample("t"), got)
	list, err := s.Servers(t.Context())
	require.NoError(t, err)
	assert.Equal(t, []string{"a"}, list, "a failed first update leaves no trace")
}

// Writers and updates of NoLostUpdate: every writer has a handle of its own.
const (
	writers          = 8
	updatesPerWriter = 12
)

func testNoLostUpdate(t *testing.T, b Backend) {
	handles := make([]state.Store, writers)
	for i := range handles {
		handles[i] = b.Open(t)
	}
	// Half the updates enable a tool disabled beforehand, half disable one.
	set(t, handles[0], "s", func() *state.Server {
		srv := &state.Server{}
		for w := range writers {
			for u := 0; u < updatesPerWriter; u += 2 {
				srv.Disable(fmt.Sprintf("t-%d-%d", w, u))
			}
		}
		return srv
	}())
	var wg sync.WaitGroup
	errs := make(chan error, writers*updatesPerWriter)
	for w, h := range handles {
		for u := range updatesPerWriter {
			wg.Go(func() {
				errs <- h.Update(t.Context(), "s", func(srv *state.Server) error {
					tool := fmt.Sprintf("t-%d-%d", w, u)
					if u%2 == 0 {
						srv.Enable(tool)
					} else {
						srv.Disable(tool)
					}
					return nil
				})
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	got, err := b.Open(t).Load(t.Context(), "s")
	require.NoError(t, err)
	var want []string
	for w := range writers {
		for u := 1; u < updatesPerWriter; u += 2 {
			want = append(want, fmt.Sprintf("t-%d-%d", w, u))
		}
	}
	slices.Sort(want)
	assert.Equal(t, want, got.Disabled)
}

// watch runs s.Watch on server in the background until the test ends, and
// returns a channel that receives once per call.
func watch(t *testing.T, s state.Store, server string) <-chan struct{} {
	calls := make(chan struct{}, 100)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Watch(ctx, server, func() { calls <- struct{}{} })
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return calls
}

func waitCall(t *testing.T, calls <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-calls:
	case <-time.After(WatchTimeout):
		t.Fatalf("no Watch call %s within %s", what, WatchTimeout)
	}
}

func testWatch(t *testing.T, b Backend) {
	watcher, writer := b.Open(t), b.Open(t)
	calls := watch(t, watcher, "s")
	waitCall(t, calls, "once the watch began")
	set(t, writer, "s", sample("t"))
	awaitSeen(t, watcher, calls, "s", sample("t"))
}

// awaitSeen waits for a call after which watcher loads want as server's
// state: calls may come where nothing changed; the change is seen by one.
func awaitSeen(t *testing.T, watcher state.Store, calls <-chan struct{}, server string, want *state.Server) {
	t.Helper()
	deadline := time.After(WatchTimeout)
	for {
		select {
		case <-calls:
		case <-deadline:
			t.Fatalf("no watch call saw another handle's write to %q within %s", server, WatchTimeout)
		}
		got, err := watcher.Load(t.Context(), server)
		require.NoError(t, err)
		if !got.Empty() {
			requireSame(t, server, want, got)
			return
		}
	}
}

// watchAll runs s.WatchAll in the background until the test ends, and
// returns a channel that receives once per call.
func watchAll(t *testing.T, s state.Store) <-chan struct{} {
	calls := make(chan struct{}, 100)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.WatchAll(ctx, func() { calls <- struct{}{} })
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return calls
}

// testWatchAll: one WatchAll is called for another handle's first write
// to a server, its replacement and its removal, whatever the server.
func testWatchAll(t *testing.T, b Backend) {
	watcher, writer := b.Open(t), b.Open(t)
	set(t, writer, "before", sample("t"))
	calls := watchAll(t, watcher)
	waitCall(t, calls, "once the watch began")
	for i, name := range names {
		set(t, writer, name, sample("t"))
		awaitSeen(t, watcher, calls, name, sample("t"))
		if i == 0 {
			changed := sample("changed")
			set(t, writer, name, changed)
			awaitSeen(t, watcher, calls, name, changed)
		}
	}
	set(t, writer, "before", &state.Server{})
	deadline := time.After(WatchTimeout)
	for {
		select {
		case <-calls:
		case <-deadline:
			t.Fatalf("no WatchAll call saw another handle empty a server within %s", WatchTimeout)
		}
		list, err := watcher.Servers(t.Context())
		require.NoError(t, err)
		if !slices.Contains(list, "before") {
			return
		}
	}
}

// testWatchAllEnds: once its context is done, WatchAll returns, and every
// goroutine it started has ended. Those the handle owns for all its
// watches (a notification connection) are started by a Watch beforehand.
func testWatchAllEnds(t *testing.T, b Backend) {
	s, writer := b.Open(t), b.Open(t)
	calls := watch(t, s, "warm")
	waitCall(t, calls, "once the watch began")
	set(t, writer, "warm", sample("t"))
	awaitSeen(t, s, calls, "warm", sample("t"))
	before := goleak.IgnoreCurrent()

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	first := make(chan struct{}, 1)
	go func() {
		defer close(done)
		s.WatchAll(ctx, func() { signal(first) })
	}()
	waitCall(t, first, "once the watch began")
	cancel()
	select {
	case <-done:
	case <-time.After(WatchTimeout):
		t.Fatal("WatchAll did not return once its context was done")
	}
	goleak.VerifyNone(t, before)
}

func testWatchEnds(t *testing.T, b Backend) {
	s := b.Open(t)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	first := make(chan struct{}, 1)
	go func() {
		defer close(done)
		s.Watch(ctx, "s", func() { signal(first) })
	}()
	waitCall(t, first, "once the watch began")
	cancel()
	select {
	case <-done:
	case <-time.After(WatchTimeout):
		t.Fatal("Watch did not return once its context was done")
	}
}

func testCorrupt(t *testing.T, b Backend) {
	docs := map[string]string{
		"newer version":  `{"server":%q,"version":99}`,
		"unknown field":  `{"server":%q,"version":2,"disabled":["a"],"surprise":true}`,
		"wrong type":     `{"server":%q,"version":2,"disabled":"a"}`,
		"another server": `{"server":"not-%s","version":2,"disabled":["a"]}`,
	}
	s := b.Open(t)
	for what, format := range docs {
		t.Run(what, func(t *testing.T) {
			server := "corrupt " + what
			set(t, s, server, sample("t"))
			doc := fmt.Sprintf(format, server)
			b.Corrupt(t, server, []byte(doc))

			_, err := s.Load(t.Context(), server)
			require.ErrorIs(t, err, state.ErrCorrupt)
			var corrupt *state.CorruptError
			require.ErrorAs(t, err, &corrupt)
			assert.Equal(t, server, corrupt.Server)

			called := false
			err = s.Update(t.Context(), server, func(*state.Server) error {
				called = true
				return nil
			})
			require.ErrorIs(t, err, state.ErrCorrupt)
			assert.False(t, called, "fn is not called on a corrupt document")
			_, err = b.Open(t).Load(t.Context(), server)
			require.ErrorIs(t, err, state.ErrCorrupt, "the document is left as it was")
		})
	}
}
