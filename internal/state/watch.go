package state

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
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
	s.watchFiles(ctx, paths[0],
		func(path string) bool { return slices.Contains(paths, path) },
		func() map[string]os.FileInfo {
			infos := make(map[string]os.FileInfo, len(paths))
			for _, p := range paths {
				if fi, err := os.Stat(p); err == nil {
					infos[p] = fi
				}
			}
			return infos
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
	s.watchFiles(ctx, s.serversDir(), s.isStateFile, s.stateFiles, onChange)
}

// watchFiles runs a [filewatch.Watch] of the state directory and its
// servers directory (s.watch's timings and seams) for the state files match
// accepts, of which versions lists those that exist, by path; what names
// them in the log. It waits for the goroutine it starts.
func (s *FileStore) watchFiles(ctx context.Context, what string, match func(path string) bool, versions func() map[string]os.FileInfo, onChange func()) {
	w := s.watch
	w.Dirs = []string{s.dir, s.serversDir()}
	w.Match, w.Versions = match, versions
	w.Name, w.Path, w.Logger = "the state files", what, s.logger
	w.Run(ctx, onChange)
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
