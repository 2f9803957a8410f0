package upstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"mime"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/mcpwrap/mcpwrap/internal/era"
	"github.com/mcpwrap/mcpwrap/internal/framing"
	"github.com/mcpwrap/mcpwrap/internal/jsonrpc"
	"github.com/mcpwrap/mcpwrap/internal/paramheader"
	"github.com/mcpwrap/mcpwrap/internal/redact"
	"github.com/mcpwrap/mcpwrap/middleware"
	"github.com/mcpwrap/mcpwrap/resilience"
)

// Remote configures a connection to a remote MCP server.
type Remote struct {
	// URL is the server's MCP endpoint: a streamable HTTP endpoint (often
	// ending in /mcp) or a legacy HTTP+SSE endpoint (often /sse).
	URL string
	// Header is sent with every request, values already expanded (see
	// [ExpandHeaders]). Values are treated as secrets and never logged.
	// Protocol headers (Content-Type, Accept, Mcp-*) are set by the
	// connection and override entries here.
	Header http.Header
	// HTTPClient sends the requests. Nil means a client shared by every
	// connection made so, with connect and TLS handshake timeouts but no
	// overall timeout, because response streams live as long as the
	// session, which refuses redirects to another origin so that Header
	// never leaves the configured server, and whose one pool keeps an idle
	// connection for every POST a RemoteConn may have in flight: the
	// sessions of a --listen front, each a RemoteConn, and a RemoteConn
	// after a reconnect, reuse the connections the others made. A custom
	// client (for example with a Transport whose DialContext is a fake) is
	// used as is.
	HTTPClient *http.Client
	// WrapTransport, when set, wraps the client's transport, for example to
	// add an OAuth access token to every request. Errors its RoundTripper
	// returns reach the caller like network errors, so a typed error (a
	// [resilience.Error]) keeps its classification.
	WrapTransport func(http.RoundTripper) http.RoundTripper
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
	// MaxMessageBytes bounds one message from the server. Zero means
	// [middleware.DefaultMaxMessageBytes]. A larger message is dropped and
	// reported by ReadMessage with a [*middleware.MessageTooLargeError].
	MaxMessageBytes int
}

// Transport names, as returned by [RemoteConn.Transport].
const (
	TransportStreamableHTTP = "streamable-http"
	TransportSSE            = "sse"
)

var (
	// ErrRemoteClosed is returned by a [RemoteConn]'s methods after Close.
	// It matches net.ErrClosed.
	ErrRemoteClosed = fmt.Errorf("remote connection closed: %w", net.ErrClosed)
	// ErrRemoteProtocol is wrapped by errors about a server that breaks the
	// MCP HTTP transport rules, such as a legacy SSE endpoint event naming
	// another origin. [resilience.Classify] makes them permanent.
	ErrRemoteProtocol = errors.New("remote server broke the MCP HTTP transport")
)

// Tuning of a RemoteConn. Not configurable: the defaults suit every server
// seen so far, and the session-level timeouts belong to the caller.
const (
	// maxInflightPosts bounds the POSTs whose response is still being read.
	// WriteMessage blocks beyond it, which is how backpressure reaches the
	// client.
	maxInflightPosts = 64
	// maxErrorBody bounds how much of an error response is read to look for
	// a JSON-RPC answer in it.
	maxErrorBody = 64 << 10
	// maxStreamFailures is how many times in a row a stream may fail to
	// (re)connect before the connection is given up.
	maxStreamFailures = 5
	// quietStreamLife: a standalone stream that ends sooner without any
	// progress counts towards the reconnect backoff. A stream idle for
	// longer (a proxy's idle timeout) is reopened at once.
	quietStreamLife = 5 * time.Second
	// closeDeleteTimeout bounds the DELETE that ends the session on Close.
	closeDeleteTimeout = 3 * time.Second
	// maxIdleConns is how many idle connections the default client keeps
	// per server, and in all: a RemoteConn's POSTs in flight and as many
	// again for the other sessions' (the standalone streams are never idle).
	maxIdleConns = 2 * maxInflightPosts
	// dialTimeout and tlsTimeout are the default client's connect bounds.
	dialTimeout = 10 * time.Second
	tlsTimeout  = 10 * time.Second
)

