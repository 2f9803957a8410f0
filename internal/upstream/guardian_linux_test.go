package upstream

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
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
	"golang.org/x/sys/unix"
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
// grandchild (given args as fixtureGrandchild's) through Start, prints
// "GUARDIAN CHILD GRANDCHILD" pids, and waits to be killed.
func fixtureParent(args []string) int {
	unrelated := make(chan os.Signal, 1)
	signal.Notify(unrelated, syscall.SIGUSR2)
	exe, err := os.Executable()
	if err != nil {
		return 1
	}
	p, err := Start(context.Background(), Command{
		Path:        exe,
		Args:        append([]string{"stubborn"}, args...),
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

func init() {
	fixtures["orphaner"] = fixtureOrphaner
	fixtures["spawn-setsid"] = fixtureSpawnSetsid
}

// fixtureSpawnSetsid starts a stubborn child in a session of its own,
// prints "grandchild PID" once it is ready, and exits, orphaning it.
func fixtureSpawnSetsid([]string) int {
	if !startStubborn(true, nil) {
		return 1
	}
	return 0
}

// fixtureOrphaner runs fixtureSpawnSetsid to its end, prints
// "grandchild PID" of the orphan it left, and exits at stdin EOF.
func fixtureOrphaner([]string) int {
	unrelated := make(chan os.Signal, 1)
	signal.Notify(unrelated, syscall.SIGUSR2)
	exe, err := os.Executable()
	if err != nil {
		return 1
	}
	mid := exec.Command(exe)
	mid.Env = append(os.Environ(), fixtureEnv+"=spawn-setsid")
	out, err := mid.Output()
	if err != nil {
		return 1
	}
	fmt.Print(string(out))
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// TestGuardianKillsSetsidDescendantWhenParentDies: mcpwrap dies by SIGKILL;
// the guardian kills the command's group, and then every descendant that
// left it, as in a session of its own.
func TestGuardianKillsSetsidDescendantWhenParentDies(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	require.NoError(t, err)
	parent := exec.Command(exe, "setsid")
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
	t.Cleanup(func() { _ = syscall.Kill(grandchild, syscall.SIGKILL) })
	sid, err := unix.Getsid(grandchild)
	require.NoError(t, err)
	require.Equal(t, grandchild, sid, "the grandchild leads a session of its own")

	require.NoError(t, parent.Process.Kill())
	_ = parent.Wait()

	for _, pid := range []int{child, grandchild, guardian} {
		waitGone(t, pid)
	}
}

func TestGuardianSweepsSetsidDescendantWhenChildExits(t *testing.T) {
	t.Parallel()
	p := startFixture(t, fixtureCommand(t, "grandchild", "setsid"))
	grandchild := readGrandchild(t, p)

	require.NoError(t, p.Stdin().Close())

	assert.True(t, waitDone(t, p).Success())
	assertGone(t, grandchild)
}

// TestGuardianAdoptsOrphans: a descendant whose parent exits while the
// command runs is re-parented to the guardian (a child subreaper), which
// reaps it when it exits and kills it when the command exits.
func TestGuardianAdoptsOrphans(t *testing.T) {
	t.Parallel()
	p := startFixture(t, fixtureCommand(t, "orphaner"))
	orphan := readGrandchild(t, p)
	guardian := p.child.(*guardedChild).guardian.Pid

	ppid, ok := parentOf(orphan)
	require.True(t, ok)
	assert.Equal(t, guardian, ppid, "the orphan's parent is the guardian, not init")

	require.NoError(t, p.Stdin().Close())

	assert.True(t, waitDone(t, p).Success())
	assertGone(t, orphan)
}

// TestGuardianReapsOrphans: an orphan that exits while the command runs
// does not stay a zombie of the guardian.
func TestGuardianReapsOrphans(t *testing.T) {
	t.Parallel()
	p := startFixture(t, fixtureCommand(t, "orphaner"))
	orphan := readGrandchild(t, p)

	require.NoError(t, syscall.Kill(orphan, syscall.SIGKILL))

	// No event tells that a process was reaped: poll, boundedly, for its
	// /proc entry to go.
	require.Eventually(t, func() bool { return errors.Is(syscall.Kill(orphan, 0), syscall.ESRCH) },
		10*time.Second, 10*time.Millisecond, "the orphan stayed a zombie")
	_, running := p.Exit()
	assert.False(t, running, "the command still runs")
}

// TestGuardianHoldsNoChildPipe: the guardian must not keep the child's
// stdin or stdout open, or a child closing either would go unnoticed.
func TestGuardianHoldsNoChildPipe(t *testing.T) {
	t.Parallel()
	p := startFixture(t, fixtureCommand(t, "stubborn"))
	require.Equal(t, "ready", readLine(t, bufio.NewReader(p.Stdout())), "child running")
	guardian := p.child.(*guardedChild).guardian.Pid

	pipes := map[string]string{}
	for name, f := range map[string]*os.File{"stdin": p.stdin, "stdout": p.stdout} {
		fi, err := f.Stat()
		require.NoError(t, err)
		pipes[fmt.Sprintf("pipe:[%d]", fi.Sys().(*syscall.Stat_t).Ino)] = name
	}
	dir := fmt.Sprintf("/proc/%d/fd", guardian)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		target, err := os.Readlink(dir + "/" + e.Name())
		if err != nil {
			continue // closed meanwhile
		}
		if name, ok := pipes[target]; ok {
			assert.Fail(t, "the guardian holds the child's "+name, "fd %s -> %s", e.Name(), target)
		}
	}
}

// Not parallel: it sets an environment variable.
func TestGuardianEnvironmentHidesSecrets(t *testing.T) {
	t.Setenv("MCPWRAP_TEST_SECRET", "s3cret")
	c := fixtureCommand(t, "stubborn")
	c.HideEnv = []string{"MCPWRAP_TEST_SECRET"}
	p := startFixture(t, c)
	require.Equal(t, "ready", readLine(t, bufio.NewReader(p.Stdout())), "child running")
	guardian := p.child.(*guardedChild).guardian.Pid

	for _, pid := range []int{guardian, p.Pid()} {
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		require.NoError(t, err)
		assert.NotContains(t, string(raw), "s3cret", "pid %d", pid)
	}
}
