package telemetry

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpwrap/mcpwrap/middleware"
)

// repeatConn reads msg forever and discards its writes.
type repeatConn struct{ msg []byte }

func (c *repeatConn) ReadMessage() ([]byte, error)               { return c.msg, nil }
func (c *repeatConn) WriteMessage(context.Context, []byte) error { return nil }
func (c *repeatConn) Close() error                               { return nil }

// discardExporter drops the spans handed to it.
type discardExporter struct{}

func (discardExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardExporter) Shutdown(context.Context) error                             { return nil }

// newBenchProvider is a provider as cmd makes it (a batch span processor,
// every span sampled), exporting nowhere.
func newBenchProvider(b *testing.B) *sdktrace.TracerProvider {
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discardExporter{}), sdktrace.WithSampler(sdktrace.AlwaysSample()))
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp
}

// BenchmarkObservedRoundTrip is the Observer's cost per relayed tools/call
// (the client's request read, written upstream, its answer read and
// written to the client), off (undecorated) and traced.
func BenchmarkObservedRoundTrip(b *testing.B) {
	req := []byte(`{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"echo","arguments":{"text":"ping"},"_meta":{"traceparent":"` + clientTrace + `"}}}`)
	ans := []byte(`{"jsonrpc":"2.0","id":17,"result":{"content":[{"type":"text","text":"ping"}]}}`)
	for _, mode := range []string{"off", "traced"} {
		b.Run(mode, func(b *testing.B) {
			var cc, uc middleware.Conn = &repeatConn{msg: req}, &repeatConn{msg: ans}
			if mode == "traced" {
				o := &Observer{Server: "bench", Transport: "pipe", Traces: NewTraces(newBenchProvider(b))}
				cc = o.Client(nil, cc)
				var err error
				uc, err = o.Dial(func(context.Context) (middleware.Conn, error) { return uc, nil })(b.Context())
				if err != nil {
					b.Fatal(err)
				}
			}
			ctx := b.Context()
			b.ReportAllocs()
			for b.Loop() {
				msg, _ := cc.ReadMessage()
				_ = uc.WriteMessage(ctx, msg)
				msg, _ = uc.ReadMessage()
				_ = cc.WriteMessage(ctx, msg)
			}
		})
	}
}

// BenchmarkTwoEmptySpans is the SDK's own floor for a relayed call: a
// server span and a client span under it, no attributes, no event.
func BenchmarkTwoEmptySpans(b *testing.B) {
	tracer := newBenchProvider(b).Tracer("bench")
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		sctx, server := tracer.Start(ctx, "tools/call echo", trace.WithSpanKind(trace.SpanKindServer))
		_, client := tracer.Start(sctx, "tools/call echo", trace.WithSpanKind(trace.SpanKindClient))
		client.End()
		server.End()
	}
}
