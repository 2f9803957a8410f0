package config

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Watcher timings. A write is reported about watchDebounce after it, so an
// editor's burst of writes is one change; the file is also checked every
// watchPoll, which catches what notifications cannot see: an edit of the
// target of a symbolic link, a directory created after the watch began, a
// file system without notifications.
const (
	watchDebounce = 100 * time.Millisecond
	watchPoll     = time.Second
)

// Watch calls onChange after the config file at path changes on disk
// (written, created, removed, renamed over, or its symbolic link's target
// edited), until ctx is done, then returns. A burst of changes yields one
// call. onChange only says "look again": the caller loads the file itself
// and must expect calls where nothing changed. It is called from the
// goroutine running Watch, never concurrently with itself.
func Watch(ctx context.Context, path string, logger *slog.Logger, onChange func()) {
	watch(ctx, path, logger, watchDebounce, watchPoll, nil, onChange)
}

// watch is Watch with its timings, and ready, when not nil, called once
// the watch has begun.
func watch(ctx context.Context, path string, logger *slog.Logger, debounce, poll time.Duration, ready, onChange func()) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	path = filepath.Clean(path)
	var events <-chan fsnotify.Event
	var errs <-chan error
	if w, err := fsnotify.NewWatcher(); err == nil {
		defer func() { _ = w.Close() }()
		// The directory, not the file: editors and atomic writers rename a
		// new file over the old one, which would end a watch on the file.
		if err := w.Add(filepath.Dir(path)); err == nil {
			events, errs = w.Events, w.Errors
		} else {
			logger.Debug("config: no file notifications; checking the file every second", "path", path, "error", err)
		}
	}
	ticker := time.NewTicker(poll)
	defer ticker.Stop()
	timer := time.NewTimer(0)
	timer.Stop()
	defer timer.Stop()
	last := statFile(path)
	if ready != nil {
		ready()
	}
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			if filepath.Clean(ev.Name) == path && ev.Op != fsnotify.Chmod {
				timer.Reset(debounce)
			}
		case _, ok := <-errs:
			if !ok {
				errs = nil
				continue
			}
			timer.Reset(debounce) // events were lost: assume a change
		case <-ticker.C:
			if cur := statFile(path); !sameFile(last, cur) {
				timer.Reset(debounce)
			}
		case <-timer.C:
			last = statFile(path)
			onChange()
		}
	}
}

// statFile returns the config file's info, following symbolic links, or nil.
func statFile(path string) os.FileInfo {
	fi, err := os.Stat(path)
	if err != nil {
		return nil
	}
	return fi
}

// sameFile reports whether a and b describe the same version of the file.
func sameFile(a, b os.FileInfo) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}
