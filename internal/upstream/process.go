// Package upstream runs and connects to the upstream MCP server: a stdio
// child process, or a remote server over HTTP.
//
// The stdio part ([Start], [Process]) starts the child in its own process
// group, passes its stderr through while keeping the last lines for
// diagnosis, captures how it exited, and makes sure the whole group is gone
// when mcpwrap stops, even when mcpwrap is killed with SIGKILL (on Linux,
// through a guardian process that also finds descendants which left the
// group: see [RunGuardianIfRequested]). A [Stdio] child that closes its
// stdin or stdout is stopped as crashed.
package upstream

import (
	"context"
	"errors"
	"fmt"
	"github.com/mcpwrap/mcpwrap/internal/pipesize"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
)

// DefaultOrphanGrace is the [Command.OrphanGrace] used when it is zero.
const DefaultOrphanGrace = 2 * time.Second

// stderrDrainTimeout bounds how long a finished process waits for the rest
// of its stderr: a grandchild that keeps the pipe open must not delay Done.
const stderrDrainTimeout = 500 * time.Millisecond

// Command describes the child to start. The zero value of every optional
// field is a usable default.
type Command struct {
	// Path is the program: a name looked up in mcpwrap's PATH (as
	// [exec.Command] does), or a path, relative to Dir when relative.
	Path string
	// Args are the arguments, without the program name.
	Args []string
	// Env is the child's full environment; nil means mcpwrap's own.
	Env []string
	// HideEnv names variables the child must never see, whether inherited
	// or in Env: those whose values mcpwrap holds as secrets, such as the
	// bearer token its HTTP front checks. They are removed from the
	// child's environment (and, on Linux, from its guardian's). Names
	// match exactly, ignoring case on Windows.
	HideEnv []string
	// Dir is the child's working directory; "" means mcpwrap's.
	Dir string

	// Stderr receives the child's stderr as it arrives, one line per Write
	// (a line longer than 4 KiB in several). Nil discards it. It is written
	// from a single goroutine.
	Stderr io.Writer
	// StderrLines is how many stderr lines are kept for diagnosis
	// ([Process.StderrTail], [ExitStatus.Stderr]); 0 means
	// [DefaultStderrLines].
	StderrLines int

	// OrphanGrace is, on Linux, how long the group gets between SIGTERM and
	// SIGKILL when mcpwrap died without terminating it; 0 means
	// [DefaultOrphanGrace]. Elsewhere it is unused.
	OrphanGrace time.Duration

	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
}

// StartError reports that the command could not be started. Err keeps the
// cause, so errors.Is(err, exec.ErrNotFound), fs.ErrNotExist,
// fs.ErrPermission or syscall.ENOEXEC tell the usual failures apart.
type StartError struct {
	Path string // the program as given in [Command.Path]
	Err  error
}

func (e *StartError) Error() string {
	return fmt.Sprintf("upstream: start %s: %v", e.Path, e.Err)
}

func (e *StartError) Unwrap() error { return e.Err }

// ExitStatus describes how a child exited.
type ExitStatus struct {
	// Code is the exit code, or -1 when the child was killed by a signal
	// or its status could not be read.
	Code int
	// Signal names the signal that killed the child ("SIGKILL"); "" when
	// it exited on its own.
	Signal string
	// Stderr holds the last stderr lines at exit, oldest first.
	Stderr []string
}

// Success reports whether the child exited with code 0.
func (s ExitStatus) Success() bool { return s.Code == 0 && s.Signal == "" }

// String describes the status like a shell would: "exit status 1" or
// "killed by SIGKILL".
func (s ExitStatus) String() string {
	if s.Signal != "" {
		return "killed by " + s.Signal
	}
	return fmt.Sprintf("exit status %d", s.Code)
}

// ExitError is returned by [Process.Wait] when the child did not exit with
// code 0.
type ExitError struct {
	Status ExitStatus
}

func (e *ExitError) Error() string {
	msg := "upstream: child " + e.Status.String()
	if n := len(e.Status.Stderr); n > 0 {
		msg += ": " + e.Status.Stderr[n-1]
	}
	return msg
}

// Process is a running child started by [Start]. All methods are safe for
// concurrent use.
type Process struct {
	log    *slog.Logger
	child  child
	stdin  *os.File
	watch  *pipeWatch // stdin's readers; nil where they cannot be watched
	stdout *os.File
	tail   *lineRing

	done     chan struct{} // closed once exit is set
	exit     ExitStatus
	termOnce sync.Once
}

// child is the platform's handle on the started process (group).
type child interface {
	// pid is the child's own process id (never a guardian's).
	pid() int
	// wait blocks until the child has exited and been reaped. It is called
	// once, from one goroutine.
	wait() (*os.ProcessState, error)
	// interrupt asks the whole group to stop (SIGTERM).
	interrupt() error
	// kill kills the whole group (SIGKILL).
	kill() error
}

