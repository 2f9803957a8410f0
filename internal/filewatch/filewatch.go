// Package filewatch calls back after files change, by any process: one
// fsnotify watcher on the directories that hold them, debounced, and, when
// notifications are unavailable (a user's inotify instances exhausted, a
// directory removed, a network file system whose notifications miss
// other machines' changes, a file the caller says notifications cannot
// follow), a poll of the files' versions, its reason logged. The state
// store's Watch and WatchAll, the sign-in store's Watch and the config
// file's watch run on it.
package filewatch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Defaults of a Watch.
const (
	// DefaultDebounce is the default [Watch.Debounce].
	DefaultDebounce = 100 * time.Millisecond
	// DefaultMaxDelay is the default [Watch.MaxDelay].
	DefaultMaxDelay = time.Second
	// DefaultPollInterval is the default [Watch.PollInterval].
	DefaultPollInterval = time.Second
)

// Watch is what [Watch.Run] follows and how. Dirs, Match and Versions are
// required; every other field has a documented zero value. Set the fields
// before Run; Run does not modify them, so a Watch may be copied as a
// template and run several times, concurrently too.
type Watch struct {
	// Dirs hold the files. They are watched, not the files: a write that
	// renames a new file over the old one would end a watch on the file.
	// Run makes those missing (0700), in order; the removal or renaming of
	// one ends notifications, and Run polls from then on.
	Dirs []string
	// Match reports whether a path (cleaned) is one of the watched files;
	// a notification about any other file (a lock, a temporary file) is
	// ignored.
	Match func(path string) bool
	// Versions returns the watched files that exist, by path, for the
	// poll, which compares each check's with the previous one's (identity,
	// size, modification time).
	Versions func() map[string]os.FileInfo
	// Name says what is watched in the log ("the state files"); Path names
	// it there too.
	Name, Path string
	// Logger is told why Run polls, and of notification errors; nil
	// discards.
	Logger *slog.Logger
	// Debounce is the quiet period after a change before the call; 0 means
	// [DefaultDebounce].
	Debounce time.Duration
	// MaxDelay caps the wait for a quiet period under a stream of changes;
	// 0 means [DefaultMaxDelay].
	MaxDelay time.Duration
	// PollInterval is the poll's cadence; 0 means [DefaultPollInterval].
	PollInterval time.Duration
	// NewWatcher makes the notification watcher; nil means
	// fsnotify.NewWatcher.
	NewWatcher func() (*fsnotify.Watcher, error)
	// Blind, when set, returns why notifications on Dirs may miss a change
	// of the files (one is a symbolic link whose target they do not
	// hold), or nil. Run asks once notifications are set up and again
	// after each notification about one of the files; on a reason it polls
	// from then on, as when notifications fail. nil means never.
	Blind func() error
	// Ready, when set, is called once Run observes the files, with "notify"
	// or "poll": a change made after that is reported. It is called again
	// when Run falls back to polling.
	Ready func(mode string)
}

// Run calls onChange after the files change, until ctx is done, then
// returns, after the goroutine it starts has. A burst of changes yields one
// call, made Debounce after the burst (at most MaxDelay after its first
// change). The first call comes once Run observes the files, whether or not
// they changed: a caller that read them before Run may have missed a change
// made before the observation began, and must look again. onChange only
// says "look again", and may come when nothing the caller cares about
// changed.
//
// Run watches with notifications, and when they cannot be set up, stop
// working or cannot see every change (a directory on a network file
// system, a reason from Blind) it logs why, once, at Warn, and polls the files every PollInterval, which
// delays a call by up to that interval. onChange is called from the
// goroutine running Run, never concurrently with itself; while it runs,
// further changes are coalesced into one later call.
func (w *Watch) Run(ctx context.Context, onChange func()) {
	changed := make(chan struct{}, 1)
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		err := w.notify(ctx, changed)
		if err == nil || ctx.Err() != nil {
			return
		}
		w.logger().Warn("file notifications unavailable; polling "+w.Name,
			"path", w.Path, "interval", w.pollInterval(), "err", err)
		w.poll(ctx, changed)
	})
	debounce(ctx, changed, or(w.Debounce, DefaultDebounce), or(w.MaxDelay, DefaultMaxDelay), onChange)
}

