// Package desktop makes stdio server commands start from a desktop app the
// way they start in a terminal.
//
// Two realities of MCP clients that are GUI apps are handled here. On macOS
// an app launched from the Dock or Finder inherits launchd's minimal PATH
// (/usr/bin:/bin:/usr/sbin:/sbin), so `npx`, `uvx` or `node` installed by
// Homebrew, nvm or volta are "not found" although they work in a terminal:
// a [Resolver] then asks the user's login shell for its PATH and looks the
// command up there. On Windows `npx` is `npx.cmd`, a batch script, which
// must run through cmd.exe: a Resolver finds it with PATHEXT and runs it
// through cmd.exe /c.
package desktop

import (
	"bufio"
	"bytes"
	"context"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/mcpwrap/mcpwrap/internal/atomicfile"
	"github.com/mcpwrap/mcpwrap/internal/upstream"
)

// DefaultShellTimeout bounds the login shell asked for the user's PATH: a
// shell whose startup files hang must not hold up the server's start for
// long. It fits a slow machine: a bash -l with nvm or conda in its startup
// files takes a second or two alone and over three on a busy machine, and
// a shorter bound turned "X is not installed" into a generic hint there.
// [Resolver.CacheFile] makes the wait a first run's only.
const DefaultShellTimeout = 10 * time.Second

// defaultPathext is Windows' PATHEXT when the environment has none.
const defaultPathext = ".COM;.EXE;.BAT;.CMD"

// pathMarker starts the line on which the login shell prints its PATH, so
// that whatever its startup files print is told apart.
const pathMarker = "mcpwrap-login-path:"

// A Resolver turns a stdio server's command into one that starts the way it
// would from the user's terminal (see the package doc). The zero value works
// on the real system; every field is an injection point for tests.
//
// A Resolver is safe for concurrent use. It asks the login shell at most
// once and remembers the answer, a failure included, for its lifetime.
type Resolver struct {
	// GOOS is the OS whose rules apply, as runtime.GOOS; "" means this one.
	GOOS string
	// Getenv reads mcpwrap's environment (PATH, PATHEXT, SHELL, ComSpec);
	// nil means os.Getenv.
	Getenv func(string) string
	// Environ is mcpwrap's whole environment, the base of a child's
	// environment that needs another PATH; nil means os.Environ.
	Environ func() []string
	// IsExecutable reports whether path names a file that can be run; nil
	// checks the file system.
	IsExecutable func(path string) bool
	// RunShell runs shell with args and returns what it wrote on stdout. It
	// must return once ctx is done. Nil runs the program with no stdin and
	// stderr discarded.
	RunShell func(ctx context.Context, shell string, args ...string) ([]byte, error)
	// ShellTimeout bounds RunShell; zero means [DefaultShellTimeout].
	ShellTimeout time.Duration
	// Logger receives what was resolved and why; nil discards.
	Logger *slog.Logger
	// CacheFile keeps the login shell's PATH between runs, per user (in
	// mcpwrap's state directory); "" keeps nothing. A program is looked
	// up on the kept PATH first, and the shell is asked only when the
	// program is not on it, so that a program installed since is found
	// and the file renewed.
	CacheFile string

	mu        sync.Mutex
	loginPath string // the login shell's PATH; "" when it could not be read
	asked     bool
	cached    *string // CacheFile's PATH, once read; "" when there is none
}

// Command returns c ready to start. A bare program name not found on
// mcpwrap's PATH is looked up on the login shell's PATH (not on Windows);
// when found there, c's Path becomes the program's full path and the child's
// environment gets that PATH too, since the program likely needs its
// neighbours (npx needs node). On Windows a name is completed with PATHEXT,
// and a batch script (.cmd, .bat) is run as `cmd.exe /d /c SCRIPT ARGS...`.
// A program found nowhere is left as it is, so that starting it fails with
// the usual "command not found".
//
// cmd.exe re-parses its command line: arguments holding quotes or one of
// & | < > ^ % may reach a batch script altered.
func (r *Resolver) Command(ctx context.Context, c upstream.Command) upstream.Command {
	goos := r.goos()
	if c.Path == "" {
		return c
	}
	name := c.Path
	if isBareName(goos, name) {
		inherited := r.getenv("PATH")
		if found, ok := r.lookPath(goos, name, inherited); ok {
			c.Path = found
		} else if found, login := r.findOnLoginPath(ctx, goos, name); found != "" {
			r.log().Info("command not on mcpwrap's PATH; found on the login shell's", "command", name, "path", found)
			c.Path = found
			c.Env = withPath(c.Env, r.environ, mergePath(goos, login, inherited))
		}
	}
	if goos == "windows" && isBatch(c.Path) {
		script := c.Path
		if isBareName(goos, name) {
			// cmd.exe finds the script on PATH itself; a bare first word
			// also keeps it from stripping the quotes of later arguments.
			script = name
		}
		c.Args = append([]string{"/d", "/c", script}, c.Args...)
		c.Path = r.comspec()
	}
	return c
}

