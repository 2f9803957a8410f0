package httpfront

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpwrap/mcpwrap/internal/syncbuf"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stalledClient is a response whose client has stopped reading but keeps
// its connection open: every write blocks until the test lets the write
// deadline, set through http.ResponseController, pass (expire) or the
// client read again (resume).
type stalledClient struct {
	header    http.Header
	writing   chan struct{}  // closed once a write is blocked
	deadlines chan time.Time // the write deadlines set
	expired   chan struct{}  // closed by expire
	resumed   chan struct{}  // closed by resume
	once      sync.Once
	resume    func()

	mu   sync.Mutex
	body bytes.Buffer // what the client read
}

func newStalledClient() *stalledClient {
	c := &stalledClient{header: http.Header{}, writing: make(chan struct{}), deadlines: make(chan time.Time, 1),
		expired: make(chan struct{}), resumed: make(chan struct{})}
	c.resume = sync.OnceFunc(func() { close(c.resumed) })
	return c
}

func (c *stalledClient) Header() http.Header { return c.header }
func (c *stalledClient) WriteHeader(int)     {}
func (c *stalledClient) Flush()              {}

func (c *stalledClient) Write(b []byte) (int, error) {
	select {
	case <-c.writing:
	default:
		close(c.writing)
	}
	select {
	case <-c.resumed:
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.body.Write(b)
	case <-c.expired:
		return 0, os.ErrDeadlineExceeded
	}
}

// Body returns what the client read.
func (c *stalledClient) Body() *bytes.Buffer {
	c.mu.Lock()
	defer c.mu.Unlock()
	return bytes.NewBuffer(bytes.Clone(c.body.Bytes()))
}

func (c *stalledClient) SetWriteDeadline(d time.Time) error {
	c.deadlines <- d
	return nil
}

// expire lets the write deadline pass.
func (c *stalledClient) expire() { c.once.Do(func() { close(c.expired) }) }

// A client that stops reading blocks the relay's writes (backpressure), but
// never beyond the stream's use: neither the relay nor the stream's handler
// may hang on it.
func TestBlockedWriteEndsWithItsStream(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		stop         func(ss *session, st *stream)
		wantDeadline time.Duration // from now
	}{
		{name: "the relay closes the client side", stop: func(ss *session, _ *stream) { ss.Close() }, wantDeadline: 0},
		{name: "the stream's handler returns", stop: func(_ *session, st *stream) { st.close() }, wantDeadline: closeGrace},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ss := bareSession(t)
			client := newStalledClient()
			st := newStream(client, 0, nil)
			ss.attach(st)
			written := make(chan error, 1)
			go func() { written <- ss.WriteMessage(t.Context(), notification("stuck")) }()
			<-client.writing

			stopped := make(chan struct{})
			go func() {
				defer close(stopped)
				tt.stop(ss, st)
			}()
			select {
			case d := <-client.deadlines:
				assert.WithinDuration(t, time.Now().Add(tt.wantDeadline), d, time.Second)
			case <-time.After(10 * time.Second):
				t.Fatal("no write deadline set: the write would block forever")
			}
			client.expire()
			<-stopped
			require.NoError(t, <-written, "the relay's write returns")
			<-st.ended // its handler is told to return
			assert.True(t, st.gone.Load(), "no message is routed to it any more")
		})
	}
}

// A POST answered with SSE is released only once every response routed to
// it is written: a response waiting for the stream (behind a slow write)
// is not lost when the POST's last request completes meanwhile.
func TestPOSTWaitsForResponsesBeingWritten(t *testing.T) {
	t.Parallel()
	ss := bareSession(t)
	msgs, batch, perr := parseBody([]byte(`[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","id":2,"method":"b"}]`))
	require.Nil(t, perr)
	ex, dup := newExchange(msgs, batch)
	require.Nil(t, dup)
	client := newStalledClient()
	ex.stream = newStream(client, 0, nil)
	require.Nil(t, ss.register(ex))

	note := `{"jsonrpc":"2.0","method":"notifications/message","params":{}}`
	answer := `{"jsonrpc":"2.0","id":1,"result":{}}`
	go func() { assert.NoError(t, ss.WriteMessage(t.Context(), []byte(note))) }()
	<-client.writing // the client reads slowly
	go func() { assert.NoError(t, ss.WriteMessage(t.Context(), []byte(answer))) }()
	waitFor(t, ss, func() bool { return ss.calls[idKey([]byte("1"))] == nil }) // taken, waiting for the stream
	ss.cancelled([]byte(`{"requestId":2}`))
	select {
	case <-ex.done:
		t.Fatal("the POST was released before its response was written")
	default:
	}

	client.resume()
	<-ex.done
	ss.unregister(ex)
	ex.stream.close()
	assert.Equal(t, []string{note, answer}, events(t, client.Body()))
}

