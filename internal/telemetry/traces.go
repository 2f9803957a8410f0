package telemetry

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpwrap/mcpwrap/internal/audit"
	"github.com/mcpwrap/mcpwrap/internal/era"
	"github.com/mcpwrap/mcpwrap/internal/framing"
	"github.com/mcpwrap/mcpwrap/internal/upstream"
	"github.com/mcpwrap/mcpwrap/resilience"
)

// The trace context's members of params._meta (SEP-414): un-prefixed, as
// the W3C headers are named.
var traceKeys = []string{"traceparent", "tracestate", "baggage"}

// Traces records a span per client request (server kind, toward the
// client) and per request relayed (client kind, toward the upstream),
// named and attributed as the MCP semantic conventions say, and continues
// the client's trace context from params._meta and passes its own on in
// the request relayed. A nil *Traces records nothing.
type Traces struct {
	tracer trace.Tracer
	prop   propagation.TextMapPropagator
}

// NewTraces returns Traces recording through tp.
func NewTraces(tp trace.TracerProvider) *Traces {
	return &Traces{
		tracer: tp.Tracer("github.com/mcpwrap/mcpwrap"),
		prop:   propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
	}
}

// spanName is the conventions' "{mcp.method.name} {target}".
func spanName(c *call) string {
	if c.target != "" {
		return c.method + " " + c.target
	}
	return c.method
}

// appendRequestAttrs appends to attrs the conventions' attributes known
// when a request is read, network.transport last: the server span takes
// them all, the client span all but the last (one slice for both; the SDK
// copies them).
func appendRequestAttrs(attrs []attribute.KeyValue, o *Observer, c *call) []attribute.KeyValue {
	attrs = append(attrs,
		attribute.String("mcp.method.name", c.method),
		attribute.String("jsonrpc.request.id", requestID(c.id)),
		attribute.String("mcpwrap.server", o.Server),
	)
	v := cmp.Or(c.version, o.protocolVersion())
	if v != "" {
		attrs = append(attrs, attribute.String("mcp.protocol.version", v))
	}
	if o.sessionID != "" && !era.IsStateless(v) {
		attrs = append(attrs, attribute.String("mcp.session.id", o.sessionID))
	}
	switch c.method {
	case "tools/call":
		attrs = append(attrs, attribute.String("gen_ai.operation.name", "execute_tool"))
		if c.target != "" {
			attrs = append(attrs, attribute.String("gen_ai.tool.name", c.target))
		}
	case "prompts/get":
		if c.target != "" {
			attrs = append(attrs, attribute.String("gen_ai.prompt.name", c.target))
		}
	case "resources/read", "resources/subscribe", "resources/unsubscribe":
		if c.target != "" {
			attrs = append(attrs, attribute.String("mcp.resource.uri", c.target))
		}
	}
	return append(attrs, attribute.String("network.transport", o.Transport))
}

// requestID is a JSON-RPC id as the conventions record it: a string's
// value, a number's digits.
func requestID(raw string) string {
	if s := unquote([]byte(raw)); s != "" {
		return s
	}
	return raw
}

// endSpan records how a request ended and ends span at at.
func endSpan(span trace.Span, r result, at time.Time) {
	switch r.outcome {
	case "error":
		code := strconv.Itoa(r.code)
		span.SetAttributes(attribute.String("error.type", code), attribute.String("rpc.response.status_code", code))
		span.SetStatus(codes.Error, "")
	case "tool_error":
		span.SetAttributes(attribute.String("error.type", "tool_error"))
		span.SetStatus(codes.Error, "")
	}
	if r.status != "" {
		span.SetAttributes(attribute.String("mcpwrap.status", r.status), attribute.String("mcpwrap.class", r.class))
	}
	span.End(trace.WithTimestamp(at))
}

// serverStart opens c's server span, continuing the trace context in its
// params._meta.
func (t *Traces) serverStart(o *Observer, c *call) {
	if t == nil {
		return
	}
	parent := context.Background()
	if c.meta != (traceContext{}) {
		parent = t.prop.Extract(parent, &c.meta)
	}
	c.name = spanName(c)
	c.attrs = appendRequestAttrs(c.attrRoom[:0], o, c)
	c.ctx, c.server = t.tracer.Start(parent, c.name, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithTimestamp(c.start), trace.WithAttributes(c.attrs...))
}

// verdictEvents are the verdict event's attributes, one option per
// verdict, made once.
var verdictEvents = map[string]trace.EventOption{}

func init() {
	for _, v := range []string{audit.VerdictAllowed, audit.VerdictRejected, audit.VerdictAnswered} {
		verdictEvents[v] = trace.WithAttributes(attribute.String("mcpwrap.verdict", v))
	}
}

// serverEnd ends c's server span with its verdict and result.
func (t *Traces) serverEnd(c *call) {
	c.server.AddEvent("mcpwrap.verdict", trace.WithTimestamp(cmpTime(c.upStart, c.end)), verdictEvents[verdict(c)])
	endSpan(c.server, c.result, c.end)
}

func cmpTime(t, or time.Time) time.Time {
	if t.IsZero() {
		return or
	}
	return t
}

