//lint:file-ignore SA1019 the fixture exercises sampling, deprecated in the 2026-07-28 draft but still served.

package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/internal/framing"
	"github.com/mcpwrap/mcpwrap/internal/syncbuf"
	"github.com/mcpwrap/mcpwrap/middleware"
	"github.com/mcpwrap/mcpwrap/resilience"
)

// waitLimit guards every wait on the connection: a hung test fails instead
// of timing out the whole package. It is never how tests synchronise.
const waitLimit = 10 * time.Second

const initializeRequest = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"sampling":{}},"clientInfo":{"name":"remote-test","version":"1.0"}}}`

// seenRequest is one HTTP request as the server received it.
type seenRequest struct {
	Method string
	Header http.Header
	Body   string
}

// recorder wraps an MCP HTTP handler, records every request and signals
// when the first GET stream has flushed its headers: from then on the
// go-sdk server delivers its own notifications on that stream.
type recorder struct {
	next http.Handler

	mu   sync.Mutex
	seen []seenRequest

	streamOnce sync.Once
	streamOpen chan struct{}
}

func newRecorder(next http.Handler) *recorder {
	return &recorder{next: next, streamOpen: make(chan struct{})}
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	req.Body = io.NopCloser(bytes.NewReader(body))
	r.mu.Lock()
	r.seen = append(r.seen, seenRequest{Method: req.Method, Header: req.Header.Clone(), Body: string(body)})
	r.mu.Unlock()
	if req.Method == http.MethodGet && req.URL.Query().Get("sessionid") == "" {
		w = &flushSignal{ResponseWriter: w, once: &r.streamOnce, ch: r.streamOpen}
	}
	r.next.ServeHTTP(w, req)
}

func (r *recorder) requests() []seenRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]seenRequest(nil), r.seen...)
}

// flushSignal closes ch at its first flush.
type flushSignal struct {
	http.ResponseWriter
	once *sync.Once
	ch   chan struct{}
}

func (w *flushSignal) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
	w.once.Do(func() { close(w.ch) })
}

func (w *flushSignal) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// rpcMessage is the part of a JSON-RPC message the tests look at.
type rpcMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// peer drives a RemoteConn the way the relay does: one goroutine reads,
// the test writes.
type peer struct {
	t     *testing.T
	conn  *RemoteConn
	items chan inbound
}

func newPeer(t *testing.T, conn *RemoteConn) *peer {
	t.Helper()
	p := &peer{t: t, conn: conn, items: make(chan inbound)}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			msg, err := conn.ReadMessage()
			select {
			case p.items <- inbound{msg: bytes.Clone(msg), err: err}:
			case <-stop:
				return
			}
			if _, failed := errors.AsType[*middleware.RequestFailedError](err); err != nil && !failed && !errors.Is(err, framing.ErrLineTooLong) {
				return
			}
		}
	}()
	t.Cleanup(func() {
		close(stop)
		require.NoError(t, conn.Close())
		<-done
	})
	return p
}

func dial(t *testing.T, url string) *RemoteConn {
	t.Helper()
	conn, err := DialRemote(t.Context(), Remote{URL: url, Header: http.Header{"X-Api-Key": {"s3cret"}}})
	require.NoError(t, err)
	return conn
}

func (p *peer) send(msg string) {
	p.t.Helper()
	require.NoError(p.t, p.conn.WriteMessage(p.t.Context(), []byte(msg)))
}

// next returns the next message from the server.
func (p *peer) next() ([]byte, rpcMessage) {
	p.t.Helper()
	select {
	case in := <-p.items:
		require.NoError(p.t, in.err, "reading from the server")
		var m rpcMessage
		require.NoError(p.t, json.Unmarshal(in.msg, &m), "message %s", in.msg)
		return in.msg, m
	case <-time.After(waitLimit):
		p.t.Fatal("no message from the server")
	}
	return nil, rpcMessage{}
}

// readErr returns the next read error, failing on a message.
func (p *peer) readErr() error {
	p.t.Helper()
	select {
	case in := <-p.items:
		require.Error(p.t, in.err, "unexpected message %s", in.msg)
		return in.err
	case <-time.After(waitLimit):
		p.t.Fatal("no error from the connection")
	}
	return nil
}

// call sends a request and returns its result.
func (p *peer) call(id int, method, params string) json.RawMessage {
	p.t.Helper()
	p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params))
	_, m := p.next()
	require.Equal(p.t, fmt.Sprint(id), string(m.ID), "answer to %s", method)
	require.Nil(p.t, m.Error, "error from %s", method)
	return m.Result
}

// handshake initialises the session and returns the negotiated version.
func (p *peer) handshake() string {
	p.t.Helper()
	var init struct{ ProtocolVersion string }
	require.NoError(p.t, json.Unmarshal(p.call(1, "initialize", initializeRequestParams()), &init))
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return init.ProtocolVersion
}

func initializeRequestParams() string {
	var req struct{ Params json.RawMessage }
	if err := json.Unmarshal([]byte(initializeRequest), &req); err != nil {
		panic(err)
	}
	return string(req.Params)
}

func streamableServer(t *testing.T, srv *mcp.Server, opts *mcp.StreamableHTTPOptions) (*httptest.Server, *recorder) {
	t.Helper()
	rec := newRecorder(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, opts))
	ts := httptest.NewServer(rec)
	t.Cleanup(ts.Close)
	return ts, rec
}

// fixture is the MCP server behind the test endpoints: a tool, a tool that
// asks the client's model (sampling), a prompt and a resource.
func fixture() *mcp.Server {
	type textInput struct {
		Text string `json:"text"`
	}
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "remote-fixture", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echoes its text."},
		func(_ context.Context, _ *mcp.CallToolRequest, in textInput) (*mcp.CallToolResult, any, error) {
			return text(in.Text), nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "ask_llm", Description: "Asks the client's model."},
		func(ctx context.Context, req *mcp.CallToolRequest, in textInput) (*mcp.CallToolResult, any, error) {
			res, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{
				MaxTokens: 10,
				Messages:  []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: in.Text}}},
			})
			if err != nil {
				return nil, nil, err
			}
			answer, _ := res.Content.(*mcp.TextContent)
			return text(fmt.Sprintf("the model (%s) said: %s", res.Model, answer.Text)), nil, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "greet", Arguments: []*mcp.PromptArgument{{Name: "who", Required: true}}},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user",
				Content: &mcp.TextContent{Text: "Hello, " + req.Params.Arguments["who"]}}}}, nil
		})
	s.AddResource(&mcp.Resource{URI: "demo://readme", Name: "readme", MIMEType: "text/plain"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "mcpwrap demo"}}}, nil
		})
	return s
}

// textOf returns the first text content of a tool result or prompt message.
func textOf(t *testing.T, result json.RawMessage) string {
	t.Helper()
	var r struct {
		Content []struct{ Text string } `json:"content"`
	}
	require.NoError(t, json.Unmarshal(result, &r))
	require.NotEmpty(t, r.Content, "result %s", result)
	return r.Content[0].Text
}

func TestRemoteStreamableRoundTrip(t *testing.T) {
	ts, rec := streamableServer(t, fixture(), nil)
	conn := dial(t, ts.URL)
	p := newPeer(t, conn)

	assert.Equal(t, "2025-06-18", p.handshake())
	assert.Equal(t, TransportStreamableHTTP, conn.Transport())
	assert.Equal(t, "2025-06-18", conn.ProtocolVersion())

	var list struct{ Tools []struct{ Name string } }
	require.NoError(t, json.Unmarshal(p.call(2, "tools/list", `{}`), &list))
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	assert.Contains(t, names, "echo")

	assert.Equal(t, "hello", textOf(t, p.call(3, "tools/call", `{"name":"echo","arguments":{"text":"hello"}}`)))

	var read struct{ Contents []struct{ URI, Text string } }
	require.NoError(t, json.Unmarshal(p.call(4, "resources/read", `{"uri":"demo://readme"}`), &read))
	require.Len(t, read.Contents, 1)
	assert.Equal(t, "mcpwrap demo", read.Contents[0].Text)

	var prompt struct {
		Messages []struct{ Content struct{ Text string } }
	}
	require.NoError(t, json.Unmarshal(p.call(5, "prompts/get", `{"name":"greet","arguments":{"who":"Ada"}}`), &prompt))
	require.Len(t, prompt.Messages, 1)
	assert.Equal(t, "Hello, Ada", prompt.Messages[0].Content.Text)

	// Wait for the standalone stream so that its GET is among the requests.
	waitFor(t, rec.streamOpen, "the standalone GET stream")
	require.NoError(t, conn.Close())

	seen := rec.requests()
	require.NotEmpty(t, seen)
	assert.Empty(t, seen[0].Header.Get("Mcp-Protocol-Version"), "initialize carries its version in the body")
	methods := map[string]int{}
	for i, req := range seen[1:] {
		methods[req.Method]++
		assert.Equal(t, "2025-06-18", req.Header.Get("Mcp-Protocol-Version"), "request %d: %s %s", i+1, req.Method, req.Body)
		assert.NotEmpty(t, req.Header.Get("Mcp-Session-Id"), "request %d: %s %s", i+1, req.Method, req.Body)
	}
	for _, req := range seen {
		assert.Equal(t, "s3cret", req.Header.Get("X-Api-Key"), "configured headers go on every request")
	}
	assert.Equal(t, 1, methods[http.MethodGet], "one standalone stream")
	assert.Equal(t, 1, methods[http.MethodDelete], "Close ends the session")
}

func TestRemoteSamplingRoundTrip(t *testing.T) {
	ts, _ := streamableServer(t, fixture(), nil)
	p := newPeer(t, dial(t, ts.URL))
	p.handshake()

	p.send(`{"jsonrpc":"2.0","id":"call-1","method":"tools/call","params":{"name":"ask_llm","arguments":{"text":"meaning of life?"}}}`)
	_, req := p.next()
	require.Equal(t, "sampling/createMessage", req.Method)
	// The client answers while its tools/call is still open.
	p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"role":"assistant","content":{"type":"text","text":"42"},"model":"fake-model"}}`, req.ID))

	_, res := p.next()
	require.Equal(t, `"call-1"`, string(res.ID))
	require.Nil(t, res.Error)
	assert.Equal(t, "the model (fake-model) said: 42", textOf(t, res.Result))
}

