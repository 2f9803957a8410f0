package auth

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/mcpwrap/mcpwrap/internal/redact"
	"github.com/mcpwrap/mcpwrap/resilience"
)

// Defaults of a Client.
const (
	// DefaultLoginTimeout bounds a sign-in started by a sidecar: the user
	// has this long to finish it in the browser.
	DefaultLoginTimeout = 5 * time.Minute
	// DefaultLoginGrace is the default [Client.LoginGrace].
	DefaultLoginGrace = 3 * time.Second
	// expirySkew refreshes a token this long before it expires.
	expirySkew = 30 * time.Second
)

// Client is the sign-in state of one remote server in one process. Set
// the exported fields, then use it; its methods are safe for concurrent
// use. Close waits for the sign-in it started in the background.
type Client struct {
	// Name is the server's configured name, for messages and the default
	// redirect port.
	Name string
	// ServerURL is the server's MCP endpoint. Tokens are found by it.
	ServerURL string
	// Config is how mcpwrap presents itself to the authorization server.
	Config Config
	// Store keeps tokens and registrations; required.
	Store *Store
	// Browser opens sign-in pages; nil never opens one.
	Browser *Browser
	// AutoLogin lets a server's demand for a sign-in start one in the
	// background, opening the browser, at most once in the Client's life.
	// A sidecar sets it; status and doctor do not.
	AutoLogin bool
	// Transport sends the requests to the authorization server; nil means
	// http.DefaultTransport.
	Transport http.RoundTripper
	// Logger receives diagnostics (never a token); nil discards them.
	Logger *slog.Logger
	// SignedIn, when set, is called after every sign-in this Client ran
	// (in the background or through Login) with how it ended: nil, or
	// the error (which may quote URLs: redact it before it leaves).
	SignedIn func(err error)
	// Refreshed, when set, is called after every refresh of the token
	// this Client sent (not one another process did meanwhile) with how it
	// ended: nil, [ErrNoToken] when the authorization server refused the
	// grant (a new sign-in is needed), or another error (the token kept).
	Refreshed func(err error)
	// LoginTimeout bounds a background sign-in; 0 means
	// [DefaultLoginTimeout].
	LoginTimeout time.Duration
	// LoginGrace is how long a request that started (or found) a sign-in
	// waits for it before it is answered "sign-in required": a browser
	// already signed in to the authorization server comes back at once,
	// and then nobody needs to be told anything. 0 means
	// [DefaultLoginGrace].
	LoginGrace time.Duration

	init    sync.Once
	log     *slog.Logger
	ctx     context.Context // of background sign-ins; canceled by Close
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	changed chan struct{} // a background sign-in ended

	stepUps launchBound // step-up sign-ins opened in the browser

	mu         sync.Mutex
	tok        *Token        // cached; nil until read, or when absent
	absent     bool          // the store was read and holds no token for the server
	autoLogins int           // background sign-ins started (see mayStartLogin)
	loginErr   error         // how the last background sign-in failed, or nil
	loggingIn  bool          // a background sign-in is under way
	loginDone  chan struct{} // closed when the background sign-in ended
	loginOK    bool          // the last background sign-in succeeded
}

func (c *Client) setup() {
	c.init.Do(func() {
		c.log = c.Logger
		if c.log == nil {
			c.log = slog.New(slog.DiscardHandler)
		}
		c.ctx, c.cancel = context.WithCancel(context.Background())
		c.changed = make(chan struct{}, 1)
	})
}

func (c *Client) transport() http.RoundTripper {
	if c.Transport != nil {
		return c.Transport
	}
	return http.DefaultTransport
}

// Close cancels a background sign-in and waits for it.
func (c *Client) Close() {
	c.setup()
	c.cancel()
	c.wg.Wait()
	if c.Browser != nil {
		ctx, cancel := context.WithTimeout(context.Background(), browserExitGrace)
		defer cancel()
		c.Browser.Wait(ctx)
	}
}

// browserExitGrace bounds how long Close waits for a browser command to
// exit (see Browser.Wait).
const browserExitGrace = 2 * time.Second

func (c *Client) setToken(t *Token) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tok, c.absent = t, false
}

// cached returns the token in memory, reading the store the first time,
// or ErrNoToken when the store was read and holds none. Either is kept
// until the store changes, when Watch reloads it, or this Client signs in
// or out: every request of an unauthenticated server read the store (a
// file, or the OS keychain) and decoded it.
func (c *Client) cached(ctx context.Context) (*Token, error) {
	c.mu.Lock()
	t, absent := c.tok, c.absent
	c.mu.Unlock()
	switch {
	case t != nil:
		return t, nil
	case absent:
		return nil, ErrNoToken
	}
	return c.reload(ctx)
}

