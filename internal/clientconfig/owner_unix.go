//go:build unix

package clientconfig

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// keepOwner gives the file name the owner and group of the file described
// by like, when they differ: root writing a user's file (sudo with HOME
// kept) leaves it, and its backup, the user's. Where that is not allowed (a
// user who is not root cannot give a file away), the file stays the
// writer's, as after any editor's save.
func keepOwner(name string, like fs.FileInfo) error {
	want, ok := like.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	info, err := os.Stat(name)
	if err != nil {
		return err
	}
	if have, ok := info.Sys().(*syscall.Stat_t); ok && have.Uid == want.Uid && have.Gid == want.Gid {
		return nil
	}
	if err := os.Chown(name, int(want.Uid), int(want.Gid)); err != nil && !errors.Is(err, fs.ErrPermission) {
		return err
	}
	return nil
}