// childIO is what a platform start gets: the program, resolved, and the
// child's ends of its standard streams.
type childIO struct {
	path        string
	args        []string // argv, including argv[0]
	env         []string
	hideEnv     []string // also kept from a guardian's environment
	dir         string
	orphanGrace time.Duration

	stdin, stdout, stderr *os.File
}

// Start starts the command in its own process group. ctx bounds the start
// only: cancelling it later does not affect the running child. Errors
// are *[StartError].
func Start(ctx context.Context, c Command) (*Process, error) {
	log := c.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := ctx.Err(); err != nil {
		return nil, &StartError{Path: c.Path, Err: err}
	}
	spec, err := resolve(c)
	if err != nil {
		return nil, &StartError{Path: c.Path, Err: err}
	}

	// Pipes, not exec's copying goroutines: the relay reads stdout itself,
	// and waiting must not hang on a grandchild holding a stream open.
	ours, theirs, err := childPipes()
	if err != nil {
		return nil, &StartError{Path: c.Path, Err: err}
	}
	stdinW, stdoutR, stderrR := ours[0], ours[1], ours[2]
	spec.stdin, spec.stdout, spec.stderr = theirs[0], theirs[1], theirs[2]

	ch, err := startChild(ctx, spec, log)
	closeFiles(theirs[:]...) // the child has its own copies now
	if err != nil {
		closeFiles(ours[:]...)
		return nil, &StartError{Path: c.Path, Err: err}
	}

	lines := c.StderrLines
	if lines <= 0 {
		lines = DefaultStderrLines
	}
	p := &Process{
		log:    log.With("pid", ch.pid()),
		child:  ch,
		stdin:  stdinW,
		stdout: stdoutR,
		tail:   newLineRing(lines, MaxStderrLineBytes),
		done:   make(chan struct{}),
	}
	p.log.Debug("upstream started", "command", c.Path)
	if p.watch, err = watchReaders(stdinW); err != nil {
		p.log.Debug("the child's stdin cannot be watched; its closing is seen at the next write", "error", err)
		p.watch = nil
	}

	stderrDone := make(chan struct{})
	go func() {
		defer close(stderrDone)
		defer stderrR.Close()
		pumpStderr(stderrR, c.Stderr, p.tail, p.log)
	}()
	go p.await(stderrDone)
	return p, nil
}

// resolve checks the command and turns it into what a platform start needs,
// with exec.Command's rules: a bare name is looked up in PATH, a path is
// used as it is.
func resolve(c Command) (childIO, error) {
	if c.Path == "" {
		return childIO{}, errors.New("empty command")
	}
	path := c.Path
	if filepath.Base(path) == path {
		lp, err := exec.LookPath(path)
		if err != nil {
			return childIO{}, err
		}
		path = lp
	}
	if c.Dir != "" {
		// Checked here so a missing directory is reported as such, not
		// as a failed exec of the program.
		fi, err := os.Stat(c.Dir)
		if err != nil {
			return childIO{}, fmt.Errorf("working directory: %w", err)
		}
		if !fi.IsDir() {
			return childIO{}, fmt.Errorf("working directory %s: not a directory", c.Dir)
		}
	}
	env := c.Env
	if env == nil {
		env = os.Environ()
	}
	env = withoutEnv(env, c.HideEnv)
	grace := c.OrphanGrace
	if grace <= 0 {
		grace = DefaultOrphanGrace
	}
	return childIO{
		path:        path,
		args:        append([]string{c.Path}, c.Args...),
		env:         env,
		hideEnv:     c.HideEnv,
		dir:         c.Dir,
		orphanGrace: grace,
	}, nil
}

// withoutEnv returns env without the variables named in hide, in a new
// slice when it removes any.
func withoutEnv(env, hide []string) []string {
	if len(hide) == 0 {
		return env
	}
	hidden := func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		for _, h := range hide {
			if name == h || (runtime.GOOS == "windows" && strings.EqualFold(name, h)) {
				return true
			}
		}
		return false
	}
	if !slices.ContainsFunc(env, hidden) {
		return env
	}
	return slices.DeleteFunc(slices.Clone(env), hidden)
}

// childPipes returns the three standard streams as pipes: ours are the
// stdin writer and the stdout and stderr readers; theirs the other ends.
func childPipes() (ours, theirs [3]*os.File, err error) {
	for i := range 3 {
		r, w, err := os.Pipe()
		if err != nil {
			closeFiles(ours[:i]...)
			closeFiles(theirs[:i]...)
			return ours, theirs, err
		}
		pipesize.Grow(w)
		if i == 0 {
			ours[i], theirs[i] = w, r
		} else {
			ours[i], theirs[i] = r, w
		}
	}
	return ours, theirs, nil
}

func closeFiles(fs ...*os.File) {
	for _, f := range fs {
		_ = f.Close()
	}
}

