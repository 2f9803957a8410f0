//lint:file-ignore SA1019 the sampling test drives a go-sdk client whose sampling API is deprecated in the 2026-07-28 draft but still served.

package httpfront

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	acceptJSON = "application/json"
	acceptBoth = "application/json, text/event-stream"

	initializeBody  = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}`
	initializedBody = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
)

// testServer is a Server over the fake upstream, behind httptest.
type testServer struct {
	*httptest.Server
	front *Server
	up    *fakeUpstream
	// started and returned receive the X-Test-Tag header of each tagged
	// request when its handler starts and returns.
	started, returned chan string
}

func newTestServer(t *testing.T, configure func(*Server)) *testServer {
	t.Helper()
	up := newFakeUpstream()
	front := &Server{NewSession: up.session}
	if configure != nil {
		configure(front)
	}
	ts := &testServer{front: front, up: up, started: make(chan string, 16), returned: make(chan string, 16)}
	ts.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tag := r.Header.Get("X-Test-Tag")
		if tag != "" {
			ts.started <- tag
			defer func() { ts.returned <- tag }()
		}
		front.ServeHTTP(w, r)
	}))
	ts.Listener = ConnLimits{}.Listener(ts.Listener) // as mcpwrap serves it
	ts.Start()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		assert.NoError(t, front.Shutdown(ctx))
		ts.Close()
	})
	return ts
}

// request is one HTTP request to the test server; zero fields take
// defaults (POST, Accept: application/json).
type request struct {
	Method  string
	Session string
	Accept  string
	Body    string
	Host    string
	Header  map[string]string
	// From is the loopback IP the request comes from ("": 127.0.0.1),
	// which makes it another client's.
	From string
}

func (ts *testServer) do(t *testing.T, r request) *http.Response {
	t.Helper()
	resp, err := ts.send(t.Context(), t, r)
	require.NoError(t, err)
	return resp
}

// send is do under ctx, returning the client's error: the caller says what
// a request that never came back means.
func (ts *testServer) send(ctx context.Context, t *testing.T, r request) (*http.Response, error) {
	t.Helper()
	if r.Method == "" {
		r.Method = http.MethodPost
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, ts.URL, strings.NewReader(r.Body))
	require.NoError(t, err)
	if r.Body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", cmpOr(r.Accept, acceptJSON))
	if r.Session != "" {
		req.Header.Set(HeaderSessionID, r.Session)
	}
	if r.Host != "" {
		req.Host = r.Host
	}
	for k, v := range r.Header {
		req.Header.Set(k, v)
	}
	client := ts.Client()
	if r.From != "" {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(r.From)}}
		client = &http.Client{Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// initialize opens a session and returns its id.
func (ts *testServer) initialize(t *testing.T) string {
	t.Helper()
	return ts.initializeFrom(t, "")
}

// initializeFrom opens a session as the client at the loopback IP from
// ("": 127.0.0.1) and returns its id.
func (ts *testServer) initializeFrom(t *testing.T, from string) string {
	t.Helper()
	resp := ts.do(t, request{Body: initializeBody, From: from})
	body := readAll(t, resp)
	require.Equal(t, http.StatusOK, resp.StatusCode, "initialize: %s", body)
	id := resp.Header.Get(HeaderSessionID)
	require.NotEmpty(t, id)
	assert.Contains(t, body, `"serverInfo"`)
	resp = ts.do(t, request{Session: id, Body: initializedBody, From: from})
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	return id
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

// events reads an SSE body to its end and returns the data of each
// message event.
func events(t *testing.T, body io.Reader) []string {
	t.Helper()
	var out []string
	var data []string
	sc := bufio.NewScanner(body)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "data: "):
			data = append(data, strings.TrimPrefix(line, "data: "))
		case line == "" && data != nil:
			out = append(out, strings.Join(data, "\n"))
			data = nil
		}
	}
	return out
}

func call(id int, tool string, args string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, tool, args)
}

func TestHTTPErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		server      func(*Server)
		req         request
		withSession bool // send an open session's id
		wantStatus  int
		wantBody    string
		wantHeader  map[string]string
	}{
		{name: "request without a session", req: request{Body: call(1, "echo", `{}`)},
			wantStatus: http.StatusBadRequest, wantBody: "missing Mcp-Session-Id"},
		{name: "unknown session", req: request{Session: "no-such-session", Body: call(1, "echo", `{}`)},
			wantStatus: http.StatusNotFound, wantBody: "no such session"},
		{name: "unsupported protocol version", req: request{Body: initializeBody, Header: map[string]string{HeaderProtocolVersion: "1999-01-01"}},
			wantStatus: http.StatusBadRequest, wantBody: "unsupported Mcp-Protocol-Version"},
		{name: "supported protocol version", req: request{Body: initializeBody, Header: map[string]string{HeaderProtocolVersion: "2025-06-18"}},
			wantStatus: http.StatusOK},
		{name: "not JSON content", req: request{Body: initializeBody, Header: map[string]string{"Content-Type": "text/plain"}},
			wantStatus: http.StatusUnsupportedMediaType},
		{name: "body over the limit", server: func(s *Server) { s.MaxBodyBytes = 64 }, req: request{Body: initializeBody},
			wantStatus: http.StatusRequestEntityTooLarge, wantBody: "64-byte limit"},
		{name: "malformed JSON", req: request{Body: `{"jsonrpc":`},
			wantStatus: http.StatusBadRequest, wantBody: "-32700"},
		{name: "not a JSON-RPC message", req: request{Body: `{"jsonrpc":"2.0","id":3}`},
			wantStatus: http.StatusBadRequest, wantBody: "-32600"},
		{name: "empty batch", req: request{Body: `[]`},
			wantStatus: http.StatusBadRequest, wantBody: "batch"},
		{name: "initialize in a batch opens no session", req: request{Body: "[" + initializeBody + "]"},
			wantStatus: http.StatusBadRequest, wantBody: "missing Mcp-Session-Id"},
		{name: "foreign Host over loopback", req: request{Body: initializeBody, Host: "evil.example.com"},
			wantStatus: http.StatusForbidden, wantBody: "evil.example.com"},
		{name: "localhost Host", req: request{Body: initializeBody, Host: "localhost:1234"},
			wantStatus: http.StatusOK},
		{name: "foreign Origin", req: request{Body: initializeBody, Header: map[string]string{"Origin": "http://evil.example.com"}},
			wantStatus: http.StatusForbidden, wantBody: "Origin"},
		{name: "null Origin", req: request{Body: initializeBody, Header: map[string]string{"Origin": "null"}},
			wantStatus: http.StatusForbidden},
		{name: "loopback Origin", req: request{Body: initializeBody, Header: map[string]string{"Origin": "http://localhost:6274"}},
			wantStatus: http.StatusOK},
		{name: "allowed Origin", server: func(s *Server) { s.AllowedOrigins = []string{"https://app.example.com"} },
			req:        request{Body: initializeBody, Header: map[string]string{"Origin": "https://app.example.com"}},
			wantStatus: http.StatusOK},
		{name: "no token", server: func(s *Server) { s.Token = "s3cret" }, req: request{Body: initializeBody},
			wantStatus: http.StatusUnauthorized, wantHeader: map[string]string{"WWW-Authenticate": `Bearer realm="mcpwrap"`}},
		{name: "wrong token", server: func(s *Server) { s.Token = "s3cret" },
			req:        request{Body: initializeBody, Header: map[string]string{"Authorization": "Bearer s3cre"}},
			wantStatus: http.StatusUnauthorized},
		{name: "token with a longer prefix", server: func(s *Server) { s.Token = "s3cret" },
			req:        request{Body: initializeBody, Header: map[string]string{"Authorization": "Bearer s3cret-and-more"}},
			wantStatus: http.StatusUnauthorized},
		{name: "empty bearer", server: func(s *Server) { s.Token = "s3cret" },
			req:        request{Body: initializeBody, Header: map[string]string{"Authorization": "Bearer "}},
			wantStatus: http.StatusUnauthorized},
		{name: "token", server: func(s *Server) { s.Token = "s3cret" },
			req:        request{Body: initializeBody, Header: map[string]string{"Authorization": "bearer s3cret"}},
			wantStatus: http.StatusOK},
		{name: "unsupported method", req: request{Method: http.MethodPut, Body: initializeBody},
			wantStatus: http.StatusMethodNotAllowed, wantHeader: map[string]string{"Allow": "GET, POST, DELETE"}},
		{name: "GET not accepting SSE", withSession: true, req: request{Method: http.MethodGet, Accept: acceptJSON},
			wantStatus: http.StatusNotAcceptable},
		{name: "GET without a session", req: request{Method: http.MethodGet, Accept: "text/event-stream"},
			wantStatus: http.StatusBadRequest},
		{name: "DELETE of an unknown session", req: request{Method: http.MethodDelete, Session: "gone"},
			wantStatus: http.StatusNotFound},
		{name: "discover from an upstream of the session era is turned to initialize",
			req: request{Body: `{"jsonrpc":"2.0","id":9,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
				Header: map[string]string{HeaderProtocolVersion: "2026-07-28", HeaderMethod: "server/discover"}},
			wantStatus: http.StatusNotFound, wantBody: `"id":9,"error":{"code":-32601`}, // the upstream's own answer
		{name: "legacy discover is turned to initialize",
			req:        request{Body: `{"jsonrpc":"2.0","id":9,"method":"server/discover","params":{}}`},
			wantStatus: http.StatusOK, wantBody: `"code":-32022`},
		{name: "duplicate request id", withSession: true,
			req:        request{Body: "[" + call(4, "echo", `{}`) + "," + call(4, "echo", `{}`) + "]"},
			wantStatus: http.StatusBadRequest, wantBody: "appears twice"},
		{name: "notification", withSession: true, req: request{Body: `{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`},
			wantStatus: http.StatusAccepted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ts := newTestServer(t, tt.server)
			if tt.withSession {
				tt.req.Session = ts.initialize(t)
			}
			resp := ts.do(t, tt.req)
			body := readAll(t, resp)
			assert.Equal(t, tt.wantStatus, resp.StatusCode, "body: %s", body)
			assert.Contains(t, body, tt.wantBody)
			for k, v := range tt.wantHeader {
				assert.Equal(t, v, resp.Header.Get(k), k)
			}
		})
	}
}

