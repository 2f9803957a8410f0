package config

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/mcpwrap/mcpwrap/internal/filewatch"
)

// Watch calls onChange after the config file at path changes on disk
// (written, created, removed, renamed over, or its symbolic link's target
// edited), until ctx is done, then returns, after every goroutine it
// started. A burst of changes yields one call; the first call comes once
// the watch has begun, for a change made before it. onChange only says
// "look again": the caller loads the file itself and must expect calls
// where nothing changed. It is called from the goroutine running Watch,
// never concurrently with itself.
//
// Watch is a [filewatch.Watch] of the file's directory, which it makes if
// missing, with filewatch's timings. Where notifications cannot see every
// change of the file, it logs why, once, at Warn, and checks the file
// every second: notifications unavailable, the directory removed or on a
// network file system, or the file a symbolic link (an edit of its target,
// or the swap of a link it resolves through, makes no notification about
// the file).
func Watch(ctx context.Context, path string, logger *slog.Logger, onChange func()) {
	w := fileWatch(path, logger)
	w.Run(ctx, onChange)
}

// fileWatch returns the watch of the config file at path that Watch runs;
// tests shorten its timings and observe it.
func fileWatch(path string, logger *slog.Logger) filewatch.Watch {
	path = filepath.Clean(path)
	return filewatch.Watch{
		Dirs:  []string{filepath.Dir(path)},
		Match: func(p string) bool { return p == path },
		Versions: func() map[string]os.FileInfo {
			fi, err := os.Stat(path) // follows a symbolic link to its target
			if err != nil {
				return nil
			}
			return map[string]os.FileInfo{path: fi}
		},
		Blind: func() error {
			if fi, err := os.Lstat(path); err == nil && fi.Mode()&os.ModeSymlink != 0 {
				return fmt.Errorf("%s is a symbolic link, whose target's changes make no notification in its directory", path)
			}
			return nil
		},
		Name:   "the config file",
		Path:   path,
		Logger: logger,
	}
}