func TestRemoteServerInitiatedNotificationUsesStandaloneStream(t *testing.T) {
	srv := fixture()
	ts, rec := streamableServer(t, srv, nil)
	p := newPeer(t, dial(t, ts.URL))
	p.handshake()
	waitFor(t, rec.streamOpen, "the standalone GET stream")

	srv.AddTool(&mcp.Tool{Name: "late", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})

	_, m := p.next()
	assert.Equal(t, "notifications/tools/list_changed", m.Method)
}

func TestRemoteStatelessJSONServer(t *testing.T) {
	// JSON answers instead of SSE, no session, no GET stream (405).
	ts, rec := streamableServer(t, fixture(), &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	conn := dial(t, ts.URL)
	p := newPeer(t, conn)
	p.handshake()
	assert.Equal(t, "hi", textOf(t, p.call(2, "tools/call", `{"name":"echo","arguments":{"text":"hi"}}`)))
	require.NoError(t, conn.Close())
	for _, req := range rec.requests() {
		assert.NotEqual(t, http.MethodDelete, req.Method, "no session, nothing to delete")
	}
}

func TestRemoteLegacySSEFallback(t *testing.T) {
	srv := fixture()
	rec := newRecorder(mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	ts := httptest.NewServer(rec)
	t.Cleanup(ts.Close)
	conn := dial(t, ts.URL)
	p := newPeer(t, conn)

	assert.Equal(t, "2025-06-18", p.handshake())
	assert.Equal(t, TransportSSE, conn.Transport())
	assert.Equal(t, "legacy", textOf(t, p.call(2, "tools/call", `{"name":"echo","arguments":{"text":"legacy"}}`)))

	// Sampling works too: the server's request arrives on the SSE stream.
	p.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"ask_llm","arguments":{"text":"q"}}}`)
	_, req := p.next()
	require.Equal(t, "sampling/createMessage", req.Method)
	p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"role":"assistant","content":{"type":"text","text":"a"},"model":"m"}}`, req.ID))
	_, res := p.next()
	assert.Equal(t, "the model (m) said: a", textOf(t, res.Result))

	seen := rec.requests()
	require.GreaterOrEqual(t, len(seen), 3)
	assert.Equal(t, http.MethodPost, seen[0].Method, "streamable HTTP is tried first")
	assert.Equal(t, http.MethodGet, seen[1].Method, "then the legacy stream")
	for _, req := range seen {
		assert.Equal(t, "s3cret", req.Header.Get("X-Api-Key"))
	}
}

