package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sidecarStatus is one object of `mcpwrap status --json`.
type sidecarStatus struct {
	Server     string `json:"server"`
	PID        int    `json:"pid"`
	Status     string `json:"status"`
	Attempts   int    `json:"attempts"`
	Calls      int    `json:"calls"`
	Rejections int    `json:"rejections"`
	Error      string `json:"error"`
}

// TestStatus runs three sidecars sharing one state directory, SIGKILLs one, and requires
// `mcpwrap status` to list the two live ones with their upstream's state, leaving out (and
// cleaning up) the killed one's status file.
func TestStatus(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	env := mcpwrapEnv(t, `{}`)
	runDir := filepath.Join(envValue(env, "MCPWRAP_STATE_DIR"), "run")

	alpha := startLineSession(ctx, t, env, mcpwrapPath, wrapArgs("alpha", mcpwrapPath, "demo-server")...)
	requireResult(t, alpha.Initialize(ctx, t))
	requireResult(t, alpha.Call(ctx, t, 2, "tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "hi"}}))

	beta := startLineSession(ctx, t, env, mcpwrapPath, wrapArgs("beta", "mcpwrap-e2e-no-such-command")...)
	requireResult(t, beta.Initialize(ctx, t)) // answered by mcpwrap itself: the server cannot start

	gamma := startLineSession(ctx, t, env, mcpwrapPath, wrapArgs("gamma", mcpwrapPath, "demo-server")...)
	requireResult(t, gamma.Initialize(ctx, t))

	want := map[string]sidecarStatus{
		"alpha": {Server: "alpha", PID: alpha.proc.Cmd.Process.Pid, Status: "available", Attempts: 1, Calls: 1},
		"beta": {Server: "beta", PID: beta.proc.Cmd.Process.Pid, Status: "permanent", Attempts: 1,
			Error: `cannot start "mcpwrap-e2e-no-such-command": command not found`},
		"gamma": {Server: "gamma", PID: gamma.proc.Cmd.Process.Pid, Status: "available", Attempts: 1},
	}
	// The sidecars publish within a moment; poll the command as a user would.
	awaitStatus(ctx, t, env, want)
	// The load time (issue 23): how long the load took, for an available server only.
	loads := startProcess(ctx, t, processOptions{Env: env}, mcpwrapPath, "status", "--json")
	require.NoError(t, loads.Wait(ctx), "stderr: %s", loads.Stderr())
	var raw []struct {
		Server string `json:"server"`
		LoadMS *int64 `json:"load_ms"`
	}
	require.NoError(t, json.Unmarshal([]byte(loads.Output()), &raw))
	for _, s := range raw {
		switch s.Server {
		case "alpha", "gamma":
			if assert.NotNil(t, s.LoadMS, "%s is available: its load time is published", s.Server) {
				assert.Positive(t, *s.LoadMS, s.Server)
			}
		case "beta":
			assert.Nil(t, s.LoadMS, "beta never loaded")
		}
	}

	gammaFile := filepath.Join(runDir, strconv.Itoa(gamma.proc.Cmd.Process.Pid)+".json")
	require.FileExists(t, gammaFile)
	require.NoError(t, gamma.proc.Cmd.Process.Signal(syscall.SIGKILL))
	require.Error(t, gamma.proc.Wait(ctx), "mcpwrap survived SIGKILL")
	require.FileExists(t, gammaFile, "a SIGKILLed sidecar cannot remove its file")

	delete(want, "gamma")
	assert.Equal(t, want, statusByServer(ctx, t, env), "the killed sidecar is not listed")
	assert.NoFileExists(t, gammaFile, "and its stale file is removed")

	// A sidecar that exits normally removes its own file.
	alpha.CloseAndDrain(ctx, t)
	assert.NoFileExists(t, filepath.Join(runDir, strconv.Itoa(alpha.proc.Cmd.Process.Pid)+".json"))

	p := startProcess(ctx, t, processOptions{Env: env}, mcpwrapPath, "status")
	require.NoError(t, p.Wait(ctx), "stderr: %s", p.Stderr())
	assert.Regexp(t, `(?m)^beta\s+mcpwrap-e2e-no-such-command\s+\d+\s+\S+\s+permanent\s+-\s+1\s+-\s+0\s+0\s+0\s+0\s+0\s+cannot start`, p.Output())
	assert.NotContains(t, p.Output(), "alpha")
}

// statusByServer runs `mcpwrap status --json` and returns its entries by server name.
func statusByServer(ctx context.Context, t *testing.T, env []string) map[string]sidecarStatus {
	t.Helper()
	out, err := readStatus(ctx, t, env)
	require.NoError(t, err)
	return out
}

func readStatus(ctx context.Context, t *testing.T, env []string) (map[string]sidecarStatus, error) {
	p := startProcess(ctx, t, processOptions{Env: env}, mcpwrapPath, "status", "--json")
	if err := p.Wait(ctx); err != nil {
		return nil, fmt.Errorf("mcpwrap status: %w; stderr: %s", err, p.Stderr())
	}
	var list []sidecarStatus
	if err := json.Unmarshal([]byte(p.Output()), &list); err != nil {
		return nil, fmt.Errorf("status --json: %w: %s", err, p.Output())
	}
	out := map[string]sidecarStatus{}
	for _, s := range list {
		out[s.Server] = s
	}
	return out, nil
}

// awaitStatus runs `mcpwrap status --json` until it shows want, as a user would: sidecars
// publish a change within a moment.
func awaitStatus(ctx context.Context, t *testing.T, env []string, want map[string]sidecarStatus) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		got, err := readStatus(ctx, t, env)
		if err == nil && assert.ObjectsAreEqual(want, got) {
			return
		}
		select {
		case <-ctx.Done():
			require.NoError(t, err)
			require.Equal(t, want, got, "mcpwrap status did not show the sidecars' states in time")
		case <-tick.C:
		}
	}
}

