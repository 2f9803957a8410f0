//go:build unix

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
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func init() {
	fixtures["stubborn"] = fixtureStubborn
	fixtures["term-exits"] = fixtureTermExits
	fixtures["grandchild"] = fixtureGrandchild
}

// blockForever parks the fixture until a signal kills it. A signal.Notify
// is active in every caller, so the runtime does not report a deadlock.
func blockForever() {
	select {}
}

// fixtureStubborn ignores stdin EOF and SIGTERM, prints "ready" and waits
// to be killed.
func fixtureStubborn([]string) int {
	terms := make(chan os.Signal, 1)
	signal.Notify(terms, syscall.SIGTERM)
	go func() {
		for range terms {
		}
	}()
	fmt.Println("ready")
	blockForever()
	return 0
}

// fixtureTermExits ignores stdin EOF, prints "ready" and dies of SIGTERM.
func fixtureTermExits([]string) int {
	unrelated := make(chan os.Signal, 1)
	signal.Notify(unrelated, syscall.SIGUSR2)
	fmt.Println("ready")
	blockForever()
	return 0
}

// fixtureGrandchild starts a stubborn grandchild in its process group (in
// a session of its own with the argument "setsid"), prints "grandchild PID"
// once it is ready, then with the argument "stubborn" behaves like
// fixtureStubborn, and otherwise exits at stdin EOF.
func fixtureGrandchild(args []string) int {
	terms := make(chan os.Signal, 1)
	signal.Notify(terms, syscall.SIGTERM)
	stubborn := slices.Contains(args, "stubborn")
	go func() {
		for range terms {
			if !stubborn {
				os.Exit(0)
			}
		}
	}()

	if !startStubborn(slices.Contains(args, "setsid"), os.Stderr) {
		return 1
	}
	if stubborn {
		blockForever()
	}
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// startStubborn starts fixtureStubborn (in a session of its own when
// setsid), with stderr as its stderr (nil: none), waits until it is ready,
// and prints "grandchild PID". It reports whether all of that went well.
func startStubborn(setsid bool, stderr io.Writer) bool {
	exe, err := os.Executable()
	if err != nil {
		return false
	}
	gc := exec.Command(exe)
	gc.Env = append(os.Environ(), fixtureEnv+"=stubborn")
	gc.Stderr = stderr
	gc.SysProcAttr = &syscall.SysProcAttr{Setsid: setsid}
	out, err := gc.StdoutPipe()
	if err != nil {
		return false
	}
	if err := gc.Start(); err != nil {
		return false
	}
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "ready\n" {
		return false
	}
	fmt.Printf("grandchild %d\n", gc.Process.Pid)
	return true
}

// readGrandchild reads the "grandchild PID" line of p's fixture and kills
// that process when the test ends, in case the code under test did not.
func readGrandchild(t testing.TB, p *Process) int {
	t.Helper()
	pid := readGrandchildPid(t, bufio.NewReader(p.Stdout()))
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	return pid
}

// waitGone polls, with a bounded deadline, until pid no longer runs. A
// zombie counts as gone: it runs nothing, and an init that never reaps
// orphans (as in some containers) would keep it forever.
func waitGone(t testing.TB, pid int) {
	t.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !processGone(pid) {
		select {
		case <-tick.C:
		case <-deadline.C:
			require.FailNow(t, "process still running", "pid %d", pid)
		}
	}
}

func processGone(pid int) bool {
	if errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name: "pid (comm) S ...".
	rest := string(stat[strings.LastIndexByte(string(stat), ')')+1:])
	state := strings.Fields(rest)[0]
	return state == "Z" || state == "X"
}

func TestStartExecErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string, mode fs.FileMode) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(content), mode))
		return path
	}
	tests := []struct {
		name string
		path string
		want error
	}{
		{name: "not executable", path: write("plain", "#!/bin/sh\n", 0o644), want: fs.ErrPermission},
		{name: "exec format", path: write("garbage", "\x00\x01not a program", 0o755), want: syscall.ENOEXEC},
		{name: "directory", path: dir, want: fs.ErrPermission},
		{name: "missing interpreter", path: write("script", "#!/nonexistent/interpreter\n", 0o755), want: fs.ErrNotExist},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := Start(context.Background(), Command{Path: tt.path})
			require.Error(t, err)
			assert.Nil(t, p)
			assert.ErrorIs(t, err, tt.want)
			var se *StartError
			assert.ErrorAs(t, err, &se)
		})
	}
}