// RemoteConn is a connection to a remote MCP server over streamable HTTP,
// or over the legacy HTTP+SSE transport when the server answers the first
// POST with a 4xx other than 401, 403, 407, 408 or 429. It satisfies
// middleware.Conn.
//
// Messages pass byte for byte in both directions; a message from the
// server spread over several lines is compacted onto one, since the client
// side frames messages by newlines. The connection adds what a raw
// transport lacks without an MCP client on top: it learns the negotiated
// protocol version from the initialize exchange passing through and sends
// it as Mcp-Protocol-Version on every later request, keeps the session id,
// opens the standalone GET stream once notifications/initialized is sent,
// resumes a response stream the server cut (Last-Event-ID), and deletes the
// session on Close.
//
// ReadMessage must be called from one goroutine at a time; WriteMessage and
// Close are safe for concurrent use with everything.
type RemoteConn struct {
	endpoint *url.URL
	logURL   string // the endpoint's origin: see redact.URL
	header   http.Header
	client   *http.Client
	log      *slog.Logger
	max      int
	delay    func(failures int) time.Duration // between stream reconnects

	ctx    context.Context // parent of every request; canceled by Close
	cancel context.CancelFunc

	incoming  chan inbound  // unbuffered: a reader that stops stalls the streams
	slots     chan struct{} // one per POST whose response is being read
	closed    chan struct{}
	closeOnce sync.Once
	failed    chan struct{}
	failOnce  sync.Once
	failErr   error

	// sending serialises sends up to the point where the server has the
	// message, so the server receives messages in the client's order: a
	// send holds its one slot. A channel, so that a writer waiting for it
	// can give up when its context is done.
	sending chan struct{}

	mu        sync.Mutex
	wg        sync.WaitGroup // background goroutines; Add only under mu
	closing   bool
	transport string // "" until the first contact succeeded
	postURL   *url.URL
	sessionID string
	version   string // negotiated by initialize
	initID    string // idKey of an initialize request awaiting its result
	// unanswered holds the idKeys of the client's requests no stream has
	// answered yet: a request gets exactly one answer, even when the server
	// sends it on another stream than the one that ends without it.
	unanswered map[string]struct{}
	listening  bool // the standalone GET stream was started
	// toolLists holds the idKeys of the tools/list requests awaiting a
	// result, and paramHeaders the tool-designated headers learnt from
	// those results, by tool name (see remote_params.go).
	toolLists    map[string]struct{}
	paramHeaders map[string][]paramheader.Binding
	// metaVersion is the _meta protocol version of the client's last
	// 2026-07-28 request: the version of its other messages too.
	metaVersion string
}

// inbound is one item for ReadMessage: a message or a per-message error.
type inbound struct {
	msg []byte
	err error
}

// DialRemote prepares a connection to the server at r.URL. It does not
// touch the network: MCP's first contact is the client's first message
// (normally initialize), and how the server answers it decides the
// transport. So the first WriteMessage makes the contact and returns its
// failure, which ReadMessage returns too:
//   - a non-2xx answer is a [*resilience.HTTPStatusError] (for 404/405 and
//     other fallback statuses, after the legacy SSE attempt also failed);
//   - a network failure (*net.DNSError, ECONNREFUSED, a TLS error) is
//     wrapped unchanged, so [resilience.Classify] sees its type.
//
// ctx is checked, and its values (not its cancellation) are kept for the
// connection's requests, which end when Close is called. An invalid URL is
// an error wrapping [resilience.ErrConfig].
func DialRemote(ctx context.Context, r Remote) (*RemoteConn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	u, err := ParseURL(r.URL)
	if err != nil {
		return nil, err
	}
	log := r.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	client := r.HTTPClient
	if client == nil {
		client = sharedHTTPClient()
	}
	if r.WrapTransport != nil {
		wrapped := *client
		wrapped.Transport = r.WrapTransport(client.Transport)
		client = &wrapped
	}
	c := &RemoteConn{
		endpoint: u,
		logURL:   redact.URL(u.String()),
		header:   r.Header.Clone(),
		client:   client,
		log:      log,
		max:      r.MaxMessageBytes,
		delay:    reconnectDelay,
		incoming: make(chan inbound),
		slots:    make(chan struct{}, maxInflightPosts),
		sending:  make(chan struct{}, 1),
		closed:   make(chan struct{}),
		failed:   make(chan struct{}),
		postURL:  u,

		unanswered: make(map[string]struct{}),
		toolLists:  make(map[string]struct{}),

		paramHeaders: make(map[string][]paramheader.Binding),
	}
	if c.max <= 0 {
		c.max = middleware.DefaultMaxMessageBytes
	}
	c.ctx, c.cancel = context.WithCancel(context.WithoutCancel(ctx))
	return c, nil
}

