package testserver

import (
	"context"
	"reflect"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// tracing starts exporting spans over OTLP/HTTP to where the OTEL_*
// environment says, and returns the middleware that makes each request a
// server span continuing the trace context of its params._meta (SEP-414),
// and the func that flushes and stops the export.
func tracing(ctx context.Context, name string) (mcp.Middleware, func(context.Context) error, error) {
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, nil, err
	}
	// A syncer: a span is exported as it ends, so none is lost when the
	// server is stopped.
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", name))))
	tracer := tp.Tracer("github.com/mcpwrap/mcpwrap/internal/testserver")
	prop := propagation.TraceContext{}
	mw := func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			carrier := propagation.MapCarrier{}
			if p, ok := req.GetParams().(interface{ GetMeta() map[string]any }); ok && !reflect.ValueOf(p).IsNil() {
				for k, v := range p.GetMeta() {
					if s, ok := v.(string); ok {
						carrier[k] = s
					}
				}
			}
			ctx, span := tracer.Start(prop.Extract(ctx, carrier), method, trace.WithSpanKind(trace.SpanKindServer),
				trace.WithAttributes(attribute.String("mcp.method.name", method)))
			defer span.End()
			return next(ctx, method, req)
		}
	}
	return mw, tp.Shutdown, nil
}
