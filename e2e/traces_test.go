package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// tracedServerArg makes the test binary a go-sdk server whose tool calls are spans continuing
// the trace context in params._meta, exported over OTLP as its environment says.
const tracedServerArg = "mcpwrap-e2e-traced-server"

var propagator = propagation.TraceContext{}

// runTracedServer serves newFixtureServer on stdio, tracing each request it receives.
func runTracedServer() int {
	ctx := context.Background()
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(ctx)
	server := newFixtureServer()
	server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			carrier := propagation.MapCarrier{}
			if p, ok := req.GetParams().(interface{ GetMeta() map[string]any }); ok {
				for k, v := range p.GetMeta() {
					if s, ok := v.(string); ok {
						carrier[k] = s
					}
				}
			}
			ctx, span := tp.Tracer("fixture").Start(propagator.Extract(ctx, carrier), "server "+method, trace.WithSpanKind(trace.SpanKindServer))
			defer span.End()
			return next(ctx, method, req)
		}
	})
	if err := server.Run(ctx, &mcp.StdioTransport{}); err != nil {
		return 1
	}
	return 0
}

// otelcolPath builds the minimal collector of e2e/otelcol (the OTLP receiver and OTLP/HTTP
// exporter) once into the user's cache, keyed by its go.sum, and returns its path.
func otelcolPath(t *testing.T) string {
	t.Helper()
	sum, err := os.ReadFile(filepath.Join("otelcol", "go.sum"))
	require.NoError(t, err)
	cache, err := os.UserCacheDir()
	require.NoError(t, err)
	out := filepath.Join(cache, "mcpwrap-e2e", fmt.Sprintf("otelcol-%x", len(sum)))
	if _, err := os.Stat(out); err == nil {
		return out
	}
	start := time.Now()
	require.NoError(t, goBuild("otelcol", out, "."), "build the collector")
	t.Logf("built the collector in %s", time.Since(start).Round(time.Second))
	return out
}

// spanSink is an OTLP/HTTP endpoint that keeps the spans exported to it.
type spanSink struct {
	mu    sync.Mutex
	spans []*tracepb.Span
}

func (s *spanSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req coltrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			s.spans = append(s.spans, ss.Spans...)
		}
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
}

func (s *spanSink) byName() map[string][]*tracepb.Span {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := map[string][]*tracepb.Span{}
	for _, sp := range s.spans {
		m[sp.Name] = append(m[sp.Name], sp)
	}
	return m
}

func spanAttrs(sp *tracepb.Span) map[string]string {
	m := map[string]string{}
	for _, kv := range sp.Attributes {
		m[kv.Key] = kv.Value.GetStringValue()
	}
	return m
}

