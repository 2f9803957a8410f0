//lint:file-ignore SA1019 the client sets a logging level, deprecated in the 2026-07-28 draft but served by the fixture.

package e2e

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests hold mcpwrap to docs/DESIGN.md, Resilience, from the outside: real upstreams that fail in each
// classified way (loopback HTTP servers answering with a status, closed ports, unresolvable
// hosts, missing commands, children that exit or start slowly, children killed mid-call), and a
// go-sdk client that must always get an answer it can act on.

const (
	// degradedVersion is the serverInfo.version of a handshake mcpwrap answered itself.
	degradedVersion = "mcpwrap-degraded"
	// discoveryToolName is mcpwrap's default discovery tool.
	discoveryToolName = "discover_tools"
	// restartedMessage is the JSON-RPC error of a request in flight when its upstream crashed.
	restartedMessage = "upstream restarted; request not completed"

	// promptAnswer bounds an answer mcpwrap owes without waiting for anything: the handshake
	// after a permanent or denied failure (mcpwrap must not sit out its ready timeout), a tool
	// call while the upstream is unavailable. Generous for a loaded machine, far below the
	// ready timeout those runs use.
	promptAnswer = 5 * time.Second
	// slowReadyTimeout is the --ready-timeout of runs whose handshake must NOT wait for it.
	slowReadyTimeout = 30 * time.Second
	// shortReadyTimeout is the --ready-timeout of runs that wait for a transient upstream.
	shortReadyTimeout = time.Second
	// handshakeSlack is how much later than its ready timeout a degraded handshake may arrive,
	// starting mcpwrap included: the ready timeout stays below the ~60 s clients wait,
	// so the client must not wait much longer than it.
	handshakeSlack = time.Second
	// pollEvery is the tick of bounded polls (require.Eventually).
	pollEvery = 20 * time.Millisecond
)

// fastRetryConfig returns a config file for server name whose load retries take milliseconds:
// six attempts, 10 ms doubling to 50 ms. retryRefused sets retry_refused. approvalOff turns
// tool pinning off, so that tools an upstream adds mid-session are not pending approval.
func fastRetryConfig(name string, retryRefused, approvalOff bool) string {
	server := map[string]any{
		"retry": map[string]any{
			"initial": "10ms", "max_interval": "50ms", "max_attempts": fastRetryAttempts, "max_elapsed": "5s",
		},
		"retry_refused": retryRefused,
	}
	if approvalOff {
		server["approval"] = "off"
	}
	raw, err := json.Marshal(map[string]any{"servers": map[string]any{name: server}})
	if err != nil {
		panic(err) // a literal map of strings and numbers always marshals
	}
	return string(raw)
}

// fastRetryAttempts is the attempt budget of fastRetryConfig.
const fastRetryAttempts = 6

// sidecar is one hermetic mcpwrap run for these tests. The zero value of each field but Name and
// Upstream means: the fastRetryConfig, mcpwrap's default ready timeout, a client speaking
// protocolVersionInitialize, no recording.
type sidecar struct {
	Name         string        // --name
	Config       string        // the --config file's content
	ReadyTimeout time.Duration // --ready-timeout
	// Upstream ends mcpwrap's arguments: "--url", URL or "--", COMMAND, ARGS....
	Upstream []string
	// Session tunes the client's handshake; nil speaks protocolVersionInitialize.
	Session *mcp.ClientSessionOptions
	Record  *transcript // receives every message the client reads
}

// args returns mcpwrap's command line arguments. The config file and the state directory are
// always given as flags, in a fresh temporary directory: no test reads or writes the
// developer's own settings.
func (sc sidecar) args(t testing.TB) []string {
	t.Helper()
	config := sc.Config
	if config == "" {
		config = fastRetryConfig(sc.Name, false, false)
	}
	dir := t.TempDir()
	configPath := filepath.Join(dir, "config.json")
	require.NoError(t, os.WriteFile(configPath, []byte(config), 0o600))
	args := []string{"--name", sc.Name, "--config", configPath, "--state-dir", filepath.Join(dir, "state")}
	if sc.ReadyTimeout > 0 {
		args = append(args, "--ready-timeout", sc.ReadyTimeout.String())
	}
	return append(args, sc.Upstream...)
}

// connect starts mcpwrap and connects client to it (see connect in client_test.go).
func (sc sidecar) connect(ctx context.Context, t *testing.T, client *mcp.Client) *mcp.ClientSession {
	t.Helper()
	opts := sc.Session
	if opts == nil {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: protocolVersionInitialize}
	}
	cmd := exec.CommandContext(ctx, mcpwrapPath, sc.args(t)...)
	cmd.Env = append(append(os.Environ(), sealedNetworkEnv...), "MCPWRAP_BROWSER=none") // no test opens a browser
	return connect(ctx, t, client, opts, sc.Record, cmd)
}

// sealedNetworkEnv keeps mcpwrap's name resolution and HTTP off the network: the pure Go
// resolver (which refuses an invalid domain name without sending a query; see
// unresolvableURL) and no proxy (a proxy would resolve the name instead of mcpwrap).
var sealedNetworkEnv = []string{
	"GODEBUG=netdns=go",
	"HTTP_PROXY=", "HTTPS_PROXY=", "http_proxy=", "https_proxy=",
}

