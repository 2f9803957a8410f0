package httpfront

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/internal/jsonrpc"
)

// bareSession is a session with no relay, for routing tests.
func bareSession(t *testing.T) *session {
	t.Helper()
	srv := &Server{IdleTimeout: -1}
	srv.once.Do(srv.init)
	ss := newSession(srv, "0123456789abcdef")
	t.Cleanup(func() { ss.end("test over") })
	return ss
}

func notification(method string) []byte {
	return []byte(`{"jsonrpc":"2.0","method":"` + method + `"}`)
}

func TestQueuedUntilGETStream(t *testing.T) {
	t.Parallel()
	ss := bareSession(t)
	for i := range queueLimit + 2 {
		require.NoError(t, ss.WriteMessage(t.Context(), notification(fmt.Sprintf("m%d", i))))
	}
	rec := httptest.NewRecorder()
	assert.Nil(t, ss.attach(newStream(rec, 0, nil)), "no stream replaced")
	require.NoError(t, ss.WriteMessage(t.Context(), notification("live")))

	got := events(t, rec.Body)
	require.Len(t, got, queueLimit+1)
	assert.Contains(t, got[0], `"m2"`, "the oldest are dropped past the limit")
	assert.Contains(t, got[queueLimit-1], fmt.Sprintf(`"m%d"`, queueLimit+1))
	assert.Contains(t, got[queueLimit], `"live"`)
}

func TestQueueBoundedInBytes(t *testing.T) {
	t.Parallel()
	big := func(name string, size int) []byte {
		return []byte(`{"jsonrpc":"2.0","method":"` + name + `","params":{"data":"` + strings.Repeat("x", size) + `"}}`)
	}
	tests := []struct {
		name string
		msgs [][]byte
		want []string // methods kept, oldest first
	}{
		{name: "the oldest dropped past the budget", msgs: [][]byte{
			big("m0", queueByteLimit/3), big("m1", queueByteLimit/3), big("m2", queueByteLimit/3), big("m3", queueByteLimit/3)},
			want: []string{"m2", "m3"}},
		{name: "a message over the budget kept alone", msgs: [][]byte{
			notification("m0"), big("m1", queueByteLimit+1)},
			want: []string{"m1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ss := bareSession(t)
			for _, m := range tt.msgs {
				require.NoError(t, ss.WriteMessage(t.Context(), m))
			}
			var got []string
			for _, m := range ss.queue {
				got = append(got, methodOf(t, m))
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

func methodOf(t *testing.T, msg []byte) string {
	t.Helper()
	var m struct{ Method string }
	require.NoError(t, json.Unmarshal(msg, &m))
	return m.Method
}

func TestRouting(t *testing.T) {
	t.Parallel()
	ss := bareSession(t)
	getRec := httptest.NewRecorder()
	ss.attach(newStream(getRec, 0, nil))
	first, firstRec := sseExchange(t, ss, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}}`)
	_, secondRec := sseExchange(t, ss, `{"jsonrpc":"2.0","id":"two","method":"tools/call","params":{"name":"b","_meta":{"progressToken":7}}}`)

	msgs := []string{
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":7,"progress":1}}`, // the POST that asked
		`{"jsonrpc":"2.0","method":"notifications/message","params":{}}`,                                // the oldest POST
		`{"jsonrpc":"2.0","id":"up-1","method":"sampling/createMessage","params":{}}`,                   // the oldest POST
		`{"jsonrpc":"2.0","id":"\u0074wo","result":{}}`,                                                 // its POST, whatever the escaping
		`{"jsonrpc":"2.0","id":99,"result":{}}`,                                                         // no one waits: dropped
		`{"jsonrpc":"2.0","id":1,"result":{}}`,                                                          // its POST, which completes
		`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`,                                 // no POST left: GET
	}
	for _, m := range msgs {
		require.NoError(t, ss.WriteMessage(t.Context(), []byte(m)))
	}
	select {
	case <-first.done:
	default:
		t.Fatal("the first POST is not complete")
	}
	assert.Equal(t, []string{msgs[1], msgs[2], msgs[5]}, events(t, firstRec.Body))
	assert.Equal(t, []string{msgs[0], msgs[3]}, events(t, secondRec.Body))
	assert.Equal(t, []string{msgs[6]}, events(t, getRec.Body))
}

// sseExchange registers a POST answering with SSE into a recorder.
func sseExchange(t *testing.T, ss *session, body string) (*exchange, *httptest.ResponseRecorder) {
	t.Helper()
	msgs, batch, perr := parseBody([]byte(body))
	require.Nil(t, perr)
	rec := httptest.NewRecorder()
	ex, dup := newExchange(msgs, batch)
	require.Nil(t, dup)
	ex.stream = newStream(rec, 0, nil)
	require.Nil(t, ss.register(ex))
	return ex, rec
}

func TestStreamOfAGoneClientIsSkipped(t *testing.T) {
	t.Parallel()
	ss := bareSession(t)
	getRec := httptest.NewRecorder()
	ss.attach(newStream(getRec, 0, nil))
	msgs, batch, perr := parseBody([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call"}`))
	require.Nil(t, perr)
	ex, dup := newExchange(msgs, batch)
	require.Nil(t, dup)
	ex.stream = newStream(goneClient{httptest.NewRecorder()}, 0, nil)
	require.Nil(t, ss.register(ex))

	msg := `{"jsonrpc":"2.0","method":"notifications/message","params":{}}`
	require.NoError(t, ss.WriteMessage(t.Context(), []byte(msg)))
	assert.Equal(t, []string{msg}, events(t, getRec.Body), "rerouted to the GET stream")
	select {
	case <-ex.stream.ended:
	default:
		t.Fatal("the failed stream's handler was not told to return")
	}
}

// goneClient is a response whose client has left: every write fails.
type goneClient struct{ *httptest.ResponseRecorder }

func (goneClient) Write([]byte) (int, error) { return 0, io.ErrClosedPipe }

func TestBatchFromRelayIsSplit(t *testing.T) {
	t.Parallel()
	ss := bareSession(t)
	ex, rec := sseExchange(t, ss, `[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","id":2,"method":"b"}]`)
	require.NoError(t, ss.WriteMessage(t.Context(), []byte(`[{"jsonrpc":"2.0","id":2,"result":{}},{"jsonrpc":"2.0","id":1,"result":{}}]`)))
	<-ex.done
	assert.Equal(t, []string{`{"jsonrpc":"2.0","id":2,"result":{}}`, `{"jsonrpc":"2.0","id":1,"result":{}}`}, events(t, rec.Body))
}

func TestParseBody(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		body      string
		wantMsgs  []string
		wantBatch bool
		wantCode  int // 0: accepted
	}{
		{name: "request", body: `{"jsonrpc":"2.0","id":1,"method":"ping"}`, wantMsgs: []string{`{"jsonrpc":"2.0","id":1,"method":"ping"}`}},
		{name: "kept byte for byte", body: `{ "jsonrpc" : "2.0", "method":"x", "extra":[1, 2] }`, wantMsgs: []string{`{ "jsonrpc" : "2.0", "method":"x", "extra":[1, 2] }`}},
		{name: "multi-line compacted", body: "{\"jsonrpc\":\"2.0\",\n\"id\":1,\r\n\"result\":{\"a\":\"x y\"}}", wantMsgs: []string{`{"jsonrpc":"2.0","id":1,"result":{"a":"x y"}}`}},
		{name: "batch", body: `[{"jsonrpc":"2.0","method":"a"}, {"jsonrpc":"2.0","id":2,"result":{}}]`, wantBatch: true,
			wantMsgs: []string{`{"jsonrpc":"2.0","method":"a"}`, `{"jsonrpc":"2.0","id":2,"result":{}}`}},
		{name: "empty", body: " ", wantCode: jsonrpc.CodeInvalidRequest},
		{name: "not JSON", body: `{"id":`, wantCode: jsonrpc.CodeParseError},
		{name: "not an object", body: `"ping"`, wantCode: jsonrpc.CodeInvalidRequest},
		{name: "nested batch", body: `[[{"jsonrpc":"2.0","method":"a"}]]`, wantCode: jsonrpc.CodeInvalidRequest},
		{name: "neither request nor response", body: `{"jsonrpc":"2.0","id":1}`, wantCode: jsonrpc.CodeInvalidRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			msgs, batch, perr := parseBody([]byte(tt.body))
			if tt.wantCode != 0 {
				require.NotNil(t, perr)
				assert.Equal(t, tt.wantCode, perr.code)
				return
			}
			require.Nil(t, perr)
			assert.Equal(t, tt.wantBatch, batch)
			var got []string
			for _, m := range msgs {
				got = append(got, string(m.msg))
			}
			assert.Equal(t, tt.wantMsgs, got)
		})
	}
}

func TestEncodeEvent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		msg  string
		want string
	}{
		{name: "one line", msg: `{"a":1}`, want: "event: message\ndata: {\"a\":1}\n\n"},
		{name: "several lines", msg: "{\r\n\"a\": 1\n}", want: "event: message\ndata: {\ndata: \"a\": 1\ndata: }\n\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, string(encodeEvent([]byte(tt.msg))))
		})
	}
}