// A client that opens with server/discover (the era bridge does, for a
// remote) still reaches a legacy HTTP+SSE server: the go-sdk's refuses the
// discover's POST with a bare 400, which leaves the transport undecided,
// and the initialize after it falls back to the legacy stream.
func TestRemoteLegacySSEFallbackAfterDiscover(t *testing.T) {
	srv := fixture()
	rec := newRecorder(mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	ts := httptest.NewServer(rec)
	t.Cleanup(ts.Close)
	conn := dial(t, ts.URL)
	p := newPeer(t, conn)

	p.send(`{"jsonrpc":"2.0","id":7,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`)
	_, m := p.next()
	require.NotNil(t, m.Error, "an error the client falls back on")
	assert.Equal(t, "", conn.Transport(), "undecided: a bare 400 is also a legacy server's")
	assert.Equal(t, "2025-06-18", p.handshake())
	assert.Equal(t, TransportSSE, conn.Transport())
	assert.Equal(t, "legacy", textOf(t, p.call(2, "tools/call", `{"name":"echo","arguments":{"text":"legacy"}}`)))
}

func TestRemoteFirstContactHTTPStatus(t *testing.T) {
	tests := []struct {
		name   string
		status int
		class  resilience.Class
	}{
		{name: "unauthorized", status: http.StatusUnauthorized, class: resilience.Denied},
		{name: "forbidden", status: http.StatusForbidden, class: resilience.Denied},
		{name: "not found", status: http.StatusNotFound, class: resilience.Permanent},
		{name: "unavailable", status: http.StatusServiceUnavailable, class: resilience.Transient},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := newRecorder(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Retry-After", "7")
				http.Error(w, http.StatusText(tt.status), tt.status)
			}))
			ts := httptest.NewServer(rec)
			t.Cleanup(ts.Close)
			conn := dial(t, ts.URL)
			p := newPeer(t, conn)

			err := conn.WriteMessage(t.Context(), []byte(initializeRequest))
			status, ok := errors.AsType[*resilience.HTTPStatusError](err)
			require.True(t, ok, "want an HTTPStatusError, got %v", err)
			assert.Equal(t, tt.status, status.StatusCode)
			assert.Equal(t, tt.class, resilience.Classify(err).Class)
			assert.NotContains(t, err.Error(), "s3cret")
			assert.ErrorIs(t, p.readErr(), status, "the reader sees the same failure")
			assert.ErrorIs(t, conn.WriteMessage(t.Context(), []byte(initializeRequest)), status, "and so do later writes")
			if tt.class == resilience.Transient {
				assert.Equal(t, 7*time.Second, status.RetryAfter)
			}
		})
	}
}

func TestRemoteFirstContactJSONRPCErrorIsAnAnswer(t *testing.T) {
	// A 2026-07-28 stateful server answers server/discover with HTTP 400 and
	// a JSON-RPC error; the client needs that error to fall back.
	const answer = `{"jsonrpc":"2.0","id":7,"error":{"code":-32022,"message":"unsupported protocol version"}}`
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, answer)
	}))
	t.Cleanup(ts.Close)
	conn := dial(t, ts.URL)
	p := newPeer(t, conn)

	p.send(`{"jsonrpc":"2.0","id":7,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`)
	raw, _ := p.next()
	assert.Equal(t, answer, string(raw))
	assert.Equal(t, TransportStreamableHTTP, conn.Transport())
}

