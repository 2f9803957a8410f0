// Package telemetry sees what a [middleware.Session] does from its edges:
// it decorates the Session's client Conn and its Dialer's upstream Conns
// (as the go-sdk's LoggingTransport decorates a Connection), pairs each
// client request with its answer by id, and reports every request that
// ends to the audit log, the metrics and the traces configured. The
// Session knows nothing of it, and no OpenTelemetry type reaches
// `middleware`.
//
// A request the Session relays is seen four times: read from the client
// (the server span starts), written to the upstream (the client span
// starts, and the trace context is put in its params._meta), its answer
// read from the upstream (the client span ends) and written to the client
// (the server span ends). A request mcpwrap answers itself (a locked tool,
// an upstream not ready, the discovery tool) is never written upstream;
// its answer's _meta carries the status mcpwrap answered with.
//
// With nothing configured, cmd does not decorate: the Session's Conns are
// the undecorated ones and cost nothing more.
package telemetry

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpwrap/mcpwrap/internal/audit"
	"github.com/mcpwrap/mcpwrap/internal/framing"
	"github.com/mcpwrap/mcpwrap/middleware"
	"github.com/mcpwrap/mcpwrap/resilience"
)

// maxCalls bounds the requests an Observer follows at once; past it a
// request is not observed (the Session's own bound, MaxInFlight, is lower).
const maxCalls = 1 << 14

// A call is one client request from its read to its answer.
type call struct {
	method   string
	id       string // raw JSON
	target   string // the tool's or prompt's name, or the resource's URI
	argsHash string
	meta     traceContext // the trace context in params._meta
	version  string       // the protocol version in params._meta (2026-07-28 requests)
	start    time.Time

	// Written to the upstream: when, and the span then started (traces).
	forwarded bool
	upStart   time.Time
	upEnd     time.Time
	upResult  result     // the upstream's answer, when upEnd is set
	up        trace.Span // nil when not traced

	// How it ended: written once, by the goroutine that took the call
	// out of the map.
	result
	end time.Time

	// When traced: the server span, its context, the spans' name and
	// attributes (see appendRequestAttrs), kept in attrRoom.
	server   trace.Span
	ctx      context.Context
	name     string
	attrs    []attribute.KeyValue
	attrRoom [9]attribute.KeyValue
}

// A result is how an answer ended a request.
type result struct {
	outcome string // ok, tool_error, error
	code    int    // the JSON-RPC error code, with outcome error
	status  string // the status of mcpwrap's answer (_meta.status)
	class   string // its class (_meta.class)
}

// An Observer follows one Session's requests. Make one per Session with
// its parts set, then decorate the Session's Client with [Observer.Client]
// and its Dial with [Observer.Dial]. It is safe for concurrent use.
type Observer struct {
	// Server is the server's --name.
	Server string
	// Transport is the client side's network.transport: "pipe" for
	// stdio, "tcp" for --listen.
	Transport string
	// HTTPUpstream says the upstream is an HTTP server (--url): a traced
	// request to it carries the trace context as W3C headers too.
	HTTPUpstream bool
	// Audit, Metrics and Traces receive what is seen; each nil is off.
	Audit   *audit.Log
	Metrics *Metrics
	Traces  *Traces
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	version   atomic.Pointer[string] // the protocol version of the client's initialize
	sessionID string                 // the client's HTTP session (2025 era), set by Client
	opened    time.Time
	closeOnce sync.Once
	untrack   func()

	mu    sync.Mutex
	calls map[string]*call // by the client's request id
}

// protocolVersion is the version the client asked for in its initialize.
func (o *Observer) protocolVersion() string {
	if v := o.version.Load(); v != nil {
		return *v
	}
	return ""
}

func (o *Observer) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

// A sessionConn is a client side that is an HTTP session of the 2025 era
// (internal/httpfront's): SessionID is its Mcp-Session-Id, "" for the
// 2026-07-28 traffic, which has no session.
type sessionConn interface{ SessionID() string }

// Client decorates the Session's client side, and s's gauges are read
// until its Run closes the client's side.
func (o *Observer) Client(s *middleware.Session, c middleware.Conn) middleware.Conn {
	o.opened = o.now()
	if sc, ok := c.(sessionConn); ok {
		o.sessionID = sc.SessionID()
	}
	o.untrack = o.Metrics.Track(o.Server, s)
	return decorate(c, &side{o: o, client: true})
}

