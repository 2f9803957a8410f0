//go:build unix && !linux

package upstream

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"sync/atomic"
	"syscall"
)

// groupChild is a command started directly as the leader of its own process
// group. Without a guardian, the group is cleaned up by Terminate only: if
// mcpwrap is killed outright, the group outlives it.
type groupChild struct {
	cmd    *exec.Cmd
	reaped atomic.Bool
}

func startChild(_ context.Context, spec childIO, _ *slog.Logger) (child, error) {
	cmd := &exec.Cmd{
		Path:        spec.path,
		Args:        spec.args,
		Env:         spec.env,
		Dir:         spec.dir,
		Stdin:       spec.stdin,
		Stdout:      spec.stdout,
		Stderr:      spec.stderr,
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true},
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &groupChild{cmd: cmd}, nil
}

func (c *groupChild) pid() int { return c.cmd.Process.Pid }

func (c *groupChild) wait() (*os.ProcessState, error) {
	state, err := c.cmd.Process.Wait()
	c.reaped.Store(true)
	return state, err
}

// interrupt and kill signal the group only while its leader is unreaped;
// after that its id may belong to someone else (best effort: the check and
// the signal are not atomic).
func (c *groupChild) interrupt() error { return c.signal(syscall.SIGTERM) }

func (c *groupChild) kill() error { return c.signal(syscall.SIGKILL) }

func (c *groupChild) signal(sig syscall.Signal) error {
	if c.reaped.Load() {
		return nil
	}
	return signalGroup(c.cmd.Process.Pid, sig)
}
