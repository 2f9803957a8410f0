package desktop

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/internal/upstream"
)

// fakeShell is a login shell that prints a fixed output and counts its runs.
type fakeShell struct {
	out   string
	err   error
	block bool // wait for ctx instead of answering
	runs  atomic.Int32
	args  []string
	shell string
}

func (f *fakeShell) run(ctx context.Context, shell string, args ...string) ([]byte, error) {
	f.runs.Add(1)
	f.shell, f.args = shell, args
	if f.block {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return []byte(f.out), f.err
}

// files is a fake file system: the set of executable paths.
type files map[string]bool

func (f files) isExecutable(path string) bool { return f[path] }

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestCommandUnix(t *testing.T) {
	t.Parallel()
	const minimalPath = "/usr/bin:/bin"
	const loginPath = "/opt/homebrew/bin:/usr/bin:/bin"
	fs := files{"/opt/homebrew/bin/npx": true, "/usr/bin/python3": true, "/srv/tool": true}
	tests := []struct {
		name      string
		goos      string
		command   upstream.Command
		vars      map[string]string
		shellOut  string
		wantPath  string
		wantArgs  []string
		wantEnv   []string
		wantShell int32 // login shell runs
		shellName string
	}{
		{
			name:     "found on the inherited PATH: no login shell",
			goos:     "darwin",
			command:  upstream.Command{Path: "python3", Args: []string{"-m", "srv"}},
			vars:     map[string]string{"PATH": minimalPath, "SHELL": "/bin/zsh"},
			wantPath: "/usr/bin/python3",
			wantArgs: []string{"-m", "srv"},
		},
		{
			name:      "found on the login shell's PATH: its PATH goes to the child",
			goos:      "darwin",
			command:   upstream.Command{Path: "npx", Args: []string{"-y", "pkg"}},
			vars:      map[string]string{"PATH": minimalPath, "SHELL": "/usr/local/bin/fish"},
			shellOut:  "Welcome!\n" + pathMarker + loginPath + "\n",
			wantPath:  "/opt/homebrew/bin/npx",
			wantArgs:  []string{"-y", "pkg"},
			wantEnv:   []string{"HOME=/Users/me", "PATH=" + loginPath},
			wantShell: 1,
			shellName: "/usr/local/bin/fish",
		},
		{
			name:     "the inherited PATH's extra entries are kept after the login shell's",
			goos:     "linux",
			command:  upstream.Command{Path: "npx", Env: []string{"PATH=/x", "ROOT=/data"}},
			vars:     map[string]string{"PATH": "/usr/bin:/extra", "SHELL": "/bin/bash"},
			shellOut: pathMarker + loginPath,
			wantPath: "/opt/homebrew/bin/npx",
			// the command's own env is the base: its PATH replaced
			wantEnv:   []string{"ROOT=/data", "PATH=" + loginPath + ":/extra"},
			wantShell: 1,
			shellName: "/bin/bash",
		},
		{
			name:      "no SHELL on macOS: zsh",
			goos:      "darwin",
			command:   upstream.Command{Path: "missing"},
			vars:      map[string]string{"PATH": minimalPath},
			shellOut:  pathMarker + loginPath,
			wantPath:  "missing",
			wantShell: 1,
			shellName: "/bin/zsh",
		},
		{
			name:      "found nowhere: left as it is, to fail as command not found",
			goos:      "linux",
			command:   upstream.Command{Path: "missing", Args: []string{"a"}},
			vars:      map[string]string{"PATH": minimalPath, "SHELL": "/bin/sh"},
			shellOut:  pathMarker + loginPath,
			wantPath:  "missing",
			wantArgs:  []string{"a"},
			wantShell: 1,
			shellName: "/bin/sh",
		},
		{
			name:     "a path is not looked up",
			goos:     "darwin",
			command:  upstream.Command{Path: "./bin/npx"},
			vars:     map[string]string{"PATH": minimalPath},
			wantPath: "./bin/npx",
		},
		{
			name:     "an absolute path is not looked up",
			goos:     "linux",
			command:  upstream.Command{Path: "/srv/tool"},
			vars:     map[string]string{"PATH": ""},
			wantPath: "/srv/tool",
		},
		{
			name:      "relative PATH entries are ignored",
			goos:      "linux",
			command:   upstream.Command{Path: "tool"},
			vars:      map[string]string{"PATH": "srv:.:/srv/"},
			wantPath:  "/srv/tool",
			wantShell: 0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			shell := &fakeShell{out: tt.shellOut}
			r := &Resolver{
				GOOS:         tt.goos,
				Getenv:       env(tt.vars),
				Environ:      func() []string { return []string{"HOME=/Users/me", "PATH=" + minimalPath} },
				IsExecutable: fs.isExecutable,
				RunShell:     shell.run,
			}
			got := r.Command(t.Context(), tt.command)
			assert.Equal(t, tt.wantPath, got.Path)
			assert.Equal(t, tt.wantArgs, got.Args)
			assert.Equal(t, tt.wantEnv, got.Env)
			assert.Equal(t, tt.wantShell, shell.runs.Load(), "login shell runs")
			if tt.shellName != "" {
				assert.Equal(t, tt.shellName, shell.shell)
				assert.Equal(t, []string{"-l", "-c", `printf '` + pathMarker + `%s\n' "$PATH"`}, shell.args)
			}
		})
	}
}

