package e2e

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpwrap/mcpwrap/internal/oauthtest"
)

// The tests of this file sign mcpwrap in to an in-process authorization and
// resource server (internal/oauthtest). e2e/authclient stands in for the
// browser: it follows the authorization redirect back to mcpwrap's loopback
// callback, and counts its launches in a file.

var (
	authclientOnce sync.Once
	authclientBin  string
	authclientErr  error
)

// authclientPath builds e2e/authclient once per run.
func authclientPath(t *testing.T) string {
	t.Helper()
	authclientOnce.Do(func() {
		root, err := filepath.Abs("..")
		if err != nil {
			authclientErr = err
			return
		}
		dir, err := os.MkdirTemp("", "mcpwrap-e2e-authclient-")
		if err != nil {
			authclientErr = err
			return
		}
		authclientBin = filepath.Join(dir, "authclient")
		authclientErr = goBuild(root, authclientBin, "./e2e/authclient")
	})
	require.NoError(t, authclientErr)
	return authclientBin
}

// signInEnv is the environment of an mcpwrap process signing in: the file
// token store under stateDir, and the browser stand-in logging its launches
// to browserLog (following the redirect unless noop).
func signInEnv(t *testing.T, stateDir, browserLog string, noop bool) []string {
	cfg := filepath.Join(stateDir, "config.json")
	if _, err := os.Stat(cfg); err != nil {
		require.NoError(t, os.WriteFile(cfg, []byte("{}"), 0o600))
	}
	env := []string{
		"MCPWRAP_STATE_DIR=" + stateDir,
		"MCPWRAP_TOKEN_STORE=file",
		"MCPWRAP_BROWSER=" + authclientPath(t) + " browse",
		"AUTHCLIENT_BROWSER_LOG=" + browserLog,
		"MCPWRAP_CONFIG=" + cfg,
	}
	if noop {
		env = append(env, "AUTHCLIENT_BROWSE_NOOP=1")
	}
	return env
}

// launches counts the browser stand-in's launches logged to path.
func launches(t *testing.T, path string) int {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return 0
	}
	require.NoError(t, err)
	return strings.Count(string(b), "open")
}

// startAuthServer starts an authorization and resource server that the
// test closes when it ends.
func startAuthServer(t *testing.T) *oauthtest.Server {
	t.Helper()
	as, err := oauthtest.Start(oauthtest.Options{})
	require.NoError(t, err)
	t.Cleanup(as.Close)
	return as
}

func freeLoopbackPort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// sidecarArgs wraps the test server as "notes".
func sidecarArgs(as *oauthtest.Server, port int, extra ...string) []string {
	return append([]string{"--name", "notes", "--url", as.URL + "/mcp", "--oauth-redirect-port", strconv.Itoa(port), "--log-level", "debug"}, extra...)
}

// callWhoami calls the server's tool and returns the result.
func callWhoami(ctx context.Context, t *testing.T, s *lineSession, id int) signedCall {
	t.Helper()
	var resp struct {
		Result signedCall `json:"result"`
	}
	require.NoError(t, json.Unmarshal(s.Call(ctx, t, id, "tools/call", map[string]any{"name": "whoami", "arguments": map[string]any{}}), &resp))
	return resp.Result
}

type signedCall struct {
	IsError bool `json:"isError"`
	Content []struct {
		Text string `json:"text"`
	} `json:"content"`
	Meta map[string]any `json:"_meta"`
}

