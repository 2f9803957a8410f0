package state

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// waitLimit bounds every wait for something that should happen promptly.
const waitLimit = 5 * time.Second

// watching is a Watch running in the background, observed through channels.
type watching struct {
	ready   chan string
	changes chan struct{}
	done    chan struct{}
	cancel  context.CancelFunc
}

// startWatch runs store.Watch of the server until the test ends. Set
// store.watch before.
func startWatch(t *testing.T, store *FileStore, server string) *watching {
	t.Helper()
	return startWatching(t, store, func(ctx context.Context, onChange func()) { store.Watch(ctx, server, onChange) })
}

// startWatchAll runs store.WatchAll until the test ends. Set store.watch
// before.
func startWatchAll(t *testing.T, store *FileStore) *watching {
	t.Helper()
	return startWatching(t, store, store.WatchAll)
}

// startWatching runs watch, one of store's watches, until the test ends.
func startWatching(t *testing.T, store *FileStore, watch func(ctx context.Context, onChange func())) *watching {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	w := &watching{
		ready:   make(chan string, 4),
		changes: make(chan struct{}, 64),
		done:    make(chan struct{}),
		cancel:  cancel,
	}
	store.watch.Ready = func(mode string) { w.ready <- mode }
	go func() {
		defer close(w.done)
		watch(ctx, func() { w.changes <- struct{}{} })
	}()
	t.Cleanup(func() {
		cancel()
		<-w.done
	})
	return w
}

func (w *watching) awaitReady(t *testing.T) string {
	t.Helper()
	select {
	case mode := <-w.ready:
		return mode
	case <-time.After(waitLimit):
		require.FailNow(t, "Watch did not start")
		return ""
	}
}

// awaitStart waits for Watch to observe the file and for the call it makes
// then, and returns the mode.
func (w *watching) awaitStart(t *testing.T) string {
	t.Helper()
	mode := w.awaitReady(t)
	w.awaitChange(t)
	return mode
}

func (w *watching) awaitChange(t *testing.T) {
	t.Helper()
	select {
	case <-w.changes:
	case <-time.After(waitLimit):
		require.FailNow(t, "Watch did not report the change")
	}
}

func disable(t *testing.T, store *FileStore, server, tool string) {
	t.Helper()
	require.NoError(t, store.Update(t.Context(), server, func(srv *Server) error {
		srv.Disable(tool)
		return nil
	}))
}

// watchModes are the two ways a Store watches its file.
var watchModes = []struct {
	name       string
	newWatcher func() (*fsnotify.Watcher, error)
	wantMode   string
}{
	{name: "notifications", newWatcher: fsnotify.NewWatcher, wantMode: "notify"},
	{
		name:       "polling when notifications fail",
		newWatcher: func() (*fsnotify.Watcher, error) { return nil, errors.New("no inotify here") },
		wantMode:   "poll",
	},
}

// fastWatchStore is a Store in a temp dir whose watch, in mode newWatcher,
// reacts within milliseconds.
func fastWatchStore(t *testing.T, newWatcher func() (*fsnotify.Watcher, error)) *FileStore {
	store := Open(t.TempDir(), nil)
	store.watch.Debounce = time.Millisecond
	store.watch.PollInterval = 5 * time.Millisecond
	store.watch.NewWatcher = newWatcher
	return store
}

func TestWatchNotices(t *testing.T) {
	for _, tt := range watchModes {
		t.Run(tt.name, func(t *testing.T) {
			store := fastWatchStore(t, tt.newWatcher)
			w := startWatch(t, store, "s")
			require.Equal(t, tt.wantMode, w.awaitStart(t))

			disable(t, store, "s", "first") // creates the file
			w.awaitChange(t)
			disable(t, store, "s", "second") // replaces it
			w.awaitChange(t)
		})
	}
}

// TestWatchIgnoresOtherFiles: a sidecar is not told of changes to other
// servers' state, which it would otherwise re-read for nothing.
func TestWatchIgnoresOtherFiles(t *testing.T) {
	for _, tt := range watchModes {
		t.Run(tt.name, func(t *testing.T) {
			store := fastWatchStore(t, tt.newWatcher)
			w := startWatch(t, store, "s")
			require.Equal(t, tt.wantMode, w.awaitStart(t))

			require.NoError(t, os.WriteFile(store.Dir()+"/unrelated.json", []byte("{}"), 0o600))
			for i := range 5 {
				disable(t, store, "other", fmt.Sprint("t", i))
			}
			disable(t, store, "s", "t")
			w.awaitChange(t)
			// Exactly one change: the lock and temporary files, the other
			// server's file and the unrelated file were filtered out.
			// Stopping Watch flushes nothing further.
			w.cancel()
			<-w.done
			assert.Empty(t, w.changes)
		})
	}
}