// newClient returns a go-sdk client with opts (nil for none).
func newClient(opts *mcp.ClientOptions) *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "mcpwrap-e2e-resilience", Version: "1.0.0"}, opts)
}

// signalOn returns a channel that receives (without blocking the SDK) each time the returned
// func is called: a notification handler's body.
func signalOn() (chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	return ch, func() {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// loadFailure is an upstream that cannot load, and what mcpwrap must say about it.
type loadFailure struct {
	name string
	// upstream prepares the failing upstream and returns the end of mcpwrap's arguments.
	upstream func(t *testing.T) []string
	// initializes, when set, counts the handshakes the upstream received (see opensLoad).
	initializes *atomic.Int32
	// retryRefused sets retry_refused in the config.
	retryRefused bool
	// class is the load class mcpwrap reports: transient, permanent or denied.
	class string
	// attempts is the number of load attempts before mcpwrap gave up (or, for transient, spent
	// its budget); 0 skips the check.
	attempts int
	// says are substrings of the agent-facing status message; never are not.
	says, never []string
}

// loadFailures are the failure kinds of the classification table (docs/DESIGN.md, Resilience)
// that a test can provoke on loopback.
// Each call returns fresh upstreams (the counters are per call).
func loadFailures() []loadFailure {
	denied, gateway, notFound, bearer := &atomic.Int32{}, &atomic.Int32{}, &atomic.Int32{}, &atomic.Int32{}
	cutJSON, cutSSE := &atomic.Int32{}, &atomic.Int32{}
	return []loadFailure{
		{
			name:        "HTTP 401 is denied",
			upstream:    func(t *testing.T) []string { return remoteArgs(refusingServer(t, http.StatusUnauthorized, "", denied)) },
			initializes: denied,
			class:       "denied", attempts: 1,
			says: []string{"denied access", "HTTP 401", "Check the credentials", "retrying will not help"},
		},
		{
			name:        "HTTP 401 asking for a Bearer token, with no OAuth metadata, is denied",
			upstream:    func(t *testing.T) []string { return remoteArgs(bearerWithoutMetadata(t, bearer)) },
			initializes: bearer,
			class:       "denied", attempts: 1,
			says: []string{"denied access", "HTTP 401", "Check the credentials", "retrying will not help"},
			// No sign-in can help: there is nothing to sign in with. And no page is quoted.
			never: []string{"sign in", "mcpwrap login", "<", "\n"},
		},
		{
			name: "HTTP 403 from a gateway timeout is transient",
			upstream: func(t *testing.T) []string {
				return remoteArgs(refusingServer(t, http.StatusForbidden, `{"error":"RBAC: upstream call timeout"}`, gateway))
			},
			initializes: gateway,
			class:       "transient", attempts: fastRetryAttempts,
			says: []string{"still not available", "keeps retrying in the background"}, // the load budget is spent
		},
		{
			name: "HTTP 404 is permanent",
			upstream: func(t *testing.T) []string {
				return remoteArgs(refusingServer(t, http.StatusNotFound, "404 page not found", notFound))
			},
			initializes: notFound,
			class:       "permanent", attempts: 1,
			says: []string{"failed to load and needs attention", "HTTP 404", "Check the URL path"},
		},
		{
			name:        "a JSON answer cut after its headers is transient",
			upstream:    func(t *testing.T) []string { return remoteArgs(cuttingServer(t, "application/json", cutJSON)) },
			initializes: cutJSON,
			class:       "transient", attempts: fastRetryAttempts,
			says: []string{"still not available", "keeps retrying in the background"}, // the load budget is spent
		},
		{
			name:        "an SSE answer cut after its headers is transient",
			upstream:    func(t *testing.T) []string { return remoteArgs(cuttingServer(t, "text/event-stream", cutSSE)) },
			initializes: cutSSE,
			class:       "transient", attempts: fastRetryAttempts,
			says: []string{"still not available", "keeps retrying in the background"}, // the load budget is spent
		},
		{
			name:     "a malformed --url is permanent",
			upstream: func(*testing.T) []string { return []string{"--url", "ftp://files.example/mcp"} },
			class:    "permanent", attempts: 1,
			says: []string{"failed to load and needs attention", `--url: scheme "ftp": want an http or https URL`},
		},
		{
			name: "a state directory that cannot be created is permanent, even with a static Authorization",
			upstream: func(t *testing.T) []string {
				file := filepath.Join(t.TempDir(), "file")
				require.NoError(t, os.WriteFile(file, nil, 0o600))
				url := serveLoopback(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return newRemoteFixture() }, nil))
				// A later --state-dir wins: one under a file, which no one can create.
				return []string{"--state-dir", filepath.Join(file, "state"), "--url", url, "--header", "Authorization: Bearer static"}
			},
			class: "permanent", attempts: 1,
			says: []string{"failed to load and needs attention", "not a directory", "state directory"},
		},
		{
			name:     "connection refused is permanent",
			upstream: func(t *testing.T) []string { return remoteArgs(closedPortURL(t)) },
			class:    "permanent", attempts: 1,
			says: []string{"failed to load", "connection refused", "retry_refused"},
		},
		{
			name:         "connection refused with retry_refused is transient",
			upstream:     func(t *testing.T) []string { return remoteArgs(closedPortURL(t)) },
			retryRefused: true,
			class:        "transient", attempts: fastRetryAttempts,
			says: []string{"still not available", "keeps retrying in the background"}, // the load budget is spent
		},
		{
			name:     "DNS failure is permanent",
			upstream: func(*testing.T) []string { return remoteArgs(unresolvableURL) },
			class:    "permanent", attempts: 1,
			says: []string{"failed to load", "cannot resolve host", unresolvableHost, "Check the host name"},
		},
		{
			name:     "command not found is permanent",
			upstream: func(*testing.T) []string { return []string{"--", "mcpwrap-e2e-no-such-command"} },
			class:    "permanent", attempts: 1,
			says: []string{"failed to load", `cannot start "mcpwrap-e2e-no-such-command": command not found`, "is not installed"},
		},
		{
			name: "exit before the handshake is permanent",
			upstream: func(*testing.T) []string {
				return []string{"--", mcpwrapPath, "demo-server", "--exit-code", "3", "--stderr", earlyExitOutput}
			},
			class: "permanent", attempts: 1,
			says: []string{"failed to load", "exited with code 3", "stderr: " + strconv.Quote(earlyExitStderr) + ".",
				"Run it by hand to see why it exits: " + mcpwrapPath + " demo-server --exit-code 3 --stderr 'fatal: "},
		},
	}
}

