package auth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/mcpwrap/mcpwrap/internal/era"
	"github.com/mcpwrap/mcpwrap/internal/oauthmeta"
)

// WrapTransport returns a RoundTripper that sends base's requests with the
// server's access token. A request that already carries an Authorization
// header (a static --header) is sent untouched.
//
// A 401 after a token was sent makes it refresh the token once and send
// again. A 401 it cannot answer, with no token or after the refresh,
// becomes a [resilience.Error] of class denied and code login_required
// (the response is closed): see [Client.AutoLogin] for the sign-in it may
// start. A 403 insufficient_scope asks for the larger scope set (step-up):
// the sign-in runs during the request, at most once per request and once
// per scope set in the process, and at most [DefaultMaxStepUps] times in
// [DefaultStepUpWindow] for the Client, when a browser may be opened;
// otherwise the 403 is returned as is, and past that bound with a status
// line that tells the agent why and when to retry.
func (c *Client) WrapTransport(base http.RoundTripper) http.RoundTripper {
	c.setup()
	if base == nil {
		base = http.DefaultTransport
	}
	return &transport{c: c, base: base}
}

type transport struct {
	c    *Client
	base http.RoundTripper

	mu        sync.Mutex
	steppedUp map[string]bool // scope sets a step-up was run for
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Header.Get("Authorization") != "" {
		return t.base.RoundTrip(req)
	}
	ctx := req.Context()
	tok, err := t.c.accessToken(ctx)
	if err != nil && !errors.Is(err, ErrNoToken) {
		return nil, err
	}
	resp, err := t.send(req, tok)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusUnauthorized && tok != "" {
		// Rejected early (revoked, rotated elsewhere): renew once.
		ch := newChallenge(req, resp)
		discard(resp)
		fresh, err := t.c.refresh(ctx, tok)
		switch {
		case errors.Is(err, ErrNoToken):
			return t.afterLogin(req, ch)
		case err != nil:
			return nil, err
		}
		if resp, err = t.resend(req, fresh.AccessToken); err != nil {
			return nil, err
		}
	}
	if resp.StatusCode == http.StatusUnauthorized && tok == "" {
		// The absence of a token is cached (see Client.cached): one may
		// have been stored since, by a sign-in in another process that
		// Watch has not reloaded yet.
		if fresh, rerr := t.c.reload(req.Context()); rerr == nil {
			discard(resp)
			if resp, err = t.resend(req, fresh.AccessToken); err != nil {
				return nil, err
			}
		}
	}
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		// Only a Bearer challenge, which the MCP authorization spec
		// requires, may be answered with a sign-in. A bare 401, or one
		// asking for another scheme (Basic), is about static credentials
		// and stays a plain denial: "check the credentials configured for it".
		ch := newChallenge(req, resp)
		// Nor may one from a server that offers nothing to sign in with.
		b, ok := ch.bearer()
		if !ok || !oauthmeta.Offered(ctx, &http.Client{Transport: t.c.transport()}, ch.url, b.Params["resource_metadata"]) {
			return resp, nil
		}
		discard(resp)
		return t.afterLogin(req, ch)
	case resp.StatusCode == http.StatusForbidden:
		ch := newChallenge(req, resp)
		if !ch.stepUp() {
			return resp, nil
		}
		allowed, next := t.stepUpAllowed(ch)
		if !allowed {
			if !next.IsZero() {
				t.boundReached(resp, next)
			}
			return resp, nil
		}
		discard(resp)
		if err := t.c.authorize(ctx, ch, t.c.Browser.Open, false); err != nil {
			t.c.log.Warn("step-up sign-in failed", "error", err)
			_, denied := t.c.loginRequired(ch)
			return nil, denied
		}
		fresh, err := t.c.accessToken(ctx)
		if err != nil {
			return nil, err
		}
		return t.resend(req, fresh)
	}
	return resp, nil
}

// afterLogin answers a request the server refused for want of a sign-in:
// with the server's answer to it sent again, when a sign-in of this Client
// completes within the grace period, else with the login-required error.
func (t *transport) afterLogin(req *http.Request, ch challenge) (*http.Response, error) {
	done, denied := t.c.loginRequired(ch)
	if done == nil {
		return nil, denied
	}
	timer := time.NewTimer(t.c.grace())
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		return nil, denied
	case <-req.Context().Done():
		return nil, req.Context().Err()
	}
	tok, err := t.c.accessToken(req.Context())
	if err != nil {
		_, denied = t.c.loginRequired(ch) // says how the sign-in ended
		return nil, denied
	}
	return t.resend(req, tok)
}

