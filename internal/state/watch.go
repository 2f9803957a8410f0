package state

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Watch calls onChange after the named server's state file changes, by any
// process, until ctx is done, then returns; changes to other servers' files
// are not reported. A burst of changes yields one call, made about 100 ms
// after the burst (at most about 1 s after its first change). The callback
// only says "look again": the caller loads the state itself, and must expect
// calls where nothing it cares about changed.
//
// The first call comes once Watch observes the file, whether or not it
// changed: a caller that loaded the state before calling Watch may have
// missed a change made before the observation began, and must look again.
//
// Watch uses file system notifications on the state directory and its
// servers directory (creating them if needed), watching the version 1 file
// too, whose repair or migration changes every server's state, and falls
// back to checking the files once a second when notifications are
// unavailable, which delays a call by up to that second.
//
// onChange is called from the goroutine running Watch, never concurrently
// with itself; while it runs, further changes are coalesced into one later
// call. It may use the store. Watch may be called concurrently with every
// other method.
func (s *FileStore) Watch(ctx context.Context, server string, onChange func()) {
	changed := make(chan struct{}, 1)
	paths := []string{s.files(server).path, s.legacyPath()}
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		err := s.notify(ctx, paths, changed)
		if err == nil || ctx.Err() != nil {
			return
		}
		s.logger.Warn("state: file notifications unavailable; polling the state file",
			"path", paths[0], "interval", s.watch.pollInterval, "err", err)
		s.poll(ctx, paths, changed)
	})
	debounce(ctx, changed, s.watch.debounce, s.watch.maxDelay, onChange)
}

// notify signals changed on every notification about one of the files at
// paths. It returns nil when ctx is done, or an error if notifications
// cannot be set up or stop working; in the latter case it signals changed
// first, since a change may have been missed.
func (s *FileStore) notify(ctx context.Context, paths []string, changed chan<- struct{}) error {
	if err := os.MkdirAll(s.serversDir(), 0o700); err != nil {
		return err
	}
	w, err := s.watch.newWatcher()
	if err != nil {
		return err
	}
	defer func() { _ = w.Close() }()
	// Watch the directories, not the files: a write renames a new file
	// over the old one, which would end a watch on the file.
	dirs := []string{s.dir, s.serversDir()}
	for _, dir := range dirs {
		if err := w.Add(dir); err != nil {
			return err
		}
	}
	s.ready("notify")
	signal(changed) // a change made before the watch began went unseen
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			name := filepath.Clean(ev.Name)
			switch {
			case !ok:
				signal(changed)
				return errors.New("notifications closed")
			case slices.Contains(dirs, name) && ev.Has(fsnotify.Remove|fsnotify.Rename):
				signal(changed)
				return fmt.Errorf("state directory %s was removed or renamed", name)
			case slices.Contains(paths, name) && ev.Op != fsnotify.Chmod:
				signal(changed)
			}
		case err, ok := <-w.Errors:
			if !ok {
				signal(changed)
				return errors.New("notifications closed")
			}
			// Typically a queue overflow: events were lost, so assume a change.
			s.logger.Warn("state: file notification error", "path", paths[0], "err", err)
			signal(changed)
		}
	}
}

// poll signals changed whenever one of the files at paths differs in
// identity, size or modification time from the previous check, until ctx is
// done.
func (s *FileStore) poll(ctx context.Context, paths []string, changed chan<- struct{}) {
	stat := func() []os.FileInfo {
		infos := make([]os.FileInfo, len(paths))
		for i, p := range paths {
			if fi, err := os.Stat(p); err == nil {
				infos[i] = fi
			}
		}
		return infos
	}
	last := stat()
	s.ready("poll")
	signal(changed) // a change made before the first check went unseen
	t := time.NewTicker(s.watch.pollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		cur := stat()
		if !slices.EqualFunc(last, cur, sameVersion) {
			last = cur
			signal(changed)
		}
	}
}

func (s *FileStore) ready(mode string) {
	if s.watch.ready != nil {
		s.watch.ready(mode)
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
