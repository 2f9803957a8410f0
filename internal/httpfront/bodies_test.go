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
		name    string
		size    int
		chunked bool
		budget  int64
		wantErr error
	}{
		{name: "known length", size: 100 << 10, budget: 100 << 10},
		{name: "known length, empty", size: 0, budget: 1},
		{name: "known length, over the budget", size: 100 << 10, budget: 100<<10 - 1, wantErr: ErrBodiesBusy},
		{name: "unknown length", size: 3<<20 + 5, chunked: true, budget: 8 << 20},
		{name: "unknown length, small", size: 10, chunked: true, budget: 2 * chunkMin},
		{name: "unknown length, over the budget", size: 3 << 20, chunked: true, budget: 4 << 20, wantErr: ErrBodiesBusy},
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
			b := &budget{limit: tt.budget}
			got, held, err := readBody(nil, r, 64<<20, b)
			if tt.wantErr != nil {
				assert.ErrorIs(t, err, tt.wantErr)
				assert.Zero(t, b.inUse(), "a refused body takes nothing")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, want, got)
			assert.Equal(t, len(got), cap(got), "an exactly sized buffer")
			assert.Equal(t, int64(tt.size), b.inUse(), "the body's bytes are taken until released")
			held.release()
			held.release()
			assert.Zero(t, b.inUse())
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
