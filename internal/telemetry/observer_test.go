package telemetry

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/mcpwrap/mcpwrap/internal/upstream"
	"github.com/mcpwrap/mcpwrap/middleware"
)

// fakeConn hands out its reads in order and records its writes.
type fakeConn struct {
	reads  [][]byte
	writes [][]byte
	header []http.Header // the request header each write's ctx carried (upstream.WithRequestHeader)
}

func (c *fakeConn) ReadMessage() ([]byte, error) {
	if len(c.reads) == 0 {
		return nil, io.EOF
	}
	m := c.reads[0]
	c.reads = c.reads[1:]
	return m, nil
}

func (c *fakeConn) WriteMessage(ctx context.Context, msg []byte) error {
	c.writes = append(c.writes, append([]byte(nil), msg...))
	c.header = append(c.header, upstream.RequestHeader(ctx))
	return nil
}

func (c *fakeConn) Close() error { return nil }

const clientTrace = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

func attrs(kvs []attribute.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value.String()
	}
	return m
}

// A relayed call is a server span continuing the client's trace and a
// client span under it, whose context the upstream gets in _meta; a call
// mcpwrap rejects is a server span alone, with its status and error.type.
func TestTracesOfRelayedAndRejectedCalls(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	o := &Observer{Server: "fs", Transport: "pipe", HTTPUpstream: true, Traces: NewTraces(tp)}
	client := &fakeConn{reads: [][]byte{
		[]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read","arguments":{"p":1},"_meta":{"traceparent":"` + clientTrace + `","progressToken":7}}}`),
		[]byte(`{"jsonrpc":"2.0","id":"b","method":"tools/call","params":{"name":"wipe","arguments":{}}}`),
	}}
	up := &fakeConn{reads: [][]byte{[]byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":true}}`)}}
	cc := o.Client(nil, client)
	dial := o.Dial(func(context.Context) (middleware.Conn, error) { return up, nil })
	uc, err := dial(t.Context())
	require.NoError(t, err)

	msg, err := cc.ReadMessage()
	require.NoError(t, err)
	require.NoError(t, uc.WriteMessage(t.Context(), msg))
	ans, err := uc.ReadMessage()
	require.NoError(t, err)
	require.NoError(t, cc.WriteMessage(t.Context(), ans))
	_, err = cc.ReadMessage()
	require.NoError(t, err)
	require.NoError(t, cc.WriteMessage(t.Context(), []byte(`{"jsonrpc":"2.0","id":"b","result":{"content":[],"isError":true,"_meta":{"status":"disabled_by_user","class":"permanent"}}}`)))
	_, err = cc.ReadMessage()
	require.True(t, errors.Is(err, io.EOF))

	spans := rec.Ended()
	byKind := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		byKind[s.Name()+"/"+s.SpanKind().String()] = s
	}
	server, client2, rejected := byKind["tools/call read/server"], byKind["tools/call read/client"], byKind["tools/call wipe/server"]
	require.NotNil(t, server, "spans: %v", byKind)
	require.NotNil(t, client2)
	require.NotNil(t, rejected)
	assert.Equal(t, "0af7651916cd43dd8448eb211c80319c", server.SpanContext().TraceID().String(), "the client's trace continues")
	assert.Equal(t, "b7ad6b7169203331", server.Parent().SpanID().String())
	assert.Equal(t, server.SpanContext().SpanID(), client2.Parent().SpanID())
	assert.Equal(t, map[string]string{
		"mcp.method.name": "tools/call", "jsonrpc.request.id": "1", "mcpwrap.server": "fs", "gen_ai.operation.name": "execute_tool",
		"gen_ai.tool.name": "read", "network.transport": "pipe", "error.type": "tool_error",
	}, attrs(server.Attributes()))
	assert.Equal(t, "tool_error", attrs(client2.Attributes())["error.type"])
	ra := attrs(rejected.Attributes())
	assert.Equal(t, "tool_error", ra["error.type"])
	assert.Equal(t, "disabled_by_user", ra["mcpwrap.status"])
	assert.Equal(t, "b", ra["jsonrpc.request.id"])

	// The upstream got mcpwrap's client span as its parent, the rest of _meta kept.
	var sent struct {
		Params struct {
			Arguments json.RawMessage
			Meta      map[string]any `json:"_meta"`
		}
	}
	require.NoError(t, json.Unmarshal(up.writes[0], &sent))
	tp2 := sent.Params.Meta["traceparent"].(string)
	assert.Equal(t, "00-0af7651916cd43dd8448eb211c80319c-"+client2.SpanContext().SpanID().String()+"-01", tp2)
	assert.Equal(t, float64(7), sent.Params.Meta["progressToken"])
	assert.Equal(t, http.Header{"Traceparent": {tp2}}, up.header[0], "a remote upstream's request gets it as a header too")
	assert.JSONEq(t, `{"p":1}`, string(sent.Params.Arguments))
}

// Without traces the upstream gets the client's bytes.
func TestUntracedRelayKeepsBytes(t *testing.T) {
	o := &Observer{Server: "fs", Transport: "pipe"}
	in := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read","_meta":{"traceparent":"` + clientTrace + `"}}}`)
	up := &fakeConn{}
	cc := o.Client(nil, &fakeConn{reads: [][]byte{in}})
	uc, err := o.Dial(func(context.Context) (middleware.Conn, error) { return up, nil })(t.Context())
	require.NoError(t, err)
	msg, err := cc.ReadMessage()
	require.NoError(t, err)
	require.NoError(t, uc.WriteMessage(t.Context(), msg))
	assert.Equal(t, string(in), string(up.writes[0]))
	assert.Nil(t, up.header[0], "no header added")
}

// A traced request to a stdio upstream carries the trace context in its
// _meta only: there is no HTTP request to put headers on.
func TestTracedPipeUpstreamGetsNoHeader(t *testing.T) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tracetest.NewSpanRecorder()))
	o := &Observer{Server: "fs", Transport: "pipe", Traces: NewTraces(tp)}
	up := &fakeConn{}
	cc := o.Client(nil, &fakeConn{reads: [][]byte{[]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read"}}`)}})
	uc, err := o.Dial(func(context.Context) (middleware.Conn, error) { return up, nil })(t.Context())
	require.NoError(t, err)
	msg, err := cc.ReadMessage()
	require.NoError(t, err)
	require.NoError(t, uc.WriteMessage(t.Context(), msg))
	assert.Contains(t, string(up.writes[0]), `"_meta":{"traceparent":"00-`)
	assert.Nil(t, up.header[0])
}