// clientStart opens the client span of c as it is relayed, and returns the
// message with the span's context in its params._meta, and, when headers
// is set (the upstream is an HTTP server), ctx with the same context as
// its request's headers.
func (t *Traces) clientStart(ctx context.Context, c *call, env framing.Envelope, msg []byte, headers bool) (context.Context, []byte, trace.Span) {
	if c.server == nil {
		return ctx, msg, nil
	}
	sctx, span := t.tracer.Start(c.ctx, c.name, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithTimestamp(c.upStart), trace.WithAttributes(c.attrs[:len(c.attrs)-1]...))
	if held := c.upStart.Sub(c.start); held > time.Millisecond {
		// Waited for the catalog or a restart (hold.go) before it went.
		c.server.AddEvent("mcpwrap.held", trace.WithTimestamp(c.upStart),
			trace.WithAttributes(attribute.Float64("mcpwrap.held_ms", float64(held.Microseconds())/1000)))
	}
	var carrier traceContext
	t.prop.Inject(sctx, &carrier)
	if out, ok := withMeta(msg, env.Params, carrier); ok {
		msg = out
	}
	if headers { // a remote upstream's HTTP request carries it as W3C headers too
		ctx = upstream.WithRequestHeader(ctx, carrier.header())
	}
	return ctx, msg, span
}

// dialed records one attempt to start or connect to the upstream.
func (t *Traces) dialed(ctx context.Context, server string, start, end time.Time, err error) {
	if t == nil {
		return
	}
	_, span := t.tracer.Start(ctx, "mcpwrap.dial "+server, trace.WithTimestamp(start),
		trace.WithAttributes(attribute.String("mcpwrap.server", server)))
	class := resilience.Available.String()
	if err != nil {
		class = resilience.Classify(err).Class.String()
		span.SetStatus(codes.Error, "")
	}
	span.SetAttributes(attribute.String("mcpwrap.class", class))
	span.End(trace.WithTimestamp(end))
}

// A traceContext is the trace context members of a _meta, and the
// propagators' carrier (no map to make per request).
type traceContext struct {
	traceparent, tracestate, baggage string
}

// field is the member of the key named, or nil.
func (tc *traceContext) field(key string) *string {
	switch key {
	case "traceparent":
		return &tc.traceparent
	case "tracestate":
		return &tc.tracestate
	case "baggage":
		return &tc.baggage
	}
	return nil
}

// Get, Set and Keys make it a propagation.TextMapCarrier.
func (tc *traceContext) Get(key string) string {
	if f := tc.field(key); f != nil {
		return *f
	}
	return ""
}

func (tc *traceContext) Set(key, value string) {
	if f := tc.field(key); f != nil {
		*f = value
	}
}

func (tc *traceContext) Keys() []string { return traceKeys }

// header is the context as W3C headers.
func (tc traceContext) header() http.Header {
	h := make(http.Header, 3)
	for _, k := range [...]struct{ name, value string }{{"Traceparent", tc.traceparent}, {"Tracestate", tc.tracestate}, {"Baggage", tc.baggage}} {
		if k.value != "" {
			h[k.name] = []string{k.value}
		}
	}
	return h
}

// traceMeta returns the trace context members of params._meta, and the
// protocol version a 2026-07-28 request carries there: one pass over
// params' members and one over _meta's.
func traceMeta(params []byte) (out traceContext, version string) {
	if len(params) == 0 || params[0] != '{' {
		return out, ""
	}
	meta, found, _ := framing.LookupMember(params, "_meta")
	if !found || len(meta) == 0 || meta[0] != '{' {
		return out, ""
	}
	err := framing.EachMember(meta, func(m framing.Member) bool {
		if memberIs(m.Name, era.MetaProtocolVersion) {
			version = unquote(m.Value)
			return true
		}
		for _, k := range traceKeys {
			if memberIs(m.Name, k) {
				*out.field(k) = unquote(m.Value)
			}
		}
		return true
	})
	if err != nil {
		return traceContext{}, ""
	}
	return out, version
}

// memberIs reports whether raw, a member's name as sent, is name once its
// escapes are decoded; a plain spelling is compared without decoding.
func memberIs(raw []byte, name string) bool {
	if len(raw) == len(name)+2 && string(raw[1:len(raw)-1]) == name {
		return true
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return false
	}
	s, err := framing.String(raw)
	return err == nil && s == name
}

// withMeta returns msg with the members of kv set in its params._meta
// (params, a subslice of msg), in place of the trace context the client
// sent; the rest of the message is copied as it is, never decoded. It
// reports false, and msg is to be sent as it is, when params or its
// _meta is no object.
func withMeta(msg, params []byte, kv traceContext) ([]byte, bool) {
	if kv == (traceContext{}) || len(params) < 2 || params[0] != '{' {
		return msg, false
	}
	meta, found, err := framing.LookupMember(params, "_meta")
	if err != nil || found && (len(meta) == 0 || meta[0] != '{') {
		return msg, false
	}
	b := make([]byte, 1, 16+len(kv.traceparent)+len(kv.tracestate)+len(kv.baggage)+len(meta))
	b[0] = '{'
	for _, k := range traceKeys {
		if v := kv.Get(k); v != "" {
			if len(b) > 1 {
				b = append(b, ',')
			}
			b = appendString(append(appendString(b, k), ':'), v)
		}
	}
	if !found {
		b = append(b, '}')
		rest := bytes.TrimLeft(params[1:], " \t\r\n")
		repl := append([]byte(`{"_meta":`), b...)
		if len(rest) > 0 && rest[0] != '}' {
			repl = append(repl, ',')
		}
		return framing.Splice(msg, params[:1], repl), true
	}
	err = framing.EachMember(meta, func(m framing.Member) bool {
		if key, err := m.Key(); err != nil || slices.Contains(traceKeys, key) {
			return true
		}
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = append(append(append(b, m.Name...), ':'), m.Value...)
		return true
	})
	if err != nil {
		return msg, false
	}
	return framing.Splice(msg, meta, append(b, '}')), true
}

// appendString appends s as a JSON string: as it is when it needs no
// escape (a trace context's text always), else as encoding/json writes it.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	return append(append(append(b, '"'), s...), '"')
}
