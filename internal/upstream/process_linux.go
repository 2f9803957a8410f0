package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync/atomic"
	"syscall"
)

// guardianExe is the running binary. Unlike the path os.Executable returns,
// it still names the right file after the binary was replaced or deleted on
// disk (an upgrade while mcpwrap runs).
const guardianExe = "/proc/self/exe"

// guardedChild is a command started through a guardian (see guardian_linux.go
// for the protocol).
type guardedChild struct {
	guardian *os.Process
	childPid int
	waited   chan waitResult // the guardian's exit, sent once
	reaped   atomic.Bool     // the guardian has been reaped
}

type waitResult struct {
	state *os.ProcessState
	err   error
}

// startChild starts the guardian, hands it the command and waits for the
// command's pid or start error.
func startChild(ctx context.Context, spec childIO, log *slog.Logger) (child, error) {
	if !guardianInstalled.Load() {
		return nil, ErrGuardianNotInstalled
	}
	specR, specW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	reportR, reportW, err := os.Pipe()
	if err != nil {
		closeFiles(specR, specW)
		return nil, err
	}
	cmd := &exec.Cmd{
		Path:       guardianExe,
		Args:       []string{"mcpwrap-guardian", spec.args[0]}, // argv shows in ps
		Env:        append(withoutEnv(os.Environ(), spec.hideEnv), guardianEnv+"="+strconv.Itoa(os.Getpid())),
		Stdin:      spec.stdin,
		Stdout:     spec.stdout,
		Stderr:     spec.stderr,
		ExtraFiles: []*os.File{specR, reportW}, // fds 3 and 4
		SysProcAttr: &syscall.SysProcAttr{
			Setpgid:   true,
			Pdeathsig: syscall.SIGTERM,
		},
	}
	g := &guardedChild{waited: make(chan waitResult, 1)}
	started := make(chan error, 1)
	go g.run(cmd, started)
	err = <-started
	closeFiles(specR, reportW)
	if err != nil {
		closeFiles(specW, reportR)
		return nil, fmt.Errorf("start guardian: %w", err)
	}
	g.guardian = cmd.Process
	log.Debug("upstream guardian started", "guardian_pid", cmd.Process.Pid)

	reports := make(chan guardianReport, 1)
	go func() {
		defer close(reports)
		defer reportR.Close()
		err := json.NewEncoder(specW).Encode(guardianSpec{
			Path:        spec.path,
			Args:        spec.args,
			Env:         spec.env,
			Dir:         spec.dir,
			OrphanGrace: spec.orphanGrace,
		})
		_ = specW.Close()
		var rep guardianReport
		if err == nil && json.NewDecoder(reportR).Decode(&rep) == nil {
			reports <- rep
		}
	}()

	select {
	case rep, ok := <-reports:
		switch {
		case !ok:
			return nil, fmt.Errorf("guardian exited before starting the command (%s)", g.describeExit())
		case rep.Pid == 0:
			<-g.waited
			return nil, rep.err()
		}
		g.childPid = rep.Pid
		return g, nil
	case <-ctx.Done():
		_ = g.guardian.Kill() // the command, if started, gets its Pdeathsig
		if rep, ok := <-reports; ok && rep.Pid != 0 {
			_ = signalGroup(rep.Pid, syscall.SIGKILL)
		}
		<-g.waited
		return nil, ctx.Err()
	}
}

// run starts the guardian and reaps it, on one locked OS thread: the kernel
// sends the guardian's Pdeathsig when the thread that forked it exits, not
// when mcpwrap does (golang/go#27505), and the runtime never retires a
// locked thread while its goroutine lives. This costs one parked thread per
// running child.
func (g *guardedChild) run(cmd *exec.Cmd, started chan<- error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cmd.Start(); err != nil {
		started <- err
		return
	}
	started <- nil
	state, err := cmd.Process.Wait()
	g.reaped.Store(true)
	g.waited <- waitResult{state: state, err: err}
}

// describeExit waits for the guardian and says how it exited.
func (g *guardedChild) describeExit() string {
	w := <-g.waited
	if w.err != nil {
		return w.err.Error()
	}
	return exitStatusOf(w.state).String()
}

func (g *guardedChild) pid() int { return g.childPid }

func (g *guardedChild) wait() (*os.ProcessState, error) {
	w := <-g.waited
	return w.state, w.err
}

// interrupt goes through the guardian, which forwards SIGTERM to the group
// only while the group's leader is unreaped, so it never hits a reused id.
func (g *guardedChild) interrupt() error {
	if err := g.guardian.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}

// kill sends SIGKILL to the command's group directly, not through the
// guardian: the guardian then reaps the command and mirrors its death, so
// that when Done is closed no zombie of the command is left behind.
func (g *guardedChild) kill() error {
	if g.reaped.Load() {
		return nil
	}
	return signalGroup(g.childPid, syscall.SIGKILL)
}