// waitFor yields until cond, evaluated under the session's mutex, holds.
func waitFor(t *testing.T, ss *session, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; runtime.Gosched() {
		ss.mu.Lock()
		ok := cond()
		ss.mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
	}
}

// A session that ends stops its relay even while the relay's client pump
// is blocked writing one of its own answers to a client that stopped
// reading: the pump never reads the EOF, so the end reaches the relay
// through its context, and its upstream (the child) is closed. The blocked
// write itself ends with its stream, as TestBlockedWriteEndsWithItsStream
// shows.
func TestEndStopsARelayBlockedOnItsClient(t *testing.T) {
	t.Parallel()
	ss := bareSession(t)
	up := newFakeUpstream()
	ss.relay = up.session(ss, slog.New(slog.DiscardHandler))
	ss.start()
	fc := up.next(t)

	client := newStalledClient()
	// The relay answers a request in its own id space itself.
	msgs, batch, perr := parseBody([]byte(`{"jsonrpc":"2.0","id":"mcpwrap-1","method":"ping"}`))
	require.Nil(t, perr)
	ex, dup := newExchange(msgs, batch)
	require.Nil(t, dup)
	ex.stream = newStream(client, 0, nil)
	require.Nil(t, ss.register(ex))
	require.True(t, ss.deliver(t.Context(), msgs[0].msg))
	<-client.writing

	ss.end("DELETE")
	select {
	case <-ss.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the relay did not stop")
	}
	<-fc.closed
	client.expire()
}

// TestStreamOpensWithRetryField: an SSE stream tells its client how long to
// wait before reconnecting, in an event without data, before any message.
func TestStreamOpensWithRetryField(t *testing.T) {
	rec := httptest.NewRecorder()
	st := newStream(rec, 0, nil)
	require.NoError(t, st.send([]byte(`{"jsonrpc":"2.0","method":"x"}`)))
	assert.Equal(t, "retry: 1000\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n\n", rec.Body.String())
}

// A client that stops reading its SSE answer, with its connection open,
// must not hold the relay's writes beyond StallTimeout: on the stateless
// session every 2026-07-28 client shares one relay, so one such client
// would otherwise stop every other's answers.
func TestStalledStreamDoesNotHoldOtherClients(t *testing.T) {
	t.Parallel()
	logs := watchLog("read nothing of its event stream for the stall timeout")
	ts := newTestServer(t, func(s *Server) {
		s.StallTimeout = 100 * time.Millisecond
		s.Logger = slog.New(slog.NewTextHandler(logs, nil))
	})
	ts.up.modern.Store(true)

	// More than the socket buffers hold (the client's is kept small), so
	// that the write to a client that reads nothing blocks.
	const size = 16 << 20
	stalled := ts.rawSSEPost(t, modernCall(1, "big", fmt.Sprintf(`{"bytes":"%d"}`, size)))
	select {
	case <-ts.up.bigSent: // the relay holds the answer, and writes it to a client that reads nothing
	case <-time.After(10 * time.Second):
		t.Fatal("the big call never reached the upstream")
	}

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	ts.stillServed(ctx, t, acceptJSON, "another client's call waits behind the stalled stream")

	// The stalled client's connection was closed, the operator told why:
	// reading it ends short of the whole answer.
	select {
	case <-logs.seen:
	case <-time.After(10 * time.Second):
		t.Fatal("no stall logged")
	}
	cutShort(t, stalled, size)
}

// stillServed checks that another stateless client's echo, accepting
// accept, is answered within ctx; why says what a timeout means.
func (ts *testServer) stillServed(ctx context.Context, t *testing.T, accept, why string) {
	t.Helper()
	other := modernCall(2, "echo", `{"text":"still served"}`)
	other.Accept = accept
	resp, err := ts.send(ctx, t, other)
	require.NoError(t, err, why)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	body := readAll(t, resp)
	assert.Contains(t, body, "still served")
	if accept == acceptBoth {
		require.Len(t, events(t, strings.NewReader(body)), 1, "one event: the answer")
	}
}

// cutShort checks that the server closed conn, a client's that stopped
// reading, before it had sent all of its whole bytes.
func cutShort(t *testing.T, conn net.Conn, whole int) {
	t.Helper()
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	n, err := io.Copy(io.Discard, conn)
	require.False(t, errors.Is(err, os.ErrDeadlineExceeded), "the client's connection stays open")
	assert.Less(t, n, int64(whole), "the client got everything")
}