// TestTraceThroughCollector: a go-sdk client with tracing calls a tool through mcpwrap to a
// go-sdk server that continues the context from _meta, every span going through a real
// OpenTelemetry Collector; the trace is client → mcpwrap server span → mcpwrap client span →
// the server's span, with the conventions' attributes; a rejected call's span has its status.
func TestTraceThroughCollector(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*testTimeout)
	defer cancel()
	sink := &spanSink{}
	sinkSrv := httptest.NewServer(sink)
	defer sinkSrv.Close()

	dir := t.TempDir()
	recv := freeAddr(t)
	cfg := fmt.Sprintf(`receivers: {otlp: {protocols: {http: {endpoint: %q}}}}
exporters: {otlp_http: {endpoint: %q, compression: none}}
service:
  telemetry: {metrics: {level: none}}
  pipelines: {traces: {receivers: [otlp], exporters: [otlp_http]}}
`, recv, sinkSrv.URL)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "otelcol.yaml"), []byte(cfg), 0o600))
	startProcess(ctx, t, processOptions{}, otelcolPath(t), "--config", "file:"+filepath.Join(dir, "otelcol.yaml"))
	endpoint := "http://" + recv
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint) // the client's, mcpwrap's and the server's
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
	require.Eventually(t, func() bool {
		resp, err := http.Post(endpoint+"/v1/traces", "application/x-protobuf", nil)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return true
	}, 30*time.Second, 100*time.Millisecond, "collector up")

	exp, err := otlptracehttp.New(ctx)
	require.NoError(t, err)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(ctx)

	self, err := os.Executable()
	require.NoError(t, err)
	config := fmt.Sprintf(`{"defaults": {"approval": "off", "tools": {"overrides": {%q: false}}}}`, fixtureEnvTool)
	client := mcp.NewClient(&mcp.Implementation{Name: "traces-e2e", Version: "1"}, nil)
	session := connectWrapped(ctx, t, client, wrapOptions{Name: "traced", Config: config}, self, tracedServerArg)
	call := func(name string, args any) {
		cctx, span := tp.Tracer("client").Start(ctx, "client "+name, trace.WithSpanKind(trace.SpanKindClient))
		defer span.End()
		meta := propagation.MapCarrier{}
		propagator.Inject(cctx, meta)
		res, err := session.CallTool(cctx, &mcp.CallToolParams{Name: name, Arguments: args, Meta: mcp.Meta{"traceparent": meta["traceparent"]}})
		require.NoError(t, err)
		require.Equal(t, name == fixtureEnvTool, res.IsError)
	}
	call(fixtureSleepTool, map[string]any{"ms": 1})
	call(fixtureEnvTool, map[string]any{})
	require.NoError(t, session.Close()) // mcpwrap exits, flushing its spans

	want := []string{"client " + fixtureSleepTool, "tools/call " + fixtureSleepTool, "server tools/call", "client " + fixtureEnvTool, "tools/call " + fixtureEnvTool}
	var spans map[string][]*tracepb.Span
	require.Eventually(t, func() bool {
		spans = sink.byName()
		for _, n := range want {
			if len(spans[n]) == 0 {
				return false
			}
		}
		return len(spans["tools/call "+fixtureSleepTool]) == 2
	}, 30*time.Second, 100*time.Millisecond, "spans arrive through the collector")

	clientSpan := spans["client "+fixtureSleepTool][0]
	var mServer, mClient *tracepb.Span
	for _, sp := range spans["tools/call "+fixtureSleepTool] {
		switch sp.Kind {
		case tracepb.Span_SPAN_KIND_SERVER:
			mServer = sp
		case tracepb.Span_SPAN_KIND_CLIENT:
			mClient = sp
		}
	}
	require.NotNil(t, mServer)
	require.NotNil(t, mClient)
	var upstream *tracepb.Span
	for _, sp := range spans["server tools/call"] {
		if string(sp.TraceId) == string(clientSpan.TraceId) {
			upstream = sp
		}
	}
	require.NotNil(t, upstream, "the server continued the trace")
	assert.Equal(t, clientSpan.SpanId, mServer.ParentSpanId, "mcpwrap's server span continues the client's")
	assert.Equal(t, mServer.SpanId, mClient.ParentSpanId)
	assert.Equal(t, mClient.SpanId, upstream.ParentSpanId, "the server continues mcpwrap's client span from _meta")
	for _, sp := range []*tracepb.Span{mServer, mClient} {
		a := spanAttrs(sp)
		assert.Equal(t, "tools/call", a["mcp.method.name"])
		assert.Equal(t, fixtureSleepTool, a["gen_ai.tool.name"])
		assert.NotEmpty(t, a["jsonrpc.request.id"])
		assert.NotEmpty(t, a["mcp.protocol.version"])
	}
	assert.Equal(t, "pipe", spanAttrs(mServer)["network.transport"])

	rejected := spans["tools/call "+fixtureEnvTool]
	require.Len(t, rejected, 1, "a rejected call never reaches the server")
	a := spanAttrs(rejected[0])
	assert.Equal(t, "tool_error", a["error.type"])
	assert.Equal(t, "disabled_by_config", a["mcpwrap.status"])
	assert.Equal(t, tracepb.Status_STATUS_CODE_ERROR, rejected[0].Status.GetCode())
	assert.Equal(t, spans["client "+fixtureEnvTool][0].SpanId, rejected[0].ParentSpanId)
}

// TestTraceContextReachesARemoteUpstream: a traced call to a --url server carries mcpwrap's
// client span as the W3C traceparent header of its HTTP request, the same context as in its
// params._meta, so a server that traces by headers continues it too.
func TestTraceContextReachesARemoteUpstream(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	sink := &spanSink{}
	sinkSrv := httptest.NewServer(sink)
	defer sinkSrv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", sinkSrv.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
	t.Setenv("OTEL_METRICS_EXPORTER", "none")

	type seen struct{ header, meta string }
	var mu sync.Mutex
	var calls []seen
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return newRemoteFixture() }, nil)
	url := serveLoopback(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			Method string
			Params struct {
				Meta map[string]any `json:"_meta"`
			}
		}
		if json.Unmarshal(body, &msg) == nil && msg.Method == "tools/call" {
			tp, _ := msg.Params.Meta["traceparent"].(string)
			mu.Lock()
			calls = append(calls, seen{header: r.Header.Get("Traceparent"), meta: tp})
			mu.Unlock()
		}
		mcpHandler.ServeHTTP(w, r)
	}))

	session := sidecar{Name: "remote", Config: fastRetryConfig("remote", false, true), Upstream: remoteArgs(url)}.connect(ctx, t, newClient(nil))
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "traced"}})
	require.NoError(t, err)
	require.False(t, res.IsError, contentText(res.Content))

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, calls, 1)
	assert.Regexp(t, `^00-[0-9a-f]{32}-[0-9a-f]{16}-01$`, calls[0].header, "the request's traceparent header")
	assert.Equal(t, calls[0].meta, calls[0].header, "the same context as in params._meta")
}