func TestIsLoopbackAddr(t *testing.T) {
	t.Parallel()
	tests := []struct {
		addr string
		want bool
	}{
		{addr: "127.0.0.1:8931", want: true},
		{addr: "127.1.2.3:0", want: true},
		{addr: "localhost:8931", want: true},
		{addr: "[::1]:8931", want: true},
		{addr: ":8931", want: false},
		{addr: "0.0.0.0:8931", want: false},
		{addr: "192.168.1.2:8931", want: false},
		{addr: "example.com:80", want: false},
		{addr: "127.0.0.1", want: false}, // no port: not a listen address
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, IsLoopbackAddr(tt.addr), tt.addr)
	}
}

func TestIdleTimeout(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		up := newFakeUpstream()
		front := &Server{NewSession: up.session, IdleTimeout: time.Minute}
		post := func(session, body string) *httptest.ResponseRecorder {
			r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set("Accept", acceptJSON)
			if session != "" {
				r.Header.Set(HeaderSessionID, session)
			}
			rec := httptest.NewRecorder()
			front.ServeHTTP(rec, r)
			return rec
		}
		rec := post("", initializeBody)
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		id := rec.Header().Get(HeaderSessionID)
		fc := <-up.conns

		time.Sleep(50 * time.Second)
		require.Equal(t, http.StatusOK, post(id, `{"jsonrpc":"2.0","id":1,"method":"ping"}`).Code, "a request resets the idle clock")
		time.Sleep(50 * time.Second)
		synctest.Wait()
		require.Len(t, front.Sessions(), 1, "idle for 50s only")

		time.Sleep(11 * time.Second)
		synctest.Wait()
		assert.Empty(t, front.Sessions())
		<-fc.closed // the relay closed its upstream
		assert.Equal(t, http.StatusNotFound, post(id, `{"jsonrpc":"2.0","id":2,"method":"ping"}`).Code)
		require.NoError(t, front.Shutdown(t.Context()))
	})
}
