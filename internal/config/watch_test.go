package config

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/mcpwrap/mcpwrap/internal/filewatch"
	"github.com/mcpwrap/mcpwrap/internal/syncbuf"
)

// watching is a watch of the config file in the background.
type watching struct {
	modes  chan string
	calls  chan struct{}
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// startWatch runs w, reacting within milliseconds, until stop or the end
// of the test, and waits for it to begin and for the call it makes then.
// It returns the mode the watch began in.
func startWatch(t *testing.T, w *filewatch.Watch) (*watching, string) {
	t.Helper()
	w.Debounce, w.PollInterval = time.Millisecond, 5*time.Millisecond
	r := &watching{modes: make(chan string, 4), calls: make(chan struct{}, 16)}
	w.Ready = func(mode string) { r.modes <- mode }
	ctx, cancel := context.WithCancel(t.Context())
	r.cancel = cancel
	r.wg.Go(func() { w.Run(ctx, func() { r.calls <- struct{}{} }) })
	t.Cleanup(r.stop)
	var mode string
	select {
	case mode = <-r.modes:
	case <-time.After(10 * time.Second):
		require.FailNow(t, "the watch did not begin")
	}
	r.awaitCall(t) // the first call, once the watch has begun
	return r, mode
}

func (r *watching) awaitCall(t *testing.T) {
	t.Helper()
	select {
	case <-r.calls:
	case <-time.After(10 * time.Second):
		require.FailNow(t, "no call after the change")
	}
}

// stop ends the watch and waits for it.
func (r *watching) stop() {
	r.cancel()
	r.wg.Wait()
}

// TestWatch: writing, replacing and removing the config file, and editing
// the target of a symbolic link to it, each produce a call.
func TestWatch(t *testing.T) {
	tests := []struct {
		name   string
		link   bool
		change func(t *testing.T, path, target string)
	}{
		{name: "write", change: func(t *testing.T, path, _ string) {
			require.NoError(t, os.WriteFile(path, []byte(`{"servers": {}}`), 0o600))
		}},
		{name: "rename over", change: func(t *testing.T, path, _ string) {
			tmp := path + ".tmp"
			require.NoError(t, os.WriteFile(tmp, []byte(`{"defaults": {}}`), 0o600))
			require.NoError(t, os.Rename(tmp, path))
		}},
		{name: "remove", change: func(t *testing.T, path, _ string) { require.NoError(t, os.Remove(path)) }},
		{name: "edit a symbolic link's target", link: true, change: func(t *testing.T, _, target string) {
			require.NoError(t, os.WriteFile(target, []byte(`{"servers": {"a": {}}}`), 0o600))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "config.json")
			target := path
			if tt.link {
				target = filepath.Join(t.TempDir(), "dotfiles-config.json")
				require.NoError(t, os.Symlink(target, path))
			}
			require.NoError(t, os.WriteFile(target, []byte(`{}`), 0o600))
			w := fileWatch(path, nil)
			r, _ := startWatch(t, &w)
			tt.change(t, path, target)
			r.awaitCall(t)
		})
	}
}

// TestWatchPollsOnlyWhenBlind: a config file in a directory with
// notifications is followed by them alone, with no periodic check and
// nothing logged; a config file that is a symbolic link into another
// directory is checked periodically, the reason logged once at Warn (the
// watch before filewatch checked every file every second and said nothing
// above Debug).
func TestWatchPollsOnlyWhenBlind(t *testing.T) {
	tests := []struct {
		name     string
		link     bool
		wantMode string
		wantLog  []string
	}{
		{name: "regular file", wantMode: "notify"},
		{name: "symbolic link", link: true, wantMode: "poll", wantLog: []string{
			`level=WARN msg="file notifications unavailable; polling the config file"`,
			"is a symbolic link",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.json")
			target := path
			if tt.link {
				target = filepath.Join(t.TempDir(), "dotfiles-config.json")
				require.NoError(t, os.Symlink(target, path))
			}
			require.NoError(t, os.WriteFile(target, []byte(`{}`), 0o600))
			var log syncbuf.Buffer
			w := fileWatch(path, slog.New(slog.NewTextHandler(&log, nil)))
			var checks atomic.Int32
			versions := w.Versions
			w.Versions = func() map[string]os.FileInfo { checks.Add(1); return versions() }
			r, mode := startWatch(t, &w)
			require.Equal(t, tt.wantMode, mode)
			for _, content := range []string{`{"servers": {}}`, `{"defaults": {}}`} {
				require.NoError(t, os.WriteFile(target, []byte(content), 0o600))
				r.awaitCall(t)
			}
			r.stop()
			if tt.link {
				assert.NotZero(t, checks.Load(), "the link's target was checked")
			} else {
				assert.Zero(t, checks.Load(), "the file was checked although notifications work")
			}
			for _, want := range tt.wantLog {
				assert.Contains(t, log.String(), want)
			}
			assert.LessOrEqual(t, strings.Count(log.String(), "msg="), 1, "the reason is logged once:\n%s", log.String())
			if len(tt.wantLog) == 0 {
				assert.Empty(t, log.String())
			}
		})
	}
}

// TestWatchWarnsWhyItPolls: Watch itself (the filewatch defaults) logs
// once, at Warn, why it checks a config file that is a symbolic link
// periodically, and returns once ctx is done, leaving no goroutine behind.
func TestWatchWarnsWhyItPolls(t *testing.T) {
	before := goleak.IgnoreCurrent()
	dir, elsewhere := t.TempDir(), t.TempDir()
	path, target := filepath.Join(dir, "config.json"), filepath.Join(elsewhere, "config.json")
	require.NoError(t, os.WriteFile(target, []byte(`{}`), 0o600))
	require.NoError(t, os.Symlink(target, path))
	var log syncbuf.Buffer
	ctx, cancel := context.WithCancel(t.Context())
	calls := make(chan struct{}, 16)
	var wg sync.WaitGroup
	wg.Go(func() { Watch(ctx, path, slog.New(slog.NewTextHandler(&log, nil)), func() { calls <- struct{}{} }) })
	select {
	case <-calls: // the first call, once polling has begun
	case <-time.After(10 * time.Second):
		require.FailNow(t, "the watch did not begin")
	}
	cancel()
	wg.Wait()
	assert.Equal(t, 1, strings.Count(log.String(), `level=WARN msg="file notifications unavailable; polling the config file"`), log.String())
	assert.Contains(t, log.String(), "path="+path)
	assert.Contains(t, log.String(), "is a symbolic link")
	goleak.VerifyNone(t, before)
}