// TestWatchSeesVersion1FileMovedAside: moving aside a corrupt version 1
// file (which locks every server) changes every server's state.
func TestWatchSeesVersion1FileMovedAside(t *testing.T) {
	for _, tt := range watchModes {
		t.Run(tt.name, func(t *testing.T) {
			store := fastWatchStore(t, tt.newWatcher)
			legacy := filepath.Join(store.Dir(), LegacyFileName)
			require.NoError(t, os.WriteFile(legacy, []byte(`{"version": 1, "servers": {`), 0o600))
			_, err := store.Load(t.Context(), "s")
			require.ErrorIs(t, err, ErrCorrupt)
			w := startWatch(t, store, "s")
			require.Equal(t, tt.wantMode, w.awaitStart(t))

			require.NoError(t, os.Rename(legacy, legacy+".bad"))
			w.awaitChange(t)
			_, err = store.Load(t.Context(), "s")
			require.NoError(t, err)
		})
	}
}

// A caller loads the state, then starts Watch. A change made in between
// must still be reported, or the caller keeps its stale snapshot until some
// later change.
func TestWatchReportsChangeMadeBeforeItStarted(t *testing.T) {
	for _, tt := range watchModes {
		t.Run(tt.name, func(t *testing.T) {
			store := fastWatchStore(t, tt.newWatcher)
			_, err := store.Load(t.Context(), "s") // the caller's snapshot
			require.NoError(t, err)
			disable(t, store, "s", "t") // the change it has not seen

			w := startWatch(t, store, "s")
			require.Equal(t, tt.wantMode, w.awaitReady(t))
			w.awaitChange(t)
		})
	}
}

// TestWatchAllNoticesEveryServer: one WatchAll sees a write to any of 20
// servers, the first, a replacement and a removal, through one
// notification watcher (or none, polling), not one per server.
func TestWatchAllNoticesEveryServer(t *testing.T) {
	for _, tt := range watchModes {
		t.Run(tt.name, func(t *testing.T) {
			watchers := 0
			store := fastWatchStore(t, func() (*fsnotify.Watcher, error) {
				watchers++ // only WatchAll's goroutine calls it
				return tt.newWatcher()
			})
			const servers = 20
			for i := range servers - 1 {
				disable(t, store, fmt.Sprintf("s%02d", i), "t")
			}
			w := startWatchAll(t, store)
			require.Equal(t, tt.wantMode, w.awaitStart(t))

			last := fmt.Sprintf("s%02d", servers-1)
			disable(t, store, last, "first") // creates its file
			w.awaitChange(t)
			disable(t, store, last, "second") // replaces it
			w.awaitChange(t)
			require.NoError(t, store.Update(t.Context(), "s00", func(srv *Server) error {
				srv.Enable("t") // empties it: its file is removed
				return nil
			}))
			w.awaitChange(t)
			w.cancel()
			<-w.done
			assert.Equal(t, 1, watchers)
		})
	}
}

// TestWatchAllIgnoresOtherFiles: lock and temporary files, and files that
// are no state, do not call WatchAll back.
func TestWatchAllIgnoresOtherFiles(t *testing.T) {
	for _, tt := range watchModes {
		t.Run(tt.name, func(t *testing.T) {
			store := fastWatchStore(t, tt.newWatcher)
			w := startWatchAll(t, store)
			require.Equal(t, tt.wantMode, w.awaitStart(t))

			servers := filepath.Join(store.Dir(), ServersDir)
			require.NoError(t, os.WriteFile(store.Dir()+"/unrelated.json", []byte("{}"), 0o600))
			require.NoError(t, os.WriteFile(servers+"/.s.json.tmp-1", []byte("{}"), 0o600))
			require.NoError(t, os.WriteFile(servers+"/s.json.lock", nil, 0o600))
			disable(t, store, "s", "t")
			w.awaitChange(t)
			// Exactly one change, the state file's: stopping WatchAll
			// flushes nothing further.
			w.cancel()
			<-w.done
			assert.Empty(t, w.changes)
		})
	}
}

// TestWatchAllSaysWhyItPolls: a user's inotify instances exhausted, or the
// state directory removed, WatchAll polls the servers directory and says
// so in the log; it sees the directory made again.
func TestWatchAllSaysWhyItPolls(t *testing.T) {
	tests := []struct {
		name       string
		newWatcher func() (*fsnotify.Watcher, error)
		removeDir  bool
		wantLog    string
	}{
		{
			name:       "no watcher left",
			newWatcher: func() (*fsnotify.Watcher, error) { return nil, errors.New("too many open files") },
			wantLog:    "too many open files",
		},
		{name: "directory removed", newWatcher: fsnotify.NewWatcher, removeDir: true, wantLog: "was removed or renamed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var log syncBuffer
			dir := filepath.Join(t.TempDir(), "state") // made by WatchAll
			store := Open(dir, slog.New(slog.NewTextHandler(&log, nil)))
			store.watch.Debounce = time.Millisecond
			store.watch.PollInterval = 5 * time.Millisecond
			store.watch.NewWatcher = tt.newWatcher
			w := startWatchAll(t, store)
			if tt.removeDir {
				require.Equal(t, "notify", w.awaitStart(t))
				require.NoError(t, os.RemoveAll(dir))
			}
			require.Equal(t, "poll", w.awaitStart(t))
			assert.Contains(t, log.String(), "file notifications unavailable; polling the state files")
			assert.Contains(t, log.String(), tt.wantLog)

			disable(t, store, "s", "t") // makes the directory again if removed
			w.awaitChange(t)
		})
	}
}

// syncBuffer is a bytes.Buffer safe for a logger and a test to share.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