func TestSessionLifecycle(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	id := ts.initialize(t)
	fc := ts.up.next(t)

	resp := ts.do(t, request{Session: id, Body: call(1, "echo", `{"text":"hi"}`)})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":1,"result":`+textResult("hi")+`}`, readAll(t, resp))
	assert.Len(t, ts.front.Sessions(), 1)

	resp = ts.do(t, request{Method: http.MethodDelete, Session: id})
	assert.Equal(t, http.StatusNoContent, resp.StatusCode)
	waitClosed(t, fc)
	assert.Empty(t, ts.front.Sessions())
	resp = ts.do(t, request{Session: id, Body: call(2, "echo", `{}`)})
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
}

// waitClosed waits until the relay closed the upstream connection.
func waitClosed(t *testing.T, fc *fakeConn) {
	t.Helper()
	select {
	case <-fc.closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream connection was not closed")
	}
}

func TestOneUpstreamPerSession(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	const n = 5
	for range n {
		ts.initialize(t)
	}
	assert.EqualValues(t, n, ts.up.dials.Load())
	assert.Len(t, ts.front.Sessions(), n)
}

func TestSSEAnswerCarriesProgress(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	id := ts.initialize(t)
	body := `{"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"progress","_meta":{"progressToken":"tok"}}}`
	resp := ts.do(t, request{Session: id, Accept: acceptBoth, Body: body})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	got := events(t, resp.Body)
	require.Len(t, got, 2)
	assert.JSONEq(t, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"tok","progress":1,"total":2}}`, got[0])
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":"c1","result":`+textResult("done")+`}`, got[1])
}

