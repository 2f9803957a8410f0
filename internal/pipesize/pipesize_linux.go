package pipesize

import (
	"os"

	"golang.org/x/sys/unix"
)

func grow(f *os.File) {
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		// F_SETPIPE_SZ fails with EBADF on anything but a pipe.
		_, _ = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, Size)
	})
}
