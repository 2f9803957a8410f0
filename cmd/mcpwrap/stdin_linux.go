//go:build linux

package main

import (
	"io"
	"os"
	"strconv"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// blockingStdin reads a pipe or socket in blocking mode, out of Go's
// runtime poller, with one read(2) per message, and still lets Close end a
// Read blocked on it: Close makes the read return by shutting a socket's
// reading side, or by writing a newline into a pipe through a write end
// opened from /proc (a blank line, which a line reader skips, and only
// once the Reader is closed, when nothing more is read anyway).
//
// A blocking read is the cheapest way to wait here: while the client pump
// waits for the client its thread is in a system call, which keeps the
// runtime's monitor thread awake (with every goroutine parked in the
// runtime poller, the monitor goes to sleep between messages and each
// message's first system call wakes it again, a third of the relay's CPU
// per small round trip), and, unlike waiting in poll(2) first, the wake-up
// costs one system call, not two.
//
// Read is called from one goroutine at a time; Close may be called at any
// time, more than once.
type blockingStdin struct {
	f      *os.File // blocking: os.File keeps it out of the runtime poller
	socket bool
	closed atomic.Bool

	once     sync.Once
	closeErr error
}

// newBlockingStdin returns a blockingStdin reading fd, which it owns, or
// false, leaving fd alone, when a blocked read on it could not be ended.
func newBlockingStdin(fd int, name string, socket bool) (io.ReadCloser, bool) {
	if !socket {
		w, err := openWriteEnd(fd)
		if err != nil {
			return nil, false
		}
		w.Close()
	}
	if unix.SetNonblock(fd, false) != nil {
		return nil, false
	}
	return &blockingStdin{f: os.NewFile(uintptr(fd), name), socket: socket}, true
}

// openWriteEnd opens a write end of the pipe fd reads (Linux can open a
// pipe anew through /proc), without blocking.
func openWriteEnd(fd int) (*os.File, error) {
	return os.OpenFile("/proc/self/fd/"+strconv.Itoa(fd), os.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
}

// Read implements io.Reader.
func (b *blockingStdin) Read(p []byte) (int, error) {
	if b.closed.Load() {
		return 0, b.errClosed()
	}
	n, err := b.f.Read(p)
	if b.closed.Load() {
		return 0, b.errClosed() // what Close wrote, or what it cut short
	}
	return n, err
}

func (b *blockingStdin) errClosed() error {
	return &os.PathError{Op: "read", Path: b.f.Name(), Err: os.ErrClosed}
}

// Close ends a Read under way and releases the descriptor once no Read
// uses it any more.
func (b *blockingStdin) Close() error {
	b.once.Do(func() {
		b.closed.Store(true)
		raw, err := b.f.SyscallConn()
		if err != nil {
			b.closeErr = err
			return
		}
		_ = raw.Control(func(fd uintptr) {
			if b.socket {
				_ = unix.Shutdown(int(fd), unix.SHUT_RD)
				return
			}
			// A read blocked on the pipe means it is empty: the newline
			// fits. Were it full, no read would be blocked.
			if w, err := openWriteEnd(int(fd)); err == nil {
				_, _ = w.Write([]byte{'\n'})
				w.Close()
			}
		})
		b.closeErr = b.f.Close()
	})
	return b.closeErr
}