// reload reads the token from the store into memory.
func (c *Client) reload(ctx context.Context) (*Token, error) {
	t, err := c.Store.Token(ctx, c.ServerURL)
	if errors.Is(err, ErrNoToken) {
		c.mu.Lock()
		c.tok, c.absent = nil, true
		c.mu.Unlock()
		return nil, ErrNoToken
	}
	var keyErr *KeyError
	if errors.As(err, &keyErr) {
		// Fail closed, and say why: no request goes out without the
		// sign-in, and no browser opens for one that could not be stored.
		c.setToken(nil)
		return nil, &resilience.Error{Class: resilience.Denied, Code: resilience.CodeLoginRequired,
			Reason: "sign-in required: the stored sign-ins cannot be opened with $MCPWRAP_STORE_KEY (key " + keyErr.Have + "): " + keyErr.Reason,
			Hint:   "Give every mcpwrap that shares the store the same MCPWRAP_STORE_KEY; if that key is lost, remove the sign-ins from the store and run `mcpwrap login " + c.Name + "`",
			Err:    err}
	}
	if err != nil {
		return nil, err
	}
	c.setToken(&t)
	return &t, nil
}

// valid reports whether t can be used without a refresh.
func valid(t *Token, now time.Time) bool {
	return t.AccessToken != "" && (t.Expiry.IsZero() || t.Expiry.After(now.Add(expirySkew)))
}

// accessToken returns a token to send: the stored one while it is valid,
// else a refreshed one. It returns ErrNoToken when there is none, a
// login-required error when the refresh was refused, and a transient
// error when the authorization server could not be asked.
func (c *Client) accessToken(ctx context.Context) (string, error) {
	t, err := c.cached(ctx)
	if err != nil {
		return "", err
	}
	if valid(t, time.Now()) {
		return t.AccessToken, nil
	}
	t, err = c.refresh(ctx, t.AccessToken)
	if err != nil {
		return "", err
	}
	return t.AccessToken, nil
}

// Status is a server's sign-in state, for status and doctor. It never
// holds a token.
type Status struct {
	// SignedIn is true when a token is stored.
	SignedIn bool
	// Expiry is when the access token expires (zero: unknown); a refresh
	// token may renew it without the user.
	Expiry time.Time
	// Refreshable is true when a refresh token is stored.
	Refreshable bool
	// Issuer is the authorization server that issued the token.
	Issuer string
}

// State reads the server's sign-in state from the store.
func (c *Client) State(ctx context.Context) (Status, error) {
	t, err := c.Store.Token(ctx, c.ServerURL)
	if errors.Is(err, ErrNoToken) {
		return Status{}, nil
	}
	if err != nil {
		return Status{}, err
	}
	return t.status(), nil
}

func (t Token) status() Status {
	return Status{SignedIn: t.AccessToken != "", Expiry: t.Expiry, Refreshable: t.RefreshToken != "", Issuer: t.Issuer}
}

// Describe renders s for people: "signed in (expires in 52m)", "needs
// login".
func (s Status) Describe(now time.Time) string {
	switch {
	case !s.SignedIn:
		return "needs login"
	case s.Expiry.IsZero():
		return "signed in"
	case s.Expiry.After(now):
		return "signed in (expires in " + s.Expiry.Sub(now).Round(time.Second).String() + ")"
	case s.Refreshable:
		return "signed in (token expired; renews on next use)"
	default:
		return "needs login (token expired)"
	}
}

func expiresIn(t Token) string {
	if t.Expiry.IsZero() {
		return "unknown"
	}
	return time.Until(t.Expiry).Round(time.Second).String()
}

// loginRequired decides what the agent is told about a server that wants
// a sign-in, starting the background sign-in if this is the Client's first
// chance to, and returns the denied error to report, and, while a sign-in
// of this Client runs, a channel closed when it ends.
func (c *Client) loginRequired(ch challenge) (<-chan struct{}, error) {
	var done chan struct{}
	c.mu.Lock()
	start := c.mayStartLogin()
	if start {
		// Claimed under the lock, so that concurrent requests start one.
		c.autoLogins++
		c.loggingIn, c.loginDone = true, make(chan struct{})
	}
	running, lastErr := c.loggingIn, c.loginErr
	done = c.loginDone
	c.mu.Unlock()

	login := "run `mcpwrap login " + c.Name + "`"
	var hint string
	switch {
	case start:
		unlock, ok, err := c.Store.tryLock(c.ctx, lockName("login", c.ServerURL))
		if err != nil || !ok {
			c.mu.Lock()
			c.loggingIn = false
			close(c.loginDone)
			c.mu.Unlock()
			running = false
			hint = "A sign-in is under way in another window; finish it in the browser, or " + login
			break
		}
		c.startLogin(ch, unlock, done)
		hint = "A browser window has been opened; or " + login
	case running:
		hint = "A browser window has been opened; or " + login
	case lastErr != nil:
		hint = "The sign-in in the browser did not complete (" + safeReason(lastErr) + "); " + login
	default:
		hint = "To sign in, " + login
	}
	denied := &resilience.Error{Class: resilience.Denied, Code: resilience.CodeLoginRequired,
		Reason: "sign-in required", Hint: hint, Err: ErrNoToken}
	if !running {
		done = nil
	}
	return done, denied
}