func TestBatch(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	id := ts.initialize(t)
	body := "[" + call(1, "echo", `{"text":"a"}`) + "," + initializedBody + "," + call(2, "echo", `{"text":"b"}`) + "]"
	resp := ts.do(t, request{Session: id, Body: body})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var got []struct {
		ID     int             `json:"id"`
		Result json.RawMessage `json:"result"`
	}
	require.NoError(t, json.Unmarshal([]byte(readAll(t, resp)), &got))
	require.Len(t, got, 2)
	byID := map[int]string{}
	for _, r := range got {
		byID[r.ID] = string(r.Result)
	}
	assert.JSONEq(t, textResult("a"), byID[1])
	assert.JSONEq(t, textResult("b"), byID[2])

	resp = ts.do(t, request{Session: id, Body: "[" + initializedBody + "]"})
	assert.Equal(t, http.StatusAccepted, resp.StatusCode)
}

func TestMultiLineBodyIsCompacted(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	id := ts.initialize(t)
	fc := ts.up.next(t)
	resp := ts.do(t, request{Session: id, Body: "{\n  \"jsonrpc\": \"2.0\",\r\n  \"id\": 5,\n  \"method\": \"ping\"\n}"})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":5,"result":{}}`, readAll(t, resp))
	assert.Contains(t, fc.Lines(), `{"jsonrpc":"2.0","id":5,"method":"ping"}`)
}

