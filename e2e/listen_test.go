package e2e

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpwrap/mcpwrap/internal/syncbuf"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests serve MCP over streamable HTTP with `mcpwrap --listen` on a free loopback port and
// drive it with real HTTP clients: the go-sdk's StreamableClientTransport and the inspector CLI.

// listenExitTimeout bounds a graceful stop: draining, then terminating every session's server.
const listenExitTimeout = 20 * time.Second

// listenOptions tunes startListen. The zero value serves under the name "upstream" with an empty
// config and a fresh state directory.
type listenOptions struct {
	Name     string
	Config   string   // the config file's content
	StateDir string   // "" for a fresh one
	Flags    []string // more mcpwrap flags, before "--"
	Env      []string // extra KEY=VALUE entries for mcpwrap
}

// listenServer is a running `mcpwrap --listen 127.0.0.1:0 ... -- upstream`, logging JSON on a
// pipe that is scanned for the "listening" record, and kept. t.Cleanup stops it: SIGTERM, then
// SIGKILL of its group and of every process below it if it does not exit in time.
type listenServer struct {
	URL        string
	ConfigPath string
	StateDir   string

	cmd    *exec.Cmd
	stdout *syncbuf.Buffer
	stderr *syncbuf.Buffer
	done   chan struct{} // closed when the process has exited
	err    error         // Wait's result, valid once done is closed
}

func startListen(ctx context.Context, t testing.TB, o listenOptions, upstream ...string) *listenServer {
	t.Helper()
	dir := t.TempDir()
	s := &listenServer{
		ConfigPath: filepath.Join(dir, "config.json"),
		StateDir:   cmp.Or(o.StateDir, filepath.Join(dir, "state")),
		stdout:     &syncbuf.Buffer{},
		stderr:     &syncbuf.Buffer{},
		done:       make(chan struct{}),
	}
	require.NoError(t, os.WriteFile(s.ConfigPath, []byte(cmp.Or(o.Config, `{}`)), 0o600))
	args := []string{"--listen", "127.0.0.1:0", "--log-format", "json", "--name", cmp.Or(o.Name, "upstream"),
		"--config", s.ConfigPath, "--state-dir", s.StateDir}
	args = append(append(append(args, o.Flags...), "--"), upstream...)

	s.cmd = exec.Command(mcpwrapPath, args...)
	s.cmd.Env = append(os.Environ(), o.Env...)
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	s.cmd.Stdout = s.stdout
	logs, logsW, err := os.Pipe()
	require.NoError(t, err)
	s.cmd.Stderr = logsW
	require.NoError(t, s.cmd.Start())
	logsW.Close() // the child has its copy

	listening := make(chan string, 1)
	go func() {
		defer logs.Close()
		sc := bufio.NewScanner(logs)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			s.stderr.Write(append(sc.Bytes(), '\n'))
			var rec struct {
				Msg string `json:"msg"`
				URL string `json:"url"`
			}
			if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Msg == "listening" {
				listening <- rec.URL
			}
		}
	}()
	go func() {
		s.err = s.cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(func() {
		below := descendants(t, s.cmd.Process.Pid)
		if !s.stop() {
			_ = killGroup(s.cmd.Process.Pid)
			killPIDs(below)
			<-s.done
			t.Errorf("mcpwrap --listen did not exit within %s of SIGTERM", listenExitTimeout)
		}
		if t.Failed() {
			t.Logf("mcpwrap --listen stderr:\n%s", s.stderr)
		}
	})
	select {
	case s.URL = <-listening:
	case <-s.done:
		require.FailNow(t, "mcpwrap --listen exited before listening", "%v\n%s", s.err, s.stderr)
	case <-ctx.Done():
		require.FailNow(t, "mcpwrap --listen is not listening", "%v\n%s", ctx.Err(), s.stderr)
	}
	return s
}

// stop sends SIGTERM and reports whether the process exited within listenExitTimeout.
func (s *listenServer) stop() bool {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
		return true
	case <-time.After(listenExitTimeout):
		return false
	}
}

// Stop stops mcpwrap gracefully and requires a clean exit.
func (s *listenServer) Stop(t *testing.T) {
	t.Helper()
	require.True(t, s.stop(), "mcpwrap --listen did not exit within %s of SIGTERM", listenExitTimeout)
	require.NoError(t, s.err, "exit status")
}

