package upstream

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func init() {
	fixtures["die-of"] = fixtureDieOf
	fixtures["report-interrupt"] = fixtureReportInterrupt
	fixtures["parent"] = fixtureParent
}

// fixtureDieOf dies of the signal numbered args[0].
func fixtureDieOf(args []string) int {
	n, err := strconv.Atoi(args[0])
	if err != nil {
		return 2
	}
	dieOf(syscall.Signal(n))
	return 1
}

// fixtureReportInterrupt prints "ready", then "got SIGINT" at the first
// SIGINT, and exits 0.
func fixtureReportInterrupt([]string) int {
	ints := make(chan os.Signal, 1)
	signal.Notify(ints, syscall.SIGINT)
	fmt.Println("ready")
	<-ints
	fmt.Println("got SIGINT")
	return 0
}

// fixtureParent plays mcpwrap: it starts a stubborn child with a stubborn
// grandchild through Start, prints "GUARDIAN CHILD GRANDCHILD" pids, and
// waits to be killed.
func fixtureParent([]string) int {
	unrelated := make(chan os.Signal, 1)
	signal.Notify(unrelated, syscall.SIGUSR2)
	exe, err := os.Executable()
	if err != nil {
		return 1
	}
	p, err := Start(context.Background(), Command{
		Path:        exe,
		Args:        []string{"stubborn"},
		Env:         append(os.Environ(), fixtureEnv+"=grandchild"),
		Stderr:      os.Stderr,
		OrphanGrace: 200 * time.Millisecond,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var grandchild int
	if _, err := fmt.Fscanf(p.Stdout(), "grandchild %d\n", &grandchild); err != nil {
		return 1
	}
	fmt.Println(p.child.(*guardedChild).guardian.Pid, p.Pid(), grandchild)
	blockForever()
	return 0
}

func TestGuardianKillsGroupWhenParentDies(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	require.NoError(t, err)
	parent := exec.Command(exe)
	parent.Env = append(os.Environ(), fixtureEnv+"=parent")
	parent.Stderr = os.Stderr
	out, err := parent.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, parent.Start())
	t.Cleanup(func() {
		_ = parent.Process.Kill()
		_ = parent.Wait()
	})

	var guardian, child, grandchild int
	_, err = fmt.Fscanf(out, "%d %d %d\n", &guardian, &child, &grandchild)
	require.NoError(t, err)

	require.NoError(t, parent.Process.Kill())
	_ = parent.Wait()

	for _, pid := range []int{child, grandchild, guardian} {
		waitGone(t, pid)
	}
}

func TestGuardianSweepsGroupWhenChildExits(t *testing.T) {
	t.Parallel()
	p := startFixture(t, fixtureCommand(t, "grandchild"))
	grandchild := readGrandchildPid(t, bufio.NewReader(p.Stdout()))

	require.NoError(t, p.Stdin().Close())

	assert.True(t, waitDone(t, p).Success())
	waitGone(t, grandchild)
}

func TestGuardianForwardsInterrupt(t *testing.T) {
	t.Parallel()
	p := startFixture(t, fixtureCommand(t, "report-interrupt"))
	out := bufio.NewReader(p.Stdout())
	require.Equal(t, "ready", readLine(t, out))
	guardian := p.child.(*guardedChild).guardian

	require.NoError(t, guardian.Signal(syscall.SIGINT))

	assert.Equal(t, "got SIGINT", readLine(t, out))
	assert.True(t, waitDone(t, p).Success(), "the guardian survives the signal it forwards")
}

func TestGuardianMirrorsSignalDeath(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		sig  syscall.Signal
	}{
		{name: "terminate", sig: syscall.SIGTERM},
		{name: "user signal", sig: syscall.SIGUSR1},
		{name: "abort, a core-dumping signal", sig: syscall.SIGABRT},
		{name: "segfault, handled by the Go runtime", sig: syscall.SIGSEGV},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := startFixture(t, fixtureCommand(t, "die-of", strconv.Itoa(int(tt.sig))))

			status := waitDone(t, p)

			assert.Equal(t, ExitStatus{Code: -1, Signal: signalName(tt.sig), Stderr: []string{}}, status)
		})
	}
}

func TestGuardianStartsNothingForADeadParent(t *testing.T) {
	t.Parallel()
	// The guardian's expected parent is pid 1, not this test: as if mcpwrap
	// had died before the guardian's Pdeathsig was armed.
	guardian := exec.Command(guardianExe)
	guardian.Env = append(os.Environ(), guardianEnv+"=1")

	err := guardian.Run()

	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, guardianExitOrphan, ee.ExitCode())
}

func TestGuardianReportKeepsErrno(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		is   error
	}{
		{name: "exec format", err: &fs.PathError{Op: "fork/exec", Path: "/bin/x", Err: syscall.ENOEXEC}, is: syscall.ENOEXEC},
		{name: "permission", err: &fs.PathError{Op: "fork/exec", Path: "/bin/x", Err: syscall.EACCES}, is: fs.ErrPermission},
		{name: "no errno", err: errors.New("something else"), is: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := failureReport(tt.err).err()
			assert.Equal(t, tt.err.Error(), got.Error())
			if tt.is != nil {
				assert.ErrorIs(t, got, tt.is)
			}
		})
	}
}

// Not parallel: it flips a process-wide flag.
func TestStartRequiresGuardian(t *testing.T) {
	guardianInstalled.Store(false)
	defer guardianInstalled.Store(true)

	_, err := Start(context.Background(), fixtureCommand(t, "exit", "0"))

	assert.ErrorIs(t, err, ErrGuardianNotInstalled)
}