func TestRemoteDiscoverRefusedWithoutAnAnswerFallsBack(t *testing.T) {
	// A session-era streamable HTTP server refuses server/discover with a
	// bare 400: the client must get an error for it (and fall back to
	// initialize on the same transport), not a failed connection.
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte(`"server/discover"`)) {
			http.Error(w, "Bad Request: Server not initialized", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":2,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}`)
	}))
	t.Cleanup(ts.Close)
	conn := dial(t, ts.URL)
	p := newPeer(t, conn)

	p.send(`{"jsonrpc":"2.0","id":7,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`)
	_, m := p.next()
	assert.Equal(t, "7", string(m.ID))
	require.NotNil(t, m.Error, "an error the client falls back on")
	assert.Contains(t, m.Error.Message, "HTTP 400")
	assert.Equal(t, -32601, m.Error.Code, "method not found: the client falls back")
	p.call(2, "initialize", initializeRequestParams())
	assert.Equal(t, TransportStreamableHTTP, conn.Transport())
}

func TestRemoteConnectionRefusedIsPermanent(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())

	conn := dial(t, "http://"+addr+"/mcp")
	p := newPeer(t, conn)
	err = conn.WriteMessage(t.Context(), []byte(initializeRequest))
	require.ErrorIs(t, err, syscall.ECONNREFUSED)
	assert.Equal(t, resilience.Permanent, resilience.Classify(err).Class)
	assert.ErrorIs(t, p.readErr(), syscall.ECONNREFUSED)
}

func TestRemoteDNSFailureIsPermanent(t *testing.T) {
	transport := &http.Transport{DialContext: func(_ context.Context, _, addr string) (net.Conn, error) {
		host, _, _ := net.SplitHostPort(addr)
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}}
	conn, err := DialRemote(t.Context(), Remote{
		URL:        "https://mcp.invalid/mcp?token=hidden",
		HTTPClient: &http.Client{Transport: transport},
	})
	require.NoError(t, err)
	newPeer(t, conn)

	err = conn.WriteMessage(t.Context(), []byte(initializeRequest))
	dnsErr, ok := errors.AsType[*net.DNSError](err)
	require.True(t, ok, "want a DNSError, got %v", err)
	assert.Equal(t, "mcp.invalid", dnsErr.Name)
	assert.Equal(t, resilience.Permanent, resilience.Classify(err).Class)
	assert.NotContains(t, err.Error(), "hidden", "the query may hold a credential")
}

func TestRemoteBytesPassThrough(t *testing.T) {
	// A hand-written server, to control the exact bytes each way.
	const (
		request = `{"id": 1.0 ,"jsonrpc":"2.0","method":"x/unknown","params":{"b":2,"a":[1,2]},"x-extra":true}`
		answer  = `{"x-extra" : "kept","jsonrpc":"2.0","result":{"z":1,"a":"\u00e9"},"id":1.0}`
	)
	var got []byte
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, answer+"\n")
	}))
	t.Cleanup(ts.Close)
	p := newPeer(t, dial(t, ts.URL))

	p.send(request)
	raw, _ := p.next()
	assert.Equal(t, request, string(got), "the server gets the client's bytes")
	assert.Equal(t, answer, string(raw), "the client gets the server's bytes")
}

func TestRemoteMultiLineMessagesAreCompacted(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\ndata:  \"id\":1,\"result\":{\"s\":\"a b\"}}\n\n")
	}))
	t.Cleanup(ts.Close)
	p := newPeer(t, dial(t, ts.URL))
	p.send(initializeRequest)
	raw, _ := p.next()
	assert.Equal(t, `{"jsonrpc":"2.0","id":1,"result":{"s":"a b"}}`, string(raw))
}

func TestRemoteStreamEndedWithoutAnswer(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n")
	}))
	t.Cleanup(ts.Close)
	p := newPeer(t, dial(t, ts.URL))
	p.send(`{"jsonrpc":"2.0","id":"r1","method":"tools/call","params":{"name":"x"}}`)

	_, progress := p.next()
	assert.Equal(t, "notifications/progress", progress.Method)
	failed := p.requestFailed()
	assert.Equal(t, `"r1"`, string(failed.ID), "the request is never left unanswered")
	assert.ErrorIs(t, failed, io.ErrUnexpectedEOF, "its answer was cut off in transit")
	assert.Equal(t, resilience.Transient, resilience.Classify(failed).Class)
}

// requestFailed returns the next read error, which must report a request
// whose answer the transport lost.
func (p *peer) requestFailed() *middleware.RequestFailedError {
	p.t.Helper()
	err := p.readErr()
	failed, ok := errors.AsType[*middleware.RequestFailedError](err)
	require.True(p.t, ok, "want a request's failure, got %v", err)
	return failed
}