// ParseURL parses a remote server's MCP endpoint, as --url gives it once
// its ${VAR} references are expanded: an http:// or https:// URL with a
// host. Its error wraps [resilience.ErrConfig] and says what is wrong with
// the URL without repeating it (it may carry credentials), nor spelling one
// (the classifier reduces whatever reads as a URL to its origin).
func ParseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: --url: not a URL; want an http or https URL with a host", resilience.ErrConfig)
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("%w: --url: scheme %q: want an http or https URL", resilience.ErrConfig, u.Scheme)
	case u.Host == "":
		return nil, fmt.Errorf("%w: --url: no host; want an http or https URL with a host", resilience.ErrConfig)
	}
	return u, nil
}

// sharedHTTPClient is the client every Remote without one shares.
var sharedHTTPClient = sync.OnceValue(newHTTPClient)

// newHTTPClient returns the client a Remote without one gets. Its pool
// keeps maxIdleConns connections per server, as many as one RemoteConn
// has POSTs in flight, and the net/http default of 2 closed most of them
// after each burst.
func newHTTPClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = (&net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}).DialContext
	t.TLSHandshakeTimeout = tlsTimeout
	t.MaxIdleConns = maxIdleConns
	t.MaxIdleConnsPerHost = maxIdleConns
	return &http.Client{Transport: t, CheckRedirect: sameOriginRedirects}
}

// sameOriginRedirects follows at most 10 redirects, all within the origin
// of the first request: the configured headers carry credentials.
func sameOriginRedirects(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	if first := via[0].URL; req.URL.Scheme != first.Scheme || req.URL.Host != first.Host {
		return fmt.Errorf("%w: refusing a redirect to another origin", ErrRemoteProtocol)
	}
	return nil
}

// Transport reports the transport in use: [TransportStreamableHTTP],
// [TransportSSE], or "" before the first contact succeeded.
func (c *RemoteConn) Transport() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.transport
}

// ProtocolVersion reports the protocol version sent in Mcp-Protocol-Version:
// the one negotiated by initialize, or "" before that.
func (c *RemoteConn) ProtocolVersion() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.version
}

// ReadMessage returns the next message from the server, without framing.
// A [*middleware.MessageTooLargeError] reports one dropped message, and a
// [*middleware.RequestFailedError] a request whose answer the transport
// lost (its Err typed, as the first contact's failure is below); any other
// error ends the connection: the first contact's failure, a lost
// session (wrapping mcp.ErrSessionMissing), a stream that could not be
// kept, or [ErrRemoteClosed].
func (c *RemoteConn) ReadMessage() ([]byte, error) {
	select {
	case in := <-c.incoming:
		return in.msg, in.err
	default:
	}
	select {
	case in := <-c.incoming:
		return in.msg, in.err
	case <-c.failed:
		return nil, c.failErr
	case <-c.closed:
		return nil, ErrRemoteClosed
	}
}

