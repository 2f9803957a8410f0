package auth

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/resilience"
)

func TestTransport(t *testing.T) {
	tests := []struct {
		name       string
		challenge  string // WWW-Authenticate of the 401, "" for none
		header     string // Authorization the request already has
		wantStatus int    // the response returned, or 0 for an error
		wantCode   string // the error's resilience code
		noMetadata bool   // the server offers no OAuth metadata
	}{
		{name: "static credentials pass untouched", header: "Bearer static", wantStatus: http.StatusUnauthorized, challenge: `Bearer realm="x"`},
		{name: "a Basic challenge stays a plain 401", challenge: `Basic realm="x"`, wantStatus: http.StatusUnauthorized},
		{name: "a Bearer challenge needs a sign-in", challenge: `Bearer resource_metadata="http://127.0.0.1:1/x"`, wantCode: resilience.CodeLoginRequired},
		{name: "a bare 401 stays a plain 401", wantStatus: http.StatusUnauthorized},
		{name: "a Bearer challenge after another scheme's needs a sign-in", challenge: `Basic realm="x", Bearer`, wantCode: resilience.CodeLoginRequired},
		{name: "a lower-case bearer challenge needs a sign-in", challenge: `bearer`, wantCode: resilience.CodeLoginRequired},
		{name: "a scheme that only starts with Bearer stays a plain 401", challenge: `BearerToken realm="x"`, wantStatus: http.StatusUnauthorized},
		{name: "a challenge that does not parse stays a plain 401", challenge: `Bearer realm="x`, wantStatus: http.StatusUnauthorized},
		{name: "a Bearer challenge from a server offering no OAuth metadata stays a plain 401", challenge: `Bearer realm="x"`,
			noMetadata: true, wantStatus: http.StatusUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var gotAuth []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodGet {
					if tt.noMetadata || r.URL.Path != "/.well-known/oauth-authorization-server" {
						http.NotFound(w, r)
						return
					}
					w.Header().Set("Content-Type", "application/json")
					_, _ = io.WriteString(w, `{"issuer":"http://`+r.Host+`"}`)
					return
				}
				gotAuth = append(gotAuth, r.Header.Get("Authorization"))
				if tt.challenge != "" {
					w.Header().Set("WWW-Authenticate", tt.challenge)
				}
				w.WriteHeader(http.StatusUnauthorized)
			}))
			defer srv.Close()
			store, err := newFileStore(t.TempDir())
			require.NoError(t, err)
			c := &Client{Name: "linear", ServerURL: srv.URL, Store: store}
			rt := c.WrapTransport(nil)
			req, err := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(`{}`))
			require.NoError(t, err)
			if tt.header != "" {
				req.Header.Set("Authorization", tt.header)
			}
			resp, err := rt.RoundTrip(req)
			if tt.wantCode != "" {
				require.Error(t, err)
				assert.Equal(t, tt.wantCode, resilience.Classify(err).Code)
				assert.Equal(t, resilience.Denied, resilience.Classify(err).Class)
				return
			}
			require.NoError(t, err)
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			assert.Equal(t, tt.wantStatus, resp.StatusCode)
			assert.Equal(t, []string{tt.header}, gotAuth, "sent once, as given")
		})
	}
}

func TestTransportSendsTheStoredToken(t *testing.T) {
	var gotAuth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth = r.Header.Get("Authorization")
	}))
	defer srv.Close()
	store, err := newFileStore(t.TempDir())
	require.NoError(t, err)
	require.NoError(t, store.SaveToken(t.Context(), Token{ServerURL: srv.URL, AccessToken: "at-1"}, nil))
	c := &Client{Name: "linear", ServerURL: srv.URL, Store: store}
	req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
	require.NoError(t, err)
	resp, err := c.WrapTransport(nil).RoundTrip(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, "Bearer at-1", gotAuth)
	assert.Empty(t, req.Header.Get("Authorization"), "the caller's request is not modified")
}

func TestBrowserCommand(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{name: "MCPWRAP_BROWSER first", env: map[string]string{"MCPWRAP_BROWSER": "firefox --new-tab", "BROWSER": "chrome"}, want: "firefox --new-tab"},
		{name: "then the first of BROWSER", env: map[string]string{"BROWSER": "w3m:lynx"}, want: "w3m"},
		{name: "none", env: map[string]string{"MCPWRAP_BROWSER": "none"}, want: "none"},
		{name: "else the OS default", env: map[string]string{}, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &Browser{Getenv: func(k string) string { return tt.env[k] }}
			assert.Equal(t, tt.want, b.command())
			assert.Equal(t, tt.want == "none", b.Disabled())
		})
	}
}

func TestCallbackAcceptsOnlyItsState(t *testing.T) {
	cb, err := listenCallback("linear", freePort(t))
	require.NoError(t, err)
	defer cb.close()
	cb.expect("good-state")
	base := "http://" + cb.ln.Addr().String() + "/callback"

	resp, err := http.Get(base + "?code=c1&state=forged")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "a response for another request is refused")

	resp, err = http.Get(base + "?code=c2&state=good-state&iss=https%3A%2F%2Fas")
	require.NoError(t, err)
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Contains(t, string(page), "You may close this tab.")
	res, err := cb.wait(t.Context())
	require.NoError(t, err)
	assert.Equal(t, "c2", res.Code)
	assert.Equal(t, "https://as", res.Iss)
}

func TestCallbackReportsTheServersError(t *testing.T) {
	cb, err := listenCallback("linear", freePort(t))
	require.NoError(t, err)
	defer cb.close()
	cb.expect("s")
	resp, err := http.Get("http://" + cb.ln.Addr().String() + "/callback?state=s&error=access_denied&error_description=the+user+said+no")
	require.NoError(t, err)
	resp.Body.Close()
	_, err = cb.wait(t.Context())
	var ae *AuthorizationError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, "access_denied", ae.Code)
}
