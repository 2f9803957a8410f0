package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestInstallDoctorUninstall walks the desktop path: install wraps a client config's servers
// (with a backup), the wrapped entry runs and logs to its own file, doctor checks the wrapped
// entries, and uninstall gives back the original file byte for byte.
func TestInstallDoctorUninstall(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	env := mcpwrapEnv(t, `{}`)
	dir := t.TempDir()
	configPath := filepath.Join(dir, "claude_desktop_config.json")
	// The demo server under a name of its own: install leaves entries running mcpwrap alone.
	server := filepath.Join(dir, "demo-mcp-server")
	require.NoError(t, os.Symlink(mcpwrapPath, server))
	original, err := json.MarshalIndent(map[string]any{"mcpServers": map[string]any{
		"demo": map[string]any{"command": server, "args": []string{"demo-server", "--name", "demo"}, "env": map[string]string{"DEMO": "1"}},
	}}, "", "  ")
	require.NoError(t, err)
	original = append(original, '\n')
	require.NoError(t, os.WriteFile(configPath, original, 0o600))

	run := func(args ...string) *process {
		p := startProcess(ctx, t, processOptions{Env: env}, mcpwrapPath, args...)
		require.NoError(t, p.Wait(ctx), "mcpwrap %v: %s", args, p.Stderr())
		return p
	}

	dry := run("install", "--config-path", configPath, "--dry-run")
	assert.Contains(t, dry.Output(), "wrap   demo: "+server+" demo-server --name demo")
	assert.Contains(t, dry.Output(), "dry run: nothing written")
	current, err := os.ReadFile(configPath)
	require.NoError(t, err)
	require.Equal(t, string(original), string(current), "a dry run writes nothing")

	logDir := filepath.Join(dir, "logs")
	installed := run("install", "--config-path", configPath, "--log-dir", logDir)
	assert.Contains(t, installed.Output(), "written; backup: "+configPath+".mcpwrap-backup-")
	backups, err := filepath.Glob(configPath + ".mcpwrap-backup-*")
	require.NoError(t, err)
	require.Len(t, backups, 1)
	backup, err := os.ReadFile(backups[0])
	require.NoError(t, err)
	assert.Equal(t, string(original), string(backup))

	var wrapped struct {
		MCPServers map[string]struct {
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env"`
		} `json:"mcpServers"`
	}
	current, err = os.ReadFile(configPath)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(current, &wrapped))
	entry := wrapped.MCPServers["demo"]
	logFile := filepath.Join(logDir, "demo.log")
	assert.Equal(t, []string{"--name", "demo", "--log-file", logFile, "--", server, "demo-server", "--name", "demo"}, entry.Args)

	// Run the entry as the client would: it works, and logs to its own file.
	sidecar := startLineSession(ctx, t, append(envList(entry.Env), env...), entry.Command, entry.Args...)
	requireResult(t, sidecar.Initialize(ctx, t))
	sidecar.CloseAndDrain(ctx, t)
	log, err := os.ReadFile(logFile)
	require.NoError(t, err, "the sidecar logs to the file install named")
	assert.Contains(t, string(log), "relaying")
	assert.NotContains(t, sidecar.proc.Stderr(), "relaying", "not to the client's log")

	doctor := run("doctor", "--config-path", configPath)
	assert.Regexp(t, `(?m)^demo\s+custom\s+stdio\s+available\s+\S+\s+1\s`, doctor.Output())

	again := run("install", "--config-path", configPath)
	assert.Contains(t, again.Output(), "skip   demo: already wrapped")
	assert.Contains(t, again.Output(), "nothing to change")

	run("uninstall", "--config-path", configPath)
	current, err = os.ReadFile(configPath)
	require.NoError(t, err)
	assert.Equal(t, string(original), string(current), "uninstall gives back the original bytes")
}

// envList turns a client entry's env into KEY=VALUE entries.
func envList(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	return out
}