// earlyExitStderr is what the upstream that exits during start-up prints: no transient or
// denial signature, so the exit stays permanent.
const earlyExitStderr = "fatal: no database configured in /srv/demo/settings.toml"

// earlyExitOutput is all it prints: the line that explains the exit, then lines that do not
// (a config dump's tail and npm's update notice), which the agent must not be shown instead.
const earlyExitOutput = earlyExitStderr + "\nconfig was {\n  port: 9443\n}\nnpm notice New major version of npm available! 10.8.2 -> 11.0.0"

// readyTimeoutFor returns the --ready-timeout of a run whose upstream fails with class: short
// for transient failures, which the handshake waits out, long for the others, which it must not.
func readyTimeoutFor(class string) time.Duration {
	if class == "transient" {
		return shortReadyTimeout
	}
	return slowReadyTimeout
}

// handshakeBound is how long the client's handshake may take for an upstream failing with class.
func handshakeBound(class string) time.Duration {
	if class == "transient" {
		return shortReadyTimeout + handshakeSlack
	}
	return promptAnswer
}

// TestLoadFailureIsClassified wraps upstreams that fail to load in each classified way and
// requires mcpwrap to answer the client's handshake itself (at once for permanent and denied
// failures, after --ready-timeout for transient ones) with the status in its instructions, to
// list only the discovery tool, and to explain the failure through it, after exactly as many
// load attempts as the class allows.
func TestLoadFailureIsClassified(t *testing.T) {
	t.Parallel()
	for _, tt := range loadFailures() {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
			defer cancel()
			sc := sidecar{
				Name:         "flaky",
				Config:       fastRetryConfig("flaky", tt.retryRefused, false),
				ReadyTimeout: readyTimeoutFor(tt.class),
				Upstream:     tt.upstream(t),
			}

			start := time.Now()
			session := sc.connect(ctx, t, newClient(nil))
			elapsed := time.Since(start)
			assert.Less(t, elapsed, handshakeBound(tt.class), "handshake answered late")
			init := session.InitializeResult()
			assert.Equal(t, degradedVersion, init.ServerInfo.Version, "the handshake must be mcpwrap's own")
			assert.True(t, init.Capabilities.Tools != nil && init.Capabilities.Tools.ListChanged, "tools.listChanged")
			assertSays(t, init.Instructions, tt.says, "instructions")
			assertNever(t, init.Instructions, tt.never, "instructions")

			// A permanent or denied load ended before the handshake was answered; a transient
			// one spends its budget in well under a second. Requests below may trigger a
			// "reconnect on use", so count first.
			if tt.initializes != nil {
				require.Eventually(t, func() bool { return int(tt.initializes.Load()) >= tt.attempts },
					promptAnswer, pollEvery, "handshakes: %d", tt.initializes.Load())
				assert.EqualValues(t, tt.attempts, tt.initializes.Load(), "handshakes the upstream received")
			}
			if tt.class == "transient" {
				require.Eventually(t, func() bool { return discoverServer(ctx, t, session).Attempts >= tt.attempts },
					promptAnswer, pollEvery, "the retry budget is not spent")
			}

			tools, err := session.ListTools(ctx, nil)
			require.NoError(t, err)
			assert.Equal(t, []string{discoveryToolName}, listedNames(tools), "tools while the upstream is unavailable")

			srv := discoverServer(ctx, t, session)
			assert.Equal(t, "flaky", srv.Name)
			assert.Equal(t, tt.class, srv.Status)
			assert.NotEmpty(t, srv.Error, "discovery: error")
			assertSays(t, srv.Message, tt.says, "discovery message")
			assertNever(t, srv.Message+srv.Error, tt.never, "discovery message and error")
			if tt.class == "transient" {
				assert.Equal(t, tt.attempts, srv.Attempts, "discovery: attempts")
			}
		})
	}
}