// TestRemoteCutAnswerFailsItsRequest: an answer cut off after its headers
// (a JSON body, an SSE stream without an event id to resume from), or a
// request refused with a status and no JSON-RPC answer, fails the request
// with the transport's typed error, not a JSON-RPC error standing for it
// (-32603, which a load would take for a server that refused to load: "check
// its version"). The connection goes on.
func TestRemoteCutAnswerFailsItsRequest(t *testing.T) {
	tests := []struct {
		name  string
		serve func(w http.ResponseWriter)
		is    error // in the failure's chain
		class resilience.Class
	}{
		{
			name: "a JSON body cut short",
			serve: func(w http.ResponseWriter) {
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Content-Length", "100")
				io.WriteString(w, `{"jsonrpc":"2.0","id":2,`)
			},
			is: io.ErrUnexpectedEOF, class: resilience.Transient,
		},
		{
			name: "an SSE stream cut mid-event",
			serve: func(w http.ResponseWriter) {
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, `data: {"jsonrpc":"2.0","id":2,`)
				http.NewResponseController(w).Flush()
				panic(http.ErrAbortHandler)
			},
			is: io.ErrUnexpectedEOF, class: resilience.Transient,
		},
		{
			name: "an SSE stream ended without the answer",
			serve: func(w http.ResponseWriter) {
				w.Header().Set("Content-Type", "text/event-stream")
			},
			is: io.ErrUnexpectedEOF, class: resilience.Transient,
		},
		{
			name:  "a 503 without a JSON-RPC answer",
			serve: func(w http.ResponseWriter) { http.Error(w, "<html>busy</html>", http.StatusServiceUnavailable) },
			class: resilience.Transient,
		},
		{
			name:  "a 403 without a JSON-RPC answer",
			serve: func(w http.ResponseWriter) { http.Error(w, "no", http.StatusForbidden) },
			class: resilience.Denied,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				if bytes.Contains(body, []byte(`"initialize"`)) {
					w.Header().Set("Content-Type", "application/json")
					io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18"}}`)
					return
				}
				tt.serve(w)
			}))
			t.Cleanup(ts.Close)
			p := newPeer(t, dial(t, ts.URL))
			p.send(initializeRequest)
			p.next()
			p.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)

			failed := p.requestFailed()
			assert.Equal(t, "2", string(failed.ID))
			if tt.is != nil {
				assert.ErrorIs(t, failed, tt.is)
			}
			assert.Equal(t, tt.class, resilience.Classify(failed).Class, "classified from %v", failed)
			assert.NotContains(t, failed.Error(), "busy", "a body is never quoted")

			// The connection goes on.
			p.send(initializeRequest)
			_, m := p.next()
			assert.Equal(t, "1", string(m.ID))
		})
	}
}

func TestRemoteResumesACutResponseStream(t *testing.T) {
	// SEP-1699: the server primes the stream with an event id, closes it,
	// and expects a GET with Last-Event-ID to deliver the answer.
	var mu sync.Mutex
	var lastEventID string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		switch r.Method {
		case http.MethodPost:
			io.WriteString(w, "id: ev-1\nretry: 1\ndata:\n\n")
		case http.MethodGet:
			mu.Lock()
			lastEventID = r.Header.Get("Last-Event-ID")
			mu.Unlock()
			io.WriteString(w, "id: ev-2\ndata: {\"jsonrpc\":\"2.0\",\"id\":9,\"result\":{}}\n\n")
		}
	}))
	t.Cleanup(ts.Close)
	p := newPeer(t, dial(t, ts.URL))
	p.send(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"slow"}}`)

	raw, _ := p.next()
	assert.Equal(t, `{"jsonrpc":"2.0","id":9,"result":{}}`, string(raw))
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, "ev-1", lastEventID)
}

func TestRemoteSessionLostEndsConnection(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte(`"initialize"`)) {
			w.Header().Set("Mcp-Session-Id", "sess-1")
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18"}}`)
			return
		}
		http.Error(w, "session not found", http.StatusNotFound)
	}))
	t.Cleanup(ts.Close)
	p := newPeer(t, dial(t, ts.URL))
	p.send(initializeRequest)
	p.next()
	p.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)

	err := p.readErr()
	assert.ErrorIs(t, err, mcp.ErrSessionMissing)
	assert.Equal(t, resilience.Transient, resilience.Classify(err).Class)
}

func TestRemoteOversizedMessageIsDropped(t *testing.T) {
	big := `{"jsonrpc":"2.0","method":"notifications/message","params":{"pad":"` + strings.Repeat("x", 300) + `"}}`
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: "+big+"\n\n")
		io.WriteString(w, "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n")
	}))
	t.Cleanup(ts.Close)
	conn, err := DialRemote(t.Context(), Remote{URL: ts.URL, MaxMessageBytes: 100})
	require.NoError(t, err)
	p := newPeer(t, conn)
	p.send(`{"jsonrpc":"2.0","id":1,"method":"m"}`)

	err = p.readErr()
	require.ErrorIs(t, err, middleware.ErrMessageTooLarge)
	tooLong, ok := errors.AsType[*middleware.MessageTooLargeError](err)
	require.True(t, ok, "want a MessageTooLargeError, got %v", err)
	assert.Equal(t, int64(len(big)), tooLong.Size)
	assert.Equal(t, 100, tooLong.Limit)
	assert.Equal(t, "notifications/message", tooLong.Method, "read from the message's head")
	_, m := p.next()
	assert.Equal(t, "1", string(m.ID), "the stream goes on after a dropped message")
}

// An oversized JSON answer, of which the conn keeps only the head, still
// names the request it answered, so the relay can answer that request.
func TestRemoteOversizedAnswerNamesItsRequest(t *testing.T) {
	big := `{"jsonrpc":"2.0","id":1,"result":{"pad":"` + strings.Repeat("x", 300) + `"}}`
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, big)
	}))
	t.Cleanup(ts.Close)
	conn, err := DialRemote(t.Context(), Remote{URL: ts.URL, MaxMessageBytes: 100})
	require.NoError(t, err)
	p := newPeer(t, conn)
	p.send(`{"jsonrpc":"2.0","id":1,"method":"m"}`)

	err = p.readErr()
	tooLong, ok := errors.AsType[*middleware.MessageTooLargeError](err)
	require.True(t, ok, "want a MessageTooLargeError, got %v", err)
	assert.Equal(t, "1", string(tooLong.ID))
	assert.Empty(t, tooLong.Method, "an answer has no method")
}