func (r signedCall) text() string {
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

// waitNotification reads s's stdout until a notification with method.
func waitNotification(ctx context.Context, t *testing.T, s *lineSession, method string) {
	t.Helper()
	for {
		select {
		case line, ok := <-s.lines:
			require.True(t, ok, "stdout closed before %s", method)
			var env struct {
				Method string `json:"method"`
			}
			if json.Unmarshal(line, &env) == nil && env.Method == method {
				return
			}
		case <-ctx.Done():
			require.FailNow(t, "no notification", "%s: %v", method, ctx.Err())
		}
	}
}

// login runs `mcpwrap login notes --url ...` in the foreground.
func login(ctx context.Context, t *testing.T, as *oauthtest.Server, env []string, port int) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, mcpwrapPath, "login", "notes", "--url", as.URL+"/mcp", "--oauth-redirect-port", strconv.Itoa(port))
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "mcpwrap login:\n%s", out)
	require.Contains(t, string(out), "Signed in to notes.")
	return string(out)
}

// assertNoTokens fails when any token the server issued appears in texts.
func assertNoTokens(t *testing.T, as *oauthtest.Server, texts map[string]string) {
	t.Helper()
	issued := as.Issued()
	require.NotEmpty(t, issued)
	for name, text := range texts {
		for _, tok := range issued {
			assert.NotContains(t, text, tok, "a token leaked into %s", name)
		}
	}
}

// TestOAuthSidecarsShareOneSignIn: the first sidecar signs in through the
// browser (once), the second uses the same token; no token appears in a
// log, a status file, the environment of a wrapped stdio server or the
// login command's output, and the fallback token file is 0600.
func TestOAuthSidecarsShareOneSignIn(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	as := startAuthServer(t)
	state, browserLog := t.TempDir(), filepath.Join(t.TempDir(), "browser.log")
	env := signInEnv(t, state, browserLog, false)
	port := freeLoopbackPort(t)

	first := startLineSession(ctx, t, env, mcpwrapPath, sidecarArgs(as, port)...)
	first.Initialize(ctx, t)
	res := callWhoami(ctx, t, first, 1)
	require.False(t, res.IsError, res.text())
	assert.Equal(t, "you are signed in", res.text())

	second := startLineSession(ctx, t, env, mcpwrapPath, sidecarArgs(as, port)...)
	second.Initialize(ctx, t)
	res = callWhoami(ctx, t, second, 1)
	require.False(t, res.IsError, res.text())

	counts := as.Counts()
	assert.Equal(t, 1, counts.Authorizations, "sign-ins")
	assert.Equal(t, 1, counts.Registrations, "registrations")
	assert.Equal(t, 1, launches(t, browserLog), "browser launches")
	assert.Equal(t, 2, counts.ToolCalls)

	info, err := os.Stat(filepath.Join(state, "auth", "tokens.json"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "token file mode")

	// A stdio server wrapped with the same state: its environment, printed
	// on its stdout, is moved to mcpwrap's stderr as non-JSON lines.
	envDump := startLineSession(ctx, t, env, mcpwrapPath, "--name", "env", "--", "env")
	envDump.Send(t, map[string]any{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": map[string]any{"protocolVersion": protocolVersionInitialize, "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "x", "version": "1"}}})
	envDump.CloseAndDrain(ctx, t)
	first.CloseAndDrain(ctx, t)
	second.CloseAndDrain(ctx, t)

	texts := map[string]string{
		"first sidecar's log":  first.proc.Stderr(),
		"second sidecar's log": second.proc.Stderr(),
		"wrapped env":          envDump.proc.Stderr(),
	}
	require.Contains(t, texts["wrapped env"], "MCPWRAP_STATE_DIR=", "the child's environment was not captured")
	_ = filepath.WalkDir(state, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Base(path) == "tokens.json" {
			return nil
		}
		b, _ := os.ReadFile(path)
		texts[path] = string(b)
		return nil
	})
	assertNoTokens(t, as, texts)
}