func TestConcurrentRequestsInOneSession(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	id := ts.initialize(t)
	const n = 20
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			accept := acceptJSON
			if i%2 == 0 {
				accept = acceptBoth
			}
			resp := ts.do(t, request{Session: id, Accept: accept, Body: call(100+i, "echo", fmt.Sprintf(`{"text":"t%d"}`, i))})
			want := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":%s}`, 100+i, textResult(fmt.Sprintf("t%d", i)))
			if accept == acceptBoth {
				got := events(t, resp.Body)
				if assert.Len(t, got, 1) {
					assert.JSONEq(t, want, got[0])
				}
				return
			}
			assert.JSONEq(t, want, readAll(t, resp))
		})
	}
	wg.Wait()
}

func TestCancelledRequestEndsItsPOST(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	id := ts.initialize(t)
	resp := ts.do(t, request{Session: id, Accept: acceptBoth, Body: call(7, "slow", `{}`)})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	cancel := ts.do(t, request{Session: id, Body: `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`})
	assert.Equal(t, http.StatusAccepted, cancel.StatusCode)
	assert.Empty(t, events(t, resp.Body), "no response after cancellation")
}

// Only a notification cancels: a request (with an id) that is named
// notifications/cancelled, here in a batch, is relayed and answered like
// any other, and the POST of the request it names still waits for its
// answer.
func TestCancelledRequestDoesNotCancel(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	id := ts.initialize(t)
	slow := ts.do(t, request{Session: id, Accept: acceptBoth, Body: call(7, "slow", `{}`)})
	require.Equal(t, http.StatusOK, slow.StatusCode)
	resp := ts.do(t, request{Session: id, Body: `[{"jsonrpc":"2.0","id":9,"method":"notifications/cancelled","params":{"requestId":7}}]`})
	body := readAll(t, resp)
	assert.Equal(t, http.StatusOK, resp.StatusCode, body)
	assert.Contains(t, body, `"id":9,"error"`, "the request is answered (by the upstream: no such method)")
	close(ts.up.release)
	got := events(t, slow.Body)
	if assert.Len(t, got, 1, "the slow call was taken for cancelled") {
		assert.Contains(t, got[0], "slow done")
	}
}

func TestRequestIDInFlightIsRefused(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	id := ts.initialize(t)
	slow := ts.do(t, request{Session: id, Accept: acceptBoth, Body: call(5, "slow", `{}`)})
	require.Equal(t, http.StatusOK, slow.StatusCode)
	resp := ts.do(t, request{Session: id, Body: call(5, "echo", `{}`)})
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Contains(t, readAll(t, resp), "request id 5 is already in flight")
}

