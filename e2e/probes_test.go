package e2e

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// probe GETs a probe path of a `mcpwrap --listen` replica and returns the status and body.
func probe(ctx context.Context, t *testing.T, mcpURL, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(mcpURL, "/mcp")+path, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

// TestListenProbes: `mcpwrap --listen` answers /healthz while it runs and /readyz while its policy
// is loaded: a config file with an error, or a state file that cannot be read, makes it unready
// (503, with a reason that names no path) though alive, and repairing either makes it ready again,
// live. The probes need no token, where /mcp does.
func TestListenProbes(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	srv := startListen(ctx, t, listenOptions{Name: "fixture", Flags: []string{"--auth-token-env", "PROBE_TOKEN"},
		Env: []string{"PROBE_TOKEN=s3cret"}}, fixtureCommand(t, fixtureBanner)...)

	status := func(path string) func() (int, string) {
		return func() (int, string) { return probe(ctx, t, srv.URL, path) }
	}
	becomes := func(path string, want int, wantBody string) {
		t.Helper()
		if !assert.Eventually(t, func() bool {
			code, _ := status(path)()
			return code == want
		}, 10*time.Second, 20*time.Millisecond, "%s never answered %d", path, want) {
			code, body := status(path)()
			require.FailNow(t, "probe", "%s: %d %q", path, code, body)
		}
		_, body := status(path)()
		assert.Equal(t, wantBody, body, path)
	}
	becomes("/healthz", http.StatusOK, "ok\n")
	becomes("/readyz", http.StatusOK, "ok\n")
	resp, err := http.Post(srv.URL, "application/json", strings.NewReader(`{}`))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "/mcp still needs the token")

	// A config file with an error: alive, not ready; fixed: ready.
	require.NoError(t, os.WriteFile(srv.ConfigPath, []byte(`{"servers":{"fixture":{"tools":{"defualt":"all"}}}}`), 0o600))
	becomes("/readyz", http.StatusServiceUnavailable, "not ready: mcpwrap's config file has an error (see the log)\n")
	becomes("/healthz", http.StatusOK, "ok\n")
	require.NoError(t, os.WriteFile(srv.ConfigPath, []byte(`{}`), 0o600))
	becomes("/readyz", http.StatusOK, "ok\n")

	// A state file that cannot be read: not ready; repaired: ready.
	file := filepath.Join(srv.StateDir, "servers", "fixture.json")
	require.NoError(t, os.MkdirAll(filepath.Dir(file), 0o700))
	require.NoError(t, os.WriteFile(file, []byte(`{"disabled": [`), 0o600))
	becomes("/readyz", http.StatusServiceUnavailable, "not ready: the state store cannot be read (see the log)\n")
	require.NoError(t, os.Remove(file)) // moved aside: an empty state
	becomes("/readyz", http.StatusOK, "ok\n")
}

// TestListenUnknownSessionIs404: a session id the replica does not know (another replica's, or
// one that ended) is answered 404, which the go-sdk client reports as mcp.ErrSessionMissing, so
// that it opens a new session: what a client does when a balancer sends it to another replica.
func TestListenUnknownSessionIs404(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	first := startListen(ctx, t, listenOptions{Name: "fixture"}, fixtureCommand(t, fixtureBanner)...)
	second := startListen(ctx, t, listenOptions{Name: "fixture"}, fixtureCommand(t, fixtureBanner)...)

	// A session opened on the first replica, its requests then sent to the second.
	target := &redirectingTransport{base: http.DefaultTransport}
	target.to.Store(first.URL)
	cs, err := connectHTTP(ctx, t, newClient(nil), &mcp.StreamableClientTransport{Endpoint: first.URL,
		HTTPClient: &http.Client{Transport: target}, DisableStandaloneSSE: true}, protocolVersionInitialize)
	require.NoError(t, err)
	fixturePIDOf(ctx, t, cs)
	target.to.Store(second.URL)
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: fixturePIDTool})
	require.ErrorIs(t, err, mcp.ErrSessionMissing, "another replica's session is unknown: 404")

	// The client opens a new session, which the second replica serves.
	again, err := connectHTTP(ctx, t, newClient(nil), &mcp.StreamableClientTransport{Endpoint: second.URL, DisableStandaloneSSE: true}, protocolVersionInitialize)
	require.NoError(t, err)
	assert.NotZero(t, fixturePIDOf(ctx, t, again))
}

// redirectingTransport sends every request to the URL in to, whatever URL the client built: a
// balancer that moves a client to another replica.
type redirectingTransport struct {
	base http.RoundTripper
	to   atomic.Value // string
}

func (r *redirectingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	u, err := url.Parse(r.to.Load().(string))
	if err != nil {
		return nil, err
	}
	req = req.Clone(req.Context())
	req.URL.Scheme, req.URL.Host, req.Host = u.Scheme, u.Host, u.Host
	return r.base.RoundTrip(req)
}
