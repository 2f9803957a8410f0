package auth

import (
	"context"
	"encoding/json"
	"errors"

	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/resilience"
)

// fakeTokenEndpoint is an authorization server's token endpoint that
// rotates refresh tokens: each one works once.
type fakeTokenEndpoint struct {
	status   int    // answer with this status instead, when not 0
	errCode  string // the OAuth error of that answer
	requests atomic.Int32

	mu        sync.Mutex
	refresh   string // the one valid refresh token
	issued    int
	resources []string
}

func (f *fakeTokenEndpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.requests.Add(1)
	_ = r.ParseForm()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.resources = append(f.resources, r.PostForm.Get("resource"))
	w.Header().Set("Content-Type", "application/json")
	if f.status != 0 {
		w.WriteHeader(f.status)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": f.errCode})
		return
	}
	if r.PostForm.Get("grant_type") != "refresh_token" || r.PostForm.Get("refresh_token") != f.refresh {
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": "invalid_grant"})
		return
	}
	f.issued++
	f.refresh = "refresh-" + string(rune('a'+f.issued))
	_ = json.NewEncoder(w).Encode(map[string]any{
		"access_token": "access-" + string(rune('a'+f.issued)), "token_type": "Bearer",
		"refresh_token": f.refresh, "expires_in": 3600,
	})
}

// expiredToken stores an expired token for serverURL whose refresh token
// is "refresh-0".
func expiredToken(t *testing.T, s *Store, serverURL, tokenURL string) {
	t.Helper()
	require.NoError(t, s.SaveToken(t.Context(), Token{
		ServerURL: serverURL, Issuer: "https://as.example", Resource: serverURL, TokenURL: tokenURL,
		ClientID: "client", AccessToken: "access-old", RefreshToken: "refresh-0",
		Expiry: time.Now().Add(-time.Hour),
	}, nil))
}

func TestRefreshSingleFlightAcrossClients(t *testing.T) {
	as := &fakeTokenEndpoint{refresh: "refresh-0"}
	srv := httptest.NewServer(as)
	defer srv.Close()
	dir := t.TempDir()
	setup, err := newFileStore(dir)
	require.NoError(t, err)
	expiredToken(t, setup, "https://mcp.example/mcp", srv.URL)

	// Four processes: each its own Store and Client over one directory;
	// the refresh lock is a file lock, which separate opens contend for.
	const n = 4
	tokens := make([]string, n)
	var wg sync.WaitGroup
	var refreshed atomic.Int32 // Refreshed calls, each with a nil error
	for i := range n {
		store, err := newFileStore(dir)
		require.NoError(t, err)
		c := &Client{Name: "x", ServerURL: "https://mcp.example/mcp", Store: store, Refreshed: func(err error) {
			assert.NoError(t, err)
			refreshed.Add(1)
		}}
		c.setup()
		wg.Go(func() {
			tok, err := c.accessToken(context.Background())
			assert.NoError(t, err)
			tokens[i] = tok
		})
	}
	wg.Wait()
	assert.Equal(t, int32(1), as.requests.Load(), "refresh requests")
	assert.Equal(t, int32(1), refreshed.Load(), "Refreshed is called by the one that refreshed")
	for _, tok := range tokens {
		assert.Equal(t, "access-b", tok)
	}
	assert.Equal(t, []string{"https://mcp.example/mcp"}, as.resources, "the refresh sends resource again")
	stored, err := setup.Token(t.Context(), "https://mcp.example/mcp")
	require.NoError(t, err)
	assert.Equal(t, "refresh-b", stored.RefreshToken, "the rotated refresh token is stored")
}