// TestOAuthRefreshRace: four sidecars find the token rejected at once; the
// rotating refresh token is used by exactly one of them and all four work.
func TestOAuthRefreshRace(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	as := startAuthServer(t)
	state, browserLog := t.TempDir(), filepath.Join(t.TempDir(), "browser.log")
	env := signInEnv(t, state, browserLog, false)
	port := freeLoopbackPort(t)
	login(ctx, t, as, env, port)
	as.ExpireAccessTokens()
	const n = 4
	as.HoldRejections(n)

	var wg sync.WaitGroup
	results := make([]signedCall, n)
	for i := range n {
		wg.Go(func() {
			s := startLineSession(ctx, t, env, mcpwrapPath, sidecarArgs(as, port)...)
			s.Initialize(ctx, t)
			results[i] = callWhoami(ctx, t, s, 1)
			s.CloseAndDrain(ctx, t)
		})
	}
	wg.Wait()
	for i, r := range results {
		assert.False(t, r.IsError, "sidecar %d: %s", i, r.text())
	}
	counts := as.Counts()
	assert.Equal(t, 1, counts.Refreshes, "refresh requests")
	assert.Equal(t, 1, counts.Authorizations, "no new sign-in")
	assert.Equal(t, 1, launches(t, browserLog), "only the login command's browser")
}

// TestOAuthRefreshFailures: a refresh answered 503 is transient (retried,
// no new sign-in, no browser); one answered invalid_grant needs a sign-in,
// which the agent is told; `mcpwrap login` from another process then
// brings the tools back with tools/list_changed. The sidecar opens the
// browser once, on its first load, never again.
func TestOAuthRefreshFailures(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	as := startAuthServer(t)
	state := t.TempDir()
	cliLog, sidecarLog := filepath.Join(t.TempDir(), "cli.log"), filepath.Join(t.TempDir(), "sidecar.log")
	port := freeLoopbackPort(t)
	login(ctx, t, as, signInEnv(t, state, cliLog, false), port)

	t.Run("503 is transient", func(t *testing.T) {
		as.ExpireAccessTokens()
		as.FailRefresh(503, "temporarily_unavailable")
		s := startLineSession(ctx, t, signInEnv(t, state, sidecarLog, false), mcpwrapPath, sidecarArgs(as, freeLoopbackPort(t), "--ready-timeout", "1s")...)
		var init struct {
			Result struct {
				Instructions string `json:"instructions"`
			} `json:"result"`
		}
		require.NoError(t, json.Unmarshal(s.Initialize(ctx, t), &init))
		assert.Contains(t, init.Result.Instructions, "still starting up")
		as.FailRefresh(0, "")
		waitNotification(ctx, t, s, "notifications/tools/list_changed")
		res := callWhoami(ctx, t, s, 1)
		assert.False(t, res.IsError, res.text())
		s.CloseAndDrain(ctx, t)
		assert.Equal(t, 1, as.Counts().Authorizations, "no new sign-in")
		assert.Zero(t, launches(t, sidecarLog), "no browser for a transient failure")
		assert.GreaterOrEqual(t, as.Counts().Refreshes, 2)
	})

	t.Run("invalid_grant needs a sign-in", func(t *testing.T) {
		as.ExpireAccessTokens()
		as.FailRefresh(400, "invalid_grant")
		// The user ignores the tab this sidecar opens.
		s := startLineSession(ctx, t, signInEnv(t, state, sidecarLog, true), mcpwrapPath, sidecarArgs(as, freeLoopbackPort(t), "--ready-timeout", "1s")...)
		s.Initialize(ctx, t)
		var res signedCall
		for i := 1; ; i++ { // the load waits a few seconds for the sign-in it started
			res = callWhoami(ctx, t, s, i)
			if strings.Contains(res.text(), "needs you to sign in") {
				break
			}
			require.Contains(t, res.text(), "still starting up")
			select {
			case <-ctx.Done():
				require.FailNow(t, "never told to sign in")
			case <-time.After(200 * time.Millisecond):
			}
		}
		assert.True(t, res.IsError)
		assert.Equal(t, "Server 'notes' needs you to sign in. A browser window has been opened; or run `mcpwrap login notes`. Its tools will appear once you have signed in.", res.text())
		assert.Equal(t, "login_required", res.Meta["reason"])
		assert.Equal(t, "denied", res.Meta["class"])
		assert.Equal(t, false, res.Meta["retryable"])
		authorizations := as.Counts().Authorizations

		as.FailRefresh(0, "")
		login(ctx, t, as, signInEnv(t, state, cliLog, false), freeLoopbackPort(t))
		waitNotification(ctx, t, s, "notifications/tools/list_changed")
		res = callWhoami(ctx, t, s, 100)
		assert.False(t, res.IsError, res.text())
		s.CloseAndDrain(ctx, t)
		assert.Equal(t, 1, launches(t, sidecarLog), "the sidecar opened the browser once, on its first load")
		assert.Equal(t, authorizations+1, as.Counts().Authorizations, "one new sign-in, by mcpwrap login")
		assertNoTokens(t, as, map[string]string{"sidecar log": s.proc.Stderr()})
	})
}

