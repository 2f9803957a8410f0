package auth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/mcpwrap/mcpwrap/resilience"
)

// refresh renews the server's token, once across every mcpwrap process:
// under the server's refresh lock it reads the store again, and uses the
// token another process stored meanwhile instead of spending the (maybe
// rotating, single-use) refresh token a second time. stale is the access
// token the caller found unusable.
//
// A refusal of the grant (see refreshFailed) forgets the token and returns
// a login-required error; any other failure is transient and keeps the
// token for the next try.
func (c *Client) refresh(ctx context.Context, stale string) (_ *Token, err error) {
	unlock, err := c.Store.lock(ctx, lockName("refresh", c.ServerURL))
	if err != nil {
		return nil, err
	}
	defer unlock()
	t, err := c.reload(ctx)
	if err != nil {
		return nil, err
	}
	if t.AccessToken != stale && valid(t, time.Now()) {
		return t, nil // another process refreshed it
	}
	if t.RefreshToken == "" {
		return nil, ErrNoToken
	}
	style := oauth2.AuthStyle(t.AuthStyle)
	if style == oauth2.AuthStyleAutoDetect && t.ClientSecret == "" {
		// A public client has no secret to place: auto-detection would
		// only send a failed refresh twice.
		style = oauth2.AuthStyleInParams
	}
	cfg := &oauth2.Config{
		ClientID:     t.ClientID,
		ClientSecret: t.ClientSecret,
		Endpoint:     oauth2.Endpoint{TokenURL: t.TokenURL, AuthStyle: style},
		Scopes:       t.Scopes,
	}
	if c.Refreshed != nil {
		defer func() { c.Refreshed(err) }()
	}
	hc := &http.Client{Transport: &resourceParam{base: c.transport(), tokenURL: t.TokenURL, resource: t.Resource}}
	rctx := context.WithValue(ctx, oauth2.HTTPClient, hc)
	// An expired token with only the refresh token makes the source refresh.
	fresh, err := cfg.TokenSource(rctx, &oauth2.Token{RefreshToken: t.RefreshToken, Expiry: time.Unix(1, 0)}).Token()
	if err != nil {
		return nil, c.refreshFailed(ctx, t, err)
	}
	next := *t
	next.AccessToken, next.TokenType, next.Expiry = fresh.AccessToken, fresh.TokenType, fresh.Expiry
	if fresh.RefreshToken != "" {
		next.RefreshToken = fresh.RefreshToken // rotated
	}
	if s, ok := fresh.Extra("scope").(string); ok && s != "" {
		next.Scopes = strings.Fields(s)
	}
	if err := c.Store.SaveToken(ctx, next, nil); err != nil {
		return nil, err
	}
	c.setToken(&next)
	c.log.Info("access token refreshed", "expires_in", expiresIn(next))
	return &next, nil
}

// refreshFailed classifies a failed refresh. Only the authorization
// server's word that the grant is gone forgets the sign-in: invalid_grant
// (revoked, expired, or already used), or invalid_client for a client
// mcpwrap registered itself, which the next sign-in registers anew. Any
// other answer (400 invalid_request, 401, 404, 408, 429, 5xx, a body that
// is not an OAuth error) may be a proxy, an outage or a misconfiguration
// fixed tomorrow: it is transient, and the tokens are kept for the next try.
func (c *Client) refreshFailed(ctx context.Context, t *Token, err error) error {
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) || re.Response == nil {
		// Network failure: the type survives for the classifier.
		return fmt.Errorf("refreshing the sign-in: %w", err)
	}
	code := re.Response.StatusCode
	gone := false
	switch re.ErrorCode {
	case "invalid_grant":
		gone = true
		if _, ferr := c.Store.Forget(ctx, c.ServerURL); ferr != nil {
			c.log.Warn("cannot forget the refused token", "error", ferr)
		}
	case "invalid_client":
		registered, ferr := c.Store.forgetClient(ctx, c.ServerURL, t.ClientID)
		gone = registered
		if ferr != nil {
			c.log.Warn("cannot forget the refused client", "error", ferr)
		}
	}
	if gone {
		c.log.Warn("the authorization server refused the refresh token; a new sign-in is needed", "status", code, "error_code", re.ErrorCode)
		c.setToken(nil)
		return ErrNoToken
	}
	status := &resilience.HTTPStatusError{StatusCode: code, Status: re.Response.Status}
	c.log.Warn("the authorization server could not refresh the token; keeping it, will retry", "status", code, "error_code", re.ErrorCode)
	return &resilience.Error{Class: resilience.Transient,
		Reason: "the authorization server could not renew the sign-in (" + status.Error() + ")",
		Err:    status}
}

// resourceParam adds the RFC 8707 resource parameter to refresh requests
// to the token endpoint: golang.org/x/oauth2 sends only the grant.
type resourceParam struct {
	base     http.RoundTripper
	tokenURL string
	resource string
}

// maxTokenRequestBytes bounds a token request body read to add resource.
const maxTokenRequestBytes = 64 << 10

func (r *resourceParam) RoundTrip(req *http.Request) (*http.Response, error) {
	if r.resource == "" || req.Method != http.MethodPost || req.Body == nil || req.URL.String() != r.tokenURL {
		return r.base.RoundTrip(req)
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, maxTokenRequestBytes))
	req.Body.Close()
	if err != nil {
		return nil, err
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, err
	}
	if form.Get("grant_type") == "refresh_token" && form.Get("resource") == "" {
		form.Set("resource", r.resource)
	}
	encoded := form.Encode()
	out := req.Clone(req.Context())
	out.Body = io.NopCloser(strings.NewReader(encoded))
	out.ContentLength = int64(len(encoded))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(encoded)), nil }
	return r.base.RoundTrip(out)
}
