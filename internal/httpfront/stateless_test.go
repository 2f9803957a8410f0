package httpfront

import (
	"bufio"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpwrap/mcpwrap/internal/framing"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

// modernCall is a 2026-07-28 tools/call with its headers.
func modernCall(id int, tool, args string) request {
	return request{
		Body:   fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s,%s}}`, id, tool, args, modernMeta),
		Header: map[string]string{HeaderProtocolVersion: "2026-07-28", HeaderMethod: "tools/call", HeaderName: tool},
	}
}

// namedRequest is a 2026-07-28 request of method with params members
// (and _meta), sent with Mcp-Name: name.
func namedRequest(method, members, name string) request {
	return request{
		Body:   fmt.Sprintf(`{"jsonrpc":"2.0","id":4,"method":%q,"params":{%s,%s}}`, method, members, modernMeta),
		Header: map[string]string{HeaderProtocolVersion: "2026-07-28", HeaderMethod: method, HeaderName: name},
	}
}

func newModernServer(t *testing.T) *testServer {
	t.Helper()
	ts := newTestServer(t, nil)
	ts.up.modern.Store(true)
	return ts
}

func TestStatelessRequestsShareOneUpstream(t *testing.T) {
	t.Parallel()
	ts := newModernServer(t)
	const clients = 8
	var wg sync.WaitGroup
	bodies := make([]string, clients)
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Every client uses id 1: the ids must not collide upstream.
			resp := ts.do(t, modernCall(1, "echo", fmt.Sprintf(`{"text":"client %d"}`, i)))
			bodies[i] = readAll(t, resp)
			assert.Equal(t, http.StatusOK, resp.StatusCode, bodies[i])
		}()
	}
	wg.Wait()
	for i, body := range bodies {
		assert.Contains(t, body, `"id":1,`, "the client's own id")
		assert.Contains(t, body, fmt.Sprintf("client %d", i), "each client gets its own answer")
	}
	assert.EqualValues(t, 1, ts.up.dials.Load(), "one upstream for every stateless request")
	fc := ts.up.next(t)
	lines := fc.Lines()
	require.NotEmpty(t, lines)
	assert.Contains(t, lines[0], `"server/discover"`, "the front sets up the upstream with the client's _meta")
	assert.Contains(t, lines[0], `"io.modelcontextprotocol/clientCapabilities":{}`)
}

func TestStatelessHeaderValidation(t *testing.T) {
	t.Parallel()
	ts := newModernServer(t)
	listBody := `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{` + modernMeta + `}}`
	tests := []struct {
		name       string
		req        request
		wantStatus int
		wantBody   string
	}{
		{name: "valid", req: request{Body: listBody, Header: map[string]string{HeaderProtocolVersion: "2026-07-28", HeaderMethod: "tools/list"}},
			wantStatus: http.StatusOK, wantBody: `"id":7,"result"`},
		{name: "missing Mcp-Method", req: request{Body: listBody, Header: map[string]string{HeaderProtocolVersion: "2026-07-28"}},
			wantStatus: http.StatusBadRequest, wantBody: `"id":7,"error":{"code":-32020`},
		{name: "Mcp-Method mismatch", req: request{Body: listBody, Header: map[string]string{HeaderProtocolVersion: "2026-07-28", HeaderMethod: "prompts/list"}},
			wantStatus: http.StatusBadRequest, wantBody: `"code":-32020`},
		{name: "Mcp-Name mismatch", req: func() request {
			r := modernCall(3, "echo", `{}`)
			r.Header[HeaderName] = "other"
			return r
		}(), wantStatus: http.StatusBadRequest, wantBody: `"id":3,"error":{"code":-32020`},
		{name: "missing Mcp-Name", req: func() request {
			r := modernCall(3, "echo", `{}`)
			delete(r.Header, HeaderName)
			return r
		}(), wantStatus: http.StatusBadRequest, wantBody: `"code":-32020`},
		{name: "no version in _meta", req: request{Body: `{"jsonrpc":"2.0","id":8,"method":"tools/list","params":{}}`,
			Header: map[string]string{HeaderProtocolVersion: "2026-07-28", HeaderMethod: "tools/list"}},
			wantStatus: http.StatusBadRequest, wantBody: `"id":8,"error":{"code":-32602`},
		{name: "_meta version differs from the header", req: request{Body: `{"jsonrpc":"2.0","id":8,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}}}`,
			Header: map[string]string{HeaderProtocolVersion: "2026-07-28", HeaderMethod: "tools/list"}},
			wantStatus: http.StatusBadRequest, wantBody: `"code":-32020`},
		{name: "unknown later version", req: request{Body: `{"jsonrpc":"2.0","id":301,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"v999"}}}`,
			Header: map[string]string{HeaderProtocolVersion: "v999", HeaderMethod: "server/discover"}},
			wantStatus: http.StatusBadRequest, wantBody: `"id":301,"error":{"code":-32022`},
		{name: "unknown method is 404", req: request{Body: `{"jsonrpc":"2.0","id":9,"method":"nope/nope","params":{` + modernMeta + `}}`,
			Header: map[string]string{HeaderProtocolVersion: "2026-07-28", HeaderMethod: "nope/nope"}},
			wantStatus: http.StatusNotFound, wantBody: `"id":9,"error":{"code":-32601`},
		{name: "batch", req: request{Body: "[" + listBody + "]", Header: map[string]string{HeaderProtocolVersion: "2026-07-28", HeaderMethod: "tools/list"}},
			wantStatus: http.StatusBadRequest},
		// A name that parsers read differently (a duplicate, first or last
		// wins; another letter case, which Go's encoding/json matches)
		// matches no header: the upstream might act on the other one.
		{name: "duplicate name", req: namedRequest("prompts/get", `"name":"a","name":"b"`, "b"),
			wantStatus: http.StatusBadRequest, wantBody: `"code":-32020`},
		{name: "name in another letter case", req: namedRequest("prompts/get", `"name":"a","Name":"b"`, "b"),
			wantStatus: http.StatusBadRequest, wantBody: `"code":-32020`},
		{name: "tool name in another letter case", req: namedRequest("tools/call", `"name":"echo","NAME":"evil"`, "evil"),
			wantStatus: http.StatusBadRequest, wantBody: `"code":-32020`},
		{name: "uri in another letter case", req: namedRequest("resources/read", `"uri":"file:///a","URI":"file:///b"`, "file:///b"),
			wantStatus: http.StatusBadRequest, wantBody: `"code":-32020`},
		{name: "uri only in another letter case", req: namedRequest("resources/read", `"URI":"file:///b"`, "file:///b"),
			wantStatus: http.StatusBadRequest, wantBody: `"code":-32020`},
		{name: "escaped name", req: namedRequest("prompts/get", `"n\u0061me":"\u0061"`, "a"),
			wantStatus: http.StatusNotFound, wantBody: `"code":-32601`}, // valid: the fake knows no prompts
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := ts.do(t, tt.req)
			body := readAll(t, resp)
			assert.Equal(t, tt.wantStatus, resp.StatusCode, "body: %s", body)
			assert.Contains(t, body, tt.wantBody)
		})
	}
}

func TestStatelessProtectionsApply(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, func(s *Server) { s.Token = "secret" })
	ts.up.modern.Store(true)
	resp := ts.do(t, modernCall(1, "echo", `{}`))
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	r := modernCall(1, "echo", `{}`)
	r.Header["Authorization"] = "Bearer secret"
	r.Host = "evil.example:80"
	resp = ts.do(t, r)
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "DNS-rebinding protection")
	assert.Zero(t, ts.up.dials.Load())
}

func TestListenStreamCarriesListChanges(t *testing.T) {
	t.Parallel()
	ts := newModernServer(t)
	resp := ts.do(t, request{
		Accept: acceptBoth,
		Body:   `{"jsonrpc":"2.0","id":"mine","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` + modernMeta + `}}`,
		Header: map[string]string{HeaderProtocolVersion: "2026-07-28", HeaderMethod: "subscriptions/listen"},
	})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	sc := bufio.NewScanner(resp.Body)
	next := func() string {
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				return data
			}
		}
		t.Fatalf("listen stream ended: %v", sc.Err())
		return ""
	}
	ack := next()
	assert.Contains(t, ack, "notifications/subscriptions/acknowledged")
	assert.Contains(t, ack, `"io.modelcontextprotocol/subscriptionId":"mine"`, "the client's own listen id")

	fc := ts.up.next(t)
	fc.Push(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`) // as the relay announces a policy change
	changed := next()
	assert.Contains(t, changed, "notifications/tools/list_changed")
	assert.Contains(t, changed, `"io.modelcontextprotocol/subscriptionId":"mine"`)
	resp.Body.Close()
}

func TestLegacyUpstreamSendsStatelessClientsToInitialize(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil) // the fake refuses server/discover
	resp := ts.do(t, modernCall(1, "echo", `{}`))
	body := readAll(t, resp)
	assert.Contains(t, body, `"id":1,"error":{"code":-32022`)
	assert.Contains(t, body, `"2025-11-25"`)
	waitClosed(t, ts.up.next(t))
	resp = ts.do(t, modernCall(2, "echo", `{}`))
	assert.Contains(t, readAll(t, resp), `"code":-32022`)
	assert.EqualValues(t, 1, ts.up.dials.Load(), "no child is started again for a legacy upstream")
}

// TestRequestWaitingForARefusedDiscoverGetsTheRefusal: a refusal answers
// the handshake and then ends the stateless session at once; a request
// that waits for that handshake gets the refusal (and falls back to
// initialize), not "shutting down", even when it only looks after both.
func TestRequestWaitingForARefusedDiscoverGetsTheRefusal(t *testing.T) {
	t.Parallel()
	refusal := []byte(`{"jsonrpc":"2.0","id":` + handshakeID + `,"error":{"code":-32601,"message":"method not found"}}`)
	env, err := framing.Peek(refusal)
	require.NoError(t, err)
	r := httptest.NewRequest(http.MethodPost, "/", nil)
	// Both channels are closed when it waits, and select picks either at
	// random: enough rounds that the wrong one would be picked.
	for range 64 {
		srv := &Server{}
		srv.once.Do(srv.init)
		ss := newSession(srv, rand.Text())
		ss.stateless = true
		ss.attempt = &handshake{done: make(chan struct{})} // another request's discover, under way
		ss.beforeWait = func() { ss.discoverAnswered(refusal, env, true) }
		failed, err := ss.awaitReady(r, incoming{})
		require.NoError(t, err)
		require.Nil(t, failed)
		require.True(t, ss.isRefused())
	}
}

// TestClientDiscoverIsTheHandshake: a client opening with server/discover
// sets the upstream up with its own request, so it sees the upstream's
// answer, a refusal offering another version included, and retries.
func TestClientDiscoverIsTheHandshake(t *testing.T) {
	t.Parallel()
	ts := newModernServer(t)
	ts.up.rejectDiscovers.Store(1)
	discover := request{
		Body:   `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + modernMeta + `}}`,
		Header: map[string]string{HeaderProtocolVersion: "2026-07-28", HeaderMethod: "server/discover"},
	}
	resp := ts.do(t, discover)
	body := readAll(t, resp)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode, body)
	assert.Contains(t, body, `"id":1,"error":{"code":-32022`, "the upstream's refusal, for the client to retry")

	resp = ts.do(t, discover)
	body = readAll(t, resp)
	assert.Equal(t, http.StatusOK, resp.StatusCode, body)
	assert.Contains(t, body, `"id":1,"result":{"resultType":"complete"`)

	resp = ts.do(t, modernCall(2, "echo", `{"text":"hi"}`))
	assert.Contains(t, readAll(t, resp), `"hi"`)
	assert.EqualValues(t, 1, ts.up.dials.Load())
	for _, line := range ts.up.next(t).Lines() {
		assert.NotContains(t, line, handshakeID, "no discover of the front's own")
	}
}

