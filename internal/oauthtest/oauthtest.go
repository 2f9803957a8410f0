// Package oauthtest is an OAuth authorization server and an MCP resource
// server in one loopback HTTP server, for mcpwrap's tests and demo. The
// authorization endpoint signs every user in at once (it redirects straight
// back with a code), so a headless "browser" that follows redirects is
// enough to complete a sign-in. Refresh tokens rotate: each works once.
//
// Knobs make the token endpoint fail the ways real ones do (503,
// invalid_grant); counters say how often each endpoint was used.
package oauthtest

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// Options configure a Server. The zero value issues hour-long tokens.
type Options struct {
	// TokenLifetime is how long an access token is valid; 0 means an hour.
	TokenLifetime time.Duration
	// AuthorizationEndpoint is the authorization_endpoint its metadata
	// names; "" means its own /authorize. Tests of what a hostile server
	// can make a client open set it.
	AuthorizationEndpoint string
}

// Counts is how often the server's endpoints were used.
type Counts struct {
	Registrations  int // POST /register
	Authorizations int // GET /authorize
	CodeExchanges  int // POST /token, authorization_code
	Refreshes      int // POST /token, refresh_token (failed ones too)
	ToolCalls      int // tools/call with a valid token
}

// Server is the authorization and resource server. Its methods are safe for
// concurrent use.
type Server struct {
	// URL is the server's origin: the issuer. The MCP endpoint is
	// URL+"/mcp".
	URL string

	opts Options
	srv  *http.Server
	done chan struct{}

	mu            sync.Mutex
	counts        Counts
	codes         map[string]grant     // authorization code -> grant
	access        map[string]time.Time // access token -> expiry
	refresh       map[string]bool      // refresh token -> still usable
	issued        []string             // every token issued
	refreshStatus int                  // when not 0, refreshes fail with it
	refreshError  string
	barrier       int           // rejections still to arrive before any is answered
	barrierDone   chan struct{} // closed when they have
	stepUps       bool          // every tools/call asks for one more scope
	scopesAsked   int           // scopes asked for so far by step-ups
}

type grant struct {
	challenge, redirect, resource string
}

// Start serves on a loopback port until Close.
func Start(opts Options) (*Server, error) {
	if opts.TokenLifetime <= 0 {
		opts.TokenLifetime = time.Hour
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{
		URL: "http://" + ln.Addr().String(), opts: opts, done: make(chan struct{}),
		codes: map[string]grant{}, access: map[string]time.Time{}, refresh: map[string]bool{},
	}
	mux := http.NewServeMux()
	mux.Handle("GET /.well-known/oauth-protected-resource/mcp", sdkauth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource: s.URL + "/mcp", AuthorizationServers: []string{s.URL}, ScopesSupported: []string{"tools"},
	}))
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", s.metadata)
	mux.HandleFunc("POST /register", s.register)
	mux.HandleFunc("GET /authorize", s.authorize)
	mux.HandleFunc("POST /token", s.token)
	mux.Handle("/mcp", sdkauth.RequireBearerToken(s.verify, &sdkauth.RequireBearerTokenOptions{
		ResourceMetadataURL: s.URL + "/.well-known/oauth-protected-resource/mcp",
	})(s.stepUp(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcpServer() }, nil))))
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln)
	}()
	return s, nil
}

// Close stops the server.
func (s *Server) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = s.srv.Shutdown(ctx)
	<-s.done
}

// Counts returns the use counts so far.
func (s *Server) Counts() Counts {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts
}

// Issued returns every access and refresh token issued so far, to look for
// leaks.
func (s *Server) Issued() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.issued...)
}

// FailRefresh makes refreshes fail with status and the OAuth error code
// (e.g. 503, or 400 "invalid_grant"); status 0 makes them work again.
func (s *Server) FailRefresh(status int, code string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refreshStatus, s.refreshError = status, code
}

// HoldRejections makes the next n requests with an expired access token
// wait until all n have arrived before they are answered 401, so that n
// clients certainly race to refresh one token.
func (s *Server) HoldRejections(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.barrier, s.barrierDone = n, make(chan struct{})
}

// StepUpEveryCall makes every tools/call (with a valid token) answered 403
// insufficient_scope, asking for a scope set larger by one than the last
// one asked for: a server that invents a new scope set for each call, so
// each call wants a new sign-in.
func (s *Server) StepUpEveryCall() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stepUps = true
}