// WriteMessage sends one message. The first call makes first contact and
// returns its failure (see [DialRemote]). Later calls return once the server
// has the message (its request was written, or for a notification or
// response, accepted); answers arrive through ReadMessage, and a request
// the transport cannot deliver is answered there with a JSON-RPC error.
// WriteMessage blocks while 64 responses are still being read.
//
// When ctx is done before the server has the message, WriteMessage gives
// up: it cancels the HTTP request and returns ctx.Err(), and the
// connection stays usable. Nothing is delivered through ReadMessage for a
// message given up (though a server that read it in the meantime may still
// answer it on another stream).
func (c *RemoteConn) WriteMessage(ctx context.Context, msg []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	out := newOutbound(msg)
	out.header = RequestHeader(ctx)
	select {
	case c.sending <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	case <-c.closed:
		return ErrRemoteClosed
	}
	defer func() { <-c.sending }()
	if err := c.usable(); err != nil {
		return err
	}
	c.noteOutgoing(out)
	switch c.Transport() {
	case "":
		return c.firstContact(ctx, out)
	case TransportSSE:
		return c.postLegacy(ctx, out)
	default:
		return c.postStreamable(ctx, out)
	}
}

// gaveUp forgets what noteOutgoing recorded of out, a message whose writer
// gave up on it as ctx ended, and returns ctx's error.
func (c *RemoteConn) gaveUp(ctx context.Context, out *outbound) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range out.calls {
		key := idKey(id)
		delete(c.unanswered, key)
		delete(c.toolLists, key)
		if key == c.initID {
			c.initID = ""
		}
	}
	return ctx.Err()
}

// A waited is the context, ctx, of an HTTP request that a WriteMessage
// waits for: it is cancelled when the writer's context is done before the
// wait ends, when the connection closes, or by end, which the request's
// owner calls once done with its response.
type waited struct {
	ctx    context.Context
	cancel context.CancelFunc
	stop   func() bool
}

// waitFor returns a waited bound to writer, the writer's context. It
// registers a context.AfterFunc: it is for the first contact and the
// legacy transport, not for the streamable HTTP POST of every message.
func (c *RemoteConn) waitFor(writer context.Context) waited {
	ctx, cancel := context.WithCancel(c.ctx)
	return waited{ctx: ctx, cancel: cancel, stop: context.AfterFunc(writer, cancel)}
}

// waitEnded unbinds w from the writer's context, and reports false when
// that context ended the wait first: the request was cancelled. It is
// called once, when the wait ends.
func (w waited) waitEnded() bool { return w.stop() }

// end cancels the request.
func (w waited) end() {
	w.stop()
	w.cancel()
}

// Close ends the session (DELETE, for a streamable HTTP session with an
// id), cancels every request and waits for the background goroutines. It
// unblocks ReadMessage and WriteMessage, and may be called more than once.
// The DELETE is best effort: its failure is logged, not returned.
func (c *RemoteConn) Close() error {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.closing = true
		c.mu.Unlock()
		close(c.closed)
		c.endSession()
		c.cancel()
		c.wg.Wait()
	})
	return nil
}

// usable returns the error that stops any further send, or nil.
func (c *RemoteConn) usable() error {
	select {
	case <-c.closed:
		return ErrRemoteClosed
	case <-c.failed:
		return c.failErr
	default:
		return nil
	}
}

// fail ends the connection: ReadMessage and WriteMessage return err from
// now on. The first failure wins.
func (c *RemoteConn) fail(err error) {
	select {
	case <-c.closed:
		return // a failure caused by Close is no news
	default:
	}
	c.failOnce.Do(func() {
		c.failErr = err
		close(c.failed)
		// Debug only: the failure reaches the caller through ReadMessage
		// (and WriteMessage), which logs it with its classification.
		c.log.Debug("remote connection failed", "url", c.logURL, "error", err)
	})
}

// goAsync runs f in a goroutine that Close waits for. It reports false, and
// does not run f, once Close has begun.
func (c *RemoteConn) goAsync(f func()) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing {
		return false
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		f()
	}()
	return true
}

// deliverRaw normalises a message from the server and delivers it. A value
// that is not JSON is logged and dropped: nothing can route it. pending, when
// not nil, loses the requests the message answers.
func (c *RemoteConn) deliverRaw(raw []byte, pending pendingCalls) bool {
	msg, err := normalize(raw)
	if err != nil {
		c.log.Warn("dropping a message from the remote server that is not JSON", "url", c.logURL, "bytes", len(raw))
		return true
	}
	c.settle(msg, pending)
	return c.deliver(msg, nil)
}