// NotInstalled reports whether the bare program name is on neither
// mcpwrap's PATH nor the login shell's: it is not installed, rather than
// hidden by a GUI app's minimal PATH. It reports false when nobody can
// know: a path rather than a name, a login shell's PATH that cannot be read,
// or Windows, which has no login shell to ask.
func (r *Resolver) NotInstalled(ctx context.Context, name string) bool {
	goos := r.goos()
	if name == "" || !isBareName(goos, name) {
		return false
	}
	if _, ok := r.lookPath(goos, name, r.getenv("PATH")); ok {
		return false
	}
	found, login := r.findOnLoginPath(ctx, goos, name)
	return found == "" && login != ""
}

// findOnLoginPath looks name up on the login shell's PATH: the one kept in
// CacheFile first, then, when it is not there, the one the shell gives. It
// returns the program's path ("" when not found) and the PATH searched
// last ("" when the shell's could not be read).
func (r *Resolver) findOnLoginPath(ctx context.Context, goos, name string) (found, loginPath string) {
	if goos == "windows" {
		return "", ""
	}
	if kept := r.keptPath(); kept != "" {
		if found, ok := r.lookPath(goos, name, kept); ok {
			return found, kept
		}
	}
	login := r.loginShellPath(ctx, goos)
	if login == "" {
		return "", ""
	}
	found, _ = r.lookPath(goos, name, login)
	return found, login
}

