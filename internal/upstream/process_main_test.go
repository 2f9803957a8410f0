package upstream

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fixtureEnv makes the test binary, re-executed as a child, run the fixture
// it names (with the command's arguments) instead of the tests.
const fixtureEnv = "UPSTREAM_TEST_FIXTURE"

// fixtures are the children tests start. Each returns its exit code.
// Platform test files add their own in init.
var fixtures = map[string]func(args []string) int{
	"exit":   fixtureExit,
	"echo":   fixtureEcho,
	"stderr": fixtureStderr,
	"env":    fixtureEnvReport,
}

func TestMain(m *testing.M) {
	RunGuardianIfRequested()
	if mode, ok := os.LookupEnv(fixtureEnv); ok {
		run, known := fixtures[mode]
		if !known {
			fmt.Fprintf(os.Stderr, "unknown fixture %q\n", mode)
			os.Exit(2)
		}
		os.Exit(run(os.Args[1:]))
	}
	// Race-enabled binaries linger a second at exit by default; the
	// re-executed guardians and fixtures must exit when they exit.
	_ = os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	os.Exit(m.Run())
}

// fixtureExit exits with the code in args[0].
func fixtureExit(args []string) int {
	code, err := strconv.Atoi(args[0])
	if err != nil {
		return 2
	}
	return code
}

// fixtureEcho copies stdin to stdout until EOF.
func fixtureEcho([]string) int {
	if _, err := io.Copy(os.Stdout, os.Stdin); err != nil {
		return 1
	}
	return 0
}

// stderrFixtureOutput is what fixtureStderr writes: 30 numbered lines, a
// line far over the tail's cap, and last words without a newline.
var stderrFixtureOutput = func() string {
	var b strings.Builder
	for i := range 30 {
		fmt.Fprintf(&b, "line %02d\n", i)
	}
	b.WriteString(strings.Repeat("x", 2000) + "\n")
	b.WriteString("fatal: last words")
	return b.String()
}()

func fixtureStderr([]string) int {
	_, _ = os.Stderr.WriteString(stderrFixtureOutput)
	return 1
}

// envReport is what fixtureEnvReport prints.
type envReport struct {
	Env  []string `json:"env"`
	Dir  string   `json:"dir"`
	Pid  int      `json:"pid"`
	PPid int      `json:"ppid"`
	Args []string `json:"args"`
}

// fixtureEnvReport prints its environment, directory, pids and arguments.
func fixtureEnvReport(args []string) int {
	dir, _ := os.Getwd()
	err := json.NewEncoder(os.Stdout).Encode(envReport{
		Env: os.Environ(), Dir: dir, Pid: os.Getpid(), PPid: os.Getppid(), Args: args,
	})
	if err != nil {
		return 1
	}
	return 0
}

// fixtureCommand returns a Command that runs fixture mode with args.
func fixtureCommand(t testing.TB, mode string, args ...string) Command {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	return Command{Path: exe, Args: args, Env: append(os.Environ(), fixtureEnv+"="+mode)}
}

// startFixture starts c and makes sure the child is gone when t ends.
func startFixture(t testing.TB, c Command) *Process {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := Start(ctx, c)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = p.Terminate(ctx, 0)
		_ = p.Stdout().Close()
	})
	return p
}

// waitDone waits, boundedly, for p to exit and returns its status.
func waitDone(t testing.TB, p *Process) ExitStatus {
	t.Helper()
	select {
	case <-p.Done():
	case <-time.After(10 * time.Second):
		require.FailNow(t, "child did not exit")
	}
	status, ok := p.Exit()
	require.True(t, ok)
	return status
}

// readLine reads one line from the child's stdout, without its newline.
func readLine(t testing.TB, r *bufio.Reader) string {
	t.Helper()
	line, err := r.ReadString('\n')
	require.NoError(t, err, "read from child (got %q)", line)
	return strings.TrimSuffix(line, "\n")
}