// TestOAuthListen: `mcpwrap --listen --url` signs in once for its HTTP
// sessions, and a go-sdk client over HTTP calls the protected server.
func TestOAuthListen(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	as := startAuthServer(t)
	state, browserLog := t.TempDir(), filepath.Join(t.TempDir(), "browser.log")
	srv := startListen(ctx, t, listenOptions{Name: "notes", StateDir: state, Env: signInEnv(t, state, browserLog, false),
		Flags: []string{"--url", as.URL + "/mcp", "--oauth-redirect-port", strconv.Itoa(freeLoopbackPort(t))}})
	for i := range 2 {
		cs, err := connectHTTP(ctx, t, newClient(nil), &mcp.StreamableClientTransport{Endpoint: srv.URL}, protocolVersionInitialize)
		require.NoError(t, err, "session %d", i)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}})
		require.NoError(t, err)
		require.False(t, res.IsError, "session %d", i)
		require.NoError(t, cs.Close())
	}
	assert.Equal(t, 1, as.Counts().Authorizations, "one sign-in for both sessions")
	assert.Equal(t, 1, launches(t, browserLog))
}

// TestOAuthLoginFromClientConfig: `mcpwrap login NAME` finds the server's
// URL and --oauth-* flags in the client config entry that wraps it, and
// `mcpwrap logout NAME` forgets the token.
func TestOAuthLoginFromClientConfig(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	as := startAuthServer(t)
	home, state := t.TempDir(), t.TempDir()
	port := freeLoopbackPort(t)
	entry := map[string]any{"mcpServers": map[string]any{"notes": map[string]any{
		"command": mcpwrapPath,
		"args":    []string{"--name", "notes", "--url", as.URL + "/mcp", "--oauth-redirect-port", strconv.Itoa(port)},
	}}}
	b, err := json.Marshal(entry)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(home, ".claude.json"), b, 0o600))
	env := append(signInEnv(t, state, filepath.Join(t.TempDir(), "browser.log"), false), "HOME="+home, "CLAUDE_CONFIG_DIR=", "XDG_CONFIG_HOME="+filepath.Join(home, ".config"))

	run := func(args ...string) string {
		cmd := exec.CommandContext(ctx, mcpwrapPath, args...)
		cmd.Dir = home
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "mcpwrap %v:\n%s", args, out)
		return string(out)
	}
	out := run("login", "notes")
	assert.Contains(t, out, "Signed in to notes.")
	assert.Contains(t, out, as.URL+"/authorize?", "the sign-in URL is printed too")
	assert.Contains(t, out, "redirect_uri=http%3A%2F%2F127.0.0.1%3A"+strconv.Itoa(port), "the entry's redirect port is used")
	assert.Equal(t, 1, as.Counts().Authorizations)
	assertNoTokens(t, as, map[string]string{"login output": out})

	assert.Contains(t, run("status"), "signed in (expires in")
	assert.Contains(t, run("logout", "notes"), "Signed out of notes.")
	assert.Contains(t, run("logout", "notes"), "Not signed in to notes.")

	// Signing in again reuses the stored registration.
	assert.Contains(t, run("login", "notes"), "Signed in to notes.")
	assert.Equal(t, 2, as.Counts().Authorizations)
	assert.Equal(t, 1, as.Counts().Registrations, "no second registration")
}

