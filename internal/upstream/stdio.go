package upstream

import (
	"context"
	"errors"
	"os"
	"sync"
	"time"

	"github.com/mcpwrap/mcpwrap/internal/framing"
	"github.com/mcpwrap/mcpwrap/middleware"
	"github.com/mcpwrap/mcpwrap/resilience"
)

// TerminateGrace is how long a closing [Stdio] waits after closing the
// child's stdin, and again after SIGTERM, before escalating. It is also how
// long a child whose pipe closed has to exit before it is stopped.
const TerminateGrace = 500 * time.Millisecond

// Stdio is a connection to an MCP server running as a child process and
// speaking newline-delimited JSON-RPC on its stdin and stdout. It satisfies
// middleware.Conn.
//
// A child is only as alive as its pipes: once it closes its stdout, or its
// stdin (seen at once on Unix, elsewhere when a write fails), it is
// stopped as if it had crashed, even if its process would live on, and
// ReadMessage returns how it exited.
//
// ReadMessage must be called from one goroutine at a time; WriteMessage and
// Close are safe for concurrent use. Close must be called: it ends the
// goroutines StartStdio starts.
type Stdio struct {
	argv []string // the command line, for the "run it by hand" hint
	proc *Process
	r    *framing.Reader
	w    *framing.Writer

	broken  chan struct{} // closed by pipeBroken
	which   string        // the first pipe seen to break, set before broken is closed
	breakMu sync.Once
	closing chan struct{} // closed by Close, to end the reaper
	reaped  chan struct{} // closed when the reaper has returned

	once     sync.Once
	closeErr error // set by the first Close, read after once.Do
}

// StartStdio starts the command and returns a connection to it. Messages over
// maxMessageBytes (0 means [middleware.DefaultMaxMessageBytes]) are dropped
// with a [*middleware.MessageTooLargeError].
func StartStdio(ctx context.Context, c Command, maxMessageBytes int) (*Stdio, error) {
	p, err := Start(ctx, c)
	if err != nil {
		var start *StartError
		if errors.As(err, &start) {
			return nil, &resilience.SpawnError{Command: start.Path, Err: start.Err}
		}
		return nil, err
	}
	if maxMessageBytes <= 0 {
		maxMessageBytes = middleware.DefaultMaxMessageBytes
	}
	s := &Stdio{
		argv:    append([]string{c.Path}, c.Args...),
		proc:    p,
		r:       framing.NewReader(p.Stdout(), maxMessageBytes),
		w:       framing.NewWriter(p.Stdin()),
		broken:  make(chan struct{}),
		closing: make(chan struct{}),
		reaped:  make(chan struct{}),
	}
	go s.reap()
	return s, nil
}

// Process returns the child process.
func (s *Stdio) Process() *Process { return s.proc }

// Pid returns the child's process id.
func (s *Stdio) Pid() int { return s.proc.Pid() }

// ReadMessage returns the next message from the child's stdout. When stdout
// ends it waits for the child to exit (stopping it if it does not) and
// returns a *[resilience.ExitError] describing how it exited.
func (s *Stdio) ReadMessage() ([]byte, error) {
	msg, err := s.r.Read()
	return msg, s.readErr(err)
}

// ReadHead is ReadMessage for a caller that may relay a long message as it
// arrives: it returns the next message whole (whole is true) when it fits
// in the read buffer, else its first bytes, unconsumed; the caller then
// calls ReadMessage for the whole message, or ReadPart until the
// message's end (see middleware.StreamConn.ReadHead).
func (s *Stdio) ReadHead() (msg []byte, whole bool, err error) {
	msg, whole, err = s.r.ReadHead()
	return msg, whole, s.readErr(err)
}

// ReadPart returns the next bytes of the message whose head ReadHead
// returned, starting with that head; last reports the message's end. An
// error comes with last: the child's stdout ended inside the message, and
// the next ReadHead or ReadMessage returns how the child exited.
func (s *Stdio) ReadPart() (part []byte, last bool, err error) { return s.r.ReadPart() }