// rawSSEPost sends r as a POST accepting SSE on a connection of its own,
// whose receive buffer is kept small, and returns the connection unread:
// the test reads it as slowly as it likes, or not at all.
func (ts *testServer) rawSSEPost(t *testing.T, r request) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", ts.Listener.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	require.NoError(t, conn.(*net.TCPConn).SetReadBuffer(64<<10))
	var head strings.Builder
	fmt.Fprintf(&head, "POST / HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: %s\r\nContent-Length: %d\r\n",
		ts.Listener.Addr(), acceptBoth, len(r.Body))
	for k, v := range r.Header {
		fmt.Fprintf(&head, "%s: %s\r\n", k, v)
	}
	_, err = io.WriteString(conn, head.String()+"\r\n"+r.Body)
	require.NoError(t, err)
	return conn
}

// logWatch is a log sink that closes seen once a line contains match.
type logWatch struct {
	match string
	seen  chan struct{}
	once  sync.Once
}

func watchLog(match string) *logWatch { return &logWatch{match: match, seen: make(chan struct{})} }

func (w *logWatch) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte(w.match)) {
		w.once.Do(func() { close(w.seen) })
	}
	return len(p), nil
}

// deadlineRecorder is a response that records its writes and the write
// deadlines set through http.ResponseController, in order.
type deadlineRecorder struct {
	*httptest.ResponseRecorder
	events []string
}

func (r *deadlineRecorder) Write(b []byte) (int, error) {
	r.events = append(r.events, fmt.Sprintf("write %d", len(b)))
	return r.ResponseRecorder.Write(b)
}

func (r *deadlineRecorder) SetWriteDeadline(d time.Time) error {
	switch {
	case d.IsZero():
		r.events = append(r.events, "no deadline")
	case time.Until(d) > time.Hour:
		r.events = append(r.events, "stall deadline")
	default:
		r.events = append(r.events, "cut deadline")
	}
	return nil
}

// A write gets the stall timeout for each stallStep of it (so a client
// that reads slowly but steadily is waited for), and none once it is done;
// once close or abort set their deadline, a write never moves it.
func TestStreamWriteDeadlines(t *testing.T) {
	t.Parallel()
	const stall = 2 * time.Hour // told apart from a cut deadline by its distance
	msg := bytes.Repeat([]byte("x"), 2*stallStep+10)
	event := len(encodeEvent(msg))
	tests := []struct {
		name  string
		stall time.Duration
		cut   bool
		last  bool // sendLast's write, which the handler's return flushes
		want  []string
	}{
		{name: "stall timeout", stall: stall, want: []string{
			"stall deadline", fmt.Sprintf("write %d", stallStep),
			"stall deadline", fmt.Sprintf("write %d", stallStep),
			"stall deadline", fmt.Sprintf("write %d", event-2*stallStep),
			"stall deadline", // the flush
			"no deadline",
		}},
		{name: "the last event keeps its deadline for the handler's flush", stall: stall, last: true, want: []string{
			"stall deadline", fmt.Sprintf("write %d", stallStep),
			"stall deadline", fmt.Sprintf("write %d", stallStep),
			"stall deadline", fmt.Sprintf("write %d", event-2*stallStep),
		}},
		{name: "no stall timeout", stall: 0, want: []string{fmt.Sprintf("write %d", event)}},
		{name: "aborted before", stall: stall, cut: true, want: []string{
			"cut deadline", // abort
			fmt.Sprintf("write %d", stallStep), fmt.Sprintf("write %d", stallStep), fmt.Sprintf("write %d", event-2*stallStep),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := &deadlineRecorder{ResponseRecorder: httptest.NewRecorder()}
			st := newStream(rec, tt.stall, nil)
			st.started = true // the headers' write is not the subject
			if tt.cut {
				st.abort()
				st.gone.Store(false) // as if the write raced the abort
			}
			st.mu.Lock()
			err := st.writeLockedFlush(encodeEvent(msg), !tt.last)
			st.mu.Unlock()
			require.NoError(t, err)
			assert.Equal(t, tt.want, rec.events)
		})
	}
}

// close lets a write in progress finish for closeGrace at most, but never
// for longer than the write's own stall deadline: with a StallTimeout
// shorter than closeGrace, a client that stopped reading must not hold the
// relay's write for closeGrace because its handler returned meanwhile.
func TestCloseKeepsAnEarlierStallDeadline(t *testing.T) {
	t.Parallel()
	client := newStalledClient()
	st := newStream(client, closeGrace/5, nil)
	st.started = true // the headers' write is not the subject
	written := make(chan error, 1)
	go func() { written <- st.send([]byte(`{"jsonrpc":"2.0","method":"x"}`)) }()
	stall := <-client.deadlines
	<-client.writing

	closed := make(chan struct{})
	go func() {
		defer close(closed)
		st.close()
	}()
	select {
	case cut := <-client.deadlines:
		assert.False(t, cut.After(stall), "close moved the write's deadline %s later", cut.Sub(stall))
	case <-closed:
		t.Fatal("close did not wait for the write in progress")
	}
	client.expire()
	<-closed
	assert.ErrorIs(t, <-written, os.ErrDeadlineExceeded)
}

