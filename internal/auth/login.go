package auth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// Config is how mcpwrap presents itself to the authorization server of one
// remote server. The zero value registers dynamically and asks for the
// scopes the server names.
type Config struct {
	// ClientID and ClientSecret are a client registered beforehand
	// (oauth.client_id, the secret read from oauth.client_secret_env).
	ClientID     string
	ClientSecret string
	// ClientMetadataURL is the https URL of a client ID metadata document,
	// used when the authorization server supports them.
	ClientMetadataURL string
	// Scopes, when set, replace the scopes the server asks for.
	Scopes []string
	// RedirectPort is the loopback redirect's port; 0 means
	// [RedirectPort] of the server's name.
	RedirectPort int
}

// challenge is a response that asked for authorization: what the go-sdk's
// handler needs of the request and the response.
type challenge struct {
	url    string
	status int
	header http.Header // the response's WWW-Authenticate values
}

func newChallenge(req *http.Request, resp *http.Response) challenge {
	h := http.Header{}
	if v := resp.Header.Values("WWW-Authenticate"); len(v) > 0 {
		h["Www-Authenticate"] = slices.Clone(v)
	}
	return challenge{url: req.URL.String(), status: resp.StatusCode, header: h}
}

// bearer returns the response's Bearer challenge (WWW-Authenticate:
// Bearer ...), parsed: the one reading of the header that every question
// about it goes through. A header that does not parse has none.
func (ch challenge) bearer() (oauthex.Challenge, bool) {
	cs, err := oauthex.ParseWWWAuthenticate(ch.header.Values("WWW-Authenticate"))
	if err != nil {
		return oauthex.Challenge{}, false
	}
	for _, c := range cs {
		if c.Scheme == "bearer" {
			return c, true
		}
	}
	return oauthex.Challenge{}, false
}

// stepUp reports a 403 asking for more scopes (insufficient_scope).
func (ch challenge) stepUp() bool {
	b, ok := ch.bearer()
	return ch.status == http.StatusForbidden && ok && b.Params["error"] == "insufficient_scope"
}

// authorize runs one authorization code flow (with PKCE S256, resource,
// state and iss checked by the go-sdk's handler) against ch, sends the
// user to the authorization page with open, and stores the token.
//
// A registration stored from an earlier sign-in is used when the
// authorization server is the one it was made with; when the server moved
// to another authorization server, the attempt fails before the browser is
// opened, and the sign-in registers anew.
//
// anyPort lets the redirect fall back to a free port when the server's is
// taken (a sidecar's sign-in waiting on it): the user who runs mcpwrap
// login should not have to hunt down an abandoned tab. The redirect then
// differs from the registered one, so a dynamic registration is made for it.
func (c *Client) authorize(ctx context.Context, ch challenge, open func(ctx context.Context, url string) error, anyPort bool) (err error) {
	if c.SignedIn != nil {
		defer func() { c.SignedIn(err) }()
	}
	port := c.Config.RedirectPort
	if port == 0 {
		port = RedirectPort(c.Name)
	}
	cb, err := listenCallback(c.Name, port)
	if err != nil && anyPort {
		if cb, err = listenCallback(c.Name, 0); err == nil {
			port = cb.ln.Addr().(*net.TCPAddr).Port
			c.log.Warn("the sign-in redirect port is taken (another sign-in waits on it); using another", "port", port)
		}
	}
	if err != nil {
		return err
	}
	defer cb.close()
	opened, err := c.authorizeOnce(ctx, ch, open, cb, RedirectURL(port), true)
	if err != nil && !opened && !errors.Is(err, ErrNotWebPage) {
		if _, stored, _ := c.Store.Registration(ctx, c.ServerURL, RedirectURL(port)); stored && c.Config.ClientID == "" {
			c.log.Debug("the stored registration does not fit; registering anew", "error", err)
			_, err = c.authorizeOnce(ctx, ch, open, cb, RedirectURL(port), false)
		}
	}
	return err
}