// TestEveryFailureIsAToolResult calls a normal tool while the upstream is unavailable, for
// every failure kind (and for an upstream still starting): the answer comes promptly, and is a
// tool result with isError and the four _meta fields, never a JSON-RPC error, a hang or
// silence.
func TestEveryFailureIsAToolResult(t *testing.T) {
	t.Parallel()
	cases := loadFailures()
	cases = append(cases, loadFailure{
		name: "still starting",
		upstream: func(*testing.T) []string {
			return []string{"--", mcpwrapPath, "demo-server", "--start-delay", "20s"}
		},
		class: "transient",
		says:  []string{"still starting up", "Retry in a few seconds"},
	})
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
			defer cancel()
			session := sidecar{
				Name:   "flaky",
				Config: fastRetryConfig("flaky", tt.retryRefused, false),
				// As for the handshake's classes: a permanent failure's
				// reason may take the login shell's answer ("not installed"),
				// which a loaded machine gives after the short timeout.
				ReadyTimeout: readyTimeoutFor(tt.class),
				Upstream:     tt.upstream(t),
			}.connect(ctx, t, newClient(nil))

			callCtx, cancelCall := context.WithTimeout(ctx, promptAnswer)
			defer cancelCall()
			res, err := session.CallTool(callCtx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
			require.NoError(t, err, "a tool call on an unavailable upstream must be answered with a result")
			meta := requireStatusResult(t, res, tt.class, tt.says...)
			assertNever(t, contentText(res.Content), tt.never, "status text")
			if tt.attempts > 0 && tt.class != "transient" {
				assert.EqualValues(t, tt.attempts, meta.Attempts, "_meta.attempts")
			}
		})
	}
}

// TestDeniedIsNotReloadedOnUse wraps a server that refuses every request with 401: the
// agent's calls (tools and discovery) are answered "denied" each time, and never make mcpwrap
// send the credentials again (reconnect on use is for permanent failures): only a change that
// can fix a denial (a sign-in) reloads it.
func TestDeniedIsNotReloadedOnUse(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	var initializes atomic.Int32
	url := refusingServer(t, http.StatusUnauthorized, "", &initializes)
	session := sidecar{Name: "locked", ReadyTimeout: slowReadyTimeout, Upstream: remoteArgs(url)}.connect(ctx, t, newClient(nil))
	require.EqualValues(t, 1, initializes.Load(), "the load that was denied")

	for range 3 {
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "again"}})
		require.NoError(t, err)
		meta := requireStatusResult(t, res, "denied", "denied access", "HTTP 401")
		assert.Equal(t, 1, meta.Attempts, "_meta.attempts")
		assert.Equal(t, "denied", discoverServer(ctx, t, session).Status)
	}
	// A reload on use would follow its call at once; none may come.
	require.Never(t, func() bool { return initializes.Load() > 1 }, time.Second, pollEvery,
		"the calls made mcpwrap send the refused credentials again")
}

// TestRemoteRetriesUntilAvailable wraps a loopback server that answers the first two
// initialize requests with 503: mcpwrap retries, and the client's handshake is the server's
// own after exactly three attempts, with its tools callable.
func TestRemoteRetriesUntilAvailable(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()

	var initializes atomic.Int32
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return newRemoteFixture() }, nil)
	url := serveLoopback(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rpcMethod(r) == "initialize" && initializes.Add(1) <= 2 {
			http.Error(w, "warming up", http.StatusServiceUnavailable)
			return
		}
		mcpHandler.ServeHTTP(w, r)
	}))

	session := sidecar{Name: "warming", ReadyTimeout: slowReadyTimeout, Upstream: remoteArgs(url)}.connect(ctx, t, newClient(nil))
	init := session.InitializeResult()
	assert.Equal(t, remoteFixtureName, init.ServerInfo.Name, "the handshake must be the upstream's")
	assert.NotEqual(t, degradedVersion, init.ServerInfo.Version)
	assert.EqualValues(t, 3, initializes.Load(), "initialize requests: two 503s, then success")

	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "third time lucky"}})
	require.NoError(t, err)
	require.False(t, res.IsError, "echo: %s", contentText(res.Content))
	assert.Equal(t, "third time lucky", contentText(res.Content))
}