// TestOAuthDoctor: doctor reports a remote server that needs a sign-in as
// denied with the way to sign in, without opening a browser, and uses the
// stored sign-in once there is one.
func TestOAuthDoctor(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	as := startAuthServer(t)
	state, browserLog := t.TempDir(), filepath.Join(t.TempDir(), "browser.log")
	env := signInEnv(t, state, browserLog, false)
	port := freeLoopbackPort(t)
	clientConfig := filepath.Join(t.TempDir(), "client.json")
	b, err := json.Marshal(map[string]any{"mcpServers": map[string]any{"notes": map[string]any{"type": "http", "url": as.URL + "/mcp"}}})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(clientConfig, b, 0o600))
	doctor := func() doctorResult {
		cmd := exec.CommandContext(ctx, mcpwrapPath, "doctor", "--config-path", clientConfig, "--json", "--state-dir", state)
		cmd.Env = append(os.Environ(), env...)
		out, _ := cmd.Output()
		var results []doctorResult
		require.NoError(t, json.Unmarshal(out, &results), "%s", out)
		require.Len(t, results, 1)
		return results[0]
	}
	r := doctor()
	assert.Equal(t, "denied", r.Status)
	assert.Equal(t, "sign-in required", r.Error)
	assert.Equal(t, "To sign in, run `mcpwrap login notes`", r.Hint)
	assert.Zero(t, launches(t, browserLog), "doctor never opens a browser")
	assert.Zero(t, as.Counts().Authorizations)

	login(ctx, t, as, env, port)
	r = doctor()
	assert.Equal(t, "available", r.Status, r.Error)
	assert.Equal(t, 1, r.Tools)
}

// TestSignInOpensOnlyAWebPage: an authorization server whose metadata names an
// authorization_endpoint of another scheme on a loopback host (a file, a share, a
// protocol handler) never gets it handed to a browser launcher (CVE-2025-6514 in
// mcp-remote was this): the sign-in fails, saying why, and nothing is launched.
func TestSignInOpensOnlyAWebPage(t *testing.T) {
	t.Parallel()
	for _, endpoint := range []string{
		"file://localhost/etc/passwd",
		"smb://localhost/share/x.exe",
		"ms-msdt://localhost/id",
		"vscode://localhost/open?url=x",
		"ftp://localhost/x",
	} {
		t.Run(endpoint, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			as, err := oauthtest.Start(oauthtest.Options{AuthorizationEndpoint: endpoint})
			require.NoError(t, err)
			t.Cleanup(as.Close)
			browserLog := filepath.Join(t.TempDir(), "browser.log")
			env := signInEnv(t, t.TempDir(), browserLog, true)
			cmd := exec.CommandContext(ctx, mcpwrapPath, "login", "notes", "--url", as.URL+"/mcp",
				"--oauth-redirect-port", strconv.Itoa(freeLoopbackPort(t)))
			cmd.Env = append(os.Environ(), env...)
			out, err := cmd.CombinedOutput()
			require.Error(t, err, "the sign-in cannot succeed: %s", out)
			assert.Zero(t, launches(t, browserLog), "a browser was launched: %s", out)
			assert.Contains(t, string(out), "not a web page", "the refusal says why")
		})
	}
}

