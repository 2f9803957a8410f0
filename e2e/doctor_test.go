package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// doctorResult is one object of `mcpwrap doctor --json`.
type doctorResult struct {
	Name      string         `json:"name"`
	Client    string         `json:"client"`
	Transport string         `json:"transport"`
	Status    string         `json:"status"`
	Attempts  int            `json:"attempts"`
	LoadMS    int64          `json:"load_ms"`
	Tools     int            `json:"tools"`
	Locked    int            `json:"locked"`
	LockedBy  map[string]int `json:"locked_by"`
	Slow      bool           `json:"slow"`
	Error     string         `json:"error"`
	Hint      string         `json:"hint"`
	// ClientProtocol and ServerProtocol are each side's protocol version.
	ClientProtocol string `json:"client_protocol"`
	ServerProtocol string `json:"server_protocol"`
}

// demoServerTools is how many tools `mcpwrap demo-server` has.
const demoServerTools = 7

// TestDoctor checks a client config holding one server of each kind: every server gets its
// class, the loads run side by side, and the exit code says that some server is not available.
func TestDoctor(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	dir := t.TempDir()

	unauthorized := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="mcp"`)
		http.Error(w, "missing token", http.StatusUnauthorized)
	}))
	t.Cleanup(unauthorized.Close)

	const startDelay = 2 * time.Second
	slow := func(name string) map[string]any { // wrapped already: its own flags apply
		return map[string]any{"command": mcpwrapPath, "args": []string{"--name", name, "--ready-timeout", "300ms", "--",
			mcpwrapPath, "demo-server", "--start-delay", startDelay.String()}}
	}
	clientConfig := map[string]any{"mcpServers": map[string]any{
		"healthy": map[string]any{"command": mcpwrapPath, "args": []string{"demo-server"}},
		"locked":  map[string]any{"command": mcpwrapPath, "args": []string{"demo-server"}},
		"missing": map[string]any{"command": "mcpwrap-e2e-no-such-command", "args": []string{"x"}},
		"exits": map[string]any{"command": mcpwrapPath, "args": []string{"demo-server",
			"--exit-code", "3", "--stderr", "fatal: OPENAI_API_KEY is not set"}},
		"flaky": map[string]any{"command": mcpwrapPath, "args": []string{"demo-server",
			"--flaky-starts", "2", "--flaky-file", filepath.Join(dir, "starts")}},
		"api":    map[string]any{"type": "http", "url": unauthorized.URL + "/mcp", "headers": map[string]string{"Authorization": "Bearer wrong"}},
		"slow-1": slow("slow-1"),
		"slow-2": slow("slow-2"),
		"slow-3": slow("slow-3"),
	}}
	configPath := filepath.Join(dir, "claude_desktop_config.json")
	raw, err := json.Marshal(clientConfig)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(configPath, raw, 0o600))
	env := mcpwrapEnv(t, `{"servers": {"locked": {"tools": {"overrides": {"write_note": false}}}}}`)

	start := time.Now()
	p := startProcess(ctx, t, processOptions{Env: env}, mcpwrapPath, "doctor", "--config-path", configPath, "--json")
	waitErr := p.Wait(ctx)
	elapsed := time.Since(start)
	require.NotErrorIs(t, waitErr, context.DeadlineExceeded)
	assert.Equal(t, 1, p.Cmd.ProcessState.ExitCode(), "some server is not available; stderr: %s", p.Stderr())

	var results []doctorResult
	require.NoError(t, json.Unmarshal([]byte(p.Output()), &results), "doctor --json: %s", p.Output())
	byName := map[string]doctorResult{}
	var sum, slowest time.Duration
	for _, r := range results {
		byName[r.Name] = r
		d := time.Duration(r.LoadMS) * time.Millisecond
		sum += d
		slowest = max(slowest, d)
	}
	require.Len(t, byName, len(results), "one result per server")
	t.Logf("doctor took %v; loads took %v in all, %v at most", elapsed.Round(time.Millisecond), sum, slowest)

	healthy := byName["healthy"]
	assert.Equal(t, "available", healthy.Status)
	assert.Equal(t, "stdio", healthy.Transport)
	assert.Equal(t, "custom", healthy.Client)
	assert.Equal(t, 1, healthy.Attempts)
	assert.Equal(t, demoServerTools, healthy.Tools)
	assert.Zero(t, healthy.Locked)
	assert.Equal(t, [2]string{protocolVersionInitialize, protocolVersionInitialize}, [2]string{healthy.ClientProtocol, healthy.ServerProtocol},
		"each side's protocol: a desktop client's, and the stdio server's answer to it")

	locked := byName["locked"]
	assert.Equal(t, "available", locked.Status)
	assert.Equal(t, demoServerTools-1, locked.Tools)
	assert.Equal(t, map[string]int{"disabled_by_config": 1}, locked.LockedBy, "mcpwrap's config applies as in the sidecar")

	missing := byName["missing"]
	assert.Equal(t, "permanent", missing.Status)
	assert.Contains(t, missing.Error, `cannot start "mcpwrap-e2e-no-such-command": command not found`)
	assert.Contains(t, missing.Hint, "mcpwrap-e2e-no-such-command is not installed", "it is on no PATH, the login shell's included")

	exits := byName["exits"]
	assert.Equal(t, "permanent", exits.Status)
	assert.Equal(t, 1, exits.Attempts, "a permanent failure is not retried")
	assert.Contains(t, exits.Error, "exited with code 3 before completing the handshake")
	assert.Contains(t, exits.Error, "OPENAI_API_KEY is not set", "its last stderr lines are quoted")

	api := byName["api"]
	assert.Equal(t, "denied", api.Status)
	assert.Equal(t, "http", api.Transport)
	assert.Contains(t, api.Error, "401")
	assert.NotContains(t, p.Output()+p.Stderr(), "Bearer wrong", "header values are secrets")

	flaky := byName["flaky"]
	assert.Equal(t, "available", flaky.Status, "transient failures are retried: %s", flaky.Error)
	assert.Equal(t, 3, flaky.Attempts)

	for _, name := range []string{"slow-1", "slow-2", "slow-3"} {
		r := byName[name]
		assert.Equal(t, "available", r.Status, name)
		assert.True(t, r.Slow, "%s loaded after its ready timeout", name)
		assert.Contains(t, r.Hint, "ready_timeout (300ms)", name)
		assert.GreaterOrEqual(t, time.Duration(r.LoadMS)*time.Millisecond, startDelay, name)
	}

	// Side by side: three 2 s starts alone add up to 6 s.
	assert.GreaterOrEqual(t, sum, 3*startDelay)
	assert.Less(t, elapsed, 2*slowest, "the loads ran concurrently: the run took about as long as the slowest one")
}

// TestDoctorAllAvailable checks the table output and the exit code when everything loads, and
// that a named server is the only one checked.
func TestDoctorAllAvailable(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	configPath := filepath.Join(t.TempDir(), "mcp.json")
	raw, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"healthy": map[string]any{"command": mcpwrapPath, "args": []string{"demo-server"}},
		"broken":  map[string]any{"command": "mcpwrap-e2e-no-such-command"},
	}})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(configPath, raw, 0o600))

	p := startProcess(ctx, t, processOptions{Env: mcpwrapEnv(t, `{}`)}, mcpwrapPath, "doctor", "--config-path", configPath, "healthy")
	require.NoError(t, p.Wait(ctx), "stderr: %s", p.Stderr())
	out := p.Output()
	assert.Regexp(t, `(?m)^healthy\s+custom\s+stdio\s+available\s+`+protocolVersionInitialize+`\s+1\s+\S+\s+7$`, out)
	assert.NotContains(t, out, "broken")
	assert.Contains(t, out, "All 1 server(s) available.")
}

// TestDoctorReportsConfigErrorAndNameClash: doctor names the config file's error (file, line,
// column) for each server instead of reporting the tools it would lock, and warns when one name
// is used for two different servers.
func TestDoctorReportsConfigErrorAndNameClash(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	configPath := filepath.Join(t.TempDir(), "mcp.json")
	raw, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"notes": map[string]any{"command": mcpwrapPath, "args": []string{"demo-server"}},
		"other": map[string]any{"command": mcpwrapPath, "args": []string{"--name", "notes", "--", mcpwrapPath, "demo-server", "--name", "other"}},
	}})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(configPath, raw, 0o600))
	env := mcpwrapEnv(t, "{\n  \"defaults\": {\"aproval\": \"off\"}\n}\n")

	p := startProcess(ctx, t, processOptions{Env: env}, mcpwrapPath, "doctor", "--config-path", configPath, "--json")
	_ = p.Wait(ctx)
	assert.Equal(t, 1, p.Cmd.ProcessState.ExitCode(), "stderr: %s", p.Stderr())
	var results []doctorResult
	require.NoError(t, json.Unmarshal([]byte(p.Output()), &results), "doctor --json: %s", p.Output())
	require.Len(t, results, 2)
	for _, r := range results {
		assert.Equal(t, "permanent", r.Status, r.Name)
		assert.Contains(t, r.Error, envValue(env, "MCPWRAP_CONFIG")+`:2:16: unknown key "defaults.aproval"`, r.Name)
	}
	assert.Contains(t, p.Stderr(), `mcpwrap doctor: warning: the name "notes" is used for 2 different servers`)
}

// TestDoctorNeverRunsARepositorysServers: run from inside a checkout, doctor starts none of the
// servers of the repository's own .mcp.json or .cursor/mcp.json (a cloned repository controls
// them; Claude Code asks before starting one): it lists them as skipped, with how to include
// them, and starts them only when they are named explicitly.
func TestDoctorNeverRunsARepositorysServers(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	home, repo := t.TempDir(), t.TempDir()
	marker := filepath.Join(t.TempDir(), "ran")
	hostile := map[string]any{"mcpServers": map[string]any{
		"pwn": map[string]any{"command": "sh", "args": []string{"-c", "echo ran >> " + marker}},
	}}
	raw, err := json.Marshal(hostile)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(repo, ".mcp.json"), raw, 0o600))
	require.NoError(t, os.MkdirAll(filepath.Join(repo, ".cursor"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(repo, ".cursor", "mcp.json"), raw, 0o600))
	// The user's own config, which doctor does check.
	user, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"healthy": map[string]any{"command": mcpwrapPath, "args": []string{"demo-server"}},
	}})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(home, ".claude.json"), user, 0o600))
	env := append(mcpwrapEnv(t, `{}`), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "CLAUDE_CONFIG_DIR=")

	p := startProcess(ctx, t, processOptions{Env: env, Dir: repo}, mcpwrapPath, "doctor")
	require.NoError(t, p.Wait(ctx), "skipped servers are no failure; stderr: %s", p.Stderr())
	out := p.Output()
	assert.NoFileExists(t, marker, "doctor ran a repository's server")
	assert.Regexp(t, `(?m)^healthy\s+claude-code\s+stdio\s+available\s`, out)
	assert.Regexp(t, `(?m)^pwn\s+claude-code-project\s+stdio\s+skipped\s`, out)
	assert.Regexp(t, `(?m)^pwn\s+cursor-project\s+stdio\s+skipped\s`, out)
	assert.Contains(t, out, "mcpwrap doctor --client claude-code-project")
	assert.Contains(t, out, "mcpwrap doctor --client cursor-project")

	p = startProcess(ctx, t, processOptions{Env: env, Dir: repo}, mcpwrapPath, "doctor", "--client", "claude-code-project", "--json")
	_ = p.Wait(ctx)
	var results []doctorResult
	require.NoError(t, json.Unmarshal([]byte(p.Output()), &results), "doctor --json: %s; stderr: %s", p.Output(), p.Stderr())
	require.Len(t, results, 1)
	assert.Equal(t, "pwn", results[0].Name)
	assert.NotEqual(t, "skipped", results[0].Status)
	ran, err := os.ReadFile(marker)
	require.NoError(t, err, "named explicitly, the project's server is checked")
	assert.Equal(t, "ran\n", string(ran), "once, from the one file named")
}