// TestSlowUpstreamIsAnsweredThenListed wraps a child that takes longer to start than
// --ready-timeout: the client's handshake is answered (by mcpwrap) within the ready timeout plus
// a second, the discovery tool explains, and once the child is ready the client is told
// (tools/list_changed) and sees the real tools. Both handshakes go-sdk v1.8.0 can open with are
// covered.
func TestSlowUpstreamIsAnsweredThenListed(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name            string
		protocolVersion string // "" is go-sdk's default: the 2026-07-28 protocol's server/discover
	}{
		{name: "initialize", protocolVersion: protocolVersionInitialize},
		{name: "server-discover", protocolVersion: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
			defer cancel()
			changed, signal := signalOn()
			client := newClient(&mcp.ClientOptions{
				ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { signal() },
			})
			sc := sidecar{
				Name:         "slow",
				ReadyTimeout: shortReadyTimeout,
				Upstream:     []string{"--", mcpwrapPath, "demo-server", "--start-delay", "4s"},
				Session:      &mcp.ClientSessionOptions{ProtocolVersion: tt.protocolVersion},
			}

			start := time.Now()
			session := sc.connect(ctx, t, client)
			elapsed := time.Since(start)
			// For the 2026-07-28 protocol the handshake is server/discover, which mcpwrap
			// answers itself while the upstream is not ready, explaining its status: the client
			// stays in the era it chose.
			assert.Less(t, elapsed, shortReadyTimeout+handshakeSlack, "the client's handshake answered late")
			init := session.InitializeResult()
			assert.Equal(t, cmp.Or(tt.protocolVersion, protocolVersionStateless), init.ProtocolVersion, "negotiated protocol version")
			assert.Equal(t, degradedVersion, init.ServerInfo.Version)
			assert.Contains(t, init.Instructions, "still starting up")

			srv := discoverServer(ctx, t, session)
			assert.Equal(t, "transient", srv.Status)
			assert.Contains(t, srv.Message, "Server 'slow' is still starting up")

			awaitChange(ctx, t, changed, "tools/list_changed")
			tools, err := session.ListTools(ctx, nil)
			require.NoError(t, err)
			assert.Subset(t, listedNames(tools), []string{"echo", "wait", "ask_llm"})
			assert.NotContains(t, listedNames(tools), discoveryToolName, "nothing is locked once the upstream is ready")

			res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "ready now"}})
			require.NoError(t, err)
			assert.False(t, res.IsError, "echo: %s", contentText(res.Content))
			assert.Equal(t, "ready now", contentText(res.Content))
		})
	}
}

// TestCrashFailsInflightAndRestarts kills the upstream with ten calls in flight: each call gets
// exactly one answer, the -32603 "upstream restarted" error; the upstream is restarted and
// re-initialised, the client is told its tools changed, the client's logging level and resource
// subscription are replayed to the new process, and calls work again.
func TestCrashFailsInflightAndRestarts(t *testing.T) {
	t.Parallel()
	for _, era := range eras {
		t.Run(era.name, func(t *testing.T) {
			t.Parallel()
			testCrashFailsInflightAndRestarts(t, era.version)
		})
	}
}

func testCrashFailsInflightAndRestarts(t *testing.T, version string) {
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	dir := t.TempDir()
	pidFile, record := filepath.Join(dir, "pid"), filepath.Join(dir, "record")

	logged := make(chan string, 100)
	changed, signal := signalOn()
	client := newClient(&mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			select {
			case logged <- fmt.Sprint(req.Params.Data):
			default:
			}
		},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { signal() },
	})
	rec := &transcript{}
	session := sidecar{
		Name:     "crashy",
		Upstream: []string{"--", mcpwrapPath, "demo-server", "--pid-file", pidFile, "--record", record},
		Record:   rec,
		Session:  &mcp.ClientSessionOptions{ProtocolVersion: version},
	}.connect(ctx, t, client)
	require.Equal(t, cmp.Or(version, protocolVersionStateless), session.InitializeResult().ProtocolVersion, "negotiated protocol version")
	require.NoError(t, session.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}))
	require.NoError(t, session.Subscribe(ctx, &mcp.SubscribeParams{URI: "demo://readme"}))
	firstPID := readPID(t, pidFile, 0)
	subscribe, subscribed := "resources/subscribe", 1
	if version == "" {
		subscribe, subscribed = "subscriptions/listen", 2 // one for the tool list, one for the resource
	}
	require.Eventually(t, func() bool { return countRecorded(t, record, subscribe) == subscribed },
		promptAnswer, pollEvery, "the upstream did not get the client's subscriptions")

	const inflight = 20 // the hardening issue's figure: every one answered exactly once
	errs := make(chan error, inflight)
	for range inflight {
		go func() {
			_, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "wait", Arguments: map[string]any{"ms": 0}})
			errs <- err
		}()
	}
	require.Eventually(t, func() bool { return countRecorded(t, record, "tools/call") == inflight },
		promptAnswer, pollEvery, "the upstream did not receive %d calls", inflight)
	require.NoError(t, syscall.Kill(firstPID, syscall.SIGKILL))

	for range inflight {
		select {
		case err := <-errs:
			var rpcErr *jsonrpc.Error
			require.ErrorAs(t, err, &rpcErr, "an in-flight call must fail with a JSON-RPC error")
			assert.EqualValues(t, jsonrpc.CodeInternalError, rpcErr.Code)
			assert.Equal(t, restartedMessage, rpcErr.Message)
		case <-time.After(promptAnswer):
			require.FailNow(t, "an in-flight call got no answer after the crash")
		}
	}

	// The restart is complete once the new process got the replayed subscription (the last step
	// of the re-initialisation). The 2026-07-28 client's subscription is its
	// subscriptions/listen request, which the restarted upstream gets again.
	newPID := readPID(t, pidFile, firstPID)
	assert.NotEqual(t, firstPID, newPID)
	require.Eventually(t, func() bool { return countRecorded(t, record, subscribe) == 2*subscribed },
		promptAnswer, pollEvery, "the subscriptions were not replayed to the restarted upstream")
	awaitChange(ctx, t, changed, "tools/list_changed")

	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "after the crash"}})
	require.NoError(t, err)
	require.False(t, res.IsError, "echo after the restart: %s", contentText(res.Content))
	assert.Equal(t, "after the crash", contentText(res.Content))

	// What the new process received after its initialize: the client's state, replayed (a
	// 2026-07-28 client has no session state but its listen requests, checked above; its log
	// level rides in each request's _meta, so its go-sdk server logs by that, not by a
	// replayed logging/setLevel).
	if version != "" {
		restarted := sinceNth(t, record, "initialize", 2)
		assert.Contains(t, restarted, `logging/setLevel {"level":"debug"}`)
		assert.Contains(t, restarted, `resources/subscribe {"uri":"demo://readme"}`)
		assertLogsAfterRestart(ctx, t, session, logged)
	}

	// Each in-flight request was answered once, and only with the restart error: no late
	// answer (from either process) followed it.
	answers, restartErrors := map[string]int{}, map[string]bool{}
	for _, raw := range rec.Take() {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		require.NoError(t, json.Unmarshal(raw, &msg))
		if msg.ID == nil || msg.Method != "" {
			continue // a notification or a request of the server's
		}
		answers[string(msg.ID)]++
		if msg.Error != nil && msg.Error.Message == restartedMessage {
			restartErrors[string(msg.ID)] = true
		}
	}
	assert.Len(t, restartErrors, inflight, "requests answered with the restart error")
	for id := range restartErrors {
		assert.Equal(t, 1, answers[id], "answers to request %s", id)
	}
}