// closed sees the client's side closed: the session has ended.
func (o *Observer) closed() {
	o.closeOnce.Do(func() {
		o.untrack()
		o.Metrics.SessionEnded(o.Transport, o.now().Sub(o.opened).Seconds())
	})
}

// Dial decorates every upstream Conn that d makes.
func (o *Observer) Dial(d middleware.Dialer) middleware.Dialer {
	return func(ctx context.Context) (middleware.Conn, error) {
		start := o.now()
		c, err := d(ctx)
		o.Metrics.dialed(ctx, o.Server, err)
		o.Traces.dialed(ctx, o.Server, start, o.now(), err)
		if err != nil {
			return c, err
		}
		return decorate(c, &side{o: o}), nil
	}
}

// CatalogSeen returns next (which may be nil) preceded by recording the
// size of each catalog loaded: set it as the Session's CatalogSeen.
func (o *Observer) CatalogSeen(next func([]json.RawMessage)) func([]json.RawMessage) {
	return func(tools []json.RawMessage) {
		o.Metrics.catalogSeen(o.Server, len(tools))
		if next != nil {
			next(tools)
		}
	}
}

// Retrier returns a copy of r (nil: a zero Retrier) whose OnOutcome also
// counts each load by the class it ended with: set it as the Session's
// Retrier before Run.
func (o *Observer) Retrier(r *resilience.Retrier) *resilience.Retrier {
	var c resilience.Retrier
	if r != nil {
		c = *r
	}
	next := c.OnOutcome
	c.OnOutcome = func(out resilience.Outcome) {
		o.Metrics.loaded(o.Server, out.Class)
		if next != nil {
			next(out)
		}
	}
	return &c
}

// read sees a message the Session read from one side.
func (o *Observer) read(s *side, msg []byte, whole bool) {
	o.Metrics.relayed(o.Server, s.client, true, len(msg))
	var env framing.Envelope
	var ok bool
	if whole {
		var err error
		env, err = framing.Peek(msg)
		ok = err == nil
	} else {
		env, ok = framing.PeekHead(msg)
	}
	if !ok || env.ID == nil {
		return
	}
	switch {
	case s.client && env.Kind == framing.Request:
		o.started(env)
	case !s.client && env.Kind == framing.Response:
		o.upstreamAnswered(env)
	}
}

