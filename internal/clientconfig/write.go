package clientconfig

import (
	"context"
	"github.com/mcpwrap/mcpwrap/internal/atomicfile"

	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

const (
	// BackupSuffix starts the suffix of backup files, which ends with the
	// UTC time of the write: FILE.mcpwrap-backup-20261122T050102Z.
	BackupSuffix     = ".mcpwrap-backup-"
	backupTimeFormat = "20060102T150405Z"
	// maxBackups bounds the numbered backups of one second (FILE...Z-2, -3...).
	maxBackups = 100
	// KeepBackups is how many backups of one file are kept: each write
	// removes the older ones, so that secrets in old configs do not pile up.
	KeepBackups = 3
	// backupPerm is every backup's mode: a client config may hold tokens.
	backupPerm fs.FileMode = 0o600
)

// WriteOptions tune [WriteWithBackup]. The zero value uses the real clock
// and reports nothing.
type WriteOptions struct {
	// Now is the time the backup is named after; nil means time.Now.
	Now func() time.Time
	// Waiting, unless nil, is called once, with the lock's path, when
	// another program holds the file's lock (see [LockSuffix]) and
	// WriteWithBackup waits for it.
	Waiting func(lockPath string)
}

// WriteWithBackup replaces the file at path with data, crash-safely (a
// temporary file beside it, fsync, rename), after copying its content to a
// new backup beside it, named with BackupSuffix and the time. It returns
// the backup's path. The file keeps its permissions, and its owner and group
// where the writer may give them (root may); a symbolic link at path stays
// a link, and its target is replaced.
//
// old is what the caller read from the file. The file is never replaced
// unless it still holds exactly old: it is compared first, and again just
// before the rename, under the file's lock (see [LockSuffix]), after the
// backup and the new content are on disk. If anyone else wrote the file
// since it was read, WriteWithBackup fails with [ErrChanged] and leaves no
// backup or temporary file: the caller reads the file again and plans
// anew. A writer that ignores the lock can still land in the microseconds
// between that last comparison and the rename. When data equals old, there
// is nothing to do: no backup is made and backupPath is "".
//
// Waiting for the lock ends with ctx, or after a while with [ErrLocked].
//
// Backups are readable by the owner only (0600), whatever the file's own
// mode, since client configs may hold secrets, and only the KeepBackups
// newest backups of the file are kept: older ones are removed, best
// effort.
//
// Concurrent calls for the same path, from this process or another, are
// safe: each backup gets its own name, and the lock orders the renames.
func WriteWithBackup(ctx context.Context, path string, old, data []byte, opts WriteOptions) (backupPath string, err error) {
	target, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", err
	}
	info, err := os.Stat(target)
	if err != nil {
		return "", err
	}
	if err := holds(target, old, path); err != nil {
		return "", err
	}
	if bytes.Equal(data, old) {
		return "", nil
	}
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	backupPath, err = writeBackup(path, old, info, now())
	if err != nil {
		return "", err
	}
	var release func()
	err = atomicfile.WriteChecked(target, data, info.Mode().Perm(), "."+filepath.Base(target)+".mcpwrap-tmp-*", func(tmp string) error {
		if err := keepOwner(tmp, info); err != nil {
			return err
		}
		if release, err = lock(ctx, target, opts.Waiting); err != nil {
			return err
		}
		return holds(target, old, path) // never rename over bytes not read
	})
	if release != nil {
		release()
	}
	if err != nil {
		_ = os.Remove(backupPath)
		return "", err
	}
	pruneBackups(path, KeepBackups)
	return backupPath, nil
}

// holds fails with [ErrChanged], naming path, unless the file at target
// holds exactly old.
func holds(target string, old []byte, path string) error {
	current, err := os.ReadFile(target)
	if err != nil {
		return err
	}
	if !bytes.Equal(current, old) {
		return fmt.Errorf("%s: %w", path, ErrChanged)
	}
	return nil
}

// pruneBackups removes all but the keep newest backups of the file at path,
// best effort: a backup that cannot be removed is left.
func pruneBackups(path string, keep int) {
	dir, prefix := filepath.Dir(path), filepath.Base(path)+BackupSuffix
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	type backup struct {
		name string
		at   time.Time
		n    int
	}
	var backups []backup
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || !e.Type().IsRegular() {
			continue
		}
		stamp, num, numbered := strings.Cut(rest, "-")
		at, err := time.Parse(backupTimeFormat, stamp)
		if err != nil {
			continue // not one of ours
		}
		n := 1
		if numbered {
			if n, err = strconv.Atoi(num); err != nil || n < 2 {
				continue
			}
		}
		backups = append(backups, backup{name: e.Name(), at: at, n: n})
	}
	slices.SortFunc(backups, func(a, b backup) int { // newest first
		return cmp.Or(b.at.Compare(a.at), cmp.Compare(b.n, a.n))
	})
	for _, b := range backups[min(keep, len(backups)):] {
		_ = os.Remove(filepath.Join(dir, b.name))
	}
}

// writeBackup writes data to a new file named after path and now, numbered
// when an earlier backup of the same second exists, readable by the owner
// of the file described by like only.
func writeBackup(path string, data []byte, like fs.FileInfo, now time.Time) (string, error) {
	base := path + BackupSuffix + now.UTC().Format(backupTimeFormat)
	name := base
	for n := 2; ; n++ {
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, backupPerm)
		if errors.Is(err, fs.ErrExist) && n <= maxBackups {
			name = fmt.Sprintf("%s-%d", base, n)
			continue
		}
		if err != nil {
			return "", fmt.Errorf("backup: %w", err)
		}
		err = writeSynced(f, data)
		if err == nil {
			err = keepOwner(name, like)
		}
		if err != nil {
			_ = os.Remove(name)
			return "", fmt.Errorf("backup: %w", err)
		}
		return name, nil
	}
}

// writeSynced writes data to f, flushes it to disk and closes f.
func writeSynced(f *os.File, data []byte) error {
	_, err := f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	return err
}