// authorizeOnce is one attempt of authorize, with the stored registration
// when useStored. It reports whether the user was sent to the browser.
func (c *Client) authorizeOnce(ctx context.Context, ch challenge, open func(ctx context.Context, url string) error, cb *callback, redirect string, useStored bool) (opened bool, err error) {
	var prior []string // scopes granted before: a step-up keeps them
	if ch.stepUp() {
		if t, err := c.Store.Token(ctx, c.ServerURL); err == nil {
			prior = t.Scopes
		}
	}
	rec := &metadataRecorder{base: c.transport()}
	var (
		authURL string
		got     struct {
			cfg *oauth2.Config
			tok *oauth2.Token
		}
	)
	hc := &sdkauth.AuthorizationCodeHandlerConfig{
		RedirectURL: redirect,
		AuthorizationCodeFetcher: func(ctx context.Context, args *sdkauth.AuthorizationArgs) (*sdkauth.AuthorizationResult, error) {
			authURL = args.URL
			u, err := url.Parse(args.URL)
			if err != nil {
				return nil, fmt.Errorf("the authorization URL does not parse: %w", err)
			}
			// Refused before the user is shown it or a browser gets it:
			// the metadata that names it is the server's.
			if err := CheckWebPage(args.URL); err != nil {
				return nil, err
			}
			cb.expect(u.Query().Get("state"))
			opened = true
			if err := open(ctx, args.URL); err != nil {
				return nil, err
			}
			return cb.wait(ctx)
		},
		ScopeFilter: func(discovered []string) []string {
			scopes := discovered
			if len(c.Config.Scopes) > 0 {
				scopes = c.Config.Scopes
			}
			return union(prior, scopes)
		},
		RequestRefreshToken: true,
		Client:              &http.Client{Transport: rec},
		NewTokenSource: func(_ context.Context, cfg *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
			got.cfg, got.tok = cfg, tok
			return oauth2.StaticTokenSource(tok), nil
		},
		DynamicClientRegistrationConfig: &sdkauth.DynamicClientRegistrationConfig{
			Metadata: &oauthex.ClientRegistrationMetadata{
				RedirectURIs:  []string{redirect},
				ClientName:    "mcpwrap",
				GrantTypes:    []string{"authorization_code", "refresh_token"},
				ResponseTypes: []string{"code"},
			},
		},
	}
	if c.Config.ClientMetadataURL != "" {
		hc.ClientIDMetadataDocumentConfig = &sdkauth.ClientIDMetadataDocumentConfig{URL: c.Config.ClientMetadataURL}
	}
	storedReg := false
	switch {
	case c.Config.ClientID != "":
		hc.PreregisteredClient = credentials(c.Config.ClientID, c.Config.ClientSecret)
	case useStored:
		if reg, ok, err := c.Store.Registration(ctx, c.ServerURL, redirect); err == nil && ok {
			hc.PreregisteredClient = credentials(reg.ClientID, reg.ClientSecret)
			// Bound to its authorization server: another one fails the
			// attempt before the browser opens.
			hc.PreregisteredClient.Issuer = reg.Issuer
			storedReg = true
		}
	}
	h, err := sdkauth.NewAuthorizationCodeHandler(hc)
	if err != nil {
		return false, fmt.Errorf("sign-in setup: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ch.url, nil)
	if err != nil {
		return false, err
	}
	resp := &http.Response{StatusCode: ch.status, Header: ch.header.Clone(), Body: io.NopCloser(strings.NewReader("")), Request: req}
	if err := h.Authorize(ctx, req, resp); err != nil {
		return opened, fmt.Errorf("sign-in failed: %w", err)
	}
	if got.cfg == nil || got.tok == nil {
		// A 403 that was not insufficient_scope: the handler had nothing to do.
		return opened, fmt.Errorf("sign-in failed: %w", ErrNotProtected)
	}

	t := Token{
		ServerURL:    c.ServerURL,
		Name:         c.Name,
		Issuer:       rec.issuer(),
		TokenURL:     got.cfg.Endpoint.TokenURL,
		AuthStyle:    int(got.cfg.Endpoint.AuthStyle),
		ClientID:     got.cfg.ClientID,
		ClientSecret: got.cfg.ClientSecret,
		Scopes:       got.cfg.Scopes,
		AccessToken:  got.tok.AccessToken,
		TokenType:    got.tok.TokenType,
		RefreshToken: got.tok.RefreshToken,
		Expiry:       got.tok.Expiry,
	}
	if u, err := url.Parse(authURL); err == nil {
		t.Resource = u.Query().Get("resource")
		if t.Issuer == "" {
			t.Issuer = (&url.URL{Scheme: u.Scheme, Host: u.Host}).String()
		}
	}
	if s, ok := got.tok.Extra("scope").(string); ok && s != "" {
		t.Scopes = strings.Fields(s)
	}
	var reg *Registration
	if !storedReg && got.cfg.ClientID != c.Config.ClientID && got.cfg.ClientID != c.Config.ClientMetadataURL {
		reg = &Registration{Issuer: t.Issuer, ServerURL: c.ServerURL, RedirectURL: redirect, ClientID: got.cfg.ClientID, ClientSecret: got.cfg.ClientSecret}
	}
	if err := c.Store.SaveToken(ctx, t, reg); err != nil {
		return opened, err
	}
	c.setToken(&t)
	c.log.Info("signed in", "issuer", t.Issuer, "expires_in", expiresIn(t))
	return opened, nil
}

func credentials(id, secret string) *oauthex.ClientCredentials {
	cc := &oauthex.ClientCredentials{ClientID: id}
	if secret != "" {
		cc.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: secret}
	}
	return cc
}

// union returns a's scopes followed by those of b not in a.
func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// metadataRecorder notes the issuer of the authorization server metadata
// the go-sdk's handler fetched, to key the token by it. It reads no other
// response.
type metadataRecorder struct {
	base http.RoundTripper

	mu  sync.Mutex
	iss string
}

// maxMetadataBytes bounds a metadata document read for its issuer.
const maxMetadataBytes = 1 << 20

func (r *metadataRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.base.RoundTrip(req)
	if err != nil || req.Method != http.MethodGet || resp.StatusCode != http.StatusOK ||
		!strings.Contains(req.URL.Path, "/.well-known/oauth-authorization-server") && !strings.Contains(req.URL.Path, "/.well-known/openid-configuration") {
		return resp, err
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxMetadataBytes))
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	var meta struct {
		Issuer string `json:"issuer"`
	}
	if json.Unmarshal(body, &meta) == nil && meta.Issuer != "" {
		r.mu.Lock()
		r.iss = meta.Issuer
		r.mu.Unlock()
	}
	return resp, nil
}

func (r *metadataRecorder) issuer() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.iss
}
