package demo

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// traces is act 5: one tool call's trace, from the demo's client through
// mcpwrap to the server, each process exporting its spans over OTLP to a
// receiver inside the demo, printed as a tree.
func (d *demo) traces(ctx context.Context) error {
	n := d.n
	n.act(5, "What it did: a tool call's trace")
	n.say("mcpwrap traces what it relays with OpenTelemetry, in the MCP semantic conventions,")
	n.say("when the standard OTEL_* environment asks for it. Here the demo's client, mcpwrap and")
	n.say("the server all export over OTLP to a receiver inside the demo.")
	sink := &spanSink{arrived: make(chan struct{}, 1)}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: sink, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(ln)
	}()
	defer func() {
		srv.Close()
		<-served
	}()
	endpoint := "http://" + ln.Addr().String()

	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(endpoint+"/v1/traces"))
	if err != nil {
		return err
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "demo-client"))))
	defer tp.Shutdown(context.WithoutCancel(ctx))

	if err := d.writeConfig(`{}`); err != nil {
		return err
	}
	env := append(os.Environ(), "OTEL_TRACES_EXPORTER=otlp", "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
		"OTEL_EXPORTER_OTLP_ENDPOINT="+endpoint, "OTEL_TRACES_SAMPLER=always_on")
	n.say("  $ export OTEL_TRACES_EXPORTER=otlp OTEL_EXPORTER_OTLP_ENDPOINT=%s", endpoint)
	c, err := d.connectEnv(ctx, env, []string{"--name", "traced", "--log-level", "warn"},
		[]string{"--name", "demo-server", "--trace"}, nil)
	if err != nil {
		return err
	}
	defer c.Close()

	n.step("The client calls echo inside a span of its own, its trace context in params._meta:")
	cctx, span := tp.Tracer("demo-client").Start(ctx, "tools/call echo", trace.WithSpanKind(trace.SpanKindClient))
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(cctx, carrier)
	n.say("  _meta.traceparent = %s", carrier["traceparent"])
	res, err := c.CallTool(cctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "traced"},
		Meta: mcp.Meta{"traceparent": carrier["traceparent"]}})
	span.End()
	if err != nil {
		return fmt.Errorf("tools/call echo: %w", err)
	}
	n.say("  echo -> %s", compact(resultText(res)))
	traceID := span.SpanContext().TraceID().String()
	if err := c.Close(); err != nil {
		return fmt.Errorf("close: %w", err)
	}
	n.say("  (the client closed; mcpwrap flushed its spans as it exited)")

	n.step("The trace %s, as the receiver got it:", traceID)
	spans, err := sink.await(ctx, traceID, 4, 15*time.Second)
	if err != nil {
		n.say("  %v", err)
	}
	printTree(n, spans)
	n.say("  mcpwrap's server span continues the client's; its client span is the server's parent,")
	n.say("  carried in the relayed request's params._meta. With OTEL_* unset, none of this runs.")
	return err
}

// A span is what the tree shows of one exported span.
type span struct {
	service, name, kind string
	trace, id, parent   string
	start, end          time.Time
	attrs               [][2]string // the ones worth showing, in order
	events              []string
}

// shownAttrs are the attributes the tree prints, the conventions' first.
var shownAttrs = []string{"mcp.method.name", "gen_ai.tool.name", "jsonrpc.request.id", "mcp.protocol.version",
	"network.transport", "error.type", "mcpwrap.status"}

// spanSink is an OTLP/HTTP trace receiver keeping what it is sent.
type spanSink struct {
	arrived chan struct{} // signalled after each export

	mu    sync.Mutex
	spans []span
}

func (s *spanSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 16<<20))
	var req coltrace.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(body, &req)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	for _, rs := range req.ResourceSpans {
		service := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.Key == "service.name" {
				service = kv.Value.GetStringValue()
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, sp := range ss.Spans {
				s.spans = append(s.spans, fromProto(service, sp))
			}
		}
	}
	s.mu.Unlock()
	select {
	case s.arrived <- struct{}{}:
	default:
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
}

// fromProto is what the tree shows of sp.
func fromProto(service string, sp *tracepb.Span) span {
	out := span{
		service: service, name: sp.Name,
		kind:  strings.ToLower(strings.TrimPrefix(sp.Kind.String(), "SPAN_KIND_")),
		trace: fmt.Sprintf("%x", sp.TraceId), id: fmt.Sprintf("%x", sp.SpanId), parent: fmt.Sprintf("%x", sp.ParentSpanId),
		start: time.Unix(0, int64(sp.StartTimeUnixNano)), end: time.Unix(0, int64(sp.EndTimeUnixNano)),
	}
	for _, k := range shownAttrs {
		for _, kv := range sp.Attributes {
			if kv.Key == k {
				out.attrs = append(out.attrs, [2]string{k, kv.Value.GetStringValue()})
			}
		}
	}
	for _, e := range sp.Events {
		out.events = append(out.events, e.Name)
	}
	return out
}

// await returns the spans of trace once there are want of them, or what
// there is after timeout, with an error.
func (s *spanSink) await(ctx context.Context, trace string, want int, timeout time.Duration) ([]span, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		var got []span
		for _, sp := range s.spans {
			if sp.trace == trace {
				got = append(got, sp)
			}
		}
		s.mu.Unlock()
		if len(got) >= want {
			return got, nil
		}
		select {
		case <-s.arrived:
		case <-deadline.C:
			return got, fmt.Errorf("only %d of the trace's %d spans arrived in %s", len(got), want, timeout)
		case <-ctx.Done():
			return got, ctx.Err()
		}
	}
}

// printTree narrates spans as a tree, each under its parent, siblings in
// the order they started.
func printTree(n *narrator, spans []span) {
	ids := map[string]bool{}
	for _, sp := range spans {
		ids[sp.id] = true
	}
	children := map[string][]span{}
	for _, sp := range spans {
		parent := sp.parent
		if !ids[parent] {
			parent = "" // a root here
		}
		children[parent] = append(children[parent], sp)
	}
	var walk func(parent string, depth int)
	walk = func(parent string, depth int) {
		indent := ""
		if depth > 0 {
			indent = strings.Repeat("   ", depth-1) + "└─ "
		}
		kids := children[parent]
		slices.SortFunc(kids, func(a, b span) int { return cmp.Or(a.start.Compare(b.start), strings.Compare(a.id, b.id)) })
		for _, sp := range kids {
			n.say("  %-24s %-6s %-22s %9s", indent+sp.service, sp.kind, sp.name, sp.end.Sub(sp.start).Round(time.Microsecond))
			pad := strings.Repeat("   ", depth) + "  "
			if len(sp.attrs) > 0 {
				var kv []string
				for _, a := range sp.attrs {
					kv = append(kv, a[0]+"="+a[1])
				}
				n.say("  %s%s", pad, strings.Join(kv, " "))
			}
			for _, e := range sp.events {
				n.say("  %sevent %s", pad, e)
			}
			walk(sp.id, depth+1)
		}
	}
	walk("", 0)
}