func TestCommandWindows(t *testing.T) {
	t.Parallel()
	fs := files{
		`C:\Program Files\nodejs\npx.cmd`:  true,
		`C:\Program Files\nodejs\node.exe`: true,
		`C:\tools\run.bat`:                 true,
		`C:\tools\uvx.EXE`:                 false,
		`C:\tools\uvx.exe`:                 true,
	}
	base := map[string]string{
		"PATH":    `C:\Windows\system32;"C:\Program Files\nodejs\";C:\tools`,
		"ComSpec": `C:\Windows\system32\cmd.exe`,
	}
	tests := []struct {
		name     string
		command  upstream.Command
		pathext  string
		wantPath string
		wantArgs []string
	}{
		{
			name:     "npx is npx.cmd, run by cmd.exe under its bare name",
			command:  upstream.Command{Path: "npx", Args: []string{"-y", "@scope/server", `C:\My Files`}},
			wantPath: `C:\Windows\system32\cmd.exe`,
			wantArgs: []string{"/d", "/c", "npx", "-y", "@scope/server", `C:\My Files`},
		},
		{
			name:     "an .exe runs directly",
			command:  upstream.Command{Path: "node", Args: []string{"srv.js"}},
			wantPath: `C:\Program Files\nodejs\node.exe`,
			wantArgs: []string{"srv.js"},
		},
		{
			name:     "a name with its extension is taken as it is",
			command:  upstream.Command{Path: "uvx.exe"},
			wantPath: `C:\tools\uvx.exe`,
		},
		{
			name:     "a batch file given by path runs through cmd.exe by path",
			command:  upstream.Command{Path: `C:\tools\run.bat`, Args: []string{"x"}},
			wantPath: `C:\Windows\system32\cmd.exe`,
			wantArgs: []string{"/d", "/c", `C:\tools\run.bat`, "x"},
		},
		{
			name:     "PATHEXT decides which extensions count",
			command:  upstream.Command{Path: "npx"},
			pathext:  ".EXE",
			wantPath: "npx",
		},
		{
			name:     "not found: left as it is, and no login shell on Windows",
			command:  upstream.Command{Path: "missing"},
			wantPath: "missing",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			vars := map[string]string{"PATHEXT": tt.pathext}
			for k, v := range base {
				vars[k] = v
			}
			shell := &fakeShell{out: pathMarker + `C:\elsewhere`}
			r := &Resolver{GOOS: "windows", Getenv: env(vars), IsExecutable: fs.isExecutable, RunShell: shell.run}
			got := r.Command(t.Context(), tt.command)
			assert.Equal(t, tt.wantPath, got.Path)
			assert.Equal(t, tt.wantArgs, got.Args)
			assert.Nil(t, got.Env)
			assert.Zero(t, shell.runs.Load(), "Windows has no login shell to ask")
		})
	}
}