// Stderr returns mcpwrap's log so far.
func (s *listenServer) Stderr() string { return s.stderr.String() }

// Pid returns mcpwrap's process id.
func (s *listenServer) Pid() int { return s.cmd.Process.Pid }

// httpClient returns an HTTP client that sends token as a bearer token (none when empty) and
// copies what the server sends on standing streams into getStreams (when not nil): the GET
// stream of a session, the subscriptions/listen streams of the 2026-07-28 protocol.
func httpClient(token string, getStreams *syncbuf.Buffer) *http.Client {
	return &http.Client{Transport: &clientTransport{base: http.DefaultTransport, token: token, getStreams: getStreams}}
}

type clientTransport struct {
	base       http.RoundTripper
	token      string
	getStreams *syncbuf.Buffer
}

func (c *clientTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if c.token != "" {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.base.RoundTrip(r)
	standing := r.Method == http.MethodGet || r.Header.Get("Mcp-Method") == "subscriptions/listen"
	if err == nil && standing && c.getStreams != nil {
		resp.Body = teeBody{Reader: io.TeeReader(resp.Body, c.getStreams), Closer: resp.Body}
	}
	return resp, err
}

type teeBody struct {
	io.Reader
	io.Closer
}

// The protocol eras a test runs in: go-sdk v1.8.0 clients speak the 2026-07-28 protocol (no
// sessions) by default, and the session era when asked to open with initialize.
var eras = []struct {
	name    string
	version string // the client's: "" is the SDK default, 2026-07-28
}{
	{name: "sessions-2025-11-25", version: protocolVersionInitialize},
	{name: "stateless-2026-07-28", version: ""},
}

// connectHTTP connects a go-sdk client to url over streamable HTTP, opening with initialize at
// version, or with server/discover when version is "".
func connectHTTP(ctx context.Context, t *testing.T, client *mcp.Client, transport *mcp.StreamableClientTransport, version string) (*mcp.ClientSession, error) {
	t.Helper()
	cs, err := client.Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err == nil {
		t.Cleanup(func() { _ = cs.Close() })
		// The session speaks the era asked for: no silent fallback.
		assert.Equal(t, cmp.Or(version, protocolVersionStateless), cs.InitializeResult().ProtocolVersion, "negotiated protocol version")
	}
	return cs, err
}

// fixturePIDOf calls the fixture's pid tool.
func fixturePIDOf(ctx context.Context, t *testing.T, cs *mcp.ClientSession) int {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: fixturePIDTool})
	require.NoError(t, err)
	require.False(t, res.IsError, "%v", res.Content)
	raw, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	var out fixturePID
	require.NoError(t, json.Unmarshal(raw, &out))
	require.NotZero(t, out.PID)
	return out.PID
}

// TestListenConcurrentSessions serves 50 HTTP clients at once. In the session era each session
// has its own child; a client that ends its session (DELETE) ends its child, and SIGTERM drains
// the rest. In the 2026-07-28 protocol every request shares one child, though all the clients use
// the same request ids, and SIGTERM stops it.
func TestListenConcurrentSessions(t *testing.T) {
	t.Parallel()
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), 2*testTimeout)
			defer cancel()
			srv := startListen(ctx, t, listenOptions{Name: "fixture"}, fixtureCommand(t, fixtureBanner)...)
			stateless := era.version == ""

			const sessions = 50
			clients := make([]*mcp.ClientSession, sessions)
			pids := make([]int, sessions)
			var wg sync.WaitGroup
			for i := range sessions {
				wg.Go(func() {
					cs, err := connectHTTP(ctx, t, newClient(nil), &mcp.StreamableClientTransport{Endpoint: srv.URL}, era.version)
					if !assert.NoError(t, err, "session %d", i) {
						return
					}
					clients[i] = cs
					pids[i] = fixturePIDOf(ctx, t, cs)
				})
			}
			wg.Wait()
			require.False(t, t.Failed())
			distinct := slices.Compact(slices.Sorted(slices.Values(pids)))
			if stateless {
				require.Len(t, distinct, 1, "one child for every stateless request")
			} else {
				require.Len(t, distinct, sessions, "one child per session")
			}
			below := descendants(t, srv.Pid())
			for _, pid := range distinct {
				require.Contains(t, below, pid, "child %d runs under mcpwrap", pid)
			}

			// Half the clients end their sessions: exactly their children go.
			for i := range sessions / 2 {
				require.NoError(t, clients[i].Close())
			}
			for i, pid := range pids {
				if i < sessions/2 && !stateless {
					assert.True(t, waitExited(t, pid, 10*time.Second), "child %d of an ended session", pid)
				} else {
					assert.False(t, waitExited(t, pid, 0), "child %d of a live session", pid)
				}
			}
			// The others are still served.
			assert.Equal(t, pids[sessions-1], fixturePIDOf(ctx, t, clients[sessions-1]))

			srv.Stop(t)
			for _, pid := range pids[sessions/2:] {
				assert.True(t, waitExited(t, pid, 0), "child %d outlived mcpwrap's shutdown", pid)
			}
			assert.Empty(t, srv.stdout.String(), "stdout carries nothing in HTTP mode")
		})
	}
}