// deliverTooLong reports a message dropped for its size. Its head may name
// the request it answered, which the relay then answers with an error.
func (c *RemoteConn) deliverTooLong(e *framing.LineTooLongError, pending pendingCalls) bool {
	c.settle(e.Head, pending)
	if e.ID == nil && e.Method == "" {
		// Only the head of a body or event was kept: its id and method are
		// read there, where they usually come first.
		env, _ := framing.Peek(e.Head)
		e.ID, e.Method = env.ID, env.Method
	}
	return c.deliver(nil, tooLarge(e))
}

// deliver hands one message, or a per-message error, to ReadMessage. It
// blocks until it is taken and reports false when the connection ended
// first. msg must be owned by the caller: it is handed over as is.
func (c *RemoteConn) deliver(msg []byte, err error) bool {
	select {
	case c.incoming <- inbound{msg: msg, err: err}:
		return true
	case <-c.failed:
		return false
	case <-c.closed:
		return false
	}
}

// settle records the requests msg answers, so that no stream answers them
// again, and learns the negotiated protocol version from the result of a
// pending initialize request, before the client can send anything else.
func (c *RemoteConn) settle(msg []byte, pending pendingCalls) {
	ids := answeredIDs(msg)
	if len(ids) == 0 {
		return
	}
	if pending != nil {
		pending.answered(msg)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		key := idKey(id)
		delete(c.unanswered, key)
		if _, ok := c.toolLists[key]; ok {
			delete(c.toolLists, key)
			c.mu.Unlock()
			c.learnTools(msg)
			c.mu.Lock()
		}
		if key != c.initID {
			continue
		}
		c.initID = ""
		if env, err := framing.Peek(msg); err == nil && env.Kind == framing.Response {
			if v := initializeVersion(env.Result); v != "" {
				c.version = v
				c.log.Debug("protocol version negotiated", "url", c.logURL, "protocol_version", v)
			}
		}
	}
}

// answerCalls answers the requests in pending that no stream has answered
// with a JSON-RPC error saying why: the server broke the transport's rules
// (an answer of an unexpected content type, or one that answers nothing).
func (c *RemoteConn) answerCalls(pending pendingCalls, why string) {
	c.settleCalls(pending, func(id []byte) inbound {
		return inbound{msg: jsonrpc.ErrorResponse(id, jsonrpc.CodeInternalError, why, nil)}
	})
}

// failCalls reports the requests in pending that no stream has answered as
// failed with err, the transport's failure (a response cut mid-stream, a
// status with no JSON-RPC answer), through ReadMessage as a
// [*middleware.RequestFailedError]: the relay classifies it by its type,
// where a JSON-RPC error would stand for a server that spoke and refused.
func (c *RemoteConn) failCalls(pending pendingCalls, err error) {
	c.settleCalls(pending, func(id []byte) inbound {
		return inbound{err: &middleware.RequestFailedError{ID: bytes.Clone(id), Err: err}}
	})
}

// settleCalls delivers what outcome makes of each request in pending that
// no stream has answered, and forgets them.
func (c *RemoteConn) settleCalls(pending pendingCalls, outcome func(id []byte) inbound) {
	for key, id := range pending {
		delete(pending, key)
		c.mu.Lock()
		_, open := c.unanswered[key]
		delete(c.unanswered, key)
		c.mu.Unlock()
		if !open {
			continue
		}
		if in := outcome(id); !c.deliver(in.msg, in.err) {
			return
		}
	}
}

// noteOutgoing records the requests of a client message as unanswered, and
// an initialize request, whose result carries the negotiated version.
func (c *RemoteConn) noteOutgoing(out *outbound) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range out.calls {
		c.unanswered[idKey(id)] = struct{}{}
	}
	if out.kind == framing.Request && out.method == "initialize" {
		c.initID = idKey(out.calls[0])
	}
	if out.kind == framing.Request && out.method == "tools/list" {
		c.toolLists[idKey(out.calls[0])] = struct{}{}
	}
}