// started begins following a client request.
func (o *Observer) started(env framing.Envelope) {
	c := &call{method: env.Method, id: string(env.ID), start: o.now()}
	switch env.Method {
	case "initialize":
		if v, found, _ := framing.LookupMember(env.Params, "protocolVersion"); found {
			version := unquote(v)
			o.version.Store(&version)
		}
	case "tools/call", "prompts/get":
		c.target = unquote(env.Name)
		if env.Method == "tools/call" && o.Audit != nil {
			c.argsHash = audit.HashArgs(env.Arguments)
		}
	case "resources/read", "resources/subscribe", "resources/unsubscribe":
		if uri, found, _ := framing.LookupMember(env.Params, "uri"); found {
			c.target = unquote(uri)
		}
	}
	if o.Traces != nil {
		c.meta, c.version = traceMeta(env.Params)
		o.Traces.serverStart(o, c)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.calls == nil {
		o.calls = make(map[string]*call)
	}
	if len(o.calls) < maxCalls {
		o.calls[c.id] = c
		o.Metrics.started()
	}
}

// forwarding sees a request the Session writes to the upstream, and
// returns the message to write in its place and the context to write it
// with (the trace context added when traced).
func (o *Observer) forwarding(ctx context.Context, msg []byte) (context.Context, []byte) {
	env, err := framing.Peek(msg)
	if err != nil || env.Kind != framing.Request || env.ID == nil {
		return ctx, msg
	}
	o.mu.Lock()
	c := o.calls[string(env.ID)]
	if c != nil && c.method == env.Method && !c.forwarded {
		c.forwarded = true
		c.upStart = o.now()
	} else {
		c = nil
	}
	o.mu.Unlock()
	if c == nil || o.Traces == nil {
		return ctx, msg
	}
	ctx, msg, span := o.Traces.clientStart(ctx, c, env, msg, o.HTTPUpstream)
	if span == nil {
		return ctx, msg
	}
	o.mu.Lock()
	c.up = span
	answered, r, at := !c.upEnd.IsZero(), c.upResult, c.upEnd
	o.mu.Unlock()
	if answered { // the answer came before the span was kept
		endSpan(span, r, at)
	}
	return ctx, msg
}

// forwardingHead sees the head of a request the Session writes to the
// upstream in parts.
func (o *Observer) forwardingHead(head []byte) {
	env, ok := framing.PeekHead(head)
	if !ok || env.Kind != framing.Request {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if c := o.calls[string(env.ID)]; c != nil && c.method == env.Method && !c.forwarded {
		c.forwarded = true
		c.upStart = o.now()
	}
}

// upstreamAnswered sees the upstream's answer to a forwarded request.
func (o *Observer) upstreamAnswered(env framing.Envelope) {
	o.mu.Lock()
	c := o.calls[string(env.ID)]
	if c == nil || !c.forwarded || !c.upEnd.IsZero() {
		o.mu.Unlock()
		return
	}
	at := o.now()
	c.upEnd = at
	if o.Traces != nil {
		c.upResult = answer(env)
	}
	up, r := c.up, c.upResult
	o.mu.Unlock()
	if up != nil {
		endSpan(up, r, at)
	}
}

// answered sees a message the Session writes to the client.
func (o *Observer) answered(msg []byte, whole bool) {
	var env framing.Envelope
	var ok bool
	if whole {
		var err error
		env, err = framing.Peek(msg)
		ok = err == nil
	} else {
		env, ok = framing.PeekHead(msg)
	}
	if !ok || env.Kind != framing.Response || env.ID == nil {
		return
	}
	o.mu.Lock()
	c := o.calls[string(env.ID)]
	delete(o.calls, string(env.ID))
	o.mu.Unlock()
	if c == nil {
		return
	}
	c.end = o.now()
	c.result = answer(env)
	o.ended(c)
}

// answer reads how an answer ended its request.
func answer(env framing.Envelope) (r result) {
	r.outcome = "ok"
	if env.Error != nil {
		r.outcome = "error"
		if code, found, _ := framing.LookupMember(env.Error, "code"); found {
			r.code, _ = strconv.Atoi(string(code))
		}
		if data, found, _ := framing.LookupMember(env.Error, "data"); found {
			r.status, r.class = statusOf(data)
		}
		return r
	}
	if len(env.Result) == 0 || env.Result[0] != '{' {
		return r
	}
	seen := r
	err := framing.EachMember(env.Result, func(m framing.Member) bool { // one pass for both
		switch {
		case memberIs(m.Name, "isError"):
			if string(m.Value) == "true" {
				seen.outcome = "tool_error"
			}
		case memberIs(m.Name, "_meta"):
			seen.status, seen.class = statusOf(m.Value)
		}
		return true
	})
	if err != nil {
		return r // malformed: what it says is not taken
	}
	return seen
}

// statusOf reads the status mcpwrap answered with from its _meta (or an
// error's data): see middleware's statusMeta and rejectionMeta.
func statusOf(meta []byte) (status, class string) {
	if s, found, _ := framing.LookupMember(meta, "status"); found {
		status = unquote(s)
	}
	if s, found, _ := framing.LookupMember(meta, "class"); found {
		class = unquote(s)
	}
	return status, class
}

// ended reports a call that was answered.
func (o *Observer) ended(c *call) {
	if c.server != nil {
		o.Traces.serverEnd(c)
	}
	o.Metrics.ended(o, c)
	if o.Audit != nil && c.method == "tools/call" {
		r := audit.Record{
			Time: c.start, Event: audit.EventCall, Server: o.Server, Tool: c.target,
			Verdict: verdict(c), Outcome: c.outcome, Code: c.code, Class: c.class,
			DurationMS: float64(c.end.Sub(c.start).Microseconds()) / 1000,
			ArgsSHA256: c.argsHash,
		}
		if !c.forwarded {
			r.Status = c.status
		}
		_ = o.Audit.Write(r) // a failing audit log does not stop the relay
	}
}

// verdict is what mcpwrap decided of a call.
func verdict(c *call) string {
	switch {
	case c.forwarded:
		return audit.VerdictAllowed
	case c.status != "":
		return audit.VerdictRejected
	default:
		return audit.VerdictAnswered
	}
}

// unquote returns a JSON string's value, or "" when raw is none.
func unquote(raw []byte) string {
	if len(raw) == 0 || raw[0] != '"' {
		return ""
	}
	s, err := framing.String(raw)
	if err != nil {
		return ""
	}
	return s
}
