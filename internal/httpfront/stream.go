package httpfront

import (
	"bytes"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
)

// errStreamClosed is returned by a stream that takes no more events.
var errStreamClosed = errors.New("stream closed")

// A stream is an HTTP response carrying Server-Sent Events: the answer to a
// POST, or the standalone GET stream. Writes are serialised by mu and
// flushed one by one; a write blocks while the client is not reading. The
// handler that owns the response waits on ended (or its client leaving),
// then calls close, which waits for a write in progress, so no write
// happens after the handler returns.
type stream struct {
	w  http.ResponseWriter
	rc *http.ResponseController

	mu      sync.Mutex
	started bool // the status and headers are sent
	closed  bool

	gone    atomic.Bool   // closed, or its client failed; read without mu when routing
	ended   chan struct{} // closed by finish: the handler should return
	endOnce sync.Once
}

func newStream(w http.ResponseWriter) *stream {
	return &stream{w: w, rc: http.NewResponseController(w), ended: make(chan struct{})}
}

// start sends the status and headers now, so the client sees the stream
// open before any event.
func (st *stream) start() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.writeLocked(nil)
}

// send writes msg as one "message" event.
func (st *stream) send(msg []byte) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.writeLocked(encodeEvent(msg))
}

// comment writes an SSE comment, which clients ignore.
func (st *stream) comment(text string) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.writeLocked([]byte(": " + text + "\n\n"))
}

func (st *stream) writeLocked(b []byte) error {
	if st.closed {
		return errStreamClosed
	}
	if !st.started {
		h := st.w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache, no-transform")
		h.Set("X-Accel-Buffering", "no") // tells reverse proxies not to buffer the stream
		st.w.WriteHeader(http.StatusOK)
		st.started = true
	}
	if len(b) > 0 {
		if _, err := st.w.Write(b); err != nil {
			st.fail()
			return err
		}
	}
	if err := st.rc.Flush(); err != nil {
		st.fail()
		return err
	}
	return nil
}

// fail marks the stream unusable after a write error.
func (st *stream) fail() {
	st.closed = true
	st.gone.Store(true)
	st.finish()
}

// finish asks the owning handler to return.
func (st *stream) finish() { st.endOnce.Do(func() { close(st.ended) }) }

// close takes no more events, waiting for a write in progress.
func (st *stream) close() {
	st.gone.Store(true)
	st.mu.Lock()
	defer st.mu.Unlock()
	st.closed = true
}

// encodeEvent frames msg as an SSE "message" event, one data line per line
// of msg (a remote upstream may send multi-line JSON).
func encodeEvent(msg []byte) []byte {
	b := make([]byte, 0, len(msg)+32)
	b = append(b, "event: message\n"...)
	for line := range bytes.Lines(msg) {
		b = append(b, "data: "...)
		b = append(b, bytes.TrimRight(line, "\r\n")...)
		b = append(b, '\n')
	}
	return append(b, '\n')
}