func TestRefreshFailure(t *testing.T) {
	tests := []struct {
		name       string
		status     int
		errCode    string
		registered bool // the token's client is a registration mcpwrap made
		wantClass  resilience.Class
		wantKept   bool
	}{
		{name: "503 is transient and keeps the token", status: http.StatusServiceUnavailable, wantClass: resilience.Transient, wantKept: true},
		{name: "429 is transient", status: http.StatusTooManyRequests, wantClass: resilience.Transient, wantKept: true},
		{name: "invalid_grant needs a new sign-in", status: http.StatusBadRequest, errCode: "invalid_grant", wantClass: resilience.Denied},
		{name: "invalid_grant answered 401", status: http.StatusUnauthorized, errCode: "invalid_grant", wantClass: resilience.Denied},
		{name: "400 invalid_request keeps the token", status: http.StatusBadRequest, errCode: "invalid_request", wantClass: resilience.Transient, wantKept: true},
		{name: "400 without an OAuth error keeps the token", status: http.StatusBadRequest, wantClass: resilience.Transient, wantKept: true},
		{name: "401 from a proxy keeps the token", status: http.StatusUnauthorized, wantClass: resilience.Transient, wantKept: true},
		{name: "404 keeps the token", status: http.StatusNotFound, wantClass: resilience.Transient, wantKept: true},
		{name: "408 keeps the token", status: http.StatusRequestTimeout, wantClass: resilience.Transient, wantKept: true},
		{
			name: "invalid_client of a configured client keeps the token", status: http.StatusUnauthorized, errCode: "invalid_client",
			wantClass: resilience.Transient, wantKept: true,
		},
		{
			name: "invalid_client of mcpwrap's registration needs a new sign-in, which registers anew", status: http.StatusUnauthorized, errCode: "invalid_client",
			registered: true, wantClass: resilience.Denied,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			as := &fakeTokenEndpoint{status: tt.status, errCode: tt.errCode}
			srv := httptest.NewServer(as)
			defer srv.Close()
			store, err := newFileStore(t.TempDir())
			require.NoError(t, err)
			expiredToken(t, store, "https://mcp.example/mcp", srv.URL)
			const redirect = "http://127.0.0.1:1/callback"
			if tt.registered {
				require.NoError(t, store.SaveToken(t.Context(), mustToken(t, store, "https://mcp.example/mcp"),
					&Registration{Issuer: "https://as.example", ServerURL: "https://mcp.example/mcp", RedirectURL: redirect, ClientID: "client"}))
			}
			var refreshed []error
			c := &Client{Name: "linear", ServerURL: "https://mcp.example/mcp", Store: store,
				Refreshed: func(err error) { refreshed = append(refreshed, err) }}
			c.setup()

			_, err = c.accessToken(t.Context())
			require.Error(t, err)
			require.Len(t, refreshed, 1, "Refreshed is called once")
			require.Error(t, refreshed[0], "with the error the refresh ended with")
			assert.Equal(t, tt.wantClass == resilience.Denied, errors.Is(refreshed[0], ErrNoToken), "refused: %v", refreshed[0])
			if tt.wantClass == resilience.Denied {
				require.ErrorIs(t, err, ErrNoToken)
				_, denied := c.loginRequired(challenge{status: 401})
				got := resilience.Classify(denied)
				assert.Equal(t, resilience.Denied, got.Class)
				assert.Equal(t, resilience.CodeLoginRequired, got.Code)
			} else {
				got := resilience.Classify(err)
				assert.Equal(t, tt.wantClass, got.Class, got.Reason)
			}
			_, err = store.Token(t.Context(), "https://mcp.example/mcp")
			assert.Equal(t, tt.wantKept, err == nil, "token kept")
			assert.Equal(t, int32(1), as.requests.Load(), "one refresh request")
			if tt.registered {
				_, regKept, err := store.Registration(t.Context(), "https://mcp.example/mcp", redirect)
				require.NoError(t, err)
				assert.Equal(t, tt.wantKept, regKept, "registration kept")
			}
		})
	}
}

func mustToken(t *testing.T, s *Store, serverURL string) Token {
	t.Helper()
	tok, err := s.Token(t.Context(), serverURL)
	require.NoError(t, err)
	return tok
}

func TestTokenFileIsPrivate(t *testing.T) {
	dir := t.TempDir()
	store, err := newFileStore(dir)
	require.NoError(t, err)
	require.NoError(t, store.SaveToken(t.Context(), Token{ServerURL: "https://a/mcp", AccessToken: "secret-access"}, nil))
	info, err := os.Stat(filepath.Join(dir, "tokens.json"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
}

func TestLoginRequiredWords(t *testing.T) {
	tests := []struct {
		name      string
		autoLogin bool
		browser   string
		wantHint  string
	}{
		{name: "browser opened once", autoLogin: true, browser: "true", wantHint: "A browser window has been opened; or run `mcpwrap login linear`"},
		{name: "browser off", autoLogin: true, browser: "none", wantHint: "To sign in, run `mcpwrap login linear`"},
		{name: "doctor never opens", autoLogin: false, browser: "true", wantHint: "To sign in, run `mcpwrap login linear`"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store, err := newFileStore(t.TempDir())
			require.NoError(t, err)
			env := map[string]string{"MCPWRAP_BROWSER": tt.browser}
			c := &Client{Name: "linear", ServerURL: "http://127.0.0.1:1/mcp", Store: store, AutoLogin: tt.autoLogin,
				Browser: &Browser{Getenv: func(k string) string { return env[k] }},
				Config:  Config{RedirectPort: freePort(t)}}
			c.setup()
			defer c.Close()
			_, err = c.loginRequired(challenge{url: "http://127.0.0.1:1/mcp", status: 401, header: http.Header{}})
			got := resilience.Classify(err)
			assert.Equal(t, tt.wantHint, got.Hint)
			out := resilience.Outcome{Server: "linear", Class: got.Class, Err: got, Attempts: 1}
			assert.Equal(t, "Server 'linear' needs you to sign in. "+tt.wantHint+". Its tools will appear once you have signed in.", out.Message())
			meta := out.Meta()
			assert.Equal(t, "login_required", meta.Reason)
			assert.False(t, meta.Retryable)
			assert.False(t, strings.Contains(out.Message(), "secret"))
			_, again := c.loginRequired(challenge{url: "http://127.0.0.1:1/mcp", status: 401, header: http.Header{}})
			assert.NotContains(t, resilience.Classify(again).Hint, "A sign-in is under way in another window")
		})
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	srv := httptest.NewServer(http.NotFoundHandler())
	port := srv.Listener.Addr().(interface{ String() string }).String()
	srv.Close()
	i := strings.LastIndexByte(port, ':')
	var p int
	for _, r := range port[i+1:] {
		p = p*10 + int(r-'0')
	}
	return p
}
