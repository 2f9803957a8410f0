package httpfront

import (
	"log/slog"
	"net"
	"net/http"
	"time"

	"golang.org/x/net/netutil"
)

// Defaults for the zero fields of [ConnLimits].
const (
	// DefaultHeaderTimeout bounds the reading of a request's headers.
	DefaultHeaderTimeout = 10 * time.Second
	// DefaultBodyTimeout bounds the reading of a request's body, from the
	// end of its headers. Generous: a body of the default 64 MiB limit
	// flowing at 1.2 MB/s still makes it.
	DefaultBodyTimeout = time.Minute
	// DefaultMaxConns bounds the open connections: room for every session
	// of DefaultMaxSessions to hold a GET stream and a POST at once.
	DefaultMaxConns = 2*DefaultMaxSessions + 56
)

// keepAliveTimeout closes a keep-alive connection idle this long, so that
// idle connections give their slots back. It concerns connections, not
// sessions (see [Server.IdleTimeout]).
const keepAliveTimeout = 2 * time.Minute

// ConnLimits bound what slow or hostile HTTP clients can hold: a client
// that trickles its headers or its body is cut off after HeaderTimeout or
// BodyTimeout, and at most MaxConns connections are open at once (the
// next ones wait to be accepted), so that any number of trickling clients
// holds a bounded number of slots, each for a bounded time, and a
// legitimate request gets a slot once one is freed.
//
// There is deliberately no write timeout and no bound on a whole request:
// SSE answers and GET streams are long-lived.
//
// The zero value uses the defaults.
type ConnLimits struct {
	// HeaderTimeout bounds the reading of a request's headers; 0 means
	// [DefaultHeaderTimeout].
	HeaderTimeout time.Duration
	// BodyTimeout bounds the reading of a request's whole body, counted
	// from the end of its headers; 0 means [DefaultBodyTimeout]. A bound
	// on the whole body rather than on each read: a body that keeps
	// trickling a byte at a time must not hold its connection forever.
	BodyTimeout time.Duration
	// MaxConns bounds the connections open at once; 0 means
	// [DefaultMaxConns].
	MaxConns int
}

func (l ConnLimits) headerTimeout() time.Duration {
	if l.HeaderTimeout > 0 {
		return l.HeaderTimeout
	}
	return DefaultHeaderTimeout
}

func (l ConnLimits) bodyTimeout() time.Duration {
	if l.BodyTimeout > 0 {
		return l.BodyTimeout
	}
	return DefaultBodyTimeout
}

func (l ConnLimits) maxConns() int {
	if l.MaxConns > 0 {
		return l.MaxConns
	}
	return DefaultMaxConns
}

// Listener returns ln limited to l.MaxConns connections open at once: past
// the limit, Accept waits until a connection closes, and the new ones wait
// in the kernel's backlog. Each TCP connection it accepts queues at most
// maxUnsent bytes not yet sent, which [Server.StallTimeout] needs.
func (l ConnLimits) Listener(ln net.Listener) net.Listener {
	return netutil.LimitListener(unsentListener{ln}, l.maxConns())
}

// maxUnsent bounds the bytes a connection's socket holds that it has not
// sent yet. Without a bound, a socket's send buffer grows to MiBs, and a
// write blocked on a full one is woken only once a third of it drained: a
// client reading steadily, but slower than that third per StallTimeout,
// would be taken for one that stopped. With it, a blocked write sees the
// client's progress in steps of a few KiB. What is in flight is not
// bounded by it, so a fast client is not slowed.
const maxUnsent = 16 << 10

// unsentListener applies maxUnsent to the connections it accepts.
type unsentListener struct{ net.Listener }

func (l unsentListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		// Best effort: without it, a slow client may be cut off sooner.
		_ = limitUnsent(c)
	}
	return c, err
}

// NewHTTPServer returns an http.Server that serves h within l's timeouts.
// Serve it on a listener from [ConnLimits.Listener]. logger receives the
// server's own errors at warn.
func (l ConnLimits) NewHTTPServer(h http.Handler, logger *slog.Logger) *http.Server {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &http.Server{
		Handler:           l.bodyDeadline(h),
		ReadHeaderTimeout: l.headerTimeout(),
		IdleTimeout:       keepAliveTimeout,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
}

// bodyDeadline sets a read deadline of BodyTimeout on the connection of
// each request that has a body, before h runs, so that even a body h never
// reads (a refused request's, which the server discards afterwards) cannot
// hold the connection. net/http lifts the deadline itself once the body is
// read to its end, when it starts the background read that notices a
// client leaving: a response stream after the body is not cut.
func (l ConnLimits) bodyDeadline(h http.Handler) http.Handler {
	timeout := l.bodyTimeout()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil && r.Body != http.NoBody {
			// An error means the connection cannot take deadlines (not
			// one of net/http's own): nothing to bound.
			_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(timeout))
		}
		h.ServeHTTP(w, r)
	})
}