func TestLoginShellAskedOnce(t *testing.T) {
	t.Parallel()
	shell := &fakeShell{err: errors.New("exit status 1")} // a broken shell
	r := &Resolver{
		GOOS:         "darwin",
		Getenv:       env(map[string]string{"PATH": "/usr/bin", "SHELL": "/bin/zsh"}),
		IsExecutable: files{}.isExecutable,
		RunShell:     shell.run,
	}
	for range 3 {
		got := r.Command(t.Context(), upstream.Command{Path: "npx"})
		assert.Equal(t, "npx", got.Path)
	}
	assert.Equal(t, int32(1), shell.runs.Load(), "a failed answer is remembered too")
}

func TestLoginShellTimeout(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		shell := &fakeShell{block: true} // startup files that hang
		r := &Resolver{
			GOOS:         "linux",
			Getenv:       env(map[string]string{"PATH": "/usr/bin", "SHELL": "/bin/bash"}),
			IsExecutable: files{}.isExecutable,
			RunShell:     shell.run,
		}
		start := time.Now()
		got := r.Command(t.Context(), upstream.Command{Path: "npx"})
		assert.Equal(t, "npx", got.Path)
		assert.Equal(t, DefaultShellTimeout, time.Since(start), "bounded by the shell timeout")
	})
}

func TestParseShellPath(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		out  string
		want string
	}{
		{name: "just the marker", out: pathMarker + "/a:/b\n", want: "/a:/b"},
		{name: "noise around it", out: "motd\r\n" + pathMarker + "/a:/b\r\nbye\n", want: "/a:/b"},
		{name: "last marker wins", out: pathMarker + "/old\n" + pathMarker + "/new\n", want: "/new"},
		{name: "no marker", out: "/a:/b\n", want: ""},
		{name: "nothing", out: "", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, parseShellPath([]byte(tt.out)))
		})
	}
}

// TestRealLoginShell runs the real /bin/sh as a login shell whose profile
// puts a tool on PATH, the way Homebrew's shellenv line in ~/.zprofile does.
func TestRealLoginShell(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no login shell on Windows")
	}
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh")
	}
	dir, home := t.TempDir(), t.TempDir()
	tool := filepath.Join(dir, "mytool")
	require.NoError(t, os.WriteFile(tool, []byte("#!/bin/sh\n"), 0o755))
	profile := "echo 'profile noise'\nPATH=\"" + dir + ":$PATH\"; export PATH\n"
	require.NoError(t, os.WriteFile(filepath.Join(home, ".profile"), []byte(profile), 0o644))
	r := &Resolver{
		Getenv: env(map[string]string{"PATH": "/nonexistent", "SHELL": "/bin/sh"}),
		RunShell: func(ctx context.Context, shell string, args ...string) ([]byte, error) {
			cmd := exec.CommandContext(ctx, shell, args...)
			cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home}
			return cmd.Output()
		},
	}
	got := r.Command(t.Context(), upstream.Command{Path: "mytool"})
	assert.Equal(t, tool, got.Path)
	assert.Contains(t, got.Env, "PATH="+r.loginPath+":/nonexistent", "the child gets the login shell's PATH")
	assert.Contains(t, r.loginPath, dir)
}

