package httpfront

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBodiesTakeTheBudget holds a body half sent (its headers and first
// bytes arrived, the rest not yet): with MaxBufferedBytes taken by it,
// another body is refused at once, unread, with 503 and Retry-After, while
// a body that fits what is left is served; once the first body is whole
// and handed to the relay, its bytes are given back, and the body refused
// before is served. Without the budget every body was read whatever the
// others held: 32 connections held 32 bodies of up to 64 MiB each.
func TestBodiesTakeTheBudget(t *testing.T) {
	t.Parallel()
	const budget = 64 << 10
	ts := newTestServer(t, func(s *Server) { s.MaxBufferedBytes = budget })
	id := ts.initialize(t)

	// A call of 48 KiB, sent but for its last bytes.
	big := call(10, "echo", fmt.Sprintf(`{"text":%q}`, strings.Repeat("x", 48<<10)))
	conn, err := net.Dial("tcp", ts.Listener.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	_, err = fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json\r\n%s: %s\r\nContent-Length: %d\r\n\r\n%s",
		ts.Listener.Addr(), HeaderSessionID, id, len(big), big[:len(big)-10])
	require.NoError(t, err)
	require.Eventually(t, func() bool { return ts.front.bodies.inUse() >= int64(len(big)) },
		10*time.Second, time.Millisecond, "the held body takes its size")

	tests := []struct {
		name       string
		body       string
		wantStatus int
	}{
		{name: "a body over what is left", body: call(11, "echo", fmt.Sprintf(`{"text":%q}`, strings.Repeat("y", 20<<10))),
			wantStatus: http.StatusServiceUnavailable},
		{name: "a body that fits", body: call(12, "echo", `{"text":"small"}`), wantStatus: http.StatusOK},
	}
	for _, tt := range tests {
		resp := ts.do(t, request{Session: id, Body: tt.body})
		body := readAll(t, resp)
		assert.Equal(t, tt.wantStatus, resp.StatusCode, "%s: %.200s", tt.name, body)
		if tt.wantStatus == http.StatusServiceUnavailable {
			assert.Equal(t, retryAfter, resp.Header.Get("Retry-After"), tt.name)
			assert.True(t, strings.Contains(body, ErrBodiesBusy.Error()), "%s: %.200s", tt.name, body)
		}
	}

	// The rest of the held body: it is served, and gives its bytes back.
	_, err = io.WriteString(conn, big[len(big)-10:])
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.True(t, strings.Contains(readAll(t, resp), strings.Repeat("x", 48<<10)), "the held call is answered")
	assert.Zero(t, ts.front.bodies.inUse(), "every body's bytes are given back")

	resp = ts.do(t, request{Session: id, Body: tests[0].body})
	assert.Equal(t, http.StatusOK, resp.StatusCode, "the body refused before fits now: %.200s", readAll(t, resp))
	assert.Zero(t, ts.front.bodies.inUse())
}

// sendSlowly sends a POST of body to session from the loopback IP from,
// but for its last 10 bytes, and waits until the budget holds at least
// wantHeld bytes (the server took the body's size). It returns the
// connection, on which finish sends the rest.
func (ts *testServer) sendSlowly(t *testing.T, from, session, body string, wantHeld int64) net.Conn {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	conn, err := d.DialContext(t.Context(), "tcp", ts.Listener.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	_, err = fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json\r\n%s: %s\r\nContent-Length: %d\r\n\r\n%s",
		ts.Listener.Addr(), HeaderSessionID, session, len(body), body[:len(body)-10])
	require.NoError(t, err)
	require.Eventually(t, func() bool { return ts.front.bodies.inUse() >= wantHeld },
		10*time.Second, time.Millisecond, "the held body takes its size")
	return conn
}

// finish sends the last 10 bytes of body on conn and returns the answer.
func finish(t *testing.T, conn net.Conn, body string) (int, string) {
	t.Helper()
	_, err := io.WriteString(conn, body[len(body)-10:])
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	return resp.StatusCode, readAll(t, resp)
}

// TestBodiesAreSharedOutPerClient has one client hold its whole share of
// the budget for bodies in slow uploads, in two sessions: its next body is
// refused at once with 503 and Retry-After, though the budget as a whole
// has room, while another client's body is served. A slow upload whose
// client leaves gives its bytes back too, and once every body is done no
// bytes and no client are left in the budget. Before, the budget had no
// share per client: one client's slow uploads could take all of it, and
// every other client got 503.
func TestBodiesAreSharedOutPerClient(t *testing.T) {
	t.Parallel()
	const budget, share = 112 << 10, 64 << 10
	ts := newTestServer(t, func(s *Server) { s.MaxBufferedBytes, s.MaxBufferedBytesPerClient = budget, share })
	idA1, idA2 := ts.initializeFrom(t, clientA), ts.initializeFrom(t, clientA)
	idB := ts.initializeFrom(t, clientB)
	text := func(c byte, n int) string { return fmt.Sprintf(`{"text":%q}`, strings.Repeat(string(c), n)) }

	// Client A holds its share, but for a few bytes, in two slow uploads.
	slow1, slow2 := call(10, "echo", text('x', 30<<10)), call(11, "echo", text('y', 30<<10))
	conn1 := ts.sendSlowly(t, clientA, idA1, slow1, int64(len(slow1)))
	conn2 := ts.sendSlowly(t, clientA, idA2, slow2, int64(len(slow1)+len(slow2)))

	tests := []struct {
		name       string
		req        request
		wantStatus int
		wantErr    error
	}{
		{name: "the client past its share", req: request{Session: idA1, From: clientA, Body: call(12, "echo", text('a', 8<<10))},
			wantStatus: http.StatusServiceUnavailable, wantErr: ErrClientBodies},
		{name: "another client", req: request{Session: idB, From: clientB, Body: call(13, "echo", text('b', 40<<10))},
			wantStatus: http.StatusOK},
		{name: "another client past the whole budget", req: request{Session: idB, From: clientB, Body: call(14, "echo", text('c', 60<<10))},
			wantStatus: http.StatusServiceUnavailable, wantErr: ErrBodiesBusy},
	}
	for _, tt := range tests {
		resp := ts.do(t, tt.req)
		body := readAll(t, resp)
		assert.Equal(t, tt.wantStatus, resp.StatusCode, "%s: %.200s", tt.name, body)
		if tt.wantErr != nil {
			assert.Equal(t, retryAfter, resp.Header.Get("Retry-After"), tt.name)
			assert.True(t, strings.Contains(body, tt.wantErr.Error()), "%s: %.200s", tt.name, body)
		}
	}

	// One slow upload is finished, the other's client leaves.
	status, body := finish(t, conn1, slow1)
	assert.Equal(t, http.StatusOK, status, "%.200s", body)
	require.NoError(t, conn2.Close())
	require.Eventually(t, func() bool { return ts.front.bodies.inUse() == 0 },
		10*time.Second, time.Millisecond, "the bytes of the body cut short are given back")
	assert.Zero(t, ts.front.bodies.holders(), "no client is left in the budget")

	resp := ts.do(t, tests[0].req)
	assert.Equal(t, http.StatusOK, resp.StatusCode, "the body refused before fits now: %.200s", readAll(t, resp))
	assert.Zero(t, ts.front.bodies.inUse())
	assert.Zero(t, ts.front.bodies.holders())
}

// TestBodyShareDefaults checks MaxBufferedBytesPerClient's zero value: half
// the budget, but never less than one body of the largest size may take.
func TestBodyShareDefaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		server *Server
		want   int64
	}{
		{name: "zero value", server: &Server{}, want: DefaultMaxBufferedBytesPerClient},
		{name: "half the budget", server: &Server{MaxBodyBytes: 1 << 20, MaxBufferedBytes: 100 << 20}, want: 50 << 20},
		{name: "one body of the largest size fits", server: &Server{MaxBodyBytes: 1 << 20, MaxBufferedBytes: 4 << 20}, want: 2<<20 + chunkMax},
		{name: "set", server: &Server{MaxBufferedBytesPerClient: 5}, want: 5},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, tt.server.maxBufferedBytesPerClient(), tt.name)
	}
}