// maxAutoLogins bounds the background sign-ins of one process: the first,
// and one more when the server rejects what that sign-in got (it moved to
// another authorization server), never a loop of browser tabs.
const maxAutoLogins = 2

// mayStartLogin reports whether a background sign-in may start now; c.mu
// must be held. The browser opens on the first demand, and again only
// after a sign-in that succeeded was rejected, at most maxAutoLogins times.
func (c *Client) mayStartLogin() bool {
	if !c.AutoLogin || c.Browser == nil || c.Browser.Disabled() || c.loggingIn {
		return false
	}
	return c.autoLogins == 0 || c.autoLogins < maxAutoLogins && c.loginOK
}

func (c *Client) grace() time.Duration {
	if c.LoginGrace > 0 {
		return c.LoginGrace
	}
	return DefaultLoginGrace
}

// startLogin runs a sign-in in the background, holding the login lock
// (released by unlock) so that other processes wait for it instead of
// opening another tab, and closes done when it ends.
func (c *Client) startLogin(ch challenge, unlock func(), done chan struct{}) {
	timeout := c.LoginTimeout
	if timeout <= 0 {
		timeout = DefaultLoginTimeout
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer unlock()
		ctx, cancel := context.WithTimeout(c.ctx, timeout)
		defer cancel()
		c.log.Info("the server needs a sign-in; opening the browser")
		err := c.authorize(ctx, ch, func(ctx context.Context, url string) error {
			return c.Browser.Open(ctx, url)
		}, false)
		if err != nil {
			c.log.Warn("sign-in failed", "error", err)
		}
		c.mu.Lock()
		c.loggingIn, c.loginErr, c.loginOK = false, err, err == nil
		c.mu.Unlock()
		close(done)
		select {
		case c.changed <- struct{}{}:
		default:
		}
	}()
}

// safeReason is err's text for the agent: the go-sdk's errors quote the
// URLs they derived from the server's, which may carry its credential
// (…/mcp?api_key=…), so every URL in it is reduced to its origin. The
// package's own errors carry no token.
func safeReason(err error) string {
	if err == nil {
		return ""
	}
	return redact.Text(err.Error())
}

// Watch calls fn whenever the server's sign-in may have changed: another
// process (or this one) stored or forgot a token, or a background sign-in
// of this Client ended. A store that announces changes (a [Notifier]: the
// PostgreSQL document, the keychain or file) is followed without a query of
// its own: a sign-in anywhere is seen at once, and after a lost connection
// the store is read again once it is back. Any other store is polled for
// its Generation every interval (0 means one second). A read that
// fails keeps the token in memory, and says so in the log. Calls of fn are
// never concurrent; Watch returns when ctx is done, after the goroutine it
// started has.
func (c *Client) Watch(ctx context.Context, interval time.Duration, fn func()) {
	c.setup()
	var notified <-chan struct{} // the store's announcements; nil when polled
	var ticks <-chan time.Time   // the poll; nil when announced
	if n, ok := notifier(c.Store.tokens); ok {
		ch := make(chan struct{}, 1)
		notified = ch
		ctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		defer wg.Wait()
		defer cancel()
		wg.Go(func() {
			n.Watch(ctx, func() {
				select {
				case ch <- struct{}{}:
				default: // a look is pending already
				}
			})
		})
	} else {
		if interval <= 0 {
			interval = time.Second
		}
		t := time.NewTicker(interval)
		defer t.Stop()
		ticks = t.C
	}
	gen := "" // the first tick compares the store with what is in memory
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.changed:
			c.look(ctx)
			fn()
		case <-notified:
			c.recheck(ctx, fn)
		case <-ticks:
			if g := c.Store.Generation(ctx); g != gen {
				gen = g
				c.recheck(ctx, fn)
			}
		}
	}
}

// recheck reads the store again and calls fn if this server's sign-in
// changed (not another's).
func (c *Client) recheck(ctx context.Context, fn func()) {
	before := c.current()
	c.look(ctx)
	if c.current() != before {
		fn()
	}
}

// look reads the store again; when it cannot be read, the token in memory
// stays (a database that went away takes no sign-in with it) and the log
// says why. A document that does not open with the key drops it (reload
// fails closed). The errors quote no token.
func (c *Client) look(ctx context.Context) {
	_, err := c.reload(ctx)
	switch {
	case err == nil, errors.Is(err, ErrNoToken), ctx.Err() != nil:
	case errors.Is(err, ErrWrongKey):
		c.log.Warn("the stored sign-ins cannot be opened; the server needs a sign-in", "error", err)
	default:
		c.log.Warn("cannot read the sign-in; keeping the one in memory", "error", err)
	}
}

// current returns the access token in memory, "" when there is none. It
// is compared, never shown.
func (c *Client) current() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tok == nil {
		return ""
	}
	return c.tok.AccessToken
}