// TestOAuthURLSecretStaysOutOfLogAndAgent: a server URL carrying an API
// key in its query (…/mcp?api_key=SECRET) that answers 401 makes the
// go-sdk's discovery fall back to an issuer URL with that query and fail
// quoting it (the test server's metadata names its issuer without it).
// The key reaches neither the sidecar's log nor the agent's tool result,
// nor `mcpwrap login`'s output.
func TestOAuthURLSecretStaysOutOfLogAndAgent(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	as := startAuthServer(t)
	const secret = "SECRET-e2e-key-9f3a"
	state, browserLog := t.TempDir(), filepath.Join(t.TempDir(), "browser.log")
	env := signInEnv(t, state, browserLog, false)
	endpoint := as.URL + "/mcp?api_key=" + secret
	port := freeLoopbackPort(t)

	s := startLineSession(ctx, t, env, mcpwrapPath, "--name", "notes", "--url", endpoint,
		"--oauth-redirect-port", strconv.Itoa(port), "--log-level", "debug", "--ready-timeout", "1s")
	s.Initialize(ctx, t)
	var res signedCall
	for i := 1; ; i++ { // until the failed sign-in is reported
		res = callWhoami(ctx, t, s, i)
		if strings.Contains(res.text(), "did not complete") {
			break
		}
		select {
		case <-ctx.Done():
			require.FailNow(t, "the failed sign-in was never reported", res.text())
		case <-time.After(200 * time.Millisecond):
		}
	}
	s.CloseAndDrain(ctx, t)
	assert.True(t, res.IsError)
	assert.Contains(t, res.text(), "issuer", "the go-sdk's reason is still told")

	cmd := exec.CommandContext(ctx, mcpwrapPath, "login", "notes", "--url", endpoint, "--oauth-redirect-port", strconv.Itoa(freeLoopbackPort(t)))
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "the sign-in cannot succeed:\n%s", out)
	assert.Contains(t, string(out), "issuer")

	for name, text := range map[string]string{"tool result": res.text(), "sidecar log": s.proc.Stderr(), "login output": string(out)} {
		assert.NotContains(t, text, secret, "the URL's key leaked into the %s", name)
	}
}

// TestOAuthStepUpLaunchesAreBounded: a server that asks for a larger scope
// set on every call (403 insufficient_scope) gets a bounded number of
// sign-in tabs from a sidecar, not one per call, and once the bound is
// reached the agent is told why its call was not signed in again.
func TestOAuthStepUpLaunchesAreBounded(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	as := startAuthServer(t)
	state := t.TempDir()
	cliLog, sidecarLog := filepath.Join(t.TempDir(), "cli.log"), filepath.Join(t.TempDir(), "sidecar.log")
	login(ctx, t, as, signInEnv(t, state, cliLog, false), freeLoopbackPort(t))
	as.StepUpEveryCall()

	s := startLineSession(ctx, t, signInEnv(t, state, sidecarLog, false), mcpwrapPath, sidecarArgs(as, freeLoopbackPort(t))...)
	s.Initialize(ctx, t)
	const calls = 6
	var texts []string
	for i := 1; i <= calls; i++ {
		var resp struct {
			Result signedCall `json:"result"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		raw := s.Call(ctx, t, i, "tools/call", map[string]any{"name": "whoami", "arguments": map[string]any{}})
		require.NoError(t, json.Unmarshal(raw, &resp))
		require.True(t, resp.Error != nil || resp.Result.IsError, "call %d: the server never grants the scope it asks for: %s", i, raw)
		text := resp.Result.text()
		if resp.Error != nil {
			text = resp.Error.Message
		}
		texts = append(texts, text)
	}
	s.CloseAndDrain(ctx, t)
	assert.Equal(t, 3, launches(t, sidecarLog), "sign-in tabs opened by the sidecar in %d calls", calls)
	assert.Equal(t, 1+3, as.Counts().Authorizations, "the login's and three step-ups")
	last := texts[calls-1]
	assert.Contains(t, last, "more permissions", "the agent is told the server keeps asking")
	assert.Contains(t, last, "opened 3 sign-in windows for it within 10m0s", last)
}