// assertLogsAfterRestart checks the replayed level is in force: the new process sends the
// client its log messages (a go-sdk server sends none before a level is set).
func assertLogsAfterRestart(ctx context.Context, t *testing.T, session *mcp.ClientSession, logged chan string) {
	t.Helper()
	drain(logged)
	_, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "flood", Arguments: map[string]any{"count": 1, "bytes": 8}})
	require.NoError(t, err)
	select {
	case data := <-logged:
		assert.Equal(t, strings.Repeat("y", 8), data)
	case <-time.After(notificationTimeout):
		require.FailNow(t, "no log message from the restarted upstream: logging/setLevel was not replayed")
	}
}

// TestCrashLoopIsPermanent kills the upstream six times, each time once it is back: the sixth
// crash within five minutes exceeds the crash budget (five restarts), and the next tool call is
// answered with a permanent "crash loop" status result.
func TestCrashLoopIsPermanent(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	pidFile := filepath.Join(t.TempDir(), "pid")
	session := sidecar{
		Name:     "crashy",
		Upstream: []string{"--", mcpwrapPath, "demo-server", "--pid-file", pidFile},
	}.connect(ctx, t, newClient(nil))

	echo := func(timeout time.Duration) (*mcp.CallToolResult, error) {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		return session.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "alive?"}})
	}
	const crashes = 6
	pid := readPID(t, pidFile, 0)
	for i := 1; i <= crashes; i++ {
		require.NoError(t, syscall.Kill(pid, syscall.SIGKILL), "crash %d", i)
		if i == crashes {
			break
		}
		// Back once a new process answers a call. Before that, calls fail (restart error) or
		// say it is starting.
		old := pid
		require.Eventually(t, func() bool {
			res, err := echo(time.Second)
			return err == nil && !res.IsError
		}, promptAnswer, pollEvery, "no restart after crash %d", i)
		pid = readPID(t, pidFile, old)
	}

	var last *mcp.CallToolResult
	require.Eventually(t, func() bool {
		res, err := echo(time.Second)
		if err != nil || !res.IsError {
			return false
		}
		last = res
		return strings.Contains(contentText(res.Content), "crash loop")
	}, promptAnswer, pollEvery, "no crash loop status after %d crashes", crashes)
	meta := requireStatusResult(t, last, "permanent", "Server 'crashy' failed to load and needs attention", "crash loop: 5 restarts in 5m")
	assert.False(t, meta.Retryable)
}

// statusMeta is the _meta of a status result.
type statusMeta struct {
	Status    string
	Class     string
	Attempts  int
	Retryable bool
}

// requireStatusResult requires res to be the status result of an unavailable upstream: isError,
// text containing says, and _meta with status and class equal to class, an integer attempts and
// retryable true exactly for transient. It returns the _meta fields.
func requireStatusResult(t *testing.T, res *mcp.CallToolResult, class string, says ...string) statusMeta {
	t.Helper()
	require.NotNil(t, res)
	text := contentText(res.Content)
	require.True(t, res.IsError, "a status result must have isError: %s", text)
	assertSays(t, text, says, "status text")

	for _, key := range []string{"status", "class", "attempts", "retryable"} {
		require.Contains(t, res.Meta, key, "_meta of %q", text)
	}
	var meta statusMeta
	var ok bool
	meta.Status, ok = res.Meta["status"].(string)
	assert.True(t, ok, "_meta.status is a string: %#v", res.Meta["status"])
	meta.Class, ok = res.Meta["class"].(string)
	assert.True(t, ok, "_meta.class is a string: %#v", res.Meta["class"])
	attempts, ok := res.Meta["attempts"].(float64)
	assert.True(t, ok && attempts == float64(int(attempts)) && attempts >= 0, "_meta.attempts is a count: %#v", res.Meta["attempts"])
	meta.Attempts = int(attempts)
	meta.Retryable, ok = res.Meta["retryable"].(bool)
	assert.True(t, ok, "_meta.retryable is a bool: %#v", res.Meta["retryable"])

	assert.Equal(t, class, meta.Class, "_meta.class")
	assert.Equal(t, class, meta.Status, "_meta.status")
	assert.Equal(t, class == "transient", meta.Retryable, "_meta.retryable")
	return meta
}

