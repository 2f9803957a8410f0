package filewatch

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/mcpwrap/mcpwrap/internal/syncbuf"
)

// waitLimit bounds every wait for something that should happen promptly.
const waitLimit = 5 * time.Second

// running is a Run in the background, observed through channels.
type running struct {
	ready   chan string
	changes chan struct{}
	done    chan struct{}
	cancel  context.CancelFunc
}

// fileIn returns a Watch of the file name in dir, reacting within
// milliseconds, with notifications from newWatcher.
func fileIn(dir, name string, newWatcher func() (*fsnotify.Watcher, error)) *Watch {
	path := filepath.Join(dir, name)
	return &Watch{
		Dirs:  []string{dir},
		Match: func(p string) bool { return p == path },
		Versions: func() map[string]os.FileInfo {
			if fi, err := os.Stat(path); err == nil {
				return map[string]os.FileInfo{path: fi}
			}
			return nil
		},
		Name:         "the test file",
		Path:         path,
		Debounce:     time.Millisecond,
		PollInterval: 5 * time.Millisecond,
		NewWatcher:   newWatcher,
	}
}

// start runs w until the test ends.
func start(t *testing.T, w *Watch) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	r := &running{
		ready:   make(chan string, 4),
		changes: make(chan struct{}, 64),
		done:    make(chan struct{}),
		cancel:  cancel,
	}
	w.Ready = func(mode string) { r.ready <- mode }
	go func() {
		defer close(r.done)
		w.Run(ctx, func() { r.changes <- struct{}{} })
	}()
	t.Cleanup(func() {
		cancel()
		<-r.done
	})
	return r
}

func (r *running) awaitReady(t *testing.T) string {
	t.Helper()
	select {
	case mode := <-r.ready:
		return mode
	case <-time.After(waitLimit):
		require.FailNow(t, "Run did not start")
		return ""
	}
}

// awaitStart waits for Run to observe the files and for the call it makes
// then, and returns the mode.
func (r *running) awaitStart(t *testing.T) string {
	t.Helper()
	mode := r.awaitReady(t)
	r.awaitChange(t)
	return mode
}

func (r *running) awaitChange(t *testing.T) {
	t.Helper()
	select {
	case <-r.changes:
	case <-time.After(waitLimit):
		require.FailNow(t, "Run did not report the change")
	}
}

// stop ends Run and waits for it.
func (r *running) stop(t *testing.T) {
	t.Helper()
	r.cancel()
	select {
	case <-r.done:
	case <-time.After(waitLimit):
		require.FailNow(t, "Run did not return once its context was done")
	}
}

// writeAtomic replaces path as the stores do: a temporary file renamed
// over it.
func writeAtomic(t *testing.T, path, content string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+"-tmp")
	require.NoError(t, os.WriteFile(tmp, []byte(content), 0o600))
	require.NoError(t, os.Rename(tmp, path))
}

// modes are the two ways Run follows the files.
var modes = []struct {
	name       string
	newWatcher func() (*fsnotify.Watcher, error)
	wantMode   string
}{
	{name: "notifications", newWatcher: nil, wantMode: "notify"},
	{
		name:       "polling when notifications fail",
		newWatcher: func() (*fsnotify.Watcher, error) { return nil, errors.New("no inotify here") },
		wantMode:   "poll",
	},
}

// TestRunNotices: the file made, replaced by a rename (as every atomic
// write does) and removed is reported each time; temporary and other files
// are not, nor is a change of mode; stopping Run flushes nothing further.
func TestRunNotices(t *testing.T) {
	for _, tt := range modes {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "generation")
			r := start(t, fileIn(dir, "generation", tt.newWatcher))
			require.Equal(t, tt.wantMode, r.awaitStart(t))

			writeAtomic(t, path, "1") // made
			r.awaitChange(t)
			writeAtomic(t, path, "22") // replaced
			r.awaitChange(t)
			require.NoError(t, os.Remove(path))
			r.awaitChange(t)

			require.NoError(t, os.WriteFile(filepath.Join(dir, "store.lock"), nil, 0o600))
			require.NoError(t, os.WriteFile(filepath.Join(dir, ".generation-tmp"), nil, 0o600))
			writeAtomic(t, path, "333")
			r.awaitChange(t) // this one only: the others were filtered out
			r.stop(t)
			assert.Empty(t, r.changes)
		})
	}
}

// TestRunReportsChangeMadeBeforeItStarted: a caller reads the file, then
// starts Run; a change made in between is reported, by the first call.
func TestRunReportsChangeMadeBeforeItStarted(t *testing.T) {
	for _, tt := range modes {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeAtomic(t, filepath.Join(dir, "generation"), "the change not seen")
			r := start(t, fileIn(dir, "generation", tt.newWatcher))
			require.Equal(t, tt.wantMode, r.awaitReady(t))
			r.awaitChange(t)
		})
	}
}

// TestRunSaysWhyItPolls: with no watcher left (a user's inotify instances
// exhausted), or once the directory is removed, Run logs why, once, and
// polls, which sees the directory made again and the file written there.
// The directory missing at the start is made.
func TestRunSaysWhyItPolls(t *testing.T) {
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
		{name: "directory removed", removeDir: true, wantLog: "was removed or renamed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var log syncbuf.Buffer
			dir := filepath.Join(t.TempDir(), "auth") // made by Run
			w := fileIn(dir, "generation", tt.newWatcher)
			w.Logger = slog.New(slog.NewTextHandler(&log, nil))
			r := start(t, w)
			if tt.removeDir {
				require.Equal(t, "notify", r.awaitStart(t))
				require.NoError(t, os.RemoveAll(dir))
			}
			require.Equal(t, "poll", r.awaitStart(t))
			assert.Contains(t, log.String(), "file notifications unavailable; polling the test file")
			assert.Contains(t, log.String(), tt.wantLog)
			assert.Contains(t, log.String(), "path="+filepath.Join(dir, "generation"))

			require.NoError(t, os.MkdirAll(dir, 0o700))
			writeAtomic(t, filepath.Join(dir, "generation"), "1")
			r.awaitChange(t)
			r.stop(t)
			assert.Equal(t, 1, strings.Count(log.String(), "file notifications unavailable"), "the reason is logged once")
		})
	}
}

