package upstream

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpwrap/mcpwrap/internal/syncbuf"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStartNotFound(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	exe, err := os.Executable()
	require.NoError(t, err)

	tests := []struct {
		name string
		cmd  Command
		want error
	}{
		{name: "name not in PATH", cmd: Command{Path: "mcpwrap-test-no-such-command"}, want: exec.ErrNotFound},
		{name: "missing file", cmd: Command{Path: filepath.Join(dir, "missing")}, want: os.ErrNotExist},
		{name: "missing working directory", cmd: Command{Path: exe, Dir: filepath.Join(dir, "missing")}, want: os.ErrNotExist},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := Start(context.Background(), tt.cmd)
			require.Error(t, err)
			assert.Nil(t, p)
			assert.ErrorIs(t, err, tt.want)
			var se *StartError
			require.ErrorAs(t, err, &se)
			assert.Equal(t, tt.cmd.Path, se.Path)
		})
	}
}

func TestExitCode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		code int
	}{
		{name: "success", code: 0},
		{name: "failure", code: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := startFixture(t, fixtureCommand(t, "exit", fmt.Sprint(tt.code)))

			status := waitDone(t, p)
			assert.Equal(t, ExitStatus{Code: tt.code, Stderr: []string{}}, status)
			err := p.Wait()
			if tt.code == 0 {
				assert.NoError(t, err)
				return
			}
			var ee *ExitError
			require.ErrorAs(t, err, &ee)
			assert.Equal(t, tt.code, ee.Status.Code)
			assert.Equal(t, fmt.Sprintf("upstream: child exit status %d", tt.code), err.Error())
		})
	}
}

func TestStderrPassThroughAndTail(t *testing.T) {
	t.Parallel()
	var passed syncbuf.Buffer
	c := fixtureCommand(t, "stderr")
	c.Stderr = &passed
	p := startFixture(t, c)

	status := waitDone(t, p)

	assert.Equal(t, stderrFixtureOutput, passed.String(), "stderr passed through byte for byte")
	want := []string{}
	for i := 12; i < 30; i++ {
		want = append(want, fmt.Sprintf("line %02d", i))
	}
	want = append(want, strings.Repeat("x", MaxStderrLineBytes)+"…", "fatal: last words")
	assert.Equal(t, want, status.Stderr)
	assert.Equal(t, want, p.StderrTail())
	assert.Equal(t, 1, status.Code)
	assert.EqualError(t, p.Wait(), "upstream: child exit status 1: fatal: last words")
}

func TestStderrLinesOption(t *testing.T) {
	t.Parallel()
	c := fixtureCommand(t, "stderr")
	c.StderrLines = 2
	p := startFixture(t, c)

	status := waitDone(t, p)
	assert.Equal(t, []string{strings.Repeat("x", MaxStderrLineBytes) + "…", "fatal: last words"}, status.Stderr)
}

func TestStdinStdoutRoundTrip(t *testing.T) {
	t.Parallel()
	p := startFixture(t, fixtureCommand(t, "echo"))
	out := bufio.NewReader(p.Stdout())

	_, err := p.Stdin().Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n"))
	require.NoError(t, err)
	assert.Equal(t, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, readLine(t, out))

	require.NoError(t, p.Stdin().Close())
	assert.True(t, waitDone(t, p).Success(), "stdin EOF reaches the child")
	_, err = out.ReadByte()
	assert.ErrorIs(t, err, io.EOF)
}

func TestCommandEnvDirArgs(t *testing.T) {
	t.Parallel()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	c := fixtureCommand(t, "env", "one", "two words")
	c.Env = append(c.Env, "MCPWRAP_TEST_VAR=value")
	c.Dir = dir
	p := startFixture(t, c)

	var got envReport
	require.NoError(t, json.NewDecoder(p.Stdout()).Decode(&got))
	waitDone(t, p)

	assert.Equal(t, p.Pid(), got.Pid)
	assert.Equal(t, dir, got.Dir)
	assert.Equal(t, []string{"one", "two words"}, got.Args)
	assert.Contains(t, got.Env, "MCPWRAP_TEST_VAR=value")
	for _, kv := range got.Env {
		assert.False(t, strings.HasPrefix(kv, guardianEnv+"="), "guardian marker leaked to the child")
	}
}