func TestRemoteCloseUnblocksAndIsIdempotent(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Read whole, so that the server notices the client leave: else a
		// POST that reached it before Close holds ts.Close forever.
		io.Copy(io.Discard, r.Body)
		<-r.Context().Done() // never answers
	}))
	t.Cleanup(ts.Close)
	conn := dial(t, ts.URL)
	p := newPeer(t, conn)

	written := make(chan error, 1)
	go func() { written <- conn.WriteMessage(t.Context(), []byte(initializeRequest)) }()
	require.NoError(t, conn.Close())
	require.NoError(t, conn.Close())

	select {
	case err := <-written:
		if err != nil {
			assert.ErrorIs(t, err, ErrRemoteClosed)
		}
	case <-time.After(waitLimit):
		t.Fatal("Close did not unblock WriteMessage")
	}
	assert.ErrorIs(t, p.readErr(), ErrRemoteClosed)
	assert.ErrorIs(t, conn.WriteMessage(t.Context(), []byte(initializeRequest)), net.ErrClosed)
}

func TestDialRemoteRejectsBadURLs(t *testing.T) {
	tests := []struct {
		name string
		url  string
		want string // the error's cause, the URL not repeated
	}{
		{name: "no scheme", url: "mcp.example.com/mcp", want: `--url: scheme "": want an http or https URL`},
		{name: "host taken for a scheme", url: "localhost:8931/mcp", want: `--url: scheme "localhost": want an http or https URL`},
		{name: "other scheme", url: "ftp://user:pw@example.com/", want: `--url: scheme "ftp": want an http or https URL`},
		{name: "no host", url: "http:///mcp", want: "--url: no host; want an http or https URL with a host"},
		{name: "unparsable", url: "http://[::1", want: "--url: not a URL; want an http or https URL with a host"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DialRemote(t.Context(), Remote{URL: tt.url})
			require.ErrorIs(t, err, resilience.ErrConfig)
			assert.Equal(t, "invalid configuration: "+tt.want, err.Error())
			assert.NotContains(t, err.Error(), "pw")
		})
	}
}

func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(waitLimit):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// relay connects a go-sdk client to conn the way middleware.Session does:
// newline-delimited JSON-RPC on one side, conn on the other.
func relay(t *testing.T, conn *RemoteConn) mcp.Transport {
	t.Helper()
	fromClient, clientOut := io.Pipe()
	clientIn, toClient := io.Pipe()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		r := framing.NewReader(fromClient, 0)
		for {
			msg, err := r.Read()
			if err != nil {
				return
			}
			if err := conn.WriteMessage(t.Context(), msg); err != nil {
				fromClient.CloseWithError(err)
				return
			}
		}
	}()
	go func() {
		defer wg.Done()
		w := framing.NewWriter(toClient)
		for {
			msg, err := conn.ReadMessage()
			if err == nil {
				err = w.Write(msg)
			}
			if err != nil {
				toClient.CloseWithError(err)
				return
			}
		}
	}()
	t.Cleanup(func() {
		require.NoError(t, conn.Close())
		fromClient.Close()
		wg.Wait()
	})
	return &mcp.IOTransport{Reader: clientIn, Writer: clientOut}
}

func TestRemoteWithGoSDKClient(t *testing.T) {
	tests := []struct {
		name    string
		opts    *mcp.StreamableHTTPOptions
		version string
	}{
		// The client opens with server/discover (2026-07-28); a stateful
		// server refuses it with a JSON-RPC error over HTTP 400 and the
		// client falls back to initialize.
		{name: "stateful", opts: nil, version: "2025-11-25"},
		// A stateless server speaks 2026-07-28: every request carries its
		// version in _meta and needs Mcp-Method (and Mcp-Name) headers.
		{name: "stateless", opts: &mcp.StreamableHTTPOptions{Stateless: true}, version: "2026-07-28"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := fixture()
			ts, _ := streamableServer(t, srv, tt.opts)
			conn := dial(t, ts.URL)

			client := mcp.NewClient(&mcp.Implementation{Name: "go-sdk-client", Version: "1.0"}, nil)
			session, err := client.Connect(t.Context(), relay(t, conn), nil)
			require.NoError(t, err)
			defer session.Close()
			assert.Equal(t, tt.version, session.InitializeResult().ProtocolVersion)

			res, err := session.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "via go-sdk"}})
			require.NoError(t, err)
			require.Len(t, res.Content, 1)
			assert.Equal(t, "via go-sdk", res.Content[0].(*mcp.TextContent).Text)

			prompt, err := session.GetPrompt(t.Context(), &mcp.GetPromptParams{Name: "greet", Arguments: map[string]string{"who": "Go"}})
			require.NoError(t, err)
			assert.Equal(t, "Hello, Go", prompt.Messages[0].Content.(*mcp.TextContent).Text)

			read, err := session.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "demo://readme"})
			require.NoError(t, err)
			assert.Equal(t, "mcpwrap demo", read.Contents[0].Text)
		})
	}
}