// newRequest builds a request to u with the configured headers and the
// protocol headers of the session, bound to ctx (c.ctx or one derived from
// it). out is the message POSTed, or nil.
func (c *RemoteConn) newRequest(ctx context.Context, method string, u *url.URL, out *outbound) (*http.Request, error) {
	var body io.Reader
	if out != nil {
		body = bytes.NewReader(out.body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, err
	}
	for name, values := range c.header {
		req.Header[name] = values
	}
	c.mu.Lock()
	sessionID, version := c.sessionID, c.version
	if out != nil && out.metaVersion != "" {
		c.metaVersion = out.metaVersion
	} else if version == "" {
		// A 2026-07-28 notification or response carries no version of
		// its own: it goes with that of the client's requests.
		version = c.metaVersion
	}
	var bindings []paramheader.Binding
	if out != nil && out.kind == framing.Request && out.method == "tools/call" {
		bindings = c.paramHeaders[out.name]
	}
	c.mu.Unlock()
	if out != nil {
		for name, values := range out.header {
			req.Header[name] = values
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		switch {
		case out.metaVersion != "":
			version = out.metaVersion
		case out.kind == framing.Request && out.method == "initialize":
			// The body carries the version being negotiated; a stale header
			// (say, from a server/discover attempt) would contradict it.
			version = ""
		}
	} else {
		req.Header.Set("Accept", "text/event-stream")
	}
	if sessionID != "" {
		req.Header.Set("Mcp-Session-Id", sessionID)
	}
	if version != "" {
		req.Header.Set("Mcp-Protocol-Version", version)
	}
	if out != nil && out.method != "" && version >= era.StatelessVersion {
		req.Header.Set("Mcp-Method", out.method) // requests and notifications alike
		if out.name != "" && validHeaderValue(out.name) {
			req.Header.Set("Mcp-Name", out.name)
		}
		for name, value := range paramheader.Headers(bindings, out.params) {
			req.Header.Set(name, value)
		}
	}
	return req, nil
}

// do sends req and returns its response, or the transport's error with the
// URL in it stripped of credentials and query.
func (c *RemoteConn) do(req *http.Request) (*http.Response, error) {
	resp, err := c.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			ue.URL = redact.URL(ue.URL)
		}
		return nil, err
	}
	return resp, nil
}

// wait waits for d, or reports false when the connection ends first.
func (c *RemoteConn) wait(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.closed:
		return false
	case <-c.failed:
		return false
	}
}

// reconnectDelay is the pause before reconnecting a stream after failures
// failed attempts in a row: 500 ms doubling up to 10 s, plus up to 50%
// jitter so that many sidecars do not reconnect in step.
func reconnectDelay(failures int) time.Duration {
	d := 500 * time.Millisecond << min(max(failures, 0), 5)
	d = min(d, 10*time.Second)
	return d + rand.N(d/2+1)
}

// mediaType returns the lower-case media type of resp, without parameters.
func mediaType(resp *http.Response) string {
	mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil {
		return ""
	}
	return mt
}

// success reports a 2xx status.
func success(resp *http.Response) bool { return resp.StatusCode >= 200 && resp.StatusCode < 300 }

// readErrorBody reads the start of an error response and returns a status
// error holding it, plus the bytes read for a look at a JSON-RPC answer.
func readErrorBody(resp *http.Response) (*resilience.HTTPStatusError, []byte) {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	copied := *resp
	copied.Body = io.NopCloser(bytes.NewReader(body))
	return resilience.NewHTTPStatusError(&copied), body
}

// answersCall reports whether body is a JSON-RPC answer to one of out's
// requests: a server speaking MCP in an error response, which the client
// must see rather than a transport failure.
func answersCall(body []byte, out *outbound) bool {
	if len(out.calls) == 0 {
		return false
	}
	msg, err := normalize(body)
	if err != nil {
		return false
	}
	return newPendingCalls(out.calls).answered(msg)
}
