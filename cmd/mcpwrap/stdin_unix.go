//go:build unix

package main

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// closableStdin returns the client's stdin as a reader whose closer ends a
// read blocked on it, so that the session's client pump ends with its Run
// (a Conn's Close must end blocked calls). For a pipe or socket it reads a
// duplicate of the descriptor in non-blocking mode, which hands its reads
// to Go's runtime poller; closing an ordinary blocking descriptor would not
// wake the read. Other kinds (a terminal shared with a shell, a file, a
// test's reader) are left alone, with no closer: a file never blocks, and a
// terminal's owner must not find it non-blocking after mcpwrap exits.
func closableStdin(stdin io.Reader) (io.Reader, io.Closer) {
	f, ok := stdin.(*os.File)
	if !ok {
		return stdin, nil
	}
	info, err := f.Stat()
	if err != nil || info.Mode()&(os.ModeNamedPipe|os.ModeSocket) == 0 {
		return stdin, nil
	}
	raw, err := f.SyscallConn()
	if err != nil {
		return stdin, nil
	}
	fd := -1
	_ = raw.Control(func(orig uintptr) {
		fd, err = unix.FcntlInt(orig, unix.F_DUPFD_CLOEXEC, 0)
	})
	if fd < 0 || err != nil {
		return stdin, nil
	}
	if unix.SetNonblock(fd, true) != nil {
		unix.Close(fd)
		return stdin, nil
	}
	pollable := os.NewFile(uintptr(fd), f.Name())
	return pollable, pollable
}
