//go:build unix

package main

import (
	"errors"
	"io"
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// closableStdin returns the client's stdin as a reader whose closer ends a
// read blocked on it, so that the session's client pump ends with its Run
// (a Conn's Close must end blocked calls). For a pipe or socket it reads a
// duplicate of the descriptor through a blockingStdin where there is one
// (Linux), else through a pollStdin; closing an ordinary blocking
// descriptor would not wake the read. Other kinds (a terminal
// shared with a shell, a file, a test's reader) are left alone, with no
// closer: a file never blocks, and a terminal is the user's.
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
	if r, ok := newBlockingStdin(fd, f.Name(), info.Mode()&os.ModeSocket != 0); ok {
		return r, r
	}
	p, err := newPollStdin(fd, f.Name())
	if err != nil {
		return stdin, nil
	}
	return p, p
}

// pollStdin reads a non-blocking descriptor that is kept out of Go's
// runtime poller, waiting in poll(2) for it and for a pipe that Close
// hangs up, so that Close ends a Read blocked on it.
//
// Waiting in a system call rather than in the runtime poller is what makes
// it cheap: while the client pump waits for the client its thread is in a
// system call, which keeps the runtime's monitor thread awake; with every
// goroutine parked in the runtime poller, the monitor goes to sleep between
// messages and each message's first system call wakes it again, which cost
// about a third of the relay's CPU per small round trip. A descriptor in
// the runtime poller would also wake a poller thread for nothing on every
// message.
//
// Read is called from one goroutine at a time; Close may be called at any
// time, more than once.
type pollStdin struct {
	f      *os.File // the descriptor; os.File took it blocking, so it is not in the runtime poller
	fRaw   syscall.RawConn
	wake   *os.File // hung up once hangUp is closed
	wRaw   syscall.RawConn
	hangUp *os.File

	// The state of the Read under way, for readFn and pollFn, which are
	// bound once so that a Read allocates nothing.
	buf    []byte
	n      int
	err    error
	full   bool // the last read filled its buffer: more is likely waiting
	fds    [2]unix.PollFd
	readFn func(fd uintptr) bool
	pollFn func(wake uintptr)

	once     sync.Once
	closeErr error
}

// newPollStdin returns a pollStdin reading fd, which it owns (and closes
// when it fails).
func newPollStdin(fd int, name string) (*pollStdin, error) {
	// os.NewFile puts a descriptor in the runtime poller when it is
	// non-blocking: it is made so only once the File has it. Non-blocking,
	// a read never waits where Close cannot end it, even should another
	// process take what poll saw.
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, err
	}
	f := os.NewFile(uintptr(fd), name)
	if err := unix.SetNonblock(fd, true); err != nil {
		f.Close()
		return nil, err
	}
	wake, hangUp, err := os.Pipe()
	if err != nil {
		f.Close()
		return nil, err
	}
	p := &pollStdin{f: f, wake: wake, hangUp: hangUp}
	p.readFn, p.pollFn = p.read, p.poll
	if p.fRaw, err = p.f.SyscallConn(); err == nil {
		p.wRaw, err = wake.SyscallConn()
	}
	if err != nil {
		f.Close()
		wake.Close()
		hangUp.Close()
		return nil, err
	}
	return p, nil
}

// Read implements io.Reader.
func (p *pollStdin) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	p.buf, p.n, p.err = b, 0, nil
	if err := p.fRaw.Read(p.readFn); err != nil {
		return 0, &os.PathError{Op: "read", Path: p.f.Name(), Err: os.ErrClosed} // only a closed file fails here
	}
	n, err := p.n, p.err
	p.buf, p.err = nil, nil
	switch {
	case err != nil:
		return 0, err
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// read reads what fd has into p.buf, waiting until it has something (or
// has ended); it always reports done, as the runtime poller has no part in
// it. It waits before it reads unless the last read filled its buffer:
// after a short read, the next one would most likely find nothing.
func (p *pollStdin) read(fd uintptr) bool {
	p.fds[0] = unix.PollFd{Fd: int32(fd), Events: unix.POLLIN}
	wait := !p.full
	for {
		if wait {
			// Control keeps wake open while poll uses its descriptor.
			if err := p.wRaw.Control(p.pollFn); err != nil {
				p.err = &os.PathError{Op: "read", Path: p.f.Name(), Err: os.ErrClosed}
			}
			if p.err != nil {
				return true
			}
		}
		n, err := unix.Read(int(fd), p.buf)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EAGAIN):
			wait = true
			continue
		case err != nil:
			p.err = &os.PathError{Op: "read", Path: p.f.Name(), Err: err}
		default:
			p.n, p.full = n, n == len(p.buf)
		}
		return true
	}
}

// poll waits until p.fds[0] has something to read (or has ended), or
// wake is hung up by Close.
func (p *pollStdin) poll(wake uintptr) {
	p.fds[1] = unix.PollFd{Fd: int32(wake), Events: unix.POLLIN}
	for {
		_, err := unix.Poll(p.fds[:], -1)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			p.err = &os.PathError{Op: "poll", Path: p.f.Name(), Err: err}
		case p.fds[1].Revents != 0:
			p.err = &os.PathError{Op: "read", Path: p.f.Name(), Err: os.ErrClosed}
		}
		return
	}
}

// Close ends a Read under way and releases the descriptors, each once no
// Read uses it any more.
func (p *pollStdin) Close() error {
	p.once.Do(func() {
		p.hangUp.Close() // wakes a poll under way
		p.closeErr = p.f.Close()
		p.wake.Close()
	})
	return p.closeErr
}