// send sends req with tok (none when empty) on a copy of req.
func (t *transport) send(req *http.Request, tok string) (*http.Response, error) {
	if tok == "" {
		return t.base.RoundTrip(req)
	}
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", "Bearer "+tok)
	return t.base.RoundTrip(r)
}

// resend sends req again, with a fresh body.
func (t *transport) resend(req *http.Request, tok string) (*http.Response, error) {
	r := req.Clone(req.Context())
	if req.Body != nil && req.Body != http.NoBody {
		if req.GetBody == nil {
			return nil, fmt.Errorf("cannot send the request again after a sign-in: its body cannot be replayed")
		}
		body, err := req.GetBody()
		if err != nil {
			return nil, err
		}
		r.Body = body
	}
	r.Header.Set("Authorization", "Bearer "+tok)
	return t.base.RoundTrip(r)
}

// stepUpAllowed reports whether a step-up sign-in may run for ch: a
// browser may be opened, this scope set was not tried before, and the
// Client's bound on step-ups (launchBound) allows another now. When only
// the bound stands in the way, next is when it will allow one.
func (t *transport) stepUpAllowed(ch challenge) (ok bool, next time.Time) {
	c := t.c
	if !c.AutoLogin || c.Browser == nil || c.Browser.Disabled() {
		return false, time.Time{}
	}
	key := challengeScope(ch)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.steppedUp[key] {
		return false, time.Time{}
	}
	if ok, next := c.stepUps.take(); !ok {
		return false, next // the scope set is not marked: it may be tried later
	}
	if t.steppedUp == nil {
		t.steppedUp = map[string]bool{}
	}
	t.steppedUp[key] = true
	return true, time.Time{}
}

// boundReached tells the agent, through the status line of the server's
// 403 that it gets as the answer to its call, why no sign-in window was
// opened for it. The server's scopes are not repeated: they are its words.
func (t *transport) boundReached(resp *http.Response, next time.Time) {
	limit, window := t.c.stepUps.limits()
	wait := max(time.Until(next), time.Second).Round(time.Second)
	t.c.log.Warn("the server asks for more permissions again; not opening another sign-in window",
		"opened", limit, "within", window.String(), "next_in", wait.String())
	resp.Status = fmt.Sprintf("%d %s (the server asks for more permissions again: mcpwrap opened %d sign-in windows for it within %s, and opens no more for %s; retry then)",
		resp.StatusCode, http.StatusText(resp.StatusCode), limit, window, wait)
}

// challengeScope is the scope set ch's Bearer challenge asks for.
func challengeScope(ch challenge) string {
	b, _ := ch.bearer()
	return b.Params["scope"]
}

// discard reads a little of resp's body, so the connection may be reused,
// and closes it.
func discard(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	resp.Body.Close()
}

// Login signs the user in in the foreground (mcpwrap login): it asks the
// server for its challenge, then runs the flow, calling show with the
// authorization URL (to print it) before opening the browser, if one may
// be opened. It does not wait for a sidecar's sign-in under way (the user
// may have closed that tab): the first sign-in to complete is stored, and
// every sidecar picks it up. It returns ErrNotProtected when the server
// asks for no sign-in.
func (c *Client) Login(ctx context.Context, show func(url string)) error {
	c.setup()
	ch, err := c.probe(ctx)
	if err != nil {
		return err
	}
	return c.authorize(ctx, ch, func(ctx context.Context, url string) error {
		show(url)
		if c.Browser == nil || c.Browser.Disabled() {
			return nil
		}
		if err := c.Browser.Open(ctx, url); err != nil {
			c.log.Warn("cannot open the browser; open the URL yourself", "error", err)
		}
		return nil
	}, true)
}

// probeBody is the request Login sends to learn the server's challenge:
// an initialize, which every MCP server must authorize.
const probeBody = `{"jsonrpc":"2.0","id":"mcpwrap-login","method":"initialize","params":{"protocolVersion":"` + era.SessionVersion + `","capabilities":{},"clientInfo":{"name":"mcpwrap","version":"login"}}}`

// probe sends an unauthenticated initialize and returns the challenge.
func (c *Client) probe(ctx context.Context) (challenge, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.ServerURL, strings.NewReader(probeBody))
	if err != nil {
		return challenge{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := c.transport().RoundTrip(req)
	if err != nil {
		return challenge{}, fmt.Errorf("contacting the server: %w", err)
	}
	defer discard(resp)
	if resp.StatusCode != http.StatusUnauthorized && !newChallenge(req, resp).stepUp() {
		return challenge{}, ErrNotProtected
	}
	return newChallenge(req, resp), nil
}

// Logout forgets the server's token; registrations are kept.
func (c *Client) Logout(ctx context.Context) (bool, error) {
	c.setToken(nil)
	return c.Store.Forget(ctx, c.ServerURL)
}