func TestTerminateConcurrentCalls(t *testing.T) {
	t.Parallel()
	p := startFixture(t, fixtureCommand(t, "echo"))

	errs := make(chan error, 4)
	for range cap(errs) {
		go func() { errs <- p.Terminate(context.Background(), time.Minute) }()
	}
	for range cap(errs) {
		require.NoError(t, <-errs)
	}
	assert.True(t, waitDone(t, p).Success(), "stdin closed once, child exited on its own")
	require.NoError(t, p.Terminate(context.Background(), time.Minute), "after exit")
}

func TestExitBeforeDone(t *testing.T) {
	t.Parallel()
	p := startFixture(t, fixtureCommand(t, "echo"))
	status, ok := p.Exit()
	assert.False(t, ok)
	assert.Equal(t, ExitStatus{}, status)
	require.NoError(t, p.Terminate(context.Background(), time.Minute))
}

func TestExitStatusString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		status ExitStatus
		want   string
		ok     bool
	}{
		{name: "success", status: ExitStatus{}, want: "exit status 0", ok: true},
		{name: "code", status: ExitStatus{Code: 2}, want: "exit status 2"},
		{name: "signal", status: ExitStatus{Code: -1, Signal: "SIGKILL"}, want: "killed by SIGKILL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.status.String())
			assert.Equal(t, tt.ok, tt.status.Success())
		})
	}
}

func TestStartErrorMessage(t *testing.T) {
	t.Parallel()
	err := error(&StartError{Path: "npx", Err: exec.ErrNotFound})
	assert.Equal(t, "upstream: start npx: executable file not found in $PATH", err.Error())
	assert.True(t, errors.Is(err, exec.ErrNotFound))
}

func TestWithoutEnv(t *testing.T) {
	t.Parallel()
	env := []string{"A=1", "SECRET=x", "SECRET_NOT=2", "B=SECRET=3", "SECRET=again"}
	tests := []struct {
		name string
		hide []string
		want []string
	}{
		{name: "nothing to hide", hide: nil, want: env},
		{name: "every entry of the name, no other", hide: []string{"SECRET"}, want: []string{"A=1", "SECRET_NOT=2", "B=SECRET=3"}},
		{name: "absent name", hide: []string{"OTHER"}, want: env},
		{name: "several names", hide: []string{"A", "B", "SECRET"}, want: []string{"SECRET_NOT=2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			orig := slices.Clone(env)
			assert.Equal(t, tt.want, withoutEnv(env, tt.hide))
			assert.Equal(t, orig, env, "the caller's slice is left alone")
		})
	}
}

// Not parallel: it sets environment variables, inherited by the child.
func TestCommandHideEnv(t *testing.T) {
	const secret, kept = "MCPWRAP_TEST_SECRET", "MCPWRAP_TEST_SECRET_NOT"
	t.Setenv(secret, "s3cret")
	t.Setenv(kept, "visible")
	t.Setenv(fixtureEnv, "env") // for the child that inherits this environment
	exe, err := os.Executable()
	require.NoError(t, err)
	tests := []struct {
		name string
		env  []string
	}{
		{name: "inherited", env: nil},
		{name: "given", env: []string{fixtureEnv + "=env", secret + "=s3cret", kept + "=visible", "GORACE=" + os.Getenv("GORACE")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := startFixture(t, Command{Path: exe, Env: tt.env, HideEnv: []string{secret}})

			var got envReport
			require.NoError(t, json.NewDecoder(p.Stdout()).Decode(&got))
			waitDone(t, p)

			assert.Contains(t, got.Env, kept+"=visible")
			for _, kv := range got.Env {
				assert.NotContains(t, kv, "s3cret")
			}
		})
	}
}