// keptPath is the PATH CacheFile holds, read once; "" when none.
func (r *Resolver) keptPath() string {
	if r.CacheFile == "" {
		return ""
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cached == nil {
		data, _ := os.ReadFile(r.CacheFile)
		path := strings.TrimSpace(string(data))
		r.cached = &path
	}
	return *r.cached
}

// keep writes path to CacheFile, best effort: a run that cannot keep it
// asks the shell again next time.
func (r *Resolver) keep(path string) {
	if r.CacheFile == "" || path == "" {
		return
	}
	err := os.MkdirAll(filepath.Dir(r.CacheFile), 0o700)
	if err == nil {
		err = atomicfile.Write(r.CacheFile, []byte(path+"\n"), 0o600, ".login-path-*")
	}
	if err != nil {
		r.log().Debug("cannot keep the login shell's PATH", "error", err)
	}
}

func (r *Resolver) goos() string {
	if r.GOOS != "" {
		return r.GOOS
	}
	return runtime.GOOS
}

func (r *Resolver) getenv(key string) string {
	if r.Getenv != nil {
		return r.Getenv(key)
	}
	return os.Getenv(key)
}

func (r *Resolver) environ() []string {
	if r.Environ != nil {
		return r.Environ()
	}
	return os.Environ()
}

func (r *Resolver) log() *slog.Logger {
	if r.Logger != nil {
		return r.Logger
	}
	return slog.New(slog.DiscardHandler)
}

func (r *Resolver) isExecutable(path string) bool {
	if r.IsExecutable != nil {
		return r.IsExecutable(path)
	}
	return isExecutableFile(path)
}

// comspec is cmd.exe, as Windows names it in %ComSpec%.
func (r *Resolver) comspec() string {
	if cs := r.getenv("ComSpec"); cs != "" {
		return cs
	}
	return "cmd.exe"
}

// lookPath finds name in the directories of path, the way a shell of goos
// does: on Windows with each PATHEXT extension unless name has one.
func (r *Resolver) lookPath(goos, name, path string) (string, bool) {
	exts := []string{""}
	if goos == "windows" {
		exts = r.windowsExts(name)
	}
	for _, dir := range splitList(goos, path) {
		if !isAbs(goos, dir) {
			continue // a relative PATH entry depends on the working directory: never trusted
		}
		for _, ext := range exts {
			if p := join(goos, dir, name+ext); r.isExecutable(p) {
				return p, true
			}
		}
	}
	return "", false
}

// windowsExts are the extensions to try for name: none when it already has
// one of PATHEXT, else each of PATHEXT.
func (r *Resolver) windowsExts(name string) []string {
	pathext := r.getenv("PATHEXT")
	if pathext == "" {
		pathext = defaultPathext
	}
	var exts []string
	for _, e := range strings.Split(strings.ToLower(pathext), ";") {
		if e == "" {
			continue
		}
		if strings.HasSuffix(strings.ToLower(name), e) {
			return []string{""}
		}
		exts = append(exts, e)
	}
	return exts
}

// loginShellPath returns the PATH of the user's login shell, asking it the
// first time only; "" when it cannot be had (or on Windows, which has none).
func (r *Resolver) loginShellPath(ctx context.Context, goos string) string {
	if goos == "windows" {
		return ""
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.asked {
		r.asked = true
		r.loginPath = r.askLoginShell(ctx, goos)
		r.keep(r.loginPath)
	}
	return r.loginPath
}

func (r *Resolver) askLoginShell(ctx context.Context, goos string) string {
	shell := r.getenv("SHELL")
	if shell == "" || !isAbs(goos, shell) {
		shell = "/bin/sh"
		if goos == "darwin" {
			shell = "/bin/zsh" // macOS's default login shell since 10.15
		}
	}
	timeout := r.ShellTimeout
	if timeout <= 0 {
		timeout = DefaultShellTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	run := r.RunShell
	if run == nil {
		run = runShell
	}
	start := time.Now()
	out, err := run(ctx, shell, "-l", "-c", `printf '`+pathMarker+`%s\n' "$PATH"`)
	path := parseShellPath(out)
	if path == "" {
		r.log().Warn("cannot read the login shell's PATH", "shell", shell, "error", err, "duration_ms", time.Since(start).Milliseconds())
	}
	return path
}

// parseShellPath picks the PATH from the shell's output: the last marked
// line, so that startup files printing things do not matter.
func parseShellPath(out []byte) string {
	var path string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if i := strings.Index(line, pathMarker); i >= 0 {
			path = line[i+len(pathMarker):]
		}
	}
	return strings.TrimSpace(path)
}

// runShell runs the login shell for real. Its stdin is the null device:
// mcpwrap's own stdin carries the MCP protocol.
func runShell(ctx context.Context, shell string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, shell, args...)
	cmd.WaitDelay = 100 * time.Millisecond // a background job holding stdout must not hold us
	return cmd.Output()
}

// mergePath is first's entries followed by those of second it lacks.
func mergePath(goos, first, second string) string {
	entries := splitList(goos, first)
	seen := make(map[string]bool, len(entries))
	for _, e := range entries {
		seen[e] = true
	}
	for _, e := range splitList(goos, second) {
		if !seen[e] {
			seen[e] = true
			entries = append(entries, e)
		}
	}
	return strings.Join(entries, listSeparator(goos))
}

// withPath returns env (or, when nil, environ()) with PATH set to path.
func withPath(env []string, environ func() []string, path string) []string {
	if env == nil {
		env = environ()
	}
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); !strings.EqualFold(k, "PATH") {
			out = append(out, kv)
		}
	}
	return append(out, "PATH="+path)
}

func isBatch(path string) bool {
	lower := strings.ToLower(path)
	return strings.HasSuffix(lower, ".cmd") || strings.HasSuffix(lower, ".bat")
}

// isBareName reports whether name is a program name to look up on PATH
// rather than a path.
func isBareName(goos, name string) bool {
	if goos == "windows" {
		return !strings.ContainsAny(name, `/\:`)
	}
	return !strings.Contains(name, "/")
}

func isAbs(goos, path string) bool {
	if goos == "windows" {
		return len(path) >= 3 && path[1] == ':' && (path[2] == '\\' || path[2] == '/') ||
			strings.HasPrefix(path, `\\`)
	}
	return strings.HasPrefix(path, "/")
}

func listSeparator(goos string) string {
	if goos == "windows" {
		return ";"
	}
	return ":"
}

func splitList(goos, path string) []string {
	var out []string
	for _, e := range strings.Split(path, listSeparator(goos)) {
		if goos == "windows" {
			e = strings.Trim(e, `"`) // Windows allows quoted entries
		}
		if e != "" {
			out = append(out, e)
		}
	}
	return out
}

func join(goos, dir, name string) string {
	sep := "/"
	if goos == "windows" {
		sep = `\`
		dir = strings.TrimRight(dir, `\/`)
	} else {
		dir = strings.TrimRight(dir, "/")
	}
	return dir + sep + name
}
