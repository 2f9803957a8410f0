package telemetry

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/mcpwrap/mcpwrap/middleware"
	"github.com/mcpwrap/mcpwrap/resilience"
)

// points returns the data points of the metric named, as attribute set
// (its values joined) to value.
func points(t *testing.T, reader *sdkmetric.ManualReader, name string) map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(t.Context(), &rm))
	out := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			var dps []metricdata.DataPoint[int64]
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				dps = d.DataPoints
			case metricdata.Gauge[int64]:
				dps = d.DataPoints
			}
			for _, dp := range dps {
				key := ""
				for _, kv := range dp.Attributes.ToSlice() {
					key += kv.Value.String() + ";"
				}
				out[key] = dp.Value
			}
		}
	}
	return out
}

// TestLoadsCatalogAndRefreshes: loads are counted by the class they ended
// with (not only their connection attempts), the catalog's size is a
// gauge per server, refreshes of the sign-in are counted by outcome.
func TestLoadsCatalogAndRefreshes(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	m, err := NewMetrics(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)).Meter("test"))
	require.NoError(t, err)
	o := &Observer{Server: "fs", Transport: "pipe", Metrics: m}

	var seen []resilience.Outcome
	r := o.Retrier(&resilience.Retrier{OnOutcome: func(out resilience.Outcome) { seen = append(seen, out) }})
	for _, c := range []resilience.Class{resilience.Transient, resilience.Available, resilience.Available, resilience.Permanent} {
		r.OnOutcome(resilience.Outcome{Server: "fs", Class: c})
	}
	assert.Len(t, seen, 4, "the Retrier's own OnOutcome still runs")
	assert.NotNil(t, o.Retrier(nil).OnOutcome, "a nil Retrier is a zero one")
	assert.Equal(t, map[string]int64{"permanent;fs;": 1, "available;fs;": 2, "transient;fs;": 1}, points(t, reader, "mcpwrap.upstream.loads"))

	var catalogs int
	seenCatalog := o.CatalogSeen(func([]json.RawMessage) { catalogs++ })
	seenCatalog(make([]json.RawMessage, 3))
	seenCatalog(make([]json.RawMessage, 5))
	assert.Equal(t, 2, catalogs)
	assert.NotPanics(t, func() { (&Observer{}).CatalogSeen(nil)(nil) }, "no next, no metrics")
	assert.Equal(t, map[string]int64{"fs;": 5}, points(t, reader, "mcpwrap.catalog.tools"), "the last catalog seen")

	for _, outcome := range []string{"ok", "ok", "failed", "refused"} {
		m.Refreshed("fs", outcome)
	}
	assert.Equal(t, map[string]int64{"ok;fs;": 2, "failed;fs;": 1, "refused;fs;": 1}, points(t, reader, "mcpwrap.sign_in.refreshes"))
}

// httpSessionConn is a client Conn of a 2025-era HTTP session.
type httpSessionConn struct {
	fakeConn
	id string
}

func (c *httpSessionConn) SessionID() string { return c.id }

// TestSessionIDOnHTTPSessions: spans of an HTTP session's requests carry
// mcp.session.id, except 2026-07-28 requests (which have no session), and
// stdio's none.
func TestSessionIDOnHTTPSessions(t *testing.T) {
	tests := []struct {
		name   string
		client middleware.Conn
		req    string
		want   string // "" for none
	}{
		{
			name:   "2025-era HTTP session",
			client: &httpSessionConn{id: "s-1"},
			req:    `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read"}}`,
			want:   "s-1",
		},
		{
			name:   "a 2026-07-28 request",
			client: &httpSessionConn{id: "s-2"},
			req:    `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
		},
		{
			name:   "the stateless session has no id",
			client: &httpSessionConn{},
			req:    `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read"}}`,
		},
		{
			name:   "stdio",
			client: &fakeConn{},
			req:    `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read"}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := tracetest.NewSpanRecorder()
			o := &Observer{Server: "fs", Transport: "tcp", Traces: NewTraces(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))}
			switch c := tt.client.(type) {
			case *httpSessionConn:
				c.reads = [][]byte{[]byte(tt.req)}
			case *fakeConn:
				c.reads = [][]byte{[]byte(tt.req)}
			}
			cc := o.Client(nil, tt.client)
			msg, err := cc.ReadMessage()
			require.NoError(t, err)
			answer := []byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`)
			up := &fakeConn{reads: [][]byte{answer}}
			uc, err := o.Dial(func(context.Context) (middleware.Conn, error) { return up, nil })(t.Context())
			require.NoError(t, err)
			require.NoError(t, uc.WriteMessage(t.Context(), msg))
			_, err = uc.ReadMessage()
			require.NoError(t, err)
			require.NoError(t, cc.WriteMessage(t.Context(), answer))
			var spans []sdktrace.ReadOnlySpan
			for _, sp := range rec.Ended() {
				if sp.Name() == "tools/call read" {
					spans = append(spans, sp)
				}
			}
			require.Len(t, spans, 2, "mcpwrap's server and client spans")
			for _, sp := range spans {
				got, found := attrs(sp.Attributes())["mcp.session.id"]
				if tt.want == "" {
					assert.False(t, found, "%s: %s", sp.Name(), got)
				} else {
					assert.Equal(t, tt.want, got, sp.Name())
				}
			}
		})
	}
}