// TestListenIdleTimeout: a session with no request in progress for --idle-timeout ends, and its
// child with it. (An open GET stream counts as a request in progress, so this client opens none.)
func TestListenIdleTimeout(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	srv := startListen(ctx, t, listenOptions{Name: "fixture", Flags: []string{"--idle-timeout", "1s"}}, fixtureCommand(t, fixtureBanner)...)

	cs, err := connectHTTP(ctx, t, newClient(nil), &mcp.StreamableClientTransport{Endpoint: srv.URL, DisableStandaloneSSE: true}, protocolVersionInitialize)
	require.NoError(t, err)
	pid := fixturePIDOf(ctx, t, cs)
	require.True(t, waitExited(t, pid, 15*time.Second), "the idle session's child is still running")
	// The log line is written before the child is stopped, and read from mcpwrap's stderr pipe
	// concurrently.
	assert.Eventually(t, func() bool { return strings.Contains(srv.Stderr(), "idle for 1s") }, promptAnswer, pollEvery)

	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: fixturePIDTool})
	assert.Error(t, err, "the session is gone")

	// The 2026-07-28 protocol has no session to lose: the shared child of stateless requests
	// ends when idle too, and the next request gets a new one.
	modern, err := connectHTTP(ctx, t, newClient(nil), &mcp.StreamableClientTransport{Endpoint: srv.URL}, "")
	require.NoError(t, err)
	pid = fixturePIDOf(ctx, t, modern)
	require.True(t, waitExited(t, pid, 15*time.Second), "the idle stateless child is still running")
	assert.NotEqual(t, pid, fixturePIDOf(ctx, t, modern), "a new child serves the next request")
}

// TestListenAuthToken: with --auth-token-env, a request without the token gets 401, one with it
// is served, and the token appears in no log line, even at debug level.
func TestListenAuthToken(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	const token = "e2e-bearer-7f3c9a1d54b2"
	srv := startListen(ctx, t, listenOptions{
		Name:  "fixture",
		Flags: []string{"--auth-token-env", "MCPWRAP_E2E_TOKEN", "--log-level", "debug"},
		Env:   []string{"MCPWRAP_E2E_TOKEN=" + token},
	}, fixtureCommand(t, fixtureBanner)...)

	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader(
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.Contains(t, resp.Header.Get("WWW-Authenticate"), "Bearer")

	for _, era := range eras {
		_, err = connectHTTP(ctx, t, newClient(nil), &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: httpClient("wrong-"+token, nil), MaxRetries: -1}, era.version)
		assert.Error(t, err, "%s: a wrong token is refused", era.name)

		cs, err := connectHTTP(ctx, t, newClient(nil), &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: httpClient(token, nil)}, era.version)
		require.NoError(t, err, era.name)
		pid := fixturePIDOf(ctx, t, cs)
		require.NoError(t, cs.Close())
		if era.version != "" { // a session's child ends with it; the stateless one is shared
			assert.True(t, waitExited(t, pid, 10*time.Second))
		}
	}

	srv.Stop(t)
	logs := srv.Stderr()
	assert.Contains(t, logs, `"level":"DEBUG"`, "debug logging was on")
	assert.NotContains(t, logs, token, "the token leaked into the log")
}