// TestInstallWritesTheInvokedPath: run through a symbolic link (Homebrew's bin/mcpwrap ->
// Cellar/mcpwrap/1.0/bin/mcpwrap), install writes the link, not its target, so that an upgrade
// that moves the target leaves every wrapped entry working.
func TestInstallWritesTheInvokedPath(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	dir := t.TempDir()
	cellar := filepath.Join(dir, "Cellar", "mcpwrap", "1.0", "bin")
	require.NoError(t, os.MkdirAll(cellar, 0o755))
	require.NoError(t, os.Symlink(mcpwrapPath, filepath.Join(cellar, "mcpwrap")))
	bin := filepath.Join(dir, "bin")
	require.NoError(t, os.Mkdir(bin, 0o755))
	link := filepath.Join(bin, "mcpwrap")
	require.NoError(t, os.Symlink(filepath.Join("..", "Cellar", "mcpwrap", "1.0", "bin", "mcpwrap"), link))
	configPath := filepath.Join(dir, "mcp.json")
	require.NoError(t, os.WriteFile(configPath, []byte(`{"mcpServers": {"fs": {"command": "npx", "args": ["server-fs"]}}}`), 0o600))

	p := startProcess(ctx, t, processOptions{Env: mcpwrapEnv(t, `{}`)}, link, "install", "--config-path", configPath, "--log-dir", "none")
	require.NoError(t, p.Wait(ctx), p.Stderr())
	var got struct {
		MCPServers map[string]struct {
			Command string `json:"command"`
		} `json:"mcpServers"`
	}
	data, err := os.ReadFile(configPath)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &got))
	assert.Equal(t, link, got.MCPServers["fs"].Command)
}

// TestInstallKeepsTheOwner: root running install on a user's file (sudo with HOME kept) leaves
// the file, and its backup, owned by that user and group.
func TestInstallKeepsTheOwner(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a file to another user")
	}
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	const uid, gid = 4242, 4343
	dir := t.TempDir()
	configPath := filepath.Join(dir, ".claude.json")
	require.NoError(t, os.WriteFile(configPath, []byte(`{"mcpServers": {"fs": {"command": "npx", "args": ["server-fs"]}}}`), 0o644))
	require.NoError(t, os.Chown(configPath, uid, gid))

	p := startProcess(ctx, t, processOptions{Env: mcpwrapEnv(t, `{}`)}, mcpwrapPath, "install", "--config-path", configPath, "--log-dir", "none")
	require.NoError(t, p.Wait(ctx), p.Stderr())
	backups, err := filepath.Glob(configPath + ".mcpwrap-backup-*")
	require.NoError(t, err)
	require.Len(t, backups, 1)
	for _, path := range []string{configPath, backups[0]} {
		info, err := os.Stat(path)
		require.NoError(t, err)
		st := info.Sys().(*syscall.Stat_t)
		assert.Equal(t, [2]uint32{uid, gid}, [2]uint32{st.Uid, st.Gid}, "owner and group of %s", path)
	}
}

