package clientconfig

import (
	"github.com/mcpwrap/mcpwrap/internal/atomicfile"

	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

const (
	// BackupSuffix starts the suffix of backup files, which ends with the
	// UTC time of the write: FILE.mcpwrap-backup-20261122T050102Z.
	BackupSuffix     = ".mcpwrap-backup-"
	backupTimeFormat = "20060102T150405Z"
	// maxBackups bounds the numbered backups of one second (FILE...Z-2, -3...).
	maxBackups = 100
)

// WriteWithBackup replaces the file at path with data, crash-safely (a
// temporary file beside it, fsync, rename), after copying its content to a
// new backup beside it, named with BackupSuffix and now. It returns the
// backup's path. The file and its backup keep the file's permissions; a
// symbolic link at path stays a link, and its target is replaced.
//
// old is what the caller read from the file: if the file holds anything else
// now, its client wrote it since, and WriteWithBackup fails with [ErrChanged]
// and writes nothing. When data equals old, there is nothing to do: no
// backup is made and backupPath is "".
//
// Concurrent calls for the same path are safe in that each backup gets its
// own name, but the last rename wins; callers serialise their writes.
func WriteWithBackup(path string, old, data []byte, now time.Time) (backupPath string, err error) {
	target, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", err
	}
	info, err := os.Stat(target)
	if err != nil {
		return "", err
	}
	current, err := os.ReadFile(target)
	if err != nil {
		return "", err
	}
	if !bytes.Equal(current, old) {
		return "", fmt.Errorf("%s: %w", path, ErrChanged)
	}
	if bytes.Equal(data, old) {
		return "", nil
	}
	perm := info.Mode().Perm()
	backupPath, err = writeBackup(path, current, perm, now)
	if err != nil {
		return "", err
	}
	return backupPath, replaceFile(target, data, perm)
}

// writeBackup writes data to a new file named after path and now, numbered
// when an earlier backup of the same second exists.
func writeBackup(path string, data []byte, perm fs.FileMode, now time.Time) (string, error) {
	base := path + BackupSuffix + now.UTC().Format(backupTimeFormat)
	name := base
	for n := 2; ; n++ {
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		if errors.Is(err, fs.ErrExist) && n <= maxBackups {
			name = fmt.Sprintf("%s-%d", base, n)
			continue
		}
		if err != nil {
			return "", fmt.Errorf("backup: %w", err)
		}
		if err := writeSynced(f, data); err != nil {
			_ = os.Remove(name)
			return "", fmt.Errorf("backup: %w", err)
		}
		return name, nil
	}
}

// replaceFile atomically replaces the file at path with data.
func replaceFile(path string, data []byte, perm fs.FileMode) error {
	return atomicfile.Write(path, data, perm, "."+filepath.Base(path)+".mcpwrap-tmp-*")
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