// TestBodyBytesAreGivenBackOnEveryPath sends bodies that end every way a
// POST can (answered, accepted, refused, cut short, to a session that does
// not exist, of unknown length) and checks that none keeps its bytes.
func TestBodyBytesAreGivenBackOnEveryPath(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, func(s *Server) { s.MaxBodyBytes = 1 << 20 })
	id := ts.initialize(t)
	tests := []struct {
		name       string
		req        request
		chunked    bool
		wantStatus int
	}{
		{name: "answered", req: request{Session: id, Body: call(1, "echo", `{"text":"a"}`)}, wantStatus: http.StatusOK},
		{name: "answered, of unknown length", req: request{Session: id, Body: call(2, "echo", fmt.Sprintf(`{"text":%q}`, strings.Repeat("z", 300<<10)))},
			chunked: true, wantStatus: http.StatusOK},
		{name: "accepted", req: request{Session: id, Body: `{"jsonrpc":"2.0","method":"notifications/progress","params":{}}`}, wantStatus: http.StatusAccepted},
		{name: "not JSON", req: request{Session: id, Body: `{"jsonrpc":`}, wantStatus: http.StatusBadRequest},
		{name: "over the limit, of unknown length", req: request{Session: id, Body: strings.Repeat(" ", 2<<20)}, chunked: true,
			wantStatus: http.StatusRequestEntityTooLarge},
		{name: "unknown session", req: request{Session: "nope", Body: call(3, "echo", `{}`)}, wantStatus: http.StatusNotFound},
		{name: "no session", req: request{Body: call(4, "echo", `{}`)}, wantStatus: http.StatusBadRequest},
	}
	for _, tt := range tests {
		var body io.Reader = strings.NewReader(tt.req.Body)
		if tt.chunked {
			body = io.MultiReader(body) // hides the length: sent chunked
		}
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, ts.URL, body)
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", acceptJSON)
		if tt.req.Session != "" {
			req.Header.Set(HeaderSessionID, tt.req.Session)
		}
		resp, err := ts.Client().Do(req)
		require.NoError(t, err, tt.name)
		got := readAll(t, resp)
		resp.Body.Close()
		assert.Equal(t, tt.wantStatus, resp.StatusCode, "%s: %s", tt.name, got)
		assert.Zero(t, ts.front.bodies.inUse(), tt.name)
	}
}