// envValue returns the value of key in env (KEY=VALUE entries).
func envValue(env []string, key string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, key+"="); ok {
			return v
		}
	}
	return ""
}

// TestStatusListsListenFronts: `mcpwrap status` lists a --listen front with its URL and one
// entry per HTTP session, each with its own upstream's status.
func TestStatusListsListenFronts(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	srv := startListen(ctx, t, listenOptions{Name: "front"}, mcpwrapPath, "demo-server")
	env := []string{"MCPWRAP_STATE_DIR=" + srv.StateDir}
	for range 2 {
		// The 2025 protocol: one HTTP session per client (2026 clients share a stateless one).
		cs, err := newClient(nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL},
			&mcp.ClientSessionOptions{ProtocolVersion: protocolVersionInitialize})
		require.NoError(t, err)
		t.Cleanup(func() { _ = cs.Close() })
		_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
		require.NoError(t, err)
	}

	type session struct {
		Status         string `json:"status"`
		Calls          int    `json:"calls"`
		ClientProtocol string `json:"client_protocol"`
		ServerProtocol string `json:"server_protocol"`
	}
	type front struct {
		Server   string    `json:"server"`
		Status   string    `json:"status"`
		Listen   string    `json:"listen"`
		Sessions []session `json:"sessions"`
	}
	want := []front{{Server: "front", Status: "listening", Listen: srv.URL,
		Sessions: []session{ // each side's protocol: both the session era's, over stdio
			{Status: "available", Calls: 1, ClientProtocol: protocolVersionInitialize, ServerProtocol: protocolVersionInitialize},
			{Status: "available", Calls: 1, ClientProtocol: protocolVersionInitialize, ServerProtocol: protocolVersionInitialize}}}}
	var got []front
	require.Eventually(t, func() bool { // the front publishes within a moment; poll as a user would
		p := startProcess(ctx, t, processOptions{Env: env}, mcpwrapPath, "status", "--json")
		got = nil
		return p.Wait(ctx) == nil && json.Unmarshal([]byte(p.Output()), &got) == nil && assert.ObjectsAreEqual(want, got)
	}, 10*time.Second, 100*time.Millisecond, "mcpwrap status --json: %+v", &got)

	p := startProcess(ctx, t, processOptions{Env: env}, mcpwrapPath, "status")
	require.NoError(t, p.Wait(ctx), "stderr: %s", p.Stderr())
	assert.Regexp(t, `(?m)^front\s+mcpwrap\s+\d+\s+\S+\s+listening `+regexp.QuoteMeta(srv.URL)+`, 2 session\(s\)`, p.Output())
	assert.Regexp(t, `(?m)^  session 2\s+available\s+`+protocolVersionInitialize+`\s+1\s+[\d.]+m?s\s+0\s+1\s+0\s+0`, p.Output())
}