// assertSays checks that text contains each of says.
func assertSays(t *testing.T, text string, says []string, what string) {
	t.Helper()
	for _, s := range says {
		assert.Contains(t, text, s, what)
	}
}

// assertNever checks that text contains none of never.
func assertNever(t *testing.T, text string, never []string, what string) {
	t.Helper()
	for _, s := range never {
		assert.NotContains(t, text, s, what)
	}
}

// discoveredServer is the "server" object of the discovery tool's answer.
type discoveredServer struct {
	Name     string `json:"name"`
	Status   string `json:"status"`
	Attempts int    `json:"attempts"`
	Error    string `json:"error"`
	Message  string `json:"message"`
}

// discoverServer calls the discovery tool and returns what it says about the server.
func discoverServer(ctx context.Context, t *testing.T, session *mcp.ClientSession) discoveredServer {
	t.Helper()
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: discoveryToolName, Arguments: map[string]any{}})
	require.NoError(t, err)
	require.False(t, res.IsError, "discovery: %s", contentText(res.Content))
	raw, err := json.Marshal(res.StructuredContent)
	require.NoError(t, err)
	var out struct {
		Server discoveredServer `json:"server"`
	}
	require.NoError(t, json.Unmarshal(raw, &out), "discovery: %s", raw)
	return out.Server
}

// listedNames returns the names of a tools/list result, in order.
func listedNames(res *mcp.ListToolsResult) []string {
	names := make([]string, 0, len(res.Tools))
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names
}

// remoteArgs returns the end of mcpwrap's arguments for a remote upstream at url.
func remoteArgs(url string) []string { return []string{"--url", url} }

// serveLoopback serves h on 127.0.0.1 (httptest binds loopback) and returns its URL with the
// /mcp path. t.Cleanup stops it, cutting any stream still open.
func serveLoopback(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	return srv.URL + "/mcp"
}

