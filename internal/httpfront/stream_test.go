package httpfront

import (
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stalledClient is a response whose client has stopped reading but keeps
// its connection open: every write blocks until the test lets the write
// deadline, set through http.ResponseController, pass.
type stalledClient struct {
	header    http.Header
	writing   chan struct{}  // closed once a write is blocked
	deadlines chan time.Time // the write deadlines set
	expired   chan struct{}  // closed by expire
	once      sync.Once
}

func newStalledClient() *stalledClient {
	return &stalledClient{header: http.Header{}, writing: make(chan struct{}), deadlines: make(chan time.Time, 1), expired: make(chan struct{})}
}

func (c *stalledClient) Header() http.Header { return c.header }
func (c *stalledClient) WriteHeader(int)     {}
func (c *stalledClient) Flush()              {}

func (c *stalledClient) Write([]byte) (int, error) {
	select {
	case <-c.writing:
	default:
		close(c.writing)
	}
	<-c.expired
	return 0, os.ErrDeadlineExceeded
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
			go func() { written <- ss.WriteMessage(notification("stuck")) }()
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
