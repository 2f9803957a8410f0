//go:build !unix

package upstream

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
)

// plainChild is a command started with no process group handling: on these
// systems Terminate closes stdin and then kills the child alone.
type plainChild struct {
	cmd *exec.Cmd
}

func startChild(_ context.Context, spec childIO, _ *slog.Logger) (child, error) {
	cmd := &exec.Cmd{
		Path:   spec.path,
		Args:   spec.args,
		Env:    spec.env,
		Dir:    spec.dir,
		Stdin:  spec.stdin,
		Stdout: spec.stdout,
		Stderr: spec.stderr,
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &plainChild{cmd: cmd}, nil
}

func (c *plainChild) pid() int { return c.cmd.Process.Pid }

func (c *plainChild) wait() (*os.ProcessState, error) { return c.cmd.Process.Wait() }

// interrupt does nothing: there is no SIGTERM to send.
func (c *plainChild) interrupt() error { return nil }

func (c *plainChild) kill() error {
	if err := c.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}

func exitStatusOf(ps *os.ProcessState) ExitStatus {
	return ExitStatus{Code: ps.ExitCode()}
}