// answerInitializeOnly plays a streamable HTTP server's POST side for tests
// of the standalone stream: initialize opens session "sess-1", anything
// else is accepted.
func answerInitializeOnly(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if !bytes.Contains(body, []byte(`"initialize"`)) {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	w.Header().Set("Mcp-Session-Id", "sess-1")
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25"}}`)
}

func TestRemoteStandaloneStreamReopens(t *testing.T) {
	// The server ends the standalone stream after one event; the connection
	// reopens it from the last event id and gets the next one.
	var mu sync.Mutex
	var gets []string // Last-Event-ID of each GET
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodPost:
			answerInitializeOnly(w, r)
		case http.MethodGet:
			mu.Lock()
			gets = append(gets, r.Header.Get("Last-Event-ID"))
			n := len(gets)
			mu.Unlock()
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "id: s%d\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/n%d\"}\n\n", n, n)
			if n > 1 {
				w.(http.Flusher).Flush()
				<-r.Context().Done()
			}
		case http.MethodDelete:
			w.WriteHeader(http.StatusNoContent)
		}
	}))
	t.Cleanup(ts.Close)
	conn := dial(t, ts.URL)
	conn.delay = func(int) time.Duration { return 0 }
	p := newPeer(t, conn)
	p.send(initializeRequest)
	p.next()
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	_, first := p.next()
	assert.Equal(t, "notifications/n1", first.Method)
	_, second := p.next()
	assert.Equal(t, "notifications/n2", second.Method)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"", "s1"}, gets)
}

func TestRemoteNeverLogsSecrets(t *testing.T) {
	var logs syncbuf.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	dialLogged := func(url string) *RemoteConn {
		conn, err := DialRemote(t.Context(), Remote{URL: url, Logger: logger,
			Header: http.Header{"Authorization": {"Bearer s3cret"}}})
		require.NoError(t, err)
		return conn
	}

	ts, rec := streamableServer(t, fixture(), nil)
	conn := dialLogged(ts.URL + "/?token=qtok")
	p := newPeer(t, conn)
	p.handshake()
	p.call(2, "tools/call", `{"name":"echo","arguments":{"text":"x"}}`)
	require.NoError(t, conn.Close())

	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "no", http.StatusUnauthorized)
	}))
	t.Cleanup(refusing.Close)
	conn = dialLogged(refusing.URL + "/?token=qtok")
	assert.Error(t, conn.WriteMessage(t.Context(), []byte(initializeRequest)))
	require.NoError(t, conn.Close())

	session := rec.requests()[1].Header.Get("Mcp-Session-Id")
	require.NotEmpty(t, session)
	require.NotEmpty(t, logs.String(), "the test must see some logs")
	for _, secret := range []string{"s3cret", "qtok", session} {
		assert.NotContains(t, logs.String(), secret)
	}
}

func TestRemoteRefusesRedirectsToAnotherOrigin(t *testing.T) {
	var leaked sync.Once
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Api-Key") != "" {
			leaked.Do(func() { t.Error("the configured header reached another origin") })
		}
	}))
	t.Cleanup(elsewhere.Close)
	ts := httptest.NewServer(http.RedirectHandler(elsewhere.URL, http.StatusTemporaryRedirect))
	t.Cleanup(ts.Close)

	conn := dial(t, ts.URL)
	newPeer(t, conn)
	err := conn.WriteMessage(t.Context(), []byte(initializeRequest))
	require.ErrorIs(t, err, ErrRemoteProtocol)
	assert.Equal(t, resilience.Permanent, resilience.Classify(err).Class)
}

// TestRemoteKeepsAPathTokenOutOfLogsAndErrors: a URL may carry its
// credential in the path (mcpwrap install moves such URLs into env for
// that reason), so logs and error texts name the server's origin only.
func TestRemoteKeepsAPathTokenOutOfLogsAndErrors(t *testing.T) {
	const token = "ptok-0123456789"
	ts, _ := streamableServer(t, fixture(), nil)
	missing := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(missing.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	refusedAddr := ln.Addr().String()
	require.NoError(t, ln.Close())

	tests := []struct {
		name    string
		url     string
		wantErr bool
	}{
		{name: "working session", url: ts.URL + "/" + token},
		{name: "404 at first contact", url: missing.URL + "/mcp/" + token + "/sse", wantErr: true},
		{name: "connection refused", url: "http://" + refusedAddr + "/mcp/" + token, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs syncbuf.Buffer
			logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			conn, err := DialRemote(t.Context(), Remote{URL: tt.url, Logger: logger})
			require.NoError(t, err)
			p := newPeer(t, conn)
			if tt.wantErr {
				err := conn.WriteMessage(t.Context(), []byte(initializeRequest))
				require.Error(t, err)
				assert.NotContains(t, err.Error(), token)
				assert.NotContains(t, resilience.Classify(err).Reason, token)
				assert.NotContains(t, p.readErr().Error(), token)
			} else {
				p.handshake()
				p.call(2, "tools/call", `{"name":"echo","arguments":{"text":"x"}}`)
			}
			require.NoError(t, conn.Close())
			require.NotEmpty(t, logs.String(), "the test must see some logs")
			assert.NotContains(t, logs.String(), token)
		})
	}
}

