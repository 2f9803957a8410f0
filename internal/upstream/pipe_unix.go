//go:build unix

package upstream

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// pipeWatch reports when the read end of a pipe has been closed by every
// process that held it, without writing to the pipe: a child that closes
// its stdin is seen at once, not at the next message sent to it. It holds
// a copy of the write end: the readers see EOF only once it is stopped.
type pipeWatch struct {
	f    *os.File      // a duplicate of the write end, polled on its own
	gone chan struct{} // closed once no reader is left
	done chan struct{} // closed when the watching goroutine has returned
}

// watchReaders starts watching the pipe that w writes to. w must be a
// pipe's write end in non-blocking mode, as [os.Pipe] returns it. Stop
// must be called.
func watchReaders(w *os.File) (*pipeWatch, error) {
	rc, err := w.SyscallConn()
	if err != nil {
		return nil, err
	}
	dup := -1
	var dupErr error
	// A duplicate, so that waiting on it never holds w's write lock; it
	// shares w's non-blocking mode, so it joins the runtime's poller.
	if err := rc.Control(func(fd uintptr) { dup, dupErr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return nil, err
	}
	if dupErr != nil {
		return nil, dupErr
	}
	f := os.NewFile(uintptr(dup), "upstream-stdin-watch")
	frc, err := f.SyscallConn()
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	pw := &pipeWatch{f: f, gone: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(pw.done)
		// The poller wakes a writer when the pipe's readers go away (the
		// kernel reports an error condition on the write end); any other
		// wake-up finds readers left and waits again.
		if frc.Write(func(fd uintptr) bool { return readersClosed(int(fd)) }) == nil {
			close(pw.gone)
		}
	}()
	return pw, nil
}

// Gone returns a channel closed once the pipe has no reader left; nil (a
// channel never ready) for a nil watch.
func (pw *pipeWatch) Gone() <-chan struct{} {
	if pw == nil {
		return nil
	}
	return pw.gone
}

// Stop ends the watch, closing its copy of the write end, and waits for
// its goroutine. It may be called more than once, and on a nil watch.
func (pw *pipeWatch) Stop() {
	if pw == nil {
		return
	}
	_ = pw.f.Close()
	<-pw.done
}

// readersClosed reports whether the pipe written through fd has lost its
// last reader.
func readersClosed(fd int) bool {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
	for {
		n, err := unix.Poll(fds, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		return err == nil && n > 0 && fds[0].Revents&(unix.POLLERR|unix.POLLHUP) != 0
	}
}