// TestListenInspector lists and calls server-everything's tools with the inspector CLI over HTTP
// through mcpwrap --listen, and finds the same tools as over stdio without mcpwrap.
func TestListenInspector(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	in := newInspector(t)
	server := []string{nodePath(t), npmBin(t, "@modelcontextprotocol/server-everything", "mcp-server-everything")}
	srv := startListen(ctx, t, listenOptions{Name: "everything", Config: transparentConfig}, server...)
	overHTTP := []string{"--transport", "http"}

	direct := in.Run(ctx, server, "--method", "tools/list")
	require.Zero(t, direct.ExitCode, "direct tools/list: %s", direct.Error)
	through := in.Run(ctx, []string{srv.URL}, append(overHTTP, "--method", "tools/list")...)
	require.Zero(t, through.ExitCode, "tools/list over HTTP: %s", through.Error)
	assert.JSONEq(t, string(direct.Result), string(through.Result), "tools/list through mcpwrap --listen")

	echo := in.Run(ctx, []string{srv.URL}, append(overHTTP, "--method", "tools/call", "--tool-name", "echo", "--tool-arg", "message=hello over HTTP")...)
	require.Zero(t, echo.ExitCode, "echo: %s", echo.Error)
	assert.Equal(t, []string{"Echo: hello over HTTP"}, resultTexts(t, echo.Result))
	srv.Stop(t)
}

// TestListenToolListChanged: notifications/tools/list_changed reaches an HTTP client on its
// standing stream (the GET stream of a session, the subscriptions/listen stream of the
// 2026-07-28 protocol), both when the upstream sends it and when `mcpwrap tools disable` (same
// state directory) changes what the client may see.
func TestListenToolListChanged(t *testing.T) {
	t.Parallel()
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
			defer cancel()
			srv := startListen(ctx, t, listenOptions{Name: "everything", Config: transparentConfig}, everythingServerPath)

			changed := make(chan struct{}, 16)
			client := newClient(&mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
				changed <- struct{}{}
			}})
			streams := &syncbuf.Buffer{}
			cs, err := connectHTTP(ctx, t, client, &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: httpClient("", streams)}, era.version)
			require.NoError(t, err)
			before := listNames(ctx, t, cs)
			require.Contains(t, before, "test_simple_text")

			// From the upstream: the tool list changes after the call has been answered, so the
			// notification travels on the standing stream.
			_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_trigger_tool_change"})
			require.NoError(t, err)
			awaitListChanged(ctx, t, changed, "from the upstream")
			assert.Contains(t, streams.String(), `"notifications/tools/list_changed"`, "on the standing stream")

			// From the user: the CLI disables a tool in the shared state store.
			require.Eventually(t, func() bool { // the session has recorded the catalog the CLI reads
				out, _ := toolsCLI(t, srv, "list", "everything")
				return strings.Contains(out, "test_simple_text")
			}, 10*time.Second, 20*time.Millisecond)
			onStream := strings.Count(streams.String(), `"notifications/tools/list_changed"`)
			out, code := toolsCLI(t, srv, "disable", "everything", "test_simple_text")
			require.Zero(t, code, out)
			for slices.Contains(listNames(ctx, t, cs), "test_simple_text") {
				awaitListChanged(ctx, t, changed, "after `mcpwrap tools disable`")
			}
			assert.Greater(t, strings.Count(streams.String(), `"notifications/tools/list_changed"`), onStream, "on the standing stream")
		})
	}
}

// awaitListChanged waits for the client's next tools/list_changed.
func awaitListChanged(ctx context.Context, t *testing.T, changed <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-changed:
	case <-ctx.Done():
		require.FailNow(t, "no tools/list_changed "+what)
	}
}

// toolsCLI runs `mcpwrap tools args...` on srv's config and state directory.
func toolsCLI(t *testing.T, srv *listenServer, args ...string) (string, int) {
	t.Helper()
	args = append([]string{"tools", args[0], "--config", srv.ConfigPath, "--state-dir", srv.StateDir}, args[1:]...)
	out, err := exec.Command(mcpwrapPath, args...).CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return string(out), exit.ExitCode()
	}
	require.NoError(t, err)
	return string(bytes.TrimSpace(out)), 0
}