// await reaps the child, lets stderr drain briefly so the tail holds the
// child's last words, and publishes the exit status.
func (p *Process) await(stderrDone <-chan struct{}) {
	state, err := p.child.wait()
	drain := time.NewTimer(stderrDrainTimeout)
	select {
	case <-stderrDone:
	case <-drain.C:
		p.log.Debug("upstream stderr still open after exit; not waiting for it")
	}
	drain.Stop()

	status := ExitStatus{Code: -1}
	if err != nil {
		p.log.Warn("upstream exit status unavailable", "error", err)
	} else {
		status = exitStatusOf(state)
	}
	status.Stderr = p.tail.Lines()
	p.exit = status
	close(p.done)
	p.log.Debug("upstream exited", "code", status.Code, "signal", status.Signal)
}

// Stdin returns the child's standard input. Closing it is how the child is
// asked to finish; [Process.Terminate] closes it too. Until it is closed,
// mcpwrap also holds a second descriptor of it, to notice at once when the
// child closes its end (on Unix).
func (p *Process) Stdin() io.WriteCloser { return stdinWriter{p} }

// stdinWriter is the child's stdin as [Process.Stdin] returns it.
type stdinWriter struct{ p *Process }

func (w stdinWriter) Write(b []byte) (int, error) { return w.p.stdin.Write(b) }

func (w stdinWriter) Close() error { return w.p.closeStdin() }

// closeStdin closes mcpwrap's end of the child's stdin, the watch's copy
// first: the child sees EOF once both are closed.
func (p *Process) closeStdin() error {
	p.watch.Stop()
	return p.stdin.Close()
}

// stdinGone returns a channel closed once the child (and everything that
// shares its stdin) has closed its stdin while mcpwrap's end is open; it
// is never closed where that cannot be watched.
func (p *Process) stdinGone() <-chan struct{} { return p.watch.Gone() }

// Stdout returns the child's standard output. It reaches EOF once the child
// and everything it started have exited or closed it (on Linux the guardian
// kills what is left when the child exits). The caller closes it when done.
func (p *Process) Stdout() io.ReadCloser { return p.stdout }

// Pid returns the child's process id; on Unix it is also the id of the
// child's process group.
func (p *Process) Pid() int { return p.child.pid() }

// Done returns a channel closed once the child has exited and been reaped.
func (p *Process) Done() <-chan struct{} { return p.done }

// Exit returns how the child exited, and false while it is still running.
func (p *Process) Exit() (ExitStatus, bool) {
	select {
	case <-p.done:
		return p.exit, true
	default:
		return ExitStatus{}, false
	}
}

// Wait blocks until the child has exited. It returns nil for exit code 0,
// else an *[ExitError].
func (p *Process) Wait() error {
	<-p.done
	if p.exit.Success() {
		return nil
	}
	return &ExitError{Status: p.exit}
}

// StderrTail returns the last stderr lines seen so far, oldest first.
func (p *Process) StderrTail() []string { return p.tail.Lines() }

// Terminate stops the child and everything in its process group, politely
// first: it closes the child's stdin and waits grace; then sends SIGTERM to
// the group and waits grace again; then sends SIGKILL to the group. It
// returns nil once the child has exited. If ctx ends first it sends SIGKILL
// at once and returns ctx's error.
//
// Terminate is idempotent and safe to call concurrently: the escalation
// runs once, and every call waits for the same exit. On Windows there is no
// SIGTERM step and SIGKILL reaches the child alone.
func (p *Process) Terminate(ctx context.Context, grace time.Duration) error {
	p.termOnce.Do(func() { go p.escalate(grace) })
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		p.log.Warn("upstream termination interrupted; killing its process group", "error", ctx.Err())
		if err := p.child.kill(); err != nil {
			p.log.Debug("upstream kill failed", "error", err)
		}
		return ctx.Err()
	}
}

// escalate closes the child's stdin, then signals its group as
// [Process.signalGroup] does if it is still running after grace.
func (p *Process) escalate(grace time.Duration) {
	_ = p.closeStdin()
	if p.exitedWithin(grace) {
		return
	}
	p.log.Info("upstream still running after stdin closed; sending SIGTERM", "grace_ms", grace.Milliseconds())
	p.signalGroup(grace)
}

// stop sends SIGTERM to the group, then SIGKILL after grace, and returns
// once the child has exited: for a child already judged dead, which
// closing its stdin would not reach.
func (p *Process) stop(grace time.Duration) {
	p.signalGroup(grace)
	<-p.done
}

// signalGroup sends SIGTERM to the child's process group, then SIGKILL if
// the child has not exited after grace.
func (p *Process) signalGroup(grace time.Duration) {
	if err := p.child.interrupt(); err != nil {
		p.log.Debug("upstream SIGTERM failed", "error", err)
	}
	if p.exitedWithin(grace) {
		return
	}
	p.log.Warn("upstream ignored SIGTERM; sending SIGKILL", "grace_ms", grace.Milliseconds())
	if err := p.child.kill(); err != nil {
		p.log.Debug("upstream SIGKILL failed", "error", err)
	}
}

func (p *Process) exitedWithin(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.done:
		return true
	case <-t.C:
		return false
	}
}