// TestReadBody reads bodies of known and unknown length into buffers of
// their exact size, within the budget.
func TestReadBody(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		size      int
		chunked   bool
		budget    int64
		perClient int64
		wantErr   error
	}{
		{name: "known length", size: 100 << 10, budget: 100 << 10},
		{name: "known length, empty", size: 0, budget: 1},
		{name: "known length, over the budget", size: 100 << 10, budget: 100<<10 - 1, wantErr: ErrBodiesBusy},
		{name: "unknown length", size: 3<<20 + 5, chunked: true, budget: 8 << 20},
		{name: "unknown length, small", size: 10, chunked: true, budget: 2 * chunkMin},
		{name: "unknown length, over the budget", size: 3 << 20, chunked: true, budget: 4 << 20, wantErr: ErrBodiesBusy},
		{name: "known length, within the client's share", size: 100 << 10, budget: 1 << 20, perClient: 100 << 10},
		{name: "known length, over the client's share", size: 100 << 10, budget: 1 << 20, perClient: 100<<10 - 1, wantErr: ErrClientBodies},
		{name: "unknown length, at its peak", size: 3 << 20, chunked: true, budget: 8 << 20, perClient: bodyPeak(3 << 20)},
		{name: "unknown length, over the client's share", size: 3 << 20, chunked: true, budget: 8 << 20, perClient: 4 << 20, wantErr: ErrClientBodies},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := bytes.Repeat([]byte("b"), tt.size)
			var body io.Reader = bytes.NewReader(want)
			if tt.chunked {
				body = io.MultiReader(body)
			}
			r, err := http.NewRequestWithContext(context.Background(), http.MethodPost, "/", body)
			require.NoError(t, err)
			if tt.chunked {
				r.ContentLength = -1
			}
			b := &budget{limit: tt.budget, perClient: tt.perClient}
			got, held, err := readBody(nil, r, 64<<20, b, "c")
			if tt.wantErr != nil {
				assert.ErrorIs(t, err, tt.wantErr)
				assert.Zero(t, b.inUse(), "a refused body takes nothing")
				assert.Zero(t, b.holders())
				return
			}
			require.NoError(t, err)
			assert.Equal(t, want, got)
			assert.Equal(t, len(got), cap(got), "an exactly sized buffer")
			assert.Equal(t, int64(tt.size), b.inUse(), "the body's bytes are taken until released")
			held.release()
			held.release()
			assert.Zero(t, b.inUse())
			assert.Zero(t, b.holders(), "a client holding nothing has no entry")
		})
	}
}

// FuzzCompactInPlace holds compactInPlace to json.Compact on valid JSON.
func FuzzCompactInPlace(f *testing.F) {
	for _, s := range []string{
		"{\n  \"a\": 1,\r\n  \"b\": [1, 2]\n}",
		`{"s":"a \" \\ \n\t b", "t" : "\\"}`,
		" [ \"\\\\\" , {\"x\" :\t\"y z\"} ] ",
		`"just a string"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return
		}
		var want bytes.Buffer
		require.NoError(t, json.Compact(&want, raw))
		got := compactInPlace(bytes.Clone(raw))
		assert.Equal(t, want.String(), string(got))
	})
}