// readErr returns the error to report for err, a read's: the relay's for
// a message too large, or once stdout has ended, how the child exited.
func (s *Stdio) readErr(err error) error {
	if err == nil || errors.Is(err, framing.ErrLineTooLong) {
		return tooLarge(err)
	}
	s.pipeBroken("stdout")
	<-s.proc.Done()
	st, _ := s.proc.Exit()
	return &resilience.ExitError{Code: st.Code, Signal: st.Signal, Stderr: st.Stderr, Command: s.argv}
}

// Buffered reports whether a whole message from the child is already
// buffered, so that the next ReadMessage returns it without waiting.
func (s *Stdio) Buffered() bool { return s.r.Buffered() }

// WriteMessage writes one message to the child's stdin, unless ctx is
// already done. A failed write (the child closed its stdin) stops the
// child, as a closed stdout does. A write blocked on a child that is not
// reading ends when Close closes the pipe.
func (s *Stdio) WriteMessage(ctx context.Context, msg []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	err := s.w.Write(msg)
	if err != nil && !errors.Is(err, os.ErrClosed) { // ErrClosed: Close closed it
		s.pipeBroken("stdin")
	}
	return err
}

// BeginMessage begins a message to the child written in parts as they
// arrive (see middleware.StreamConn.BeginMessage). A failed write stops the
// child, as with WriteMessage.
func (s *Stdio) BeginMessage() middleware.MessageWriter {
	return stdioMessage{s, s.w.Stream()}
}

// stdioMessage is a message to the child written in parts.
type stdioMessage struct {
	s    *Stdio
	line *framing.LineStream
}

func (m stdioMessage) Write(part []byte) error {
	err := m.line.Write(part)
	if errors.Is(err, framing.ErrLineEnded) { // ended by the caller, not the pipe
		return err
	}
	return m.s.wrote(err)
}

func (m stdioMessage) End() (bool, error) {
	first, err := m.line.End()
	return first, m.s.wrote(err)
}

// HoldMessage is WriteMessage for a message that another will follow at
// once: it is kept back (up to 1 KiB of messages) to be written with the
// next WriteMessage or Flush.
func (s *Stdio) HoldMessage(msg []byte) error { return s.wrote(s.w.Hold(msg)) }

// Flush writes the messages HoldMessage kept back, if any.
func (s *Stdio) Flush() error { return s.wrote(s.w.Flush()) }

// wrote stops the child when a write to its stdin failed, as WriteMessage
// does, and returns err.
func (s *Stdio) wrote(err error) error {
	if err != nil && !errors.Is(err, os.ErrClosed) {
		s.pipeBroken("stdin")
	}
	return err
}

// pipeBroken records that the child's pipe which ("stdin" or "stdout")
// has closed; the reaper then stops the child. Only the first call counts.
func (s *Stdio) pipeBroken(which string) {
	s.breakMu.Do(func() {
		s.which = which
		close(s.broken)
	})
}

// reap stops the child once one of its pipes has broken, unless it exits
// on its own within TerminateGrace (a child that exits closes both). It
// returns when the child has exited or Close is called.
func (s *Stdio) reap() {
	defer close(s.reaped)
	select {
	case <-s.proc.stdinGone():
		s.pipeBroken("stdin")
	case <-s.broken:
	case <-s.proc.Done():
		return
	case <-s.closing:
		return
	}
	if s.proc.exitedWithin(TerminateGrace) {
		return
	}
	s.proc.log.Warn("upstream closed its " + s.which + " but is still running; stopping it as crashed")
	s.proc.stop(TerminateGrace)
}

// Close terminates the child: it closes its stdin, then after
// [TerminateGrace] sends SIGTERM to its process group, then SIGKILL. Once
// the child has exited it closes the child's stdout too, so no descriptor
// outlives the connection; a ReadMessage blocked meanwhile returns the
// child's exit. Concurrent calls wait for the first to finish.
func (s *Stdio) Close() error {
	s.once.Do(func() {
		s.closeErr = s.proc.Terminate(context.Background(), TerminateGrace)
		close(s.closing)
		<-s.reaped
		if err := s.proc.Stdout().Close(); err != nil && s.closeErr == nil {
			s.closeErr = err
		}
	})
	return s.closeErr
}
