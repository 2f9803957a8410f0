package e2e

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpwrap/mcpwrap/internal/syncbuf"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// waitDelay bounds how long Wait waits for a killed process's pipes to drain, so a leaked
// grandchild holding stdout open cannot hang a test.
const waitDelay = 5 * time.Second

// process is a child started by one test. Its stderr (and stdout, unless piped) is captured;
// t.Cleanup kills its whole process group and reaps it. Fields are read-only after start; Output
// and Stderr are safe for concurrent use.
type process struct {
	Cmd    *exec.Cmd
	Stdin  io.WriteCloser // nil unless processOptions.PipeStdin
	Stdout io.Reader      // nil unless processOptions.PipeStdout; EOF once every writer is gone

	stdout *syncbuf.Buffer // captured stdout when not piped
	stderr *syncbuf.Buffer
	done   chan struct{} // closed when Wait has returned
	err    error         // Wait's result, valid once done is closed
}

// processOptions tunes startProcess. The zero value inherits the test's environment and captures
// both output streams.
type processOptions struct {
	Env        []string // extra KEY=VALUE entries appended to os.Environ()
	PipeStdin  bool     // Stdin is the write end of the process's stdin
	PipeStdout bool     // Stdout is the read end of the process's stdout, instead of capturing it
	Dir        string   // the working directory; "" is the test's
}

// startProcess starts name with args in its own process group, bound to ctx: when ctx ends, the
// group is killed. t.Cleanup kills the group (in case it outlived the test) and waits for it.
// On failure, the process's stderr is logged.
func startProcess(ctx context.Context, t testing.TB, opts processOptions, name string, args ...string) *process {
	t.Helper()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), opts.Env...)
	cmd.Dir = opts.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return killGroup(cmd.Process.Pid) }
	cmd.WaitDelay = waitDelay

	p := &process{Cmd: cmd, stderr: &syncbuf.Buffer{}, done: make(chan struct{})}
	cmd.Stderr = p.stderr
	var err error
	if opts.PipeStdin {
		p.Stdin, err = cmd.StdinPipe()
		require.NoError(t, err)
	}
	// An os.Pipe rather than cmd.StdoutPipe: Wait closes the latter as soon as the process exits,
	// losing unread output; ours stays readable until EOF.
	var stdoutWriter *os.File
	if opts.PipeStdout {
		var stdoutReader *os.File
		stdoutReader, stdoutWriter, err = os.Pipe()
		require.NoError(t, err)
		t.Cleanup(func() { _ = stdoutReader.Close() })
		p.Stdout, cmd.Stdout = stdoutReader, stdoutWriter
	} else {
		p.stdout = &syncbuf.Buffer{}
		cmd.Stdout = p.stdout
	}
	err = cmd.Start()
	if stdoutWriter != nil {
		_ = stdoutWriter.Close() // the child has its copy
	}
	require.NoError(t, err, "start %s", name)

	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = killGroup(cmd.Process.Pid)
		<-p.done
		if t.Failed() {
			t.Logf("%s stderr:\n%s", filepath.Base(name), p.Stderr())
		}
	})
	return p
}

// Wait waits for the process to exit or ctx to end, and returns Wait's error (an *exec.ExitError
// for a non-zero exit or a signal).
func (p *process) Wait(ctx context.Context) error {
	select {
	case <-p.done:
		return p.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Done is closed once the process has exited and been reaped.
func (p *process) Done() <-chan struct{} { return p.done }

// Output returns the captured stdout so far (empty when stdout is piped).
func (p *process) Output() string {
	if p.stdout == nil {
		return ""
	}
	return p.stdout.String()
}

// Stderr returns the captured stderr so far.
func (p *process) Stderr() string { return p.stderr.String() }

// killGroup sends SIGKILL to the process group led by pid. A group that is already gone is not
// an error.
func killGroup(pid int) error {
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}

// descendants returns the pids of every live process below pid, found by walking the parent
// links in /proc. Take the snapshot before killing pid: orphans are re-parented.
func descendants(t testing.TB, pid int) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	children := map[int][]int{}
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if parent, ok := parentPID(child); ok {
			children[parent] = append(children[parent], child)
		}
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		next := queue[0]
		queue = queue[1:]
		out = append(out, children[next]...)
		queue = append(queue, children[next]...)
	}
	return out
}

// parentPID reads the parent pid of pid from /proc/PID/stat; ok is false when pid has gone.
func parentPID(pid int) (ppid int, ok bool) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// The command name (field 2) is parenthesised and may contain spaces; fields after the last
	// ')' are: state ppid ...
	stat := string(raw)
	fields := strings.Fields(stat[strings.LastIndexByte(stat, ')')+1:])
	if len(fields) < 2 {
		return 0, false
	}
	ppid, err = strconv.Atoi(fields[1])
	return ppid, err == nil
}

// waitExited blocks until process pid (not necessarily our child) has terminated or timeout
// passes, and reports whether it terminated. It waits on a pidfd, which becomes readable when the
// process exits (a zombie counts as exited), so no polling loop is needed.
func waitExited(t testing.TB, pid int, timeout time.Duration) bool {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return true
	}
	require.NoError(t, err, "pidfd_open %d", pid)
	defer unix.Close(fd)

	deadline := time.Now().Add(timeout)
	for {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, int(time.Until(deadline).Milliseconds()))
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			require.NoError(t, err, "poll pidfd %d", pid)
		}
		return n > 0
	}
}

// killPIDs sends SIGKILL to each pid, ignoring those already gone. Tests use it to clean up
// processes that mcpwrap should have terminated but did not.
func killPIDs(pids []int) {
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}