func or(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

func (w *Watch) pollInterval() time.Duration { return or(w.PollInterval, DefaultPollInterval) }

func (w *Watch) logger() *slog.Logger {
	if w.Logger != nil {
		return w.Logger
	}
	return slog.New(slog.DiscardHandler)
}

func (w *Watch) ready(mode string) {
	if w.Ready != nil {
		w.Ready(mode)
	}
}

// notify signals changed on every notification about one of the files. It
// returns nil when ctx is done, or an error if notifications cannot be set
// up or stop working; in the latter case it signals changed first, since a
// change may have been missed.
func (w *Watch) notify(ctx context.Context, changed chan<- struct{}) error {
	dirs := make([]string, len(w.Dirs))
	for i, dir := range w.Dirs {
		dirs[i] = filepath.Clean(dir)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
	}
	newWatcher := w.NewWatcher
	if newWatcher == nil {
		newWatcher = fsnotify.NewWatcher
	}
	nw, err := newWatcher()
	if err != nil {
		return err
	}
	defer func() { _ = nw.Close() }()
	for _, dir := range dirs {
		if err := nw.Add(dir); err != nil {
			return err
		}
		if fs := remoteFS(dir); fs != "" {
			return fmt.Errorf("directory %s is on %s, whose notifications miss other machines' changes", dir, fs)
		}
	}
	if err := w.blind(); err != nil {
		return err
	}
	w.ready("notify")
	signal(changed) // a change made before the watch began went unseen
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-nw.Events:
			name := filepath.Clean(ev.Name)
			switch {
			case !ok:
				signal(changed)
				return errors.New("notifications closed")
			case slices.Contains(dirs, name) && ev.Has(fsnotify.Remove|fsnotify.Rename):
				signal(changed)
				return fmt.Errorf("directory %s was removed or renamed", name)
			case w.Match(name) && ev.Op != fsnotify.Chmod:
				err := w.blind() // asked before the call it may bring
				signal(changed)
				if err != nil {
					return err
				}
			}
		case err, ok := <-nw.Errors:
			if !ok {
				signal(changed)
				return errors.New("notifications closed")
			}
			// Typically a queue overflow: events were lost, so assume a change.
			w.logger().Warn("file notification error", "path", w.Path, "err", err)
			signal(changed)
		}
	}
}

func (w *Watch) blind() error {
	if w.Blind == nil {
		return nil
	}
	return w.Blind()
}

// poll signals changed whenever the files Versions lists differ in number,
// identity, size or modification time from the previous check, until ctx
// is done.
func (w *Watch) poll(ctx context.Context, changed chan<- struct{}) {
	last := w.Versions()
	w.ready("poll")
	signal(changed) // a change made before the first check went unseen
	t := time.NewTicker(w.pollInterval())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		cur := w.Versions()
		if !maps.EqualFunc(last, cur, sameVersion) {
			last = cur
			signal(changed)
		}
	}
}

// sameVersion reports whether a and b describe the same version of the file.
// The identity check catches two writes within the clock's resolution:
// every write creates a new file.
func sameVersion(a, b os.FileInfo) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}

// signal records a change without blocking; pending changes coalesce.
func signal(changed chan<- struct{}) {
	select {
	case changed <- struct{}{}:
	default:
	}
}

// debounce calls onChange once the signals on changed pause for delay, or
// maxDelay after the first unreported signal if they never pause. It
// returns when ctx is done.
func debounce(ctx context.Context, changed <-chan struct{}, delay, maxDelay time.Duration, onChange func()) {
	timer := time.NewTimer(0)
	timer.Stop()
	defer timer.Stop()
	var (
		fire     <-chan time.Time // nil while no change is pending
		deadline time.Time
	)
	for {
		select {
		case <-ctx.Done():
			return
		case <-changed:
			if fire == nil {
				deadline = time.Now().Add(maxDelay)
			}
			timer.Reset(min(delay, time.Until(deadline)))
			fire = timer.C
		case <-fire:
			fire = nil
			onChange()
		}
	}
}