// TestInstallKeepsAConcurrentSave: a client that saves its config while install is writing it
// (here Claude Code's way: holding FILE.lock, which install waits for before its last check and
// the rename) keeps its save; install reads the file again and wraps what the client saved.
func TestInstallKeepsAConcurrentSave(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	dir := t.TempDir()
	configPath := filepath.Join(dir, ".claude.json")
	require.NoError(t, os.WriteFile(configPath, []byte(`{"numStartups": 1, "mcpServers": {"fs": {"command": "npx", "args": ["server-fs"]}}}`), 0o600))
	lockPath := configPath + ".lock"
	require.NoError(t, os.Mkdir(lockPath, 0o700))

	p := startProcess(ctx, t, processOptions{Env: mcpwrapEnv(t, `{}`), PipeStdout: true}, mcpwrapPath,
		"install", "--config-path", configPath, "--log-dir", "none")
	lines := bufio.NewScanner(p.Stdout)
	var out strings.Builder
	for !strings.Contains(out.String(), "waiting for "+lockPath) {
		require.True(t, lines.Scan(), "install ended without waiting for the client's lock:\n%s", out.String())
		out.WriteString(lines.Text() + "\n")
	}
	// The client saves, as Claude Code does all the time, then releases its lock.
	saved := `{"numStartups": 2, "mcpServers": {"fs": {"command": "npx", "args": ["server-fs"]}, "added": {"command": "uvx", "args": ["x"]}}}`
	require.NoError(t, os.WriteFile(configPath, []byte(saved), 0o600))
	require.NoError(t, os.Remove(lockPath))
	for lines.Scan() {
		out.WriteString(lines.Text() + "\n")
	}
	require.NoError(t, p.Wait(ctx), p.Stderr())

	assert.Contains(t, out.String(), "changed since it was read")
	var got struct {
		NumStartups int `json:"numStartups"`
		MCPServers  map[string]struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"mcpServers"`
	}
	data, err := os.ReadFile(configPath)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &got))
	assert.Equal(t, 2, got.NumStartups, "the client's save is kept")
	for _, name := range []string{"fs", "added"} {
		assert.Equal(t, mcpwrapPath, got.MCPServers[name].Command, name)
	}
	backups, err := filepath.Glob(configPath + ".mcpwrap-backup-*")
	require.NoError(t, err)
	require.Len(t, backups, 1, "one backup: of the file that was replaced")
	backup, err := os.ReadFile(backups[0])
	require.NoError(t, err)
	assert.Equal(t, saved, string(backup))
}

// TestInstallKeepsReferences: a header value or URL holding a ${VAR} reference among other
// text ("Bearer ${LINEAR_TOKEN}"), moved into env by install (or kept on an mcp-remote
// command line), sends what the original entry sent, whether the client expands env values as
// it expands headers (Claude Code) or passes them as written (doctor, clients that expand
// nothing).
func TestInstallKeepsReferences(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	var mu sync.Mutex
	var seen []string // "Authorization header | query" of each request
	url := serveLoopback(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization")+" | "+r.URL.RawQuery)
		mu.Unlock()
		mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return newRemoteFixture() }, nil).ServeHTTP(w, r)
	}))
	const token, team = "tok-123", "eng"
	clientEnv := map[string]string{"LINEAR_TOKEN": token, "LINEAR_TEAM": team}
	const want = "Bearer " + token + " | team=" + team

	dir := t.TempDir()
	configPath := filepath.Join(dir, ".claude.json")
	original, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"linear": map[string]any{"type": "http", "url": url + "?team=${LINEAR_TEAM}",
			"headers": map[string]string{"Authorization": "Bearer ${LINEAR_TOKEN}"}},
		"bridged": map[string]any{"command": "npx", "args": []string{"-y", "mcp-remote", url + "?team=${LINEAR_TEAM}",
			"--header", "Authorization:Bearer ${LINEAR_TOKEN}"}},
	}})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(configPath, original, 0o600))
	env := mcpwrapEnv(t, `{}`)
	p := startProcess(ctx, t, processOptions{Env: env}, mcpwrapPath, "install", "--config-path", configPath, "--log-dir", "none")
	require.NoError(t, p.Wait(ctx), p.Stderr())
	var wrapped struct {
		MCPServers map[string]struct {
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env"`
		} `json:"mcpServers"`
	}
	data, err := os.ReadFile(configPath)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &wrapped))

	// expand is a client's expansion of ${VAR} from its own environment; an unset one is left.
	expand := func(s string) string {
		return os.Expand(s, func(name string) string {
			if v, ok := clientEnv[name]; ok {
				return v
			}
			return "${" + name + "}"
		})
	}
	for _, server := range []string{"linear", "bridged"} {
		for _, expandsEnv := range []bool{false, true} {
			entry := wrapped.MCPServers[server]
			require.Equal(t, mcpwrapPath, entry.Command, server)
			procEnv := slices.Clone(env)
			for k, v := range clientEnv {
				procEnv = append(procEnv, k+"="+v)
			}
			for k, v := range entry.Env {
				if expandsEnv {
					v = expand(v)
				}
				procEnv = append(procEnv, k+"="+v)
			}
			mu.Lock()
			seen = nil
			mu.Unlock()
			s := startLineSession(ctx, t, procEnv, entry.Command, entry.Args...)
			requireResult(t, s.Initialize(ctx, t))
			s.CloseAndDrain(ctx, t)
			mu.Lock()
			got := slices.Clone(seen)
			mu.Unlock()
			require.NotEmpty(t, got, server)
			for _, g := range got {
				assert.Equal(t, want, g, "%s, the client expanding env values: %v", server, expandsEnv)
			}
		}
	}
}

// TestUninstallKeepsTheEntryStyle: uninstall of the README's own example (an entry wrapped by
// hand, its args on one line) and of a one-line remote entry changes only what it must, in
// their style.
func TestUninstallKeepsTheEntryStyle(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	configPath := filepath.Join(t.TempDir(), "claude_desktop_config.json")
	require.NoError(t, os.WriteFile(configPath, []byte(`{
  "mcpServers": {
    "filesystem": {
      "command": "/home/me/go/bin/mcpwrap",
      "args": ["--name", "filesystem", "--", "npx", "-y", "@modelcontextprotocol/server-filesystem", "/home/me"]
    },
    "api": {"type": "stdio", "command": "mcpwrap", "args": ["--url", "${U}", "--header", "X-Key: ${K}"], "env": {"U": "https://h/mcp", "K": "k"}}
  }
}
`), 0o600))

	p := startProcess(ctx, t, processOptions{Env: mcpwrapEnv(t, `{}`)}, mcpwrapPath, "uninstall", "--config-path", configPath)
	require.NoError(t, p.Wait(ctx), p.Stderr())
	got, err := os.ReadFile(configPath)
	require.NoError(t, err)
	assert.Equal(t, `{
  "mcpServers": {
    "filesystem": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/me"]
    },
    "api": {"type": "http", "url": "https://h/mcp", "headers": {"X-Key": "k"}}
  }
}
`, string(got))
}
