package upstream

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/mcpwrap/mcpwrap/internal/framing"
	"github.com/mcpwrap/mcpwrap/resilience"
)

// TerminateGrace is how long a closing [Stdio] waits after closing the
// child's stdin, and again after SIGTERM, before escalating.
const TerminateGrace = 500 * time.Millisecond

// Stdio is a connection to an MCP server running as a child process and
// speaking newline-delimited JSON-RPC on its stdin and stdout. It satisfies
// middleware.Conn.
//
// ReadMessage must be called from one goroutine at a time; WriteMessage and
// Close are safe for concurrent use.
type Stdio struct {
	argv []string // the command line, for the "run it by hand" hint
	proc *Process
	r    *framing.Reader
	w    *framing.Writer
	once sync.Once

	closeErr error // set by the first Close, read after once.Do
}

// StartStdio starts the command and returns a connection to it. Messages over
// maxMessageBytes (0 means 64 MiB) are dropped with a
// [framing.LineTooLongError].
func StartStdio(ctx context.Context, c Command, maxMessageBytes int) (*Stdio, error) {
	p, err := Start(ctx, c)
	if err != nil {
		var start *StartError
		if errors.As(err, &start) {
			return nil, &resilience.SpawnError{Command: start.Path, Err: start.Err}
		}
		return nil, err
	}
	return &Stdio{
		argv: append([]string{c.Path}, c.Args...),
		proc: p,
		r:    framing.NewReader(p.Stdout(), maxMessageBytes),
		w:    framing.NewWriter(p.Stdin()),
	}, nil
}

// Process returns the child process.
func (s *Stdio) Process() *Process { return s.proc }

// Pid returns the child's process id.
func (s *Stdio) Pid() int { return s.proc.Pid() }

// ReadMessage returns the next message from the child's stdout. When stdout
// ends it waits for the child to exit and returns a
// *[resilience.ExitError] describing how it exited.
func (s *Stdio) ReadMessage() ([]byte, error) {
	msg, err := s.r.Read()
	if err == nil || errors.Is(err, framing.ErrLineTooLong) {
		return msg, err
	}
	<-s.proc.Done()
	st, _ := s.proc.Exit()
	return nil, &resilience.ExitError{Code: st.Code, Signal: st.Signal, Stderr: st.Stderr, Command: s.argv}
}

// WriteMessage writes one message to the child's stdin.
func (s *Stdio) WriteMessage(msg []byte) error { return s.w.Write(msg) }

// Close terminates the child: it closes its stdin, then after
// [TerminateGrace] sends SIGTERM to its process group, then SIGKILL. Once
// the child has exited it closes the child's stdout too, so no descriptor
// outlives the connection; a ReadMessage blocked meanwhile returns the
// child's exit. Concurrent calls wait for the first to finish.
func (s *Stdio) Close() error {
	s.once.Do(func() {
		s.closeErr = s.proc.Terminate(context.Background(), TerminateGrace)
		if err := s.proc.Stdout().Close(); err != nil && s.closeErr == nil {
			s.closeErr = err
		}
	})
	return s.closeErr
}
