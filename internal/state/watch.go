package state

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
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
// other method. Watch waits for the goroutine it starts before it returns.
func (s *FileStore) Watch(ctx context.Context, server string, onChange func()) {
	paths := []string{s.files(server).path, s.legacyPath()}
	s.watchFiles(ctx, watched{
		what:  paths[0],
		match: func(path string) bool { return slices.Contains(paths, path) },
		versions: func() map[string]os.FileInfo {
			infos := make(map[string]os.FileInfo, len(paths))
			for _, p := range paths {
				if fi, err := os.Stat(p); err == nil {
					infos[p] = fi
				}
			}
			return infos
		},
	}, onChange)
}

// WatchAll is [FileStore.Watch] for every server at once: it calls onChange
// after any server's state file changes (appears, is replaced or removed),
// or the version 1 file does, until ctx is done, then returns. It costs
// what one Watch costs, whatever the number of servers: one notification
// watcher on the state directory and its servers directory, or, when
// notifications are unavailable (a user's inotify instances or watches
// exhausted), a listing of the servers directory once a second, said in the
// log. Its timings, first call and concurrency are Watch's.
func (s *FileStore) WatchAll(ctx context.Context, onChange func()) {
	s.watchFiles(ctx, watched{what: s.serversDir(), match: s.isStateFile, versions: s.stateFiles}, onChange)
}

// watched is what a watch follows: the state files match accepts, of which
// versions lists those that exist, by path; what names them in the log.
type watched struct {
	what     string
	match    func(path string) bool
	versions func() map[string]os.FileInfo
}

// watchFiles calls onChange, debounced, after the files of w change, until
// ctx is done: by notifications, else by polling. It waits for the
// goroutine it starts.
func (s *FileStore) watchFiles(ctx context.Context, w watched, onChange func()) {
	changed := make(chan struct{}, 1)
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		err := s.notify(ctx, w, changed)
		if err == nil || ctx.Err() != nil {
			return
		}
		s.logger.Warn("state: file notifications unavailable; polling the state files",
			"path", w.what, "interval", s.watch.pollInterval, "err", err)
		s.poll(ctx, w.versions, changed)
	})
	debounce(ctx, changed, s.watch.debounce, s.watch.maxDelay, onChange)
}

// isStateFile reports whether path is a server's state file (not a lock or
// temporary file) or the version 1 file.
func (s *FileStore) isStateFile(path string) bool {
	return path == s.legacyPath() || filepath.Dir(path) == s.serversDir() && stateFileName(filepath.Base(path))
}

// stateFileName reports whether a name in the servers directory is a
// server's state file.
func stateFileName(name string) bool {
	return !strings.HasPrefix(name, ".") && strings.HasSuffix(name, ".json")
}

// stateFiles returns the versions of the servers' state files and of the
// version 1 file, by path; a directory that cannot be read has none.
func (s *FileStore) stateFiles() map[string]os.FileInfo {
	infos := map[string]os.FileInfo{}
	if fi, err := os.Stat(s.legacyPath()); err == nil {
		infos[s.legacyPath()] = fi
	}
	entries, _ := os.ReadDir(s.serversDir())
	for _, e := range entries {
		if e.IsDir() || !stateFileName(e.Name()) {
			continue
		}
		if fi, err := e.Info(); err == nil {
			infos[filepath.Join(s.serversDir(), e.Name())] = fi
		}
	}
	return infos
}

// notify signals changed on every notification about one of the files of
// w. It returns nil when ctx is done, or an error if notifications cannot
// be set up or stop working; in the latter case it signals changed first,
// since a change may have been missed.
func (s *FileStore) notify(ctx context.Context, w watched, changed chan<- struct{}) error {
	if err := os.MkdirAll(s.serversDir(), 0o700); err != nil {
		return err
	}
	nw, err := s.watch.newWatcher()
	if err != nil {
		return err
	}
	defer func() { _ = nw.Close() }()
	// Watch the directories, not the files: a write renames a new file
	// over the old one, which would end a watch on the file.
	dirs := []string{s.dir, s.serversDir()}
	for _, dir := range dirs {
		if err := nw.Add(dir); err != nil {
			return err
		}
	}
	s.ready("notify")
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
				return fmt.Errorf("state directory %s was removed or renamed", name)
			case w.match(name) && ev.Op != fsnotify.Chmod:
				signal(changed)
			}
		case err, ok := <-nw.Errors:
			if !ok {
				signal(changed)
				return errors.New("notifications closed")
			}
			// Typically a queue overflow: events were lost, so assume a change.
			s.logger.Warn("state: file notification error", "path", w.what, "err", err)
			signal(changed)
		}
	}
}

// poll signals changed whenever the files versions lists differ in number,
// identity, size or modification time from the previous check, until ctx
// is done.
func (s *FileStore) poll(ctx context.Context, versions func() map[string]os.FileInfo, changed chan<- struct{}) {
	last := versions()
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
		cur := versions()
		if !maps.EqualFunc(last, cur, sameVersion) {
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
