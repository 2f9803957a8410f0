package auth

import (
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/internal/oauthtest"
)

// startAuthServer starts an authorization and resource server that the
// test closes when it ends.
func startAuthServer(t *testing.T) *oauthtest.Server {
	t.Helper()
	as, err := oauthtest.Start(oauthtest.Options{})
	require.NoError(t, err)
	t.Cleanup(as.Close)
	return as
}

// login signs c in, with the user's browser following the URL shown to the
// loopback callback, and returns that URL.
func login(t *testing.T, c *Client) (shown string) {
	t.Helper()
	var wg sync.WaitGroup
	defer wg.Wait() // the browser's request ends before the test does
	require.NoError(t, c.Login(t.Context(), func(target string) {
		shown = target
		wg.Go(func() {
			resp, err := http.Get(target)
			if assert.NoError(t, err) {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}))
	return shown
}

func TestLogin(t *testing.T) {
	as := startAuthServer(t)
	store, err := newFileStore(t.TempDir())
	require.NoError(t, err)
	port := freePort(t)
	c := &Client{Name: "notes", ServerURL: as.URL + "/mcp", Store: store, Config: Config{RedirectPort: port}}
	defer c.Close()
	shown := login(t, c)

	assert.Contains(t, shown, "code_challenge_method=S256")
	assert.Contains(t, shown, "redirect_uri="+url.QueryEscape(RedirectURL(port)))
	tok, err := store.Token(t.Context(), as.URL+"/mcp")
	require.NoError(t, err)
	assert.Equal(t, as.URL, tok.Issuer, "keyed by the issuer")
	assert.Equal(t, as.URL+"/mcp", tok.Resource, "and the resource")
	assert.NotEmpty(t, tok.RefreshToken)
	st, err := c.State(t.Context())
	require.NoError(t, err)
	assert.True(t, st.SignedIn)
	_, ok, err := store.Registration(t.Context(), as.URL+"/mcp", RedirectURL(port))
	require.NoError(t, err)
	assert.True(t, ok, "the dynamic registration is stored")
}

// TestLoginWhenThePortIsTaken: a sidecar's abandoned sign-in holds the
// redirect port; mcpwrap login signs in on another one.
func TestLoginWhenThePortIsTaken(t *testing.T) {
	as := startAuthServer(t)
	store, err := newFileStore(t.TempDir())
	require.NoError(t, err)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	port := taken.Addr().(*net.TCPAddr).Port
	c := &Client{Name: "notes", ServerURL: as.URL + "/mcp", Store: store, Config: Config{RedirectPort: port}}
	defer c.Close()
	shown := login(t, c)
	assert.NotContains(t, shown, "%3A"+strconv.Itoa(port)+"%2Fcallback")
	_, err = store.Token(t.Context(), as.URL+"/mcp")
	assert.NoError(t, err)
}

func TestLoginServerWithoutSignIn(t *testing.T) {
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	defer func() { srv.Close(); <-done }()
	store, err := newFileStore(t.TempDir())
	require.NoError(t, err)
	c := &Client{Name: "open", ServerURL: "http://" + ln.Addr().String() + "/mcp", Store: store}
	defer c.Close()
	err = c.Login(t.Context(), func(string) { t.Error("no URL to show") })
	assert.ErrorIs(t, err, ErrNotProtected)
}