func TestSessionEndFailsPendingRequests(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	id := ts.initialize(t)
	resp := ts.do(t, request{Session: id, Accept: acceptBoth, Body: call(8, "slow", `{}`)})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	ts.do(t, request{Method: http.MethodDelete, Session: id})
	got := events(t, resp.Body)
	require.Len(t, got, 1)
	assert.Contains(t, got[0], `"id":8`)
	assert.Contains(t, got[0], "session ended before the request was answered")
}

// A POST returns once its client leaves, even while the relay takes no
// message (its upstream stopped reading): it holds no goroutine, and no
// request in progress that keeps the session from idling out.
func TestPOSTReturnsWhenItsClientLeaves(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	t.Cleanup(func() { close(ts.up.release) })
	id := ts.initialize(t)
	ctx, leave := context.WithCancel(t.Context())
	post := func(tag, body string) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", acceptBoth)
		req.Header.Set(HeaderSessionID, id)
		req.Header.Set("X-Test-Tag", tag)
		go func() {
			if resp, err := ts.Client().Do(req); err == nil {
				// Read until the client leaves: closing the body of an
				// SSE answer early closes the connection, which is
				// leaving before the call reached the upstream.
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
		require.Equal(t, tag, <-ts.started)
	}
	post("hang", call(1, "hang", `{}`))
	select { // bounded, so that a hang call that never reaches the upstream fails with what is known
	case <-ts.up.hung:
	case tag := <-ts.returned:
		t.Fatalf("the POST %q returned before its call reached the upstream", tag)
	case <-time.After(10 * time.Second):
		t.Fatal("the hang call never reached the upstream")
	}
	post("a", `{"jsonrpc":"2.0","id":2,"method":"x/a"}`) // the relay takes one, and waits for the upstream
	post("b", `{"jsonrpc":"2.0","id":3,"method":"x/b"}`) // the other waits for the relay

	leave()
	ts.awaitReturned(t, 3)
}

// A session whose initialize POST's client left before the answer can
// never be used: it ends at once, and its server with it, rather than
// holding a session slot and a child until it idles out.
func TestSessionEndsWhenItsInitializeIsAbandoned(t *testing.T) {
	t.Parallel()
	for _, accept := range []string{acceptJSON, acceptBoth} {
		t.Run(accept, func(t *testing.T) {
			t.Parallel()
			ts := newTestServer(t, nil)
			ts.up.holdInit.Store(true)
			t.Cleanup(func() { close(ts.up.release) })
			ctx, leave := context.WithCancel(t.Context())
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL, strings.NewReader(initializeBody))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", accept)
			go func() {
				if resp, err := ts.Client().Do(req); err == nil {
					_, _ = io.Copy(io.Discard, resp.Body) // until the client leaves
					resp.Body.Close()
				}
			}()
			fc := ts.up.next(t)
			<-ts.up.hung // the server is starting
			require.Len(t, ts.front.Sessions(), 1)

			leave()
			waitClosed(t, fc)
			assert.Empty(t, ts.front.Sessions())
		})
	}
}

func TestGETStreamCarriesServerMessages(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	id := ts.initialize(t)
	fc := ts.up.next(t)
	get := ts.do(t, request{Method: http.MethodGet, Session: id, Accept: "text/event-stream"})
	require.Equal(t, http.StatusOK, get.StatusCode)
	assert.Equal(t, "text/event-stream", get.Header.Get("Content-Type"))

	fc.Push(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`)
	r := bufio.NewReader(get.Body)
	line := nextData(t, r)
	assert.JSONEq(t, `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`, line)

	// A second GET replaces the first, which ends.
	second := ts.do(t, request{Method: http.MethodGet, Session: id, Accept: "text/event-stream"})
	require.Equal(t, http.StatusOK, second.StatusCode)
	_, err := io.ReadAll(r)
	require.NoError(t, err, "the replaced stream ends cleanly")
	fc.Push(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}`)
	assert.Contains(t, nextData(t, bufio.NewReader(second.Body)), `"notifications/message"`)
}