// A client that reads its SSE answer slowly but steadily, faster than
// stallStep per StallTimeout, is served whole however long the answer
// takes: the timeout bounds each step of a write, not the write.
func TestSlowReaderIsServed(t *testing.T) {
	t.Parallel()
	var logs syncbuf.Buffer
	// Generous, so that a loaded machine's slow reader is not taken for
	// a stalled one: TestListenerLimitsUnsentBytes holds the cap itself.
	const stall = 2 * time.Second
	ts := newTestServer(t, func(s *Server) {
		s.StallTimeout = stall
		s.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	ts.up.modern.Store(true)

	// At most 32 KiB every 10 ms: the 8 MiB answer takes longer than the
	// stall timeout, so a deadline on the whole write would cut it.
	const size = 8 << 20
	conn := ts.rawSSEPost(t, modernCall(1, "big", fmt.Sprintf(`{"bytes":"%d"}`, size)))

	start := time.Now()
	slow := &pacedReader{r: conn, chunk: 32 << 10, tick: time.NewTicker(10 * time.Millisecond)}
	defer slow.tick.Stop()
	resp, err := http.ReadResponse(bufio.NewReaderSize(slow, 32<<10), nil)
	require.NoError(t, err)
	var body headTail // not kept whole: an 8 MiB buffer's growth would pause the reader
	n, err := io.Copy(&body, resp.Body)
	require.NoError(t, err, "the answer, whole; %d bytes came in %s", n, time.Since(start))
	assert.Greater(t, n, int64(size))
	assert.Contains(t, string(body.head), `"id":1,"result"`)
	assert.True(t, bytes.HasSuffix(body.tail, []byte("\"}]}}\n\n")), "the answer, whole")
	assert.Greater(t, time.Since(start), stall, "the client read slower than the stall timeout allows a whole write")
	assert.NotContains(t, logs.String(), "stall timeout")
}

// headTail keeps the first and last bytes written to it.
type headTail struct{ head, tail []byte }

func (h *headTail) Write(p []byte) (int, error) {
	if len(h.head) < 256 {
		h.head = append(h.head, p[:min(len(p), 256-len(h.head))]...)
	}
	h.tail = append(h.tail, p...)
	h.tail = h.tail[max(0, len(h.tail)-256):]
	return len(p), nil
}

// pacedReader reads at most chunk bytes per tick.
type pacedReader struct {
	r     io.Reader
	chunk int
	tick  *time.Ticker
}

func (p *pacedReader) Read(b []byte) (int, error) {
	<-p.tick.C
	return p.r.Read(b[:min(len(b), p.chunk)])
}

// flushNotifier is a recorder that says when it is flushed.
type flushNotifier struct {
	*httptest.ResponseRecorder
	flushed chan struct{}
}

func (f *flushNotifier) Flush() {
	f.ResponseRecorder.Flush()
	select {
	case f.flushed <- struct{}{}:
	default:
	}
}

// A request's stream waits for its first event to send its headers with,
// but not for ever: a client waiting for a long call sees it open.
func TestStreamStartsAfterItsDelay(t *testing.T) {
	t.Parallel()
	rec := &flushNotifier{ResponseRecorder: httptest.NewRecorder(), flushed: make(chan struct{}, 1)}
	st := newStream(rec, 0, nil)
	st.startAfter(time.Millisecond)
	select {
	case <-rec.flushed:
	case <-time.After(10 * time.Second):
		t.Fatal("the stream did not start without an event")
	}
	st.close()
	assert.Equal(t, http.StatusOK, rec.Code)
	assert.Equal(t, "text/event-stream", rec.Header().Get("Content-Type"))
	assert.Equal(t, retryField, rec.Body.String())
}

// An answer before the delay goes out with the headers, and a stream
// closed before it never writes again.
func TestStreamAnsweredBeforeItsDelay(t *testing.T) {
	t.Parallel()
	rec := &flushNotifier{ResponseRecorder: httptest.NewRecorder(), flushed: make(chan struct{}, 1)}
	st := newStream(rec, 0, nil)
	st.startAfter(time.Hour)
	answer := `{"jsonrpc":"2.0","id":1,"result":{}}`
	require.NoError(t, st.sendLast([]byte(answer)))
	st.close()
	select {
	case <-rec.flushed:
		t.Fatal("the answer was flushed on its own: the handler's return does it")
	default:
	}
	assert.Equal(t, retryField+string(encodeEvent([]byte(answer))), rec.Body.String())
	assert.ErrorIs(t, st.start(), errStreamClosed, "nothing is written once closed")
}