// stepUp answers tools/call 403 insufficient_scope while StepUpEveryCall is
// on, and passes everything else to next.
func (s *Server) stepUp(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		on := s.stepUps
		s.mu.Unlock()
		if !on || r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, "cannot read the request", http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			Method string `json:"method"`
		}
		if json.Unmarshal(body, &msg) != nil || msg.Method != "tools/call" {
			next.ServeHTTP(w, r)
			return
		}
		s.mu.Lock()
		s.scopesAsked++
		scopes := []string{"tools"}
		for i := 1; i <= s.scopesAsked; i++ {
			scopes = append(scopes, fmt.Sprintf("extra-%d", i))
		}
		s.mu.Unlock()
		w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="insufficient_scope", scope=%q, resource_metadata=%q`,
			strings.Join(scopes, " "), s.URL+"/.well-known/oauth-protected-resource/mcp"))
		http.Error(w, "insufficient scope", http.StatusForbidden)
	})
}

// ExpireAccessTokens makes every access token issued so far invalid.
func (s *Server) ExpireAccessTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for tok := range s.access {
		s.access[tok] = time.Time{}
	}
}

func (s *Server) mcpServer() *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "signed-in", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "whoami", Description: "Says who is signed in."},
		func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, struct{}, error) {
			s.mu.Lock()
			s.counts.ToolCalls++
			s.mu.Unlock()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "you are signed in"}}}, struct{}{}, nil
		})
	return srv
}

func (s *Server) verify(ctx context.Context, token string, _ *http.Request) (*sdkauth.TokenInfo, error) {
	s.mu.Lock()
	exp, ok := s.access[token]
	if ok && time.Now().After(exp) && s.barrier > 0 {
		s.barrier--
		done := s.barrierDone
		if s.barrier == 0 {
			close(done)
		}
		s.mu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
		case <-time.After(10 * time.Second):
		}
		return nil, sdkauth.ErrInvalidToken
	}
	defer s.mu.Unlock()
	if !ok || time.Now().After(exp) {
		return nil, sdkauth.ErrInvalidToken
	}
	return &sdkauth.TokenInfo{Expiration: exp, Scopes: []string{"tools"}}, nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (s *Server) metadata(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer":                                         s.URL,
		"authorization_endpoint":                         cmp.Or(s.opts.AuthorizationEndpoint, s.URL+"/authorize"),
		"token_endpoint":                                 s.URL + "/token",
		"registration_endpoint":                          s.URL + "/register",
		"response_types_supported":                       []string{"code"},
		"grant_types_supported":                          []string{"authorization_code", "refresh_token"},
		"code_challenge_methods_supported":               []string{"S256"},
		"token_endpoint_auth_methods_supported":          []string{"none"},
		"scopes_supported":                               []string{"tools", "offline_access"},
		"authorization_response_iss_parameter_supported": true,
	})
}

func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	var meta map[string]any
	_ = json.NewDecoder(r.Body).Decode(&meta)
	s.mu.Lock()
	s.counts.Registrations++
	id := fmt.Sprintf("client-%d", s.counts.Registrations)
	s.mu.Unlock()
	meta["client_id"] = id
	meta["token_endpoint_auth_method"] = "none"
	writeJSON(w, http.StatusCreated, meta)
}

// authorize signs the user in at once and redirects back with a code.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	redirect, err := url.Parse(q.Get("redirect_uri"))
	if err != nil || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" {
		http.Error(w, "bad authorization request", http.StatusBadRequest)
		return
	}
	code := rand.Text()
	s.mu.Lock()
	s.counts.Authorizations++
	s.codes[code] = grant{challenge: q.Get("code_challenge"), redirect: q.Get("redirect_uri"), resource: q.Get("resource")}
	s.mu.Unlock()
	back := redirect.Query()
	back.Set("code", code)
	back.Set("state", q.Get("state"))
	back.Set("iss", s.URL)
	redirect.RawQuery = back.Encode()
	http.Redirect(w, r, redirect.String(), http.StatusFound)
}

func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request"})
		return
	}
	f := r.PostForm
	s.mu.Lock()
	defer s.mu.Unlock()
	switch f.Get("grant_type") {
	case "authorization_code":
		s.counts.CodeExchanges++
		g, ok := s.codes[f.Get("code")]
		delete(s.codes, f.Get("code"))
		sum := sha256.Sum256([]byte(f.Get("code_verifier")))
		if !ok || base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge || f.Get("redirect_uri") != g.redirect || f.Get("resource") != g.resource {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
			return
		}
	case "refresh_token":
		s.counts.Refreshes++
		if s.refreshStatus != 0 {
			writeJSON(w, s.refreshStatus, map[string]string{"error": s.refreshError})
			return
		}
		if !s.refresh[f.Get("refresh_token")] || f.Get("resource") != s.URL+"/mcp" {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
			return
		}
		s.refresh[f.Get("refresh_token")] = false // rotated: used once
	default:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type"})
		return
	}
	access, refresh := "at-"+rand.Text(), "rt-"+rand.Text()
	s.access[access] = time.Now().Add(s.opts.TokenLifetime)
	s.refresh[refresh] = true
	s.issued = append(s.issued, access, refresh)
	writeJSON(w, http.StatusOK, map[string]any{
		"access_token": access, "token_type": "Bearer", "refresh_token": refresh,
		"expires_in": int(s.opts.TokenLifetime / time.Second), "scope": strings.Join([]string{"tools"}, " "),
	})
}
