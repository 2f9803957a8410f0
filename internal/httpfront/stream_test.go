package httpfront

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

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
			st := newStream(client)
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
	ex.stream = newStream(client)
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
	ex.stream = newStream(client)
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
	st := newStream(rec)
	require.NoError(t, st.send([]byte(`{"jsonrpc":"2.0","method":"x"}`)))
	assert.Equal(t, "retry: 1000\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n\n", rec.Body.String())
}