// TestRemoteStandaloneStreamBacksOffWhenIdle: a server that accepts the
// standalone GET stream but ends it at once, with nothing on it, must not
// be polled twice a second forever: reconnects without progress back off.
// A stream that delivers something resets the backoff.
func TestRemoteStandaloneStreamBacksOffWhenIdle(t *testing.T) {
	var gets atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodPost:
			answerInitializeOnly(w, r)
		case http.MethodGet:
			w.Header().Set("Content-Type", "text/event-stream")
			if gets.Add(1) == 3 { // the third stream carries a message
				io.WriteString(w, "id: e3\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/n\"}\n\n")
			}
		case http.MethodDelete:
			w.WriteHeader(http.StatusNoContent)
		}
	}))
	t.Cleanup(ts.Close)
	conn := dial(t, ts.URL)
	streaks := make(chan int, 16)
	conn.delay = func(n int) time.Duration {
		select {
		case streaks <- n:
		default:
		}
		return 0
	}
	p := newPeer(t, conn)
	p.send(initializeRequest)
	p.next()
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	_, m := p.next()
	require.Equal(t, "notifications/n", m.Method)

	var got []int
	for range 4 {
		select {
		case n := <-streaks:
			got = append(got, n)
		case <-time.After(waitLimit):
			t.Fatalf("only %d reconnects", len(got))
		}
	}
	assert.Equal(t, []int{1, 2, 0, 1}, got, "the backoff streak before each reconnect")
}

// A write whose context ends while the server holds its POST gives up: it
// returns the context's error, the POST is cancelled (the server sees its
// request end), and the connection stays usable.
func TestRemoteWriteMessageGivesUpWhenItsContextEnds(t *testing.T) {
	legacy := func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet:
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "event: endpoint\ndata: /messages\n\n")
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		case r.URL.Path == "/messages":
			w.WriteHeader(http.StatusAccepted) // answers would come on the stream
		default:
			w.WriteHeader(http.StatusNotFound) // no streamable HTTP here
		}
	}
	tests := []struct {
		name   string
		serve  http.HandlerFunc // every request but the held one
		before string           // sent first, if not empty
		held   string           // the message whose POST the server holds
		after  string           // sent once the held one was given up
		// transport is the one in use after: the first contact given up
		// left it to the next message to decide.
		transport string
	}{
		{
			name:      "the first contact",
			serve:     answerInitializeOnly,
			held:      `{"jsonrpc":"2.0","id":"hold","method":"initialize","params":{}}`,
			after:     initializeRequest,
			transport: TransportStreamableHTTP,
		},
		{
			name:      "a notification on a streamable HTTP session",
			serve:     answerInitializeOnly,
			before:    initializeRequest,
			held:      `{"jsonrpc":"2.0","method":"notifications/hold"}`,
			after:     `{"jsonrpc":"2.0","method":"notifications/other"}`,
			transport: TransportStreamableHTTP,
		},
		{
			name:      "a notification on the legacy transport",
			serve:     legacy,
			before:    initializeRequest,
			held:      `{"jsonrpc":"2.0","method":"notifications/hold"}`,
			after:     `{"jsonrpc":"2.0","method":"notifications/other"}`,
			transport: TransportSSE,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			arrived, stopped := make(chan struct{}), make(chan struct{})
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				if bytes.Contains(body, []byte(`hold"`)) {
					close(arrived)
					<-r.Context().Done()
					close(stopped)
					return
				}
				r.Body = io.NopCloser(bytes.NewReader(body))
				tt.serve(w, r)
			}))
			t.Cleanup(ts.Close)
			conn := dial(t, ts.URL)
			newPeer(t, conn)
			if tt.before != "" {
				require.NoError(t, conn.WriteMessage(t.Context(), []byte(tt.before)))
			}

			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			written := make(chan error, 1)
			go func() { written <- conn.WriteMessage(ctx, []byte(tt.held)) }()
			waitFor(t, arrived, "the held POST")
			cancel()
			select {
			case err := <-written:
				require.ErrorIs(t, err, context.Canceled)
			case <-time.After(waitLimit):
				t.Fatal("WriteMessage did not give up when its context ended")
			}
			waitFor(t, stopped, "the held POST to be cancelled")

			require.NoError(t, conn.WriteMessage(t.Context(), []byte(tt.after)), "the connection is still usable")
			assert.Equal(t, tt.transport, conn.Transport())
		})
	}
}

// A write waiting for its turn behind a send the server holds gives up
// when its context ends, without reaching the server.
func TestRemoteWriteMessageWaitingForItsTurnGivesUp(t *testing.T) {
	arrived := make(chan struct{})
	var posts atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // so that the server notices the client leave
		if posts.Add(1) == 1 {
			close(arrived)
		}
		<-r.Context().Done() // never answers
	}))
	t.Cleanup(ts.Close)
	conn := dial(t, ts.URL)
	newPeer(t, conn)
	first := make(chan error, 1)
	go func() { first <- conn.WriteMessage(t.Context(), []byte(initializeRequest)) }()
	waitFor(t, arrived, "the first POST")

	inner, cancel := context.WithCancel(t.Context())
	ctx := &watchedContext{Context: inner, waiting: make(chan struct{})}
	written := make(chan error, 1)
	go func() {
		written <- conn.WriteMessage(ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	}()
	waitFor(t, ctx.waiting, "the second write to wait")
	cancel()
	select {
	case err := <-written:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(waitLimit):
		t.Fatal("WriteMessage did not give up its wait for the send in progress")
	}
	require.NoError(t, conn.Close())
	<-first
	assert.Equal(t, int32(1), posts.Load(), "the given-up message never reached the server")
}

// watchedContext tells when a context's Done is first asked for: when a
// write begins to wait on it.
type watchedContext struct {
	context.Context
	waiting chan struct{}
	once    sync.Once
}

func (c *watchedContext) Done() <-chan struct{} {
	c.once.Do(func() { close(c.waiting) })
	return c.Context.Done()
}