// refusingServer serves a loopback server that answers every request with status and body,
// and counts the load attempts in initializes (see opensLoad). It returns its URL.
func refusingServer(t *testing.T, status int, body string, initializes *atomic.Int32) string {
	t.Helper()
	return serveLoopback(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if opensLoad(rpcMethod(r)) {
			initializes.Add(1)
		}
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
}

// bearerWithoutMetadata serves a loopback server that refuses every request with 401 and
// WWW-Authenticate: Bearer, and an HTML page, but offers no OAuth metadata: every well-known
// document is a 404 HTML page, as a web framework's catch-all serves it. It counts the
// load attempts in initializes (see opensLoad) and returns its URL.
func bearerWithoutMetadata(t *testing.T, initializes *atomic.Int32) string {
	t.Helper()
	const page = "<!DOCTYPE html>\n<html><head><title>Sign in</title></head>\n<body><h1>Unauthorized</h1></body></html>\n"
	return serveLoopback(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if strings.HasPrefix(r.URL.Path, "/.well-known/") {
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, page)
			return
		}
		if opensLoad(rpcMethod(r)) {
			initializes.Add(1)
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="api"`)
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, page)
	}))
}

// cuttingServer serves a loopback server that accepts every initialize with a 200 of
// contentType, sends the start of an answer and then cuts the connection, as a server or
// proxy dying mid-answer does; it counts the initialize requests in initializes.
func cuttingServer(t *testing.T, contentType string, initializes *atomic.Int32) string {
	t.Helper()
	return serveLoopback(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rpcMethod(r) == "initialize" {
			initializes.Add(1)
		}
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(http.StatusOK)
		start := `{"jsonrpc":"2.0","id":`
		if contentType == "text/event-stream" {
			start = "data: " + start
		}
		_, _ = io.WriteString(w, start)
		http.NewResponseController(w).Flush()
		panic(http.ErrAbortHandler) // the connection is closed mid-answer
	}))
}

// rpcMethod returns the JSON-RPC method of a POSTed message ("" for anything else), leaving
// r.Body readable.
// opensLoad reports whether method opens a load attempt on a server that refuses its first
// request: mcpwrap asks a remote server/discover before initialize (the go-sdk client's order),
// and a server that refuses the discover's POST outright sees no initialize.
func opensLoad(method string) bool { return method == "initialize" || method == "server/discover" }

func rpcMethod(r *http.Request) string {
	if r.Method != http.MethodPost {
		return ""
	}
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	var msg struct {
		Method string `json:"method"`
	}
	_ = json.Unmarshal(body, &msg)
	return msg.Method
}

// closedPortURL returns a loopback URL on which nothing listens: the port was just released.
func closedPortURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return "http://" + addr + "/mcp"
}

// unresolvableHost cannot be resolved, and asking for it sends nothing to any resolver. It is
// under the reserved .invalid TLD (RFC 2606), and its first label is 64 bytes long, one more
// than DNS allows: Go's own resolver (sealedNetworkEnv forces it on mcpwrap) answers "no such
// host" for a name that is not a valid domain name after consulting /etc/hosts, before any query
// is built. A valid .invalid name would be queried on a machine whose resolver forwards it.
var unresolvableHost = strings.Repeat("x", 64) + ".mcpwrap-test.invalid"

var unresolvableURL = "http://" + unresolvableHost + "/mcp"

// readPID waits for file to hold a process id other than not (0 accepts any) and returns it.
// The writer truncates the file before writing, so an empty or partial read is retried.
func readPID(t *testing.T, file string, not int) int {
	t.Helper()
	var pid int
	require.Eventually(t, func() bool {
		raw, err := os.ReadFile(file)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(raw)))
		return err == nil && pid > 0 && pid != not && syscall.Kill(pid, 0) == nil
	}, promptAnswer, pollEvery, "no new pid in %s (old: %d)", file, not)
	return pid
}

// recordedLines returns the "method params" lines a demo-server --record file holds.
func recordedLines(t *testing.T, file string) []string {
	t.Helper()
	raw, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	return slices.DeleteFunc(lines, func(l string) bool { return l == "" })
}

// countRecorded counts the messages of method in a --record file.
func countRecorded(t *testing.T, file, method string) int {
	t.Helper()
	n := 0
	for _, line := range recordedLines(t, file) {
		if strings.HasPrefix(line, method+" ") {
			n++
		}
	}
	return n
}

// sinceNth returns the lines of a --record file from the nth message of method on.
func sinceNth(t *testing.T, file, method string, nth int) []string {
	t.Helper()
	lines := recordedLines(t, file)
	seen := 0
	for i, line := range lines {
		if strings.HasPrefix(line, method+" ") {
			if seen++; seen == nth {
				return lines[i:]
			}
		}
	}
	require.FailNow(t, "too few messages in the record", "want %d of %s in:\n%s", nth, method, strings.Join(lines, "\n"))
	return nil
}

// drain empties ch.
func drain[T any](ch chan T) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

// remoteFixtureName is the server name of newRemoteFixture.
const remoteFixtureName = "mcpwrap-e2e-remote"

// newRemoteFixture returns a small go-sdk server for the remote tests: an echo tool, a tool
// that asks the client's model (sampling), a resource and a prompt.
func newRemoteFixture() *mcp.Server {
	server := mcp.NewServer(&mcp.Implementation{Name: remoteFixtureName, Version: "1.0.0"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "echo", Description: "Echoes its text."},
		func(_ context.Context, _ *mcp.CallToolRequest, in struct {
			Text string `json:"text"`
		}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "ask_model", Description: "Asks the client's model (sampling)."},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct {
			Question string `json:"question"`
		}) (*mcp.CallToolResult, any, error) {
			answer, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{
				MaxTokens: 50,
				Messages:  []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: in.Question}}},
			})
			if err != nil {
				return nil, nil, err
			}
			text, _ := answer.Content.(*mcp.TextContent)
			if text == nil {
				return nil, nil, errors.New("the model answered without text")
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: answer.Model + " says: " + text.Text}}}, nil, nil
		})
	server.AddResource(&mcp.Resource{URI: "e2e://notes", Name: "notes", MIMEType: "text/plain"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "remote notes"}}}, nil
		})
	server.AddPrompt(&mcp.Prompt{Name: "greet", Arguments: []*mcp.PromptArgument{{Name: "who", Required: true}}},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user",
				Content: &mcp.TextContent{Text: "Hello, " + req.Params.Arguments["who"]}}}}, nil
		})
	return server
}

// httpLog records the requests an HTTP upstream receives and signals when the standalone GET
// stream is open. Safe for concurrent use.
type httpLog struct {
	mu   sync.Mutex
	seen []loggedRequest

	streamOnce sync.Once
	streamOpen chan struct{} // closed at the first flush of a GET response
}

// loggedRequest is one request an HTTP upstream received.
type loggedRequest struct {
	HTTPMethod      string
	RPCMethod       string // the JSON-RPC method of a POSTed message, "" for a response or a GET
	ProtocolVersion string // the Mcp-Protocol-Version header
}

func newHTTPLog() *httpLog { return &httpLog{streamOpen: make(chan struct{})} }

// wrap returns next, recording every request first.
func (l *httpLog) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entry := loggedRequest{HTTPMethod: r.Method, RPCMethod: rpcMethod(r), ProtocolVersion: r.Header.Get("Mcp-Protocol-Version")}
		l.mu.Lock()
		l.seen = append(l.seen, entry)
		l.mu.Unlock()
		if r.Method == http.MethodGet {
			// The go-sdk server flushes the standalone stream's headers while it holds the
			// stream's lock, and sets the stream up before releasing it: a notification sent
			// after this flush is delivered on the stream, not dropped.
			w = &flushSignal{ResponseWriter: w, flushed: func() { l.streamOnce.Do(func() { close(l.streamOpen) }) }}
		}
		next.ServeHTTP(w, r)
	})
}

// requests returns the requests recorded so far.
func (l *httpLog) requests() []loggedRequest {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.seen)
}

// flushSignal calls flushed after each flush of its ResponseWriter.
type flushSignal struct {
	http.ResponseWriter
	flushed func()
}

func (w *flushSignal) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
	w.flushed()
}

func (w *flushSignal) Unwrap() http.ResponseWriter { return w.ResponseWriter }