// TestRunPollsWhenBlind: when Blind gives a reason, at the start or after
// a notification about the file (here: the file became a symbolic link to
// another directory, whose edits no notification reports), Run logs it,
// once, at Warn, and polls, which sees the target edited; while Blind has
// no reason, Run does not poll.
func TestRunPollsWhenBlind(t *testing.T) {
	tests := []struct {
		name       string
		blindFirst bool // Blind has its reason from the start
		wantModes  []string
	}{
		{name: "at the start", blindFirst: true, wantModes: []string{"poll"}},
		{name: "after a notification", wantModes: []string{"notify", "poll"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var log syncbuf.Buffer
			dir, elsewhere := t.TempDir(), t.TempDir()
			path, target := filepath.Join(dir, "generation"), filepath.Join(elsewhere, "generation")
			require.NoError(t, os.WriteFile(target, []byte("0"), 0o600))
			if tt.blindFirst {
				require.NoError(t, os.Symlink(target, path))
			}
			w := fileIn(dir, "generation", nil)
			w.Logger = slog.New(slog.NewTextHandler(&log, nil))
			var asked atomic.Int32
			w.Blind = func() error {
				asked.Add(1)
				if fi, err := os.Lstat(path); err == nil && fi.Mode()&os.ModeSymlink != 0 {
					return errors.New("the file is a symbolic link")
				}
				return nil
			}
			versions := w.Versions
			var polled atomic.Int32
			w.Versions = func() map[string]os.FileInfo { polled.Add(1); return versions() }
			r := start(t, w)
			for _, mode := range tt.wantModes {
				require.Equal(t, mode, r.awaitStart(t))
				if mode == "notify" {
					writeAtomic(t, path, "1")
					r.awaitChange(t)
					assert.Zero(t, polled.Load(), "Run polls while notifications see every change")
					assert.Equal(t, int32(2), asked.Load(), "Blind is asked at the start and after the notification")
					require.NoError(t, os.Remove(path))
					require.NoError(t, os.Symlink(target, path))
				}
			}
			require.NoError(t, os.WriteFile(target, []byte("22"), 0o600)) // no notification in dir
			r.awaitChange(t)
			r.stop(t)
			assert.Contains(t, log.String(), "level=WARN msg=\"file notifications unavailable; polling the test file\"")
			assert.Contains(t, log.String(), "the file is a symbolic link")
			assert.Equal(t, 1, strings.Count(log.String(), "file notifications unavailable"), "the reason is logged once")
		})
	}
}

// TestRunEndsWithItsContext: cancelling ctx ends Run and every goroutine
// it started, in either mode.
func TestRunEndsWithItsContext(t *testing.T) {
	for _, tt := range modes {
		t.Run(tt.name, func(t *testing.T) {
			before := goleak.IgnoreCurrent()
			r := start(t, fileIn(t.TempDir(), "generation", tt.newWatcher))
			require.Equal(t, tt.wantMode, r.awaitStart(t))
			r.stop(t)
			goleak.VerifyNone(t, before)
		})
	}
}

func TestDebounce(t *testing.T) {
	const (
		delay    = 100 * time.Millisecond
		maxDelay = time.Second
	)
	tests := []struct {
		name string
		// signals are the moments of the changes, in order.
		signals []time.Duration
		// wantCalls are the moments onChange must be called.
		wantCalls []time.Duration
	}{
		{
			name:      "single change",
			signals:   []time.Duration{0},
			wantCalls: []time.Duration{100 * time.Millisecond},
		},
		{
			name:      "burst yields one call after it settles",
			signals:   []time.Duration{0, 30 * time.Millisecond, 60 * time.Millisecond, 90 * time.Millisecond},
			wantCalls: []time.Duration{190 * time.Millisecond},
		},
		{
			name:      "separate bursts yield separate calls",
			signals:   []time.Duration{0, 50 * time.Millisecond, 500 * time.Millisecond},
			wantCalls: []time.Duration{150 * time.Millisecond, 600 * time.Millisecond},
		},
		{
			name:    "endless stream is reported at least every maxDelay",
			signals: every(30*time.Millisecond, 3*time.Second),
			wantCalls: []time.Duration{
				1000 * time.Millisecond, // first pending change at 0
				2020 * time.Millisecond, // at 1020
				3040 * time.Millisecond, // at 2040; the stream ends at 2970
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(t.Context())
				start := time.Now()
				changed := make(chan struct{}, 1)
				var calls []time.Duration
				done := make(chan struct{})
				go func() {
					defer close(done)
					debounce(ctx, changed, delay, maxDelay, func() { calls = append(calls, time.Since(start)) })
				}()
				// In the bubble, sleeping advances the fake clock to the
				// exact moment once every goroutine is blocked.
				for _, at := range tt.signals {
					time.Sleep(at - time.Since(start))
					changed <- struct{}{}
					synctest.Wait()
				}
				time.Sleep(10 * time.Second)
				cancel()
				<-done
				assert.Equal(t, tt.wantCalls, calls)
			})
		})
	}
}

// every returns the multiples of interval below end.
func every(interval, end time.Duration) []time.Duration {
	var at []time.Duration
	for d := time.Duration(0); d < end; d += interval {
		at = append(at, d)
	}
	return at
}
