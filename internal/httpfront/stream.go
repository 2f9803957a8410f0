package httpfront

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// errStreamClosed is returned by a stream that takes no more events.
var errStreamClosed = errors.New("stream closed")

// A stream is an HTTP response carrying Server-Sent Events: the answer to a
// POST, or the standalone GET stream. Writes are serialised by mu and
// flushed one by one; a write blocks while the client is not reading. The
// handler that owns the response waits on ended (or its client leaving),
// then calls close, which waits for a write in progress, so no write
// happens after the handler returns. A write blocked on a client that
// stopped reading is aborted by abort, or by close after closeGrace: it
// never outlives the stream's use. With a stall timeout, a write that
// makes no progress for that long fails too, and breaks the connection.
type stream struct {
	w     http.ResponseWriter
	rc    *http.ResponseController
	stall time.Duration // see [Server.StallTimeout]; not positive: none
	log   *slog.Logger

	mu      sync.Mutex
	started bool // the status and headers are sent
	closed  bool

	starting *time.Timer // startAfter's; set before the stream is shared

	// dmu orders the write deadlines: a write renews its own (due) while
	// close or abort has not set theirs (cut), which only move it earlier.
	// It is held only to set a deadline, never across a write.
	dmu   sync.Mutex
	due   time.Time // the stall deadline of the write in progress; zero: none
	cut   bool
	cutAt time.Time

	gone    atomic.Bool   // closed, or its client failed; read without mu when routing
	ended   chan struct{} // closed by finish: the handler should return
	endOnce sync.Once
}

// newStream returns the stream answering on w; stall is the write stall
// timeout (not positive: none), and log (nil: discard) is told of a client
// given up for stalling.
func newStream(w http.ResponseWriter, stall time.Duration, log *slog.Logger) *stream {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &stream{w: w, rc: http.NewResponseController(w), stall: stall, log: log, ended: make(chan struct{})}
}

// start sends the status and headers now, so the client sees the stream
// open before any event.
func (st *stream) start() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.writeLocked(nil)
}

// lazyStart is how long a request's stream may wait for its first event
// before its status and headers are sent without one, so that the client
// sees it open (a client may time the headers out).
const lazyStart = 100 * time.Millisecond

// startAfter starts the stream after d unless an event has started it by
// then. It is called once, before the stream is shared.
func (st *stream) startAfter(d time.Duration) {
	st.starting = time.AfterFunc(d, func() { _ = st.start() }) // nothing once closed
}

// send writes msg as one "message" event.
func (st *stream) send(msg []byte) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.writeLocked(encodeEvent(msg))
}

// sendLast writes msg as one "message" event that ends the stream, without
// flushing it: the owning handler is about to return, and net/http then
// writes it with the end of the response, in one write instead of two. The
// stall deadline of the write stays for that flush.
func (st *stream) sendLast(msg []byte) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.writeLockedFlush(encodeEvent(msg), false)
}

// sendStatus writes msg, a JSON-RPC error, as the whole response with
// the HTTP status given, when nothing was sent on the stream yet; else as
// an event, like send.
func (st *stream) sendStatus(msg []byte, status int) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.started || st.closed {
		return st.writeLocked(encodeEvent(msg))
	}
	st.w.Header().Set("Content-Type", "application/json")
	st.w.WriteHeader(status)
	st.started, st.closed = true, true
	st.gone.Store(true)
	// Not flushed: the handler's return does, with a Content-Length.
	return st.writeOut(msg, false)
}

// comment writes an SSE comment, which clients ignore.
func (st *stream) comment(text string) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.writeLocked([]byte(": " + text + "\n\n"))
}

func (st *stream) writeLocked(b []byte) error { return st.writeLockedFlush(b, true) }

func (st *stream) writeLockedFlush(b []byte, flush bool) error {
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
		b = append([]byte(retryField), b...)
	}
	if err := st.writeOut(b, flush); err != nil {
		st.fail()
		return err
	}
	return nil
}