// nextData reads the data of the next message event.
func nextData(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	for {
		line, err := r.ReadString('\n')
		require.NoError(t, err)
		if data, ok := strings.CutPrefix(strings.TrimRight(line, "\n"), "data: "); ok {
			return data
		}
	}
}

func TestGoSDKClient(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	listChanged := make(chan struct{}, 1)
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "hello"}}, nil
		},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case listChanged <- struct{}{}:
			default:
			}
		},
	})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ts.URL, MaxRetries: -1}, nil)
	require.NoError(t, err)
	assert.Equal(t, "2025-11-25", cs.InitializeResult().ProtocolVersion, "falls back from server/discover to initialize")
	waitClosed(t, ts.up.next(t)) // the stateless session's, closed once the upstream refused server/discover
	fc := ts.up.next(t)

	tools, err := cs.ListTools(ctx, nil)
	require.NoError(t, err)
	assert.Len(t, tools.Tools, 2)

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "sample"})
	require.NoError(t, err)
	require.Len(t, res.Content, 1)
	assert.Equal(t, "sampled: hello", res.Content[0].(*mcp.TextContent).Text, "a server request reaches the client and its answer the server")

	fc.Push(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`)
	select {
	case <-listChanged:
	case <-ctx.Done():
		t.Fatal("tools/list_changed did not reach the client")
	}

	require.NoError(t, cs.Close())
	waitClosed(t, fc)
}

func TestShutdownDrains(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	id := ts.initialize(t)
	fc := ts.up.next(t)
	get := ts.do(t, request{Method: http.MethodGet, Session: id, Accept: "text/event-stream"})
	require.Equal(t, http.StatusOK, get.StatusCode)
	slow := ts.do(t, request{Session: id, Accept: acceptBoth, Body: call(1, "slow", `{}`)})
	require.Equal(t, http.StatusOK, slow.StatusCode) // headers come once its request is registered

	shutdown := make(chan error, 1)
	go func() { shutdown <- ts.front.Shutdown(t.Context()) }()
	_, err := io.ReadAll(get.Body)
	require.NoError(t, err, "shutdown ends the GET stream")

	refused := ts.do(t, request{Session: id, Body: call(2, "echo", `{}`)})
	assert.Equal(t, http.StatusServiceUnavailable, refused.StatusCode, "no new requests while draining")
	refused = ts.do(t, request{Body: initializeBody})
	assert.Equal(t, http.StatusServiceUnavailable, refused.StatusCode, "no new sessions while draining")
	accepted := ts.do(t, request{Session: id, Body: `{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`})
	assert.Equal(t, http.StatusAccepted, accepted.StatusCode, "answers for the upstream still pass")

	close(ts.up.release)
	got := events(t, slow.Body)
	require.Len(t, got, 1)
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":1,"result":`+textResult("slow done")+`}`, got[0])
	require.NoError(t, <-shutdown)
	waitClosed(t, fc)
	assert.Empty(t, ts.front.Sessions())
}