func TestExitSignalCaptured(t *testing.T) {
	t.Parallel()
	p := startFixture(t, fixtureCommand(t, "stubborn"))
	assert.Equal(t, "ready", readLine(t, bufio.NewReader(p.Stdout())))

	require.NoError(t, syscall.Kill(p.Pid(), syscall.SIGKILL))

	status := waitDone(t, p)
	assert.Equal(t, -1, status.Code)
	assert.Equal(t, "SIGKILL", status.Signal)
	var ee *ExitError
	require.ErrorAs(t, p.Wait(), &ee)
	assert.Equal(t, "killed by SIGKILL", ee.Status.String())
}

func TestTerminate(t *testing.T) {
	t.Parallel()
	const grace = 300 * time.Millisecond
	// slack absorbs scheduling on a loaded machine (race detector, 2 cores,
	// every test re-executing the test binary twice).
	const slack = 2 * time.Second
	tests := []struct {
		name       string
		fixture    string
		wantSignal string
		minElapsed time.Duration
	}{
		{name: "exits at stdin EOF", fixture: "echo", wantSignal: "", minElapsed: 0},
		{name: "exits at SIGTERM", fixture: "term-exits", wantSignal: "SIGTERM", minElapsed: grace},
		{name: "ignores SIGTERM", fixture: "stubborn", wantSignal: "SIGKILL", minElapsed: 2 * grace},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := startFixture(t, fixtureCommand(t, tt.fixture))
			if tt.fixture == "echo" {
				_, err := p.Stdin().Write([]byte("ready\n"))
				require.NoError(t, err)
			}
			require.Equal(t, "ready", readLine(t, bufio.NewReader(p.Stdout())), "child running")

			start := time.Now()
			require.NoError(t, p.Terminate(context.Background(), grace))
			elapsed := time.Since(start)

			status, ok := p.Exit()
			require.True(t, ok, "Terminate returns after the exit")
			assert.Equal(t, tt.wantSignal, status.Signal)
			assert.GreaterOrEqual(t, elapsed, tt.minElapsed)
			assert.Less(t, elapsed, tt.minElapsed+grace/2+slack)
			assert.ErrorIs(t, syscall.Kill(p.Pid(), 0), syscall.ESRCH, "child reaped")
		})
	}
}

func TestTerminateKillsGrandchild(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
	}{
		{name: "in the group", args: []string{"stubborn"}},
		{name: "in a session of its own", args: []string{"stubborn", "setsid"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name != tests[0].name && runtime.GOOS != "linux" {
				t.Skip("only Linux finds descendants that left the group")
			}
			t.Parallel()
			const grace = 200 * time.Millisecond
			p := startFixture(t, fixtureCommand(t, "grandchild", tt.args...))
			grandchild := readGrandchildPid(t, bufio.NewReader(p.Stdout()))

			require.NoError(t, p.Terminate(context.Background(), grace))

			assert.Equal(t, "SIGKILL", waitDone(t, p).Signal)
			assert.ErrorIs(t, syscall.Kill(p.Pid(), 0), syscall.ESRCH)
			assertGone(t, grandchild)
		})
	}
}

// assertGone fails, and kills pid, unless it is gone. On Linux, Done
// means the whole tree is gone (the guardian reaped it), so no wait is
// needed; elsewhere the kernel's SIGKILL may still be on its way.
func assertGone(t testing.TB, pid int) {
	t.Helper()
	if runtime.GOOS != "linux" {
		waitGone(t, pid)
		return
	}
	if !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		assert.Fail(t, "process still running", "pid %d", pid)
	}
}

func TestTerminateContextEnded(t *testing.T) {
	t.Parallel()
	p := startFixture(t, fixtureCommand(t, "stubborn"))
	require.Equal(t, "ready", readLine(t, bufio.NewReader(p.Stdout())))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()

	err := p.Terminate(ctx, time.Hour)

	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, "SIGKILL", waitDone(t, p).Signal, "killed at once, not after the grace")
}

func readGrandchildPid(t testing.TB, r *bufio.Reader) int {
	t.Helper()
	line := readLine(t, r)
	pid, err := strconv.Atoi(strings.TrimPrefix(line, "grandchild "))
	require.NoError(t, err, "line %q", line)
	return pid
}
