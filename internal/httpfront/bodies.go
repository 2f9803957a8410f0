package httpfront

import (
	"errors"
	"io"
	"net/http"
	"sync"
)

// A budget bounds the bytes of POST bodies the Server reads and holds at
// once, across all requests: each body takes its size from it before it is
// read, and gives it back once its messages are handed to a relay (or it
// is refused). The limit is set before first use; take and give are safe
// for concurrent use.
type budget struct {
	limit int64

	mu   sync.Mutex
	used int64
}

// take takes n bytes from the budget, or nothing and false when they do
// not fit.
func (b *budget) take(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if n > b.limit-b.used {
		return false
	}
	b.used += n
	return true
}

// give gives back n bytes taken.
func (b *budget) give(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
}

// inUse returns the bytes taken (for tests).
func (b *budget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// A hold is what one request's body has taken from the budget. It is used
// by the request's handler alone; release may be called more than once.
type hold struct {
	b *budget
	n int64
}

// grow takes n more bytes for the body, reporting false (and taking
// nothing) when they do not fit.
func (h *hold) grow(n int64) bool {
	if !h.b.take(n) {
		return false
	}
	h.n += n
	return true
}

// release gives back all the hold took.
func (h *hold) release() {
	if h.n > 0 {
		h.b.give(h.n)
		h.n = 0
	}
}

// chunkMin and chunkMax are the sizes of the pieces a body of unknown
// length is read in: small ones first, so that a small body takes little,
// doubling up to chunkMax, so that a large one takes few.
const (
	chunkMin = 4 << 10
	chunkMax = 1 << 20
)

// readBody reads r's body whole, under limit bytes, taking its bytes from
// b first. A body whose length is known is read into a buffer of exactly
// that size, taken at once; one of unknown length is read in pieces, each
// taken before it is allocated, then joined into a buffer of its exact
// size (taken too, while the pieces are), so that no buffer grows by
// copying and no more than the body is held once it is read. The hold
// returned keeps the body's bytes taken until it is released. Errors are
// an [*http.MaxBytesError] for a body over limit, [ErrBodiesBusy] when the
// budget cannot take it, or the reading's.
func readBody(w http.ResponseWriter, r *http.Request, limit int64, b *budget) ([]byte, *hold, error) {
	if r.ContentLength > limit {
		return nil, nil, &http.MaxBytesError{Limit: limit}
	}
	h := &hold{b: b}
	body := http.MaxBytesReader(w, r.Body, limit)
	if r.ContentLength >= 0 {
		if !h.grow(r.ContentLength) {
			return nil, nil, ErrBodiesBusy
		}
		buf := make([]byte, r.ContentLength)
		if _, err := io.ReadFull(body, buf); err != nil {
			h.release()
			return nil, nil, err
		}
		return buf, h, nil
	}
	var pieces [][]byte
	var n int64
	for size := int64(chunkMin); ; size = min(2*size, chunkMax) {
		if !h.grow(size) {
			h.release()
			return nil, nil, ErrBodiesBusy
		}
		piece := make([]byte, size)
		m, err := io.ReadFull(body, piece)
		pieces, n = append(pieces, piece[:m]), n+int64(m)
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			break
		}
		if err != nil {
			h.release()
			return nil, nil, err
		}
	}
	pieced := h.n
	if !h.grow(n) {
		h.release()
		return nil, nil, ErrBodiesBusy
	}
	buf := make([]byte, 0, n)
	for _, p := range pieces {
		buf = append(buf, p...)
	}
	// The pieces are not held any more: give their share back.
	h.b.give(pieced)
	h.n -= pieced
	return buf, h, nil
}

// refuseBusy answers a POST whose body the budget cannot take: 503 and
// Retry-After, sent at once, then the rest of the body is read and dropped
// as it arrives (up to limit bytes, within the body's deadline). Many
// clients send the whole body before they read an answer: had the server
// closed the connection on a body it did not read, such a client would see
// the connection reset rather than the answer telling it to retry. Reading
// to drop holds no memory.
func refuseBusy(w http.ResponseWriter, r *http.Request, limit int64) {
	rc := http.NewResponseController(w)
	_ = rc.EnableFullDuplex() // an error: the body is dropped after the answer instead
	writeBusy(w, nil, ErrBodiesBusy)
	_ = rc.Flush()
	_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, limit))
}
