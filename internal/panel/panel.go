// Package panel is mcpwrap's control panel (`mcpwrap ui`): a local web page
// where the person at the keyboard sees every server, approves changed tool
// definitions, enables and disables tools, signs in to remote servers and
// installs mcpwrap into client configs. It works over the same APIs as the
// CLI (toolscli.Tools, runstatus, the client config plans, the sign-in
// flow), so the page and the commands cannot disagree.
//
// Only whoever ran `mcpwrap ui` can use it: the URL it opens carries a
// per-launch key, exchanged for an HttpOnly, SameSite=Strict cookie and
// removed from the address bar; Host and Origin are checked as httpfront
// checks them (internal/hostcheck); every change is a POST from the panel's
// own origin with a CSRF token. Pages are server-rendered with
// html/template, which escapes every string a server sent; the script and
// style are embedded, and a strict Content-Security-Policy allows nothing
// else. See docs/DESIGN.md, Control panel.
package panel

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/singleflight"

	"github.com/mcpwrap/mcpwrap/internal/httpfront"
	"github.com/mcpwrap/mcpwrap/internal/state"
	"github.com/mcpwrap/mcpwrap/internal/toolscli"
)

// DefaultInterval is how often the panel looks for changes while a page
// is open.
const DefaultInterval = time.Second

// ErrServerClosed is returned by [Panel.Serve] after [Panel.Shutdown].
var ErrServerClosed = http.ErrServerClosed

// Panel is the control panel's HTTP server. Set its fields, then call
// Serve once; Shutdown stops it. A Panel must not be copied after first
// use.
type Panel struct {
	// Tools returns the tools of the current config file and the state
	// store; it is called for every read, so a changed config file is seen.
	Tools func(ctx context.Context) (*toolscli.Tools, error)
	// Store is the state store, watched so that a sidecar's change shows
	// at once; nil leaves changes to the poller.
	Store state.Store
	// StatusDir is the running sidecars' status directory
	// (runstatus.Dir); "" shows none.
	StatusDir string
	// Alive tells whether a sidecar's process lives (nil: runstatus.Alive).
	Alive func(pid int) bool
	// Clients reads and changes the client config files; nil hides them.
	Clients Clients
	// SignIns runs the sign-ins of remote servers; nil hides them.
	SignIns SignIns
	// Limits bound slow or hostile HTTP clients, as httpfront's.
	Limits httpfront.ConnLimits
	// Interval is how often changes are looked for while a page is open;
	// 0 means [DefaultInterval].
	Interval time.Duration
	// Now returns the current time (nil: time.Now).
	Now func() time.Time
	// Logger receives refusals and failures; nil discards.
	Logger *slog.Logger

	once    sync.Once
	secrets secrets
	log     *slog.Logger
	reads   singleflight.Group
	events  broker
	logins  sync.WaitGroup // sign-ins started from the page

	mu       sync.Mutex
	srv      *http.Server
	stop     context.CancelFunc
	closed   bool
	signings map[string]string // server → the sign-in URL of a sign-in under way
	flash    string            // what the last change did, shown once
	done     chan struct{}     // closed by Shutdown; made lazily
}

func (p *Panel) init() {
	p.secrets = newSecrets()
	p.log = p.Logger
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	p.signings = map[string]string{}
}

func (p *Panel) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

func (p *Panel) interval() time.Duration {
	if p.Interval > 0 {
		return p.Interval
	}
	return DefaultInterval
}

// LaunchURL is the URL that opens the panel served at addr (the listener's
// address) in a browser: it carries the launch key.
func (p *Panel) LaunchURL(addr net.Addr) string {
	p.once.Do(p.init)
	return "http://" + addr.String() + "/open?" + keyParam + "=" + p.secrets.key
}

// Serve serves the panel on ln until Shutdown, with the poller that pushes
// changes to open pages, and returns [ErrServerClosed] then; any other
// error is a failure. It closes ln.
func (p *Panel) Serve(ln net.Listener) error {
	p.once.Do(p.init)
	ctx, cancel := context.WithCancel(context.Background())
	srv := p.Limits.NewHTTPServer(p, p.log)
	srv.BaseContext = func(net.Listener) context.Context { return ctx }
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		cancel()
		ln.Close()
		return ErrServerClosed
	}
	p.srv, p.stop = srv, cancel
	p.mu.Unlock()

	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		err := srv.Serve(p.Limits.Listener(ln))
		cancel() // the poller and the store watcher end with the server
		return err
	})
	g.Go(func() error { p.poll(gctx); return nil })
	g.Go(func() error { p.watchStore(gctx); return nil })
	err := g.Wait()
	p.logins.Wait()
	return err
}

// Shutdown stops the panel as http.Server.Shutdown does: no new
// connection, open event streams ended, then it waits for the requests
// under way or ctx. Sign-ins started from the page are cancelled.
func (p *Panel) Shutdown(ctx context.Context) error {
	p.mu.Lock()
	if !p.closed && p.done != nil {
		close(p.done)
	}
	p.closed = true
	srv, stop := p.srv, p.stop
	p.mu.Unlock()
	if srv == nil {
		return nil
	}
	stop() // ends the event streams, the poller and the sign-ins
	return srv.Shutdown(ctx)
}

// snapshot returns the current model; concurrent callers (several tabs,
// the poller) share one read.
func (p *Panel) snapshot(ctx context.Context) *model {
	v, _, _ := p.reads.Do("model", func() (any, error) {
		return p.build(context.WithoutCancel(ctx)), nil
	})
	return v.(*model)
}

// setFlash records what a change did, shown on the next page.
func (p *Panel) setFlash(msg string) {
	p.mu.Lock()
	p.flash = msg
	p.mu.Unlock()
}

// takeFlash returns and forgets it.
func (p *Panel) takeFlash() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	msg := p.flash
	p.flash = ""
	return msg
}

var errUnknownPage = errors.New("no such page")