func TestNotInstalled(t *testing.T) {
	t.Parallel()
	fs := files{"/opt/homebrew/bin/npx": true, "/usr/bin/python3": true}
	tests := []struct {
		name     string
		goos     string
		program  string
		shellOut string
		shellErr error
		want     bool
	}{
		{name: "on mcpwrap's PATH", goos: "darwin", program: "python3", shellOut: pathMarker + "/opt/homebrew/bin"},
		{name: "only on the login shell's PATH", goos: "darwin", program: "npx", shellOut: pathMarker + "/opt/homebrew/bin"},
		{name: "on neither", goos: "linux", program: "uvx", shellOut: pathMarker + "/opt/homebrew/bin:/usr/bin", want: true},
		{name: "login shell's PATH unknown", goos: "linux", program: "uvx", shellErr: errors.New("no shell")},
		{name: "a path, not a name", goos: "linux", program: "/opt/uvx", shellOut: pathMarker + "/usr/bin"},
		{name: "Windows has no login shell", goos: "windows", program: "uvx"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			shell := &fakeShell{out: tt.shellOut, err: tt.shellErr}
			r := &Resolver{GOOS: tt.goos, Getenv: env(map[string]string{"PATH": "/usr/bin:/bin", "SHELL": "/bin/sh"}),
				IsExecutable: fs.isExecutable, RunShell: shell.run}
			assert.Equal(t, tt.want, r.NotInstalled(context.Background(), tt.program))
		})
	}
}

// TestLoginShellPathIsKept: the login shell's PATH is kept per user between runs, so that
// only a first run waits for the shell; a program not on the kept PATH (installed since)
// has the shell asked again, and the file renewed.
func TestLoginShellPathIsKept(t *testing.T) {
	t.Parallel()
	cache := filepath.Join(t.TempDir(), "cache", "login-path")
	fs := files{"/opt/homebrew/bin/npx": true}
	resolver := func(shell *fakeShell) *Resolver {
		return &Resolver{GOOS: "darwin", Getenv: env(map[string]string{"PATH": "/usr/bin", "SHELL": "/bin/zsh"}),
			IsExecutable: fs.isExecutable, RunShell: shell.run, CacheFile: cache}
	}

	first := &fakeShell{out: pathMarker + "/opt/homebrew/bin"}
	assert.Equal(t, "/opt/homebrew/bin/npx", resolver(first).Command(t.Context(), upstream.Command{Path: "npx"}).Path)
	assert.Equal(t, int32(1), first.runs.Load())
	kept, err := os.ReadFile(cache)
	require.NoError(t, err)
	assert.Equal(t, "/opt/homebrew/bin\n", string(kept))
	info, err := os.Stat(cache)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())

	second := &fakeShell{block: true} // a shell that would make this run wait
	r := resolver(second)
	got := r.Command(t.Context(), upstream.Command{Path: "npx"})
	assert.Equal(t, "/opt/homebrew/bin/npx", got.Path)
	assert.Contains(t, got.Env, "PATH=/opt/homebrew/bin:/usr/bin")
	assert.False(t, r.NotInstalled(t.Context(), "npx"))
	assert.Zero(t, second.runs.Load(), "the kept PATH answered")

	fs["/home/me/.local/bin/uvx"] = true // installed since the PATH was kept
	third := &fakeShell{out: pathMarker + "/opt/homebrew/bin:/home/me/.local/bin"}
	r = resolver(third)
	assert.Equal(t, "/home/me/.local/bin/uvx", r.Command(t.Context(), upstream.Command{Path: "uvx"}).Path)
	assert.Equal(t, int32(1), third.runs.Load(), "a program not on the kept PATH asks the shell")
	kept, err = os.ReadFile(cache)
	require.NoError(t, err)
	assert.Equal(t, "/opt/homebrew/bin:/home/me/.local/bin\n", string(kept), "renewed")
	assert.True(t, r.NotInstalled(t.Context(), "pipx"), "on neither PATH")
}

// TestLoginShellBoundFitsSlowMachines: the shell gets the whole default bound, enough for a
// bash -l that takes 3 s on a busy machine.
func TestLoginShellBoundFitsSlowMachines(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		slow := func(ctx context.Context, _ string, _ ...string) ([]byte, error) {
			select {
			case <-time.After(3 * time.Second):
				return []byte(pathMarker + "/opt/bin"), nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		r := &Resolver{GOOS: "linux", Getenv: env(map[string]string{"PATH": "/usr/bin", "SHELL": "/bin/bash"}),
			IsExecutable: files{"/opt/bin/uvx": true}.isExecutable, RunShell: slow}
		assert.Equal(t, "/opt/bin/uvx", r.Command(t.Context(), upstream.Command{Path: "uvx"}).Path)
	})
}
