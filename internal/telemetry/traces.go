package telemetry

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"net/http"
	"net/textproto"
	"slices"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

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

// requestAttrs are the conventions' attributes known when a request is read.
func requestAttrs(o *Observer, c *call) []attribute.KeyValue {
	attrs := []attribute.KeyValue{
		attribute.String("mcp.method.name", c.method),
		attribute.String("jsonrpc.request.id", requestID(c.id)),
		attribute.String("mcpwrap.server", o.Server),
	}
	v := cmp.Or(c.version, o.protocolVersion())
	if v != "" {
		attrs = append(attrs, attribute.String("mcp.protocol.version", v))
	}
	if o.sessionID != "" && v < statelessVersion {
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
	return attrs
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
	parent := t.prop.Extract(context.Background(), propagation.MapCarrier(c.meta))
	attrs := append(requestAttrs(o, c), attribute.String("network.transport", o.Transport))
	ctx, span := t.tracer.Start(parent, spanName(c), trace.WithSpanKind(trace.SpanKindServer),
		trace.WithTimestamp(c.start), trace.WithAttributes(attrs...))
	c.ctx = ctx
	c.server = func(c *call, r result, at time.Time) {
		verdict := verdict(c)
		span.AddEvent("mcpwrap.verdict", trace.WithTimestamp(cmpTime(c.upStart, at)),
			trace.WithAttributes(attribute.String("mcpwrap.verdict", verdict)))
		endSpan(span, r, at)
	}
}

func cmpTime(t, or time.Time) time.Time {
	if t.IsZero() {
		return or
	}
	return t
}

// clientStart opens the client span of c as it is relayed, and returns the
// message with the span's context in its params._meta, and ctx with the
// same context as the headers of a remote upstream's request.
func (t *Traces) clientStart(ctx context.Context, o *Observer, c *call, env framing.Envelope, msg []byte) (context.Context, []byte, spanEnd) {
	if c.ctx == nil {
		return ctx, msg, nil
	}
	sctx, span := t.tracer.Start(c.ctx, spanName(c), trace.WithSpanKind(trace.SpanKindClient),
		trace.WithTimestamp(c.upStart), trace.WithAttributes(requestAttrs(o, c)...))
	if held := c.upStart.Sub(c.start); held > time.Millisecond {
		// Waited for the catalog or a restart (hold.go) before it went.
		trace.SpanFromContext(c.ctx).AddEvent("mcpwrap.held", trace.WithTimestamp(c.upStart),
			trace.WithAttributes(attribute.Float64("mcpwrap.held_ms", float64(held.Microseconds())/1000)))
	}
	carrier := propagation.MapCarrier{}
	t.prop.Inject(sctx, carrier)
	if out, ok := withMeta(msg, env.Params, carrier); ok {
		msg = out
	}
	end := func(_ *call, r result, at time.Time) { endSpan(span, r, at) }
	// A remote upstream's HTTP request carries it as W3C headers too.
	header := make(http.Header, len(carrier))
	for k, v := range carrier {
		header[textproto.CanonicalMIMEHeaderKey(k)] = []string{v}
	}
	return upstream.WithRequestHeader(ctx, header), msg, end
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

// statelessVersion is the first protocol version without sessions: its
// traffic has no mcp.session.id.
const statelessVersion = "2026-07-28"

// metaProtocolVersion is the _meta member of a 2026-07-28 request's
// protocol version.
const metaProtocolVersion = "io.modelcontextprotocol/protocolVersion"

// traceMeta returns the trace context members of params._meta, and the
// protocol version a 2026-07-28 request carries there.
func traceMeta(params []byte) (out map[string]string, version string) {
	meta, found, _ := framing.LookupMember(params, "_meta")
	if !found {
		return nil, ""
	}
	if v, found, _ := framing.LookupMember(meta, metaProtocolVersion); found {
		version = unquote(v)
	}
	for _, k := range traceKeys {
		if v, found, _ := framing.LookupMember(meta, k); found {
			if s := unquote(v); s != "" {
				if out == nil {
					out = map[string]string{}
				}
				out[k] = s
			}
		}
	}
	return out, version
}

// withMeta returns msg with the members of kv set in its params._meta
// (params, a subslice of msg), in place of the trace context the client
// sent; the rest of the message is copied as it is, never decoded. It
// reports false, and msg is to be sent as it is, when params or its
// _meta is no object.
func withMeta(msg, params []byte, kv map[string]string) ([]byte, bool) {
	if len(kv) == 0 || len(params) < 2 || params[0] != '{' {
		return msg, false
	}
	meta, found, err := framing.LookupMember(params, "_meta")
	if err != nil || found && (len(meta) == 0 || meta[0] != '{') {
		return msg, false
	}
	b := []byte{'{'}
	for _, k := range traceKeys {
		if v, ok := kv[k]; ok {
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
	members, err := framing.Members(meta)
	if err != nil {
		return msg, false
	}
	for _, m := range members {
		if key, err := m.Key(); err != nil || slices.Contains(traceKeys, key) {
			continue
		}
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = append(append(append(b, m.Name...), ':'), m.Value...)
	}
	return framing.Splice(msg, meta, append(b, '}')), true
}

// appendString appends s as a JSON string.
func appendString(b []byte, s string) []byte {
	q, _ := json.Marshal(s)
	return append(b, q...)
}