// TestShutdownEndsAGETStreamOpeningMeanwhile: a GET stream that opens as
// a shutdown begins (after its draining check, before it is attached to
// its session, where the shutdown ends the GET streams) ends too, rather
// than staying open while the shutdown drains the session's calls.
func TestShutdownEndsAGETStreamOpeningMeanwhile(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	t.Cleanup(func() { close(ts.up.release) })
	id := ts.initialize(t)
	slow := ts.do(t, request{Session: id, Accept: acceptBoth, Body: call(1, "slow", `{}`)}) // the shutdown drains it
	require.Equal(t, http.StatusOK, slow.StatusCode)

	req := httptest.NewRequest(http.MethodGet, "/mcp", nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set(HeaderSessionID, id)
	var once sync.Once
	// The stream's first flush comes between its draining check and its attachment.
	w := &flushHook{ResponseRecorder: httptest.NewRecorder(), flushed: func() { once.Do(func() { ts.front.stopTaking() }) }}
	served := make(chan struct{})
	go func() {
		defer close(served)
		ts.front.ServeHTTP(w, req)
	}()
	select {
	case <-served:
	case <-time.After(10 * time.Second):
		t.Fatal("a GET stream opened as the shutdown began is still open")
	}
}

// flushHook is a ResponseRecorder that calls flushed after each flush.
type flushHook struct {
	*httptest.ResponseRecorder
	flushed func()
}

func (w *flushHook) Flush() {
	w.ResponseRecorder.Flush()
	w.flushed()
}

// Shutdown past its deadline cancels the relays without waiting: the
// upstream is closed, and a POST still waiting returns. Its stream carries
// the session's end when the relay's drain wrote it before the relay was
// cancelled, or nothing (the relay's Close aborts the streams it could
// not finish): never another answer, never a stream left open.
func TestShutdownDeadline(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	id := ts.initialize(t)
	fc := ts.up.next(t)
	slow := ts.do(t, request{Session: id, Accept: acceptBoth, Body: call(1, "slow", `{}`)})
	require.Equal(t, http.StatusOK, slow.StatusCode)

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	assert.ErrorIs(t, ts.front.Shutdown(ctx), context.Canceled)
	waitClosed(t, fc)
	got := events(t, slow.Body) // ends: the stream is not left open
	require.LessOrEqual(t, len(got), 1)
	for _, ev := range got {
		assert.Contains(t, ev, "session ended")
	}
}

// accepts reads Accept as HTTP does: a media type (or range) with q=0 is
// refused, and a type named exactly outweighs a range that covers it.
func TestAccepts(t *testing.T) {
	tests := []struct {
		name   string
		values []string
		want   acceptance
	}{
		{name: "no header", values: nil, want: acceptance{json: true, wildcard: true}},
		{name: "both", values: []string{"application/json, text/event-stream"}, want: acceptance{json: true, sse: true}},
		{name: "two header lines", values: []string{"application/json", "text/event-stream"}, want: acceptance{json: true, sse: true}},
		{name: "case and spaces", values: []string{" Application/JSON ; charset=utf-8 ,TEXT/Event-Stream"}, want: acceptance{json: true, sse: true}},
		{name: "wildcard", values: []string{"*/*"}, want: acceptance{json: true, wildcard: true}},
		{name: "ranges", values: []string{"application/*, text/*"}, want: acceptance{json: true, sse: true}},
		{name: "SSE refused", values: []string{"application/json, text/event-stream;q=0"}, want: acceptance{json: true}},
		{name: "JSON refused", values: []string{"application/json;q=0.0, text/event-stream;q=0.5"}, want: acceptance{sse: true}},
		{name: "refused wildcard", values: []string{"*/*;q=0"}, want: acceptance{}},
		{name: "refused type outweighs its range", values: []string{"text/*, text/event-stream; q=0"}, want: acceptance{}},
		{name: "named type outweighs a refused range", values: []string{"text/*;q=0, text/event-stream"}, want: acceptance{sse: true}},
		{name: "refused JSON, wildcard", values: []string{"*/*, application/json;q=0"}, want: acceptance{sse: true, wildcard: true}},
		{name: "wildcard, SSE refused", values: []string{"*/*, text/event-stream;q=0"}, want: acceptance{json: true}},
		{name: "other types only", values: []string{"text/html"}, want: acceptance{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, accepts(tt.values))
		})
	}
}

// awaitReturned waits for n tagged requests' handlers to return, each
// within 10 s, as those of clients that left must.
func (ts *testServer) awaitReturned(t *testing.T, n int) {
	t.Helper()
	returned := map[string]bool{}
	for range n {
		select {
		case tag := <-ts.returned:
			returned[tag] = true
		case <-time.After(10 * time.Second):
			t.Fatalf("a POST is still held after its client left; returned: %v", returned)
		}
	}
}