// stallStep is how much of a write must reach the client within the stall
// timeout: a client reading slower than stallStep per timeout (about 2
// KiB/s with the default) is taken for one that stopped.
const stallStep = 64 << 10

// writeOut writes b, and flushes it if asked. With a stall timeout, each
// stallStep of it, and the flush, is given that long.
func (st *stream) writeOut(b []byte, flush bool) error {
	if st.stall <= 0 {
		if _, err := st.w.Write(b); err != nil || !flush {
			return err
		}
		return st.rc.Flush()
	}
	var err error
	for len(b) > 0 && err == nil {
		n := min(len(b), stallStep)
		st.renewDeadline()
		_, err = st.w.Write(b[:n])
		b = b[n:]
	}
	if err == nil && flush {
		st.renewDeadline()
		err = st.rc.Flush()
	}
	st.dmu.Lock()
	// The deadline that passed was this write's own unless close or
	// abort set one that has passed too.
	stalled := errors.Is(err, os.ErrDeadlineExceeded) && (!st.cut || time.Now().Before(st.cutAt))
	if flush || err != nil {
		// The next write sets its own; until then none is due. What was
		// not flushed keeps it, for the flush the handler's return makes.
		st.due = time.Time{}
		if !st.cut {
			_ = st.rc.SetWriteDeadline(time.Time{})
		}
	}
	st.dmu.Unlock()
	if stalled {
		st.log.Warn("the client read nothing of its event stream for the stall timeout; its connection is closed", "timeout", st.stall)
	}
	return err
}

// renewDeadline gives the next step of a write the stall timeout, unless
// close or abort set a deadline of their own.
func (st *stream) renewDeadline() {
	st.dmu.Lock()
	defer st.dmu.Unlock()
	if !st.cut {
		st.due = time.Now().Add(st.stall)
		// An error means the writer takes no deadlines (a recorder): it
		// has no client to stall on.
		_ = st.rc.SetWriteDeadline(st.due)
	}
}

// cutWrites sets the write deadline to d, for close and abort: a write in
// progress, or to come, fails at d, or at its own stall deadline if that
// is earlier. A later cut only moves it earlier.
func (st *stream) cutWrites(d time.Time) {
	st.dmu.Lock()
	defer st.dmu.Unlock()
	if st.cut && !d.Before(st.cutAt) {
		return
	}
	st.cut, st.cutAt = true, d
	if !st.due.IsZero() && st.due.Before(d) {
		d = st.due
	}
	// Unsupported by a few writers (recorders): nothing to unblock there.
	_ = st.rc.SetWriteDeadline(d)
}

// retryField opens every stream: the SSE retry field tells a client how
// long to wait before it reconnects a stream that ends (clients also get it
// on streams that carry no event ids, which they do not resume). It is an
// event without data, which clients do not dispatch.
const retryField = "retry: 1000\n\n"

// fail marks the stream unusable after a write error.
func (st *stream) fail() {
	st.closed = true
	st.gone.Store(true)
	st.finish()
}

// finish asks the owning handler to return.
func (st *stream) finish() { st.endOnce.Do(func() { close(st.ended) }) }

// closeGrace is how long close lets a write in progress finish before
// aborting it.
const closeGrace = 5 * time.Second

// close takes no more events. It waits for a write in progress, but at
// most closeGrace: a write blocked on a client that stopped reading (with
// its connection open) would otherwise hold the handler, and the relay
// writing, forever.
func (st *stream) close() {
	if st.starting != nil {
		st.starting.Stop()
	}
	st.gone.Store(true)
	if !st.mu.TryLock() {
		// A write deadline also unblocks a write already waiting; the
		// server clears it once the handler returns.
		st.cutWrites(time.Now().Add(closeGrace))
		st.mu.Lock()
	}
	defer st.mu.Unlock()
	st.closed = true
}

// abort gives up on the stream at once: a write in progress fails (the
// client's connection breaks) and the owning handler is told to return.
// It does not wait, so it is safe to call while holding the session's
// mutex.
func (st *stream) abort() {
	st.gone.Store(true)
	st.cutWrites(time.Now())
	st.finish()
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