// TestInvalidDiscoverIsTheClientsOwn: a server/discover the upstream
// refuses for its params (not for its protocol) is that client's error; it
// neither sends later stateless requests to initialize nor leaves them
// waiting.
func TestInvalidDiscoverIsTheClientsOwn(t *testing.T) {
	t.Parallel()
	ts := newModernServer(t)
	ts.up.rejectInvalid.Store(true)
	ts.up.rejectDiscovers.Store(1)
	resp := ts.do(t, request{
		Body:   `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + modernMeta + `}}`,
		Header: map[string]string{HeaderProtocolVersion: "2026-07-28", HeaderMethod: "server/discover"},
	})
	body := readAll(t, resp)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode, body)
	assert.Contains(t, body, `"id":1,"error":{"code":-32602`)

	resp = ts.do(t, modernCall(2, "echo", `{"text":"hi"}`))
	body = readAll(t, resp)
	assert.Equal(t, http.StatusOK, resp.StatusCode, body)
	assert.Contains(t, body, `"hi"`, "the front's own discover sets the upstream up")
}

// TestRefusedHandshakeAnswersTheWaitingRequest: when the server/discover the
// front makes of a request's _meta is refused for its params, the request
// gets that answer (with its own id), and a later one tries again.
func TestRefusedHandshakeAnswersTheWaitingRequest(t *testing.T) {
	t.Parallel()
	ts := newModernServer(t)
	ts.up.rejectInvalid.Store(true)
	ts.up.rejectDiscovers.Store(1)
	resp := ts.do(t, modernCall(5, "echo", `{"text":"hi"}`))
	body := readAll(t, resp)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode, body)
	assert.Contains(t, body, `"id":5,"error":{"code":-32602`)

	resp = ts.do(t, modernCall(6, "echo", `{"text":"again"}`))
	assert.Contains(t, readAll(t, resp), `"again"`)
}

// TestStatelessChildCrashAnswersWhatItHeld: when the shared child of the
// stateless requests crashes, exactly the requests it held are answered,
// each with its client's own id; a listen stream stays open and is
// re-opened on the restarted child, which serves the next request.
func TestStatelessChildCrashAnswersWhatItHeld(t *testing.T) {
	t.Parallel()
	ts := newModernServer(t)
	listen := ts.do(t, request{
		Accept: acceptBoth,
		Body:   `{"jsonrpc":"2.0","id":"L","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` + modernMeta + `}}`,
		Header: map[string]string{HeaderProtocolVersion: "2026-07-28", HeaderMethod: "subscriptions/listen"},
	})
	sc := bufio.NewScanner(listen.Body)
	nextAck := func() {
		t.Helper()
		for sc.Scan() {
			if strings.Contains(sc.Text(), "notifications/subscriptions/acknowledged") {
				assert.Contains(t, sc.Text(), `"io.modelcontextprotocol/subscriptionId":"L"`)
				return
			}
		}
		t.Fatalf("listen stream ended: %v", sc.Err())
	}
	nextAck()
	resp := ts.do(t, modernCall(1, "echo", `{"text":"before"}`))
	require.Contains(t, readAll(t, resp), `"before"`)
	fc := ts.up.next(t)

	held := make(chan string, 1)
	go func() {
		r := modernCall(1, "hang", `{}`) // the same id as the answered call: ids are the clients' own
		r.Accept = acceptBoth
		resp := ts.do(t, r)
		held <- strings.Join(events(t, resp.Body), "\n")
	}()
	<-ts.up.hung
	require.NoError(t, fc.w.Close()) // the child crashes: its stdout ends
	got := <-held
	assert.Contains(t, got, `"id":1,"error"`)
	assert.Contains(t, got, "upstream restarted; request not completed")

	nextAck() // the restarted child got the listen request again
	resp = ts.do(t, modernCall(2, "echo", `{"text":"after"}`))
	assert.Contains(t, readAll(t, resp), `"after"`)
	assert.EqualValues(t, 2, ts.up.dials.Load(), "the child was restarted, once")
}

// TestStatelessRouting: on the stateless session a notification goes to the
// stream of the request or listen request it names, in the client's own
// terms, and nowhere when it names none for sure; the POST's handler writes
// it.
func TestStatelessRouting(t *testing.T) {
	t.Parallel()
	ss := bareSession(t)
	ss.stateless = true
	register := func(body, orig string) (*exchange, *httptest.ResponseRecorder) {
		ex, rec := sseExchange(t, ss, body)
		env, err := framing.Peek([]byte(body))
		require.NoError(t, err)
		ss.mu.Lock()
		ex.orig = map[string][]byte{idKey(env.ID): []byte(orig)}
		if env.Method == "subscriptions/listen" {
			ex.listen = parseSubscriptions(env.Params)
		}
		ss.mu.Unlock()
		return ex, rec
	}
	a, aRec := register(`{"jsonrpc":"2.0","id":"httpfront-1","method":"tools/call","params":{"name":"a","_meta":{"progressToken":7}}}`, `1`)
	b, bRec := register(`{"jsonrpc":"2.0","id":"httpfront-2","method":"tools/call","params":{"name":"b","_meta":{"progressToken":7}}}`, `1`)
	c, cRec := register(`{"jsonrpc":"2.0","id":"httpfront-3","method":"tools/call","params":{"name":"c","_meta":{"progressToken":9}}}`, `1`)
	l, lRec := register(`{"jsonrpc":"2.0","id":"httpfront-4","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true}}}`, `"L"`)

	msgs := []string{
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":9,"progress":1}}`,                            // c's
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":7,"progress":1}}`,                            // a's or b's: dropped
		`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`,                                                            // every listen stream subscribed
		`{"jsonrpc":"2.0","method":"notifications/prompts/list_changed"}`,                                                          // none subscribed: dropped
		`{"jsonrpc":"2.0","method":"notifications/x","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"httpfront-4"}}}`, // the listen request it names
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info"}}`,                                             // names nothing: dropped
		`{"jsonrpc":"2.0","id":"up-1","method":"sampling/createMessage","params":{}}`,                                              // no server requests in 2026: refused to the relay
		`{"jsonrpc":"2.0","id":"httpfront-3","result":{}}`,                                                                         // c's, with its own id, for its handler to write
	}
	for _, m := range msgs {
		require.NoError(t, ss.WriteMessage(t.Context(), []byte(m)))
	}
	for _, ex := range []*exchange{a, b, c, l} {
		ss.writeNotes(ex) // as each POST's handler does
	}
	assert.Empty(t, events(t, aRec.Body))
	assert.Empty(t, events(t, bRec.Body))
	assert.Equal(t, []string{msgs[0]}, events(t, cRec.Body))
	_, responses := ss.unregister(c)
	assert.Equal(t, [][]byte{[]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`)}, responses)
	got := events(t, lRec.Body)
	require.Len(t, got, 2)
	assert.JSONEq(t, `{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"L"}}}`, got[0])
	assert.JSONEq(t, `{"jsonrpc":"2.0","method":"notifications/x","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"L"}}}`, got[1])
}

// TestNotificationRewrites: a notification the stateless session routes
// gets the client's own listen id or progress token, and every other byte
// as the upstream sent it (a decoder's map re-sorted the members and
// escaped '<'); one whose params are not an object goes as it is.
func TestNotificationRewrites(t *testing.T) {
	t.Parallel()
	const sub = `"io.modelcontextprotocol/subscriptionId"`
	tests := []struct {
		name     string
		msg      string
		progress bool   // the progress token is set, not the subscription id
		orig     string // the client's own id or token; "" for none
		want     string
	}{
		{name: "listen id replaced, the rest as sent",
			msg:  `{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"a<b","_meta":{"x":1,` + sub + `:"httpfront-4"}}}`,
			orig: `"L"`,
			want: `{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"a<b","_meta":{"x":1,` + sub + `:"L"}}}`},
		{name: "listen id added to _meta", msg: `{"jsonrpc":"2.0","method":"notifications/x","params":{"z":1,"_meta":{}}}`, orig: `7`,
			want: `{"jsonrpc":"2.0","method":"notifications/x","params":{"z":1,"_meta":{` + sub + `:7}}}`},
		{name: "listen id, _meta made", msg: `{"jsonrpc":"2.0","method":"notifications/x","params":{"z":1,"a":2}}`, orig: `7`,
			want: `{"jsonrpc":"2.0","method":"notifications/x","params":{"z":1,"a":2,"_meta":{` + sub + `:7}}}`},
		{name: "listen id, params made", msg: `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`, orig: `"L"`,
			want: `{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{` + sub + `:"L"}}}`},
		{name: "listen id, null params made", msg: `{"jsonrpc":"2.0","method":"notifications/x","params":null}`, orig: `"L"`,
			want: `{"jsonrpc":"2.0","method":"notifications/x","params":{"_meta":{` + sub + `:"L"}}}`},
		{name: "listen id, params an array", msg: `{"jsonrpc":"2.0","method":"notifications/x","params":[1]}`, orig: `"L"`,
			want: `{"jsonrpc":"2.0","method":"notifications/x","params":[1]}`},
		{name: "progress token replaced, the rest as sent", progress: true,
			msg:  `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"httpfront-3","progress":1,"total":12345678901234567890,"message":"<b>"}}`,
			orig: `1`,
			want: `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1,"total":12345678901234567890,"message":"<b>"}}`},
		{name: "no progress token of the client's", progress: true,
			msg:  `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"httpfront-3","progress":1}}`,
			want: `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"httpfront-3","progress":1}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg := []byte(tt.msg)
			env, err := framing.Peek(msg)
			require.NoError(t, err)
			var orig []byte
			if tt.orig != "" {
				orig = []byte(tt.orig)
			}
			var got []byte
			if tt.progress {
				got = withProgressToken(msg, env, orig)
			} else {
				got = withSubscriptionID(msg, orig)
			}
			assert.Equal(t, tt.want, string(got))
		})
	}
}

// TestStatelessListChangeWithNullParams: an upstream's list change with
// "params":null reaches the listen stream with the client's listen id in
// a params made for it. Its routing decoded the params into a map, which
// null left nil, and the write of the id into it panicked: the relay's
// write, and the process, went down on one upstream notification.
func TestStatelessListChangeWithNullParams(t *testing.T) {
	t.Parallel()
	ss := bareSession(t)
	ss.stateless = true
	body := `{"jsonrpc":"2.0","id":"httpfront-4","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true}}}`
	l, lRec := sseExchange(t, ss, body)
	env, err := framing.Peek([]byte(body))
	require.NoError(t, err)
	ss.mu.Lock()
	l.orig = map[string][]byte{idKey(env.ID): []byte(`"L"`)}
	l.listen = parseSubscriptions(env.Params)
	ss.mu.Unlock()

	require.NoError(t, ss.WriteMessage(t.Context(), []byte(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":null}`)))
	ss.writeNotes(l)
	assert.Equal(t, []string{`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"L"}}}`},
		events(t, lRec.Body))
}

// An error answered before anything was streamed goes out as a plain JSON
// response with its HTTP status, whole, with its length, even to a client
// that accepts SSE.
func TestStatelessErrorOnAStreamIsAPlainResponse(t *testing.T) {
	t.Parallel()
	ts := newModernServer(t)
	r := modernCall(1, "nosuch", `{}`)
	r.Accept = acceptBoth
	resp := ts.do(t, r)
	body := readAll(t, resp)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode, body)
	assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
	assert.Equal(t, int64(len(body)), resp.ContentLength, "sent whole, not chunked")
	assert.Contains(t, body, `"id":1,"error":{"code":-32602`)
}

// Stateless clients pick their progress tokens as they pick their ids (the
// TypeScript SDK uses the request's id), so two clients' calls in flight
// at once often carry the same token: each still gets its own progress,
// with its own token, and never the other's.
func TestStatelessProgressTokensAreEachClientsOwn(t *testing.T) {
	t.Parallel()
	ts := newModernServer(t)
	call := func() <-chan []string {
		r := modernCall(1, "progress", `{"hold":"true"}`)
		r.Body = strings.Replace(r.Body, `"_meta":{`, `"_meta":{"progressToken":1,`, 1)
		r.Accept = acceptBoth
		got := make(chan []string, 1)
		go func() { got <- events(t, ts.do(t, r).Body) }()
		<-ts.up.hung // the upstream sent its progress, and holds the call
		return got
	}
	first, second := call(), call()
	close(ts.up.release)
	for _, got := range []<-chan []string{first, second} {
		evs := <-got
		require.Len(t, evs, 2, "the progress notification and the answer: %q", evs)
		assert.JSONEq(t, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1,"total":2}}`, evs[0])
		assert.Contains(t, evs[1], `"id":1,"result"`)
	}
}

// The stateless session's relay writes no response to a client's stream
// itself: each POST's handler writes its own answer. So 2026-07-28 clients
// that stop reading hold only their own handlers, each for StallTimeout at
// once, and every other client is answered without waiting: a relay that
// wrote each stalled answer in turn held everyone for StallTimeout per
// stalled stream, which one client with many connections could repeat at
// will.
func TestStalledStreamsDoNotAddUp(t *testing.T) {
	t.Parallel()
	const stall = 20 * time.Second // long, so that "well within" it holds on a loaded machine under -race
	ts := newTestServer(t, func(s *Server) { s.StallTimeout = stall })
	ts.up.modern.Store(true)

	const stalled, size = 3, 2 << 20 // more than a client's socket takes
	for i := range stalled {
		ts.rawSSEPost(t, modernCall(10+i, "big", fmt.Sprintf(`{"bytes":"%d"}`, size)))
	}
	// Well within one stall timeout.
	ctx, cancel := context.WithTimeout(t.Context(), stall/2)
	defer cancel()
	for range stalled {
		select {
		case <-ts.up.bigSent: // the relay took the answer
		case <-ctx.Done():
			t.Fatal("the relay waits on a client that stopped reading before it takes the next answer")
		}
	}
	ts.stillServed(ctx, t, acceptBoth, "another client's call waits behind the stalled streams")
}

// Nor does the stateless session's relay wait on a client that stopped
// reading to write it notifications (progress here, or a listen stream's):
// they wait for that client's handler to write them, so that every other
// client is answered at once.
func TestStalledNotificationsDoNotHoldOtherClients(t *testing.T) {
	t.Parallel()
	const stall = 20 * time.Second // as above
	ts := newTestServer(t, func(s *Server) { s.StallTimeout = stall })
	ts.up.modern.Store(true)

	flood := modernCall(1, "flood", `{"n":"32","bytes":"65536"}`) // more than a client's socket takes
	flood.Body = strings.Replace(flood.Body, `"_meta":{`, `"_meta":{"progressToken":1,`, 1)
	ts.rawSSEPost(t, flood)
	ctx, cancel := context.WithTimeout(t.Context(), stall/2) // well within one stall timeout
	defer cancel()
	select {
	case <-ts.up.hung: // the relay took every notification
	case <-ctx.Done():
		t.Fatal("the relay waits on a client that stopped reading before it takes the next notification")
	}
	ts.stillServed(ctx, t, acceptJSON, "another client's call waits behind the stalled stream")
}

// A client that stops reading while notifications keep coming for it has
// its connection closed once too many wait for it, instead of the server
// keeping them all.
func TestTooManyNotificationsWaitingCloseTheStream(t *testing.T) {
	t.Parallel()
	logs := watchLog("reads its event stream too slowly")
	ts := newTestServer(t, func(s *Server) {
		s.StallTimeout = time.Minute // not the subject
		s.Logger = slog.New(slog.NewTextHandler(logs, nil))
	})
	ts.up.modern.Store(true)

	flood := modernCall(1, "flood", fmt.Sprintf(`{"n":"%d","bytes":"1024"}`, 4*noteLimit))
	flood.Body = strings.Replace(flood.Body, `"_meta":{`, `"_meta":{"progressToken":1,`, 1)
	conn := ts.rawSSEPost(t, flood)
	select {
	case <-logs.seen:
	case <-time.After(10 * time.Second):
		t.Fatal("the notifications waiting for the client were never cut short")
	}
	cutShort(t, conn, 4*noteLimit*1024)
}

// A 2026-07-28 client cannot cancel another's request: its own
// notifications/cancelled is not relayed (its requests are cancelled by
// closing their streams), and a request by that name, which an upstream
// may act on as a cancellation (the go-sdk's does) naming another client's
// rewritten id, is refused as invalid.
func TestStatelessClientCannotCancelAnothers(t *testing.T) {
	t.Parallel()
	ts := newModernServer(t)
	victim := make(chan string, 1)
	go func() { victim <- readAll(t, ts.do(t, modernCall(1, "progress", `{"hold":"true"}`))) }()
	<-ts.up.hung // the victim's call is in flight
	fc := ts.up.next(t)
	victimID := relayIDOf(t, fc, "tools/call") // as if the forger had guessed it

	cancel := func(id string) request {
		return request{
			Body:   `{"jsonrpc":"2.0"` + id + `,"method":"notifications/cancelled","params":{"requestId":` + victimID + `,` + modernMeta + `}}`,
			Header: map[string]string{HeaderProtocolVersion: "2026-07-28", HeaderMethod: "notifications/cancelled"},
		}
	}
	resp := ts.do(t, cancel(""))
	assert.Equal(t, http.StatusAccepted, resp.StatusCode, "a notification: %s", readAll(t, resp))
	resp = ts.do(t, cancel(`,"id":5`))
	body := readAll(t, resp)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode, body)
	assert.Contains(t, body, `"id":5,"error":{"code":-32600`)

	close(ts.up.release)
	assert.Contains(t, <-victim, `"id":1,"result"`)
	for _, line := range fc.Lines() {
		assert.NotContains(t, line, "notifications/cancelled", "the upstream was told to cancel")
	}
}

// Nor can a 2026-07-28 client answer a request the upstream sent for
// another's call: the protocol has no server requests, so the stateless
// session takes no responses from its clients.
func TestStatelessClientCannotAnswerForAnother(t *testing.T) {
	t.Parallel()
	ts := newModernServer(t)
	ctx, cancel := context.WithCancel(t.Context())
	victim := make(chan string, 1)
	go func() {
		r := modernCall(1, "sample", `{}`)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL, strings.NewReader(r.Body))
		if err != nil {
			victim <- err.Error()
			return
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", acceptJSON)
		for k, v := range r.Header {
			req.Header.Set(k, v)
		}
		resp, err := ts.Client().Do(req)
		if err != nil {
			victim <- err.Error()
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		victim <- string(body)
	}()
	id := <-ts.up.asked // the upstream asked, for the victim's call; no client hears of it

	resp := ts.do(t, request{
		Body:   `{"jsonrpc":"2.0","id":` + id + `,"result":{"role":"assistant","model":"m","content":{"type":"text","text":"forged"}}}`,
		Header: map[string]string{HeaderProtocolVersion: "2026-07-28"},
	})
	body := readAll(t, resp)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode, body)
	assert.Contains(t, body, `"code":-32600`)

	cancel() // the victim's call, which nothing can answer, is given up
	assert.NotContains(t, <-victim, "forged", "another client answered for the victim")
}

// A request the upstream sends on the stateless session (here a sampling
// request during a call) has no client to go to in the 2026-07-28
// protocol: the upstream is answered with an error at once, so that the
// call it made it for ends instead of waiting for an answer forever.
func TestStatelessServerRequestIsRefused(t *testing.T) {
	t.Parallel()
	ts := newModernServer(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	r := modernCall(1, "sample", `{}`)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL, strings.NewReader(r.Body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", acceptJSON)
	for k, v := range r.Header {
		req.Header.Set(k, v)
	}
	resp, err := ts.Client().Do(req)
	require.NoError(t, err, "the call waits for an answer to the upstream's request")
	defer resp.Body.Close()
	assert.Contains(t, readAll(t, resp), `"id":1,"result"`, "the call ends")

	id := <-ts.up.asked
	fc := ts.up.next(t)
	var answer string
	for _, line := range fc.Lines() {
		if strings.Contains(line, `"id":`+id+`,"error"`) {
			answer = line
		}
	}
	assert.Contains(t, answer, `"code":-32601`, "the upstream is told its request has no taker")
}

// The stateless session's relay, and its upstream, are every 2026-07-28
// client's: a client cannot send it the session era's methods, which that
// protocol removed and which set state for the whole session (its
// handshake, replayed to a restarted upstream, its log level, its
// resource subscriptions). They are refused as unknown, as the go-sdk's
// server does, and never reach the relay.
func TestStatelessSessionEraMethodsAreRefused(t *testing.T) {
	t.Parallel()
	ts := newModernServer(t)
	resp := ts.do(t, modernCall(1, "echo", `{"text":"set up"}`))
	require.Equal(t, http.StatusOK, resp.StatusCode, readAll(t, resp))
	fc := ts.up.next(t)

	tests := []struct {
		method string
		params string
		id     string // "": a notification
	}{
		{method: "initialize", params: `"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"evil","version":"1"}`, id: `"i"`},
		{method: "logging/setLevel", params: `"level":"debug"`, id: `"l"`},
		{method: "resources/subscribe", params: `"uri":"file:///a"`, id: `"s"`},
		{method: "resources/unsubscribe", params: `"uri":"file:///a"`, id: `"u"`},
		{method: "notifications/initialized"},
		{method: "notifications/roots/list_changed"},
	}
	for _, tt := range tests {
		t.Run(tt.method, func(t *testing.T) {
			params := modernMeta
			if tt.params != "" {
				params = tt.params + "," + modernMeta
			}
			id := ""
			if tt.id != "" {
				id = `"id":` + tt.id + `,`
			}
			resp := ts.do(t, request{
				Body:   `{"jsonrpc":"2.0",` + id + `"method":"` + tt.method + `","params":{` + params + `}}`,
				Header: map[string]string{HeaderProtocolVersion: "2026-07-28", HeaderMethod: tt.method},
			})
			body := readAll(t, resp)
			assert.Equal(t, http.StatusNotFound, resp.StatusCode, body)
			assert.Contains(t, body, `"code":-32601`)
			if tt.id != "" {
				assert.Contains(t, body, `"id":`+tt.id+`,`)
			}
		})
	}

	resp = ts.do(t, modernCall(2, "echo", `{"text":"still"}`))
	assert.Contains(t, readAll(t, resp), "still")
	relays := ts.front.Sessions()
	require.Len(t, relays, 1)
	assert.Equal(t, "server/discover", relays[0].Handshake().Method, "the handshake a restarted upstream is given")
	for _, line := range fc.Lines() {
		for _, tt := range tests {
			assert.NotContains(t, line, `"method":"`+tt.method+`"`, "the shared upstream got it")
		}
	}
}

// The ids a stateless request is rewritten to cannot be guessed: each
// stateless session numbers its requests after a random part of its own,
// so that no client can name another's request, even on a path not
// closed yet (a cancellation, an answer).
func TestStatelessRequestIDsAreUnguessable(t *testing.T) {
	t.Parallel()
	relayID := func() string {
		ts := newModernServer(t)
		resp := ts.do(t, modernCall(1, "echo", `{}`))
		require.Equal(t, http.StatusOK, resp.StatusCode, readAll(t, resp))
		return relayIDOf(t, ts.up.next(t), "tools/call")
	}
	first, second := relayID(), relayID()
	assert.NotEqual(t, first, second, "two sessions' first requests")
	assert.Greater(t, len(first), len(`"httpfront-1"`)+20, "room for a random part: %s", first)
}

// relayIDOf returns the id of the first request of method that fc
// received: a stateless request's id as the relay rewrote it.
func relayIDOf(t *testing.T, fc *fakeConn, method string) string {
	t.Helper()
	for _, line := range fc.Lines() {
		if env, err := framing.Peek([]byte(line)); err == nil && env.Kind == framing.Request && env.Method == method {
			return string(env.ID)
		}
	}
	t.Fatalf("the upstream got no %s", method)
	return ""
}

// A stateless POST returns once its client leaves, even while the shared
// relay takes no message (its upstream stopped reading): the cancellation
// it owes the upstream for its abandoned request is left to the session,
// so that the handler, its connection slot and the shutdown it delays are
// not held until the upstream reads again.
func TestStatelessPOSTReturnsWhenItsClientLeaves(t *testing.T) {
	t.Parallel()
	ts := newModernServer(t)
	var release sync.Once
	t.Cleanup(func() { release.Do(func() { close(ts.up.release) }) })
	resp := ts.do(t, modernCall(1, "echo", `{}`)) // the upstream is set up
	require.Equal(t, http.StatusOK, resp.StatusCode, readAll(t, resp))
	fc := ts.up.next(t)
	ctx, leave := context.WithCancel(t.Context())
	post := func(tag string, r request) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL, strings.NewReader(r.Body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", acceptBoth)
		for k, v := range r.Header {
			req.Header.Set(k, v)
		}
		req.Header.Set("X-Test-Tag", tag)
		go func() {
			if resp, err := ts.Client().Do(req); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body) // until the client leaves
				resp.Body.Close()
			}
		}()
		require.Equal(t, tag, <-ts.started)
	}
	post("hang", modernCall(2, "hang", `{}`))
	select {
	case <-ts.up.hung:
	case tag := <-ts.returned:
		t.Fatalf("the POST %q returned before its call reached the upstream", tag)
	case <-time.After(10 * time.Second):
		t.Fatal("the hang call never reached the upstream")
	}
	post("a", modernCall(3, "echo", `{}`)) // the relay takes one, and waits for the upstream
	post("b", modernCall(4, "echo", `{}`)) // the other waits for the relay

	leave()
	ts.awaitReturned(t, 3)

	// Once the upstream reads again, it is told of the abandoned calls
	// that reached it.
	var hang framing.Envelope
	for _, line := range fc.Lines() {
		if env, err := framing.Peek([]byte(line)); err == nil && env.Method == "tools/call" && strings.Contains(line, `"hang"`) {
			hang = env
		}
	}
	require.NotNil(t, hang.ID)
	release.Do(func() { close(ts.up.release) })
	cancelled := `"method":"notifications/cancelled","params":{"requestId":` + string(hang.ID) + `,`
	for deadline := time.Now().Add(10 * time.Second); ; runtime.Gosched() {
		if slices.ContainsFunc(fc.Lines(), func(l string) bool { return strings.Contains(l, cancelled) }) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the upstream was not told the hang call was abandoned: %q", fc.Lines())
		}
	}
}

// An upstream that floods the stateless session with requests while it
// reads nothing cannot make the front hold a refusal (and, before,
// a goroutine) for each: past ownLimit waiting, the refusals are dropped.
func TestStatelessServerRequestFloodIsBounded(t *testing.T) {
	t.Parallel()
	logs := watchLog("one is dropped")
	ts := newTestServer(t, func(s *Server) { s.Logger = slog.New(slog.NewTextHandler(logs, nil)) })
	ts.up.modern.Store(true)
	var release sync.Once
	t.Cleanup(func() { release.Do(func() { close(ts.up.release) }) })
	resp := ts.do(t, modernCall(1, "echo", `{}`)) // the upstream is set up
	require.Equal(t, http.StatusOK, resp.StatusCode, readAll(t, resp))
	fc := ts.up.next(t)
	held := make(chan string, 1)
	go func() { held <- readAll(t, ts.do(t, modernCall(2, "hang", `{}`))) }()
	<-ts.up.hung // the upstream reads nothing from now on

	for i := range ownLimit + 3 {
		fc.Push(fmt.Sprintf(`{"jsonrpc":"2.0","id":"flood-%d","method":"sampling/createMessage","params":{}}`, i))
	}
	select {
	case <-logs.seen:
	case <-time.After(10 * time.Second):
		t.Fatal("the refusals of a flood were all kept")
	}
	release.Do(func() { close(ts.up.release) })
	assert.Contains(t, <-held, "hang done", "the session still serves")
}

// A client cannot send the shared upstream a server/discover that the
// front reads as 2026-07-28 and the upstream as of the session era: the
// upstream's refusal (method not found) would be taken for an upstream
// that speaks only the session era, and every 2026-07-28 client would be
// sent to initialize from then on. A _meta that parsers read differently
// (spelled twice, or in another letter case, which encoding/json matches
// and merges) is refused.
func TestStatelessClientCannotDowngradeOthers(t *testing.T) {
	t.Parallel()
	const (
		v2025 = `{"io.modelcontextprotocol/protocolVersion":"2025-11-25","io.modelcontextprotocol/clientCapabilities":{}}`
		v2026 = `{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`
	)
	tests := []struct{ name, params string }{
		{name: "_meta in another letter case", params: `"_meta":` + v2025 + `,"_META":` + v2026},
		{name: "_meta twice", params: `"_meta":` + v2026 + `,"_meta":{"io.modelcontextprotocol/clientCapabilities":{}}`},
		{name: "version twice", params: `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/protocolVersion":"2025-11-25","io.modelcontextprotocol/clientCapabilities":{}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ts := newModernServer(t)
			resp := ts.do(t, modernCall(1, "echo", `{"text":"before"}`))
			require.Contains(t, readAll(t, resp), "before")

			resp = ts.do(t, request{
				Body:   `{"jsonrpc":"2.0","id":2,"method":"server/discover","params":{` + tt.params + `}}`,
				Header: map[string]string{HeaderProtocolVersion: "2026-07-28", HeaderMethod: "server/discover"},
			})
			body := readAll(t, resp)
			assert.Equal(t, http.StatusBadRequest, resp.StatusCode, body)
			assert.Contains(t, body, `"id":2,"error":{"code":-32602`)

			resp = ts.do(t, modernCall(3, "echo", `{"text":"after"}`))
			assert.Contains(t, readAll(t, resp), "after", "another client is still served")
			assert.False(t, ts.front.legacyOnly.Load(), "2026-07-28 clients are sent to initialize")
		})
	}
}

// Nor is an upstream that refuses one client's server/discover (however
// that client made it) taken for one of the session era: only the front's
// own discover, which it builds itself, can tell that for every client.
func TestOneClientsRefusedDiscoverIsNotEveryones(t *testing.T) {
	t.Parallel()
	ts := newModernServer(t)
	resp := ts.do(t, modernCall(1, "echo", `{"text":"before"}`))
	require.Contains(t, readAll(t, resp), "before")

	ts.up.rejectNotFound.Store(true)
	ts.up.rejectDiscovers.Store(1)
	resp = ts.do(t, request{
		Body:   `{"jsonrpc":"2.0","id":2,"method":"server/discover","params":{` + modernMeta + `}}`,
		Header: map[string]string{HeaderProtocolVersion: "2026-07-28", HeaderMethod: "server/discover"},
	})
	body := readAll(t, resp)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, body)
	assert.Contains(t, body, `"id":2,"error":{"code":-32601`, "the client's own answer")

	resp = ts.do(t, modernCall(3, "echo", `{"text":"after"}`))
	assert.Contains(t, readAll(t, resp), "after", "another client is still served")
	assert.False(t, ts.front.legacyOnly.Load(), "2026-07-28 clients are sent to initialize")
}

// A session-era upstream is still found out when a client's server/discover
// comes first: the client gets the refusal, and the front's own discover,
// sent then, confirms it, so that the session (and its child) ends at once
// and later 2026-07-28 requests are sent to initialize without one.
func TestLegacyUpstreamFoundOutAfterAClientsDiscover(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil) // the fake refuses server/discover
	resp := ts.do(t, request{
		Body:   `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + modernMeta + `}}`,
		Header: map[string]string{HeaderProtocolVersion: "2026-07-28", HeaderMethod: "server/discover"},
	})
	assert.Contains(t, readAll(t, resp), `"id":1,"error":{"code":-32601`)
	waitClosed(t, ts.up.next(t))
	assert.True(t, ts.front.legacyOnly.Load())
	resp = ts.do(t, modernCall(2, "echo", `{}`))
	assert.Contains(t, readAll(t, resp), `"code":-32022`)
	assert.EqualValues(t, 1, ts.up.dials.Load(), "no child is started again for a legacy upstream")
}
