// Package atomicfile replaces files crash-safely, so that a reader (or a
// process that starts after a crash) sees either the old content or the new,
// never a torn mix.
package atomicfile

import (
	"io/fs"
	"os"
	"path/filepath"
)

// Write replaces the file at path with data. It writes a temporary file in
// the same directory, named after tempPattern (see [os.CreateTemp]) and
// given perm, flushes it to disk, renames it over path and syncs the
// directory. On error the temporary file is removed; a crash can leave one
// behind, which callers that care clean up by its name.
//
// A failure to sync the directory is not reported: the rename has already
// published the file, and only its durability across a power loss is at
// stake (Windows cannot sync directories at all).
func Write(path string, data []byte, perm fs.FileMode, tempPattern string) error {
	return WriteChecked(path, data, perm, tempPattern, nil)
}

// WriteChecked is [Write] with a last word: once the temporary file is
// complete and on disk, just before renaming it over path, it calls check
// (unless nil) with the temporary file's name. An error from check stops
// the write: the temporary file is removed and the error returned. check
// may change the temporary file's metadata (its owner, say), and may take a
// lock that its caller releases once WriteChecked returns, so that what it
// checked still holds when the rename lands.
func WriteChecked(path string, data []byte, perm fs.FileMode, tempPattern string, check func(tmp string) error) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, tempPattern)
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = os.Remove(tmp)
		}
	}()
	if err = f.Chmod(perm); err != nil { // CreateTemp makes it 0600
		_ = f.Close()
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync() // the data must be on disk before the rename publishes it
	}
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	if err == nil && check != nil {
		err = check(tmp)
	}
	if err != nil {
		return err
	}
	if err = os.Rename(tmp, path); err != nil {
		return err
	}
	_ = syncDir(dir)
	return nil
}

// syncDir makes a rename inside dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if closeErr := d.Close(); err == nil {
		err = closeErr
	}
	return err
}
