package httpfront

import (
	"errors"
	"io"
	"net/http"
	"sync"
)

// A budget bounds the bytes of POST bodies the Server reads and holds at
// once, across all requests and for each client: each body takes its size
// from it before it is read, and gives it back once its messages are handed
// to a relay (or it is refused). The limits are set before first use; take
// and give are safe for concurrent use.
type budget struct {
	limit     int64 // across all clients
	perClient int64 // for one client (see Server.clientOf); 0: limit alone

	mu      sync.Mutex
	used    int64
	clients map[string]int64 // the bytes taken, by client; a client holding none has no entry
}

// take takes n bytes from the budget for client, or nothing and
// [ErrClientBodies] when they do not fit the client's share, or
// [ErrBodiesBusy] when they do not fit the whole.
func (b *budget) take(client string, n int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.perClient > 0 && n > b.perClient-b.clients[client]:
		return ErrClientBodies
	case n > b.limit-b.used:
		return ErrBodiesBusy
	case n == 0:
		return nil // no entry for a client holding nothing
	}
	if b.clients == nil {
		b.clients = make(map[string]int64)
	}
	b.used += n
	b.clients[client] += n
	return nil
}

// give gives back n bytes client took.
func (b *budget) give(client string, n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
	if b.clients[client] -= n; b.clients[client] == 0 {
		delete(b.clients, client)
	}
}

// inUse returns the bytes taken (for tests).
func (b *budget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// holders returns the number of clients holding bytes (for tests).
func (b *budget) holders() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.clients)
}

// A hold is what one request's body has taken from the budget, for its
// client. It is used by the request's handler alone; release may be called
// more than once.
type hold struct {
	b      *budget
	client string
	n      int64
}

// grow takes n more bytes for the body, or nothing and take's error when
// they do not fit.
func (h *hold) grow(n int64) error {
	if err := h.b.take(h.client, n); err != nil {
		return err
	}
	h.n += n
	return nil
}

// shrink gives back n of the bytes the hold took.
func (h *hold) shrink(n int64) {
	h.b.give(h.client, n)
	h.n -= n
}

// release gives back all the hold took.
func (h *hold) release() {
	if h.n > 0 {
		h.shrink(h.n)
	}
}

// chunkMin and chunkMax are the sizes of the pieces a body of unknown
// length is read in: small ones first, so that a small body takes little,
// doubling up to chunkMax, so that a large one takes few.
const (
	chunkMin = 4 << 10
	chunkMax = 1 << 20
)

// bodyPeak returns the most one body of up to limit bytes takes from the
// budget at once: one of unknown length holds its pieces (up to chunkMax
// more than it) and the buffer they are joined into, and a 2026-07-28
// request's rewritten copy is held with its body (see serveStateless).
func bodyPeak(limit int64) int64 { return 2*limit + chunkMax }

// readBody reads r's body whole, under limit bytes, taking its bytes from
// b for client first. A body whose length is known is read into a buffer of exactly
// that size, taken at once; one of unknown length is read in pieces, each
// taken before it is allocated, then joined into a buffer of its exact
// size (taken too, while the pieces are), so that no buffer grows by
// copying and no more than the body is held once it is read. The hold
// returned keeps the body's bytes taken until it is released. Errors are
// an [*http.MaxBytesError] for a body over limit, [ErrClientBodies] or
// [ErrBodiesBusy] when the budget cannot take it, or the reading's.
func readBody(w http.ResponseWriter, r *http.Request, limit int64, b *budget, client string) ([]byte, *hold, error) {
	if r.ContentLength > limit {
		return nil, nil, &http.MaxBytesError{Limit: limit}
	}
	h := &hold{b: b, client: client}
	body := http.MaxBytesReader(w, r.Body, limit)
	if r.ContentLength >= 0 {
		if err := h.grow(r.ContentLength); err != nil {
			return nil, nil, err
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
		if err := h.grow(size); err != nil {
			h.release()
			return nil, nil, err
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
	if err := h.grow(n); err != nil {
		h.release()
		return nil, nil, err
	}
	buf := make([]byte, 0, n)
	for _, p := range pieces {
		buf = append(buf, p...)
	}
	// The pieces are not held any more: give their share back.
	h.shrink(pieced)
	return buf, h, nil
}

// refuseBusy answers a POST whose body the budget cannot take, err saying
// why (ErrBodiesBusy or ErrClientBodies): 503 and
// Retry-After, sent at once, then the rest of the body is read and dropped
// as it arrives (up to limit bytes, within the body's deadline). Many
// clients send the whole body before they read an answer: had the server
// closed the connection on a body it did not read, such a client would see
// the connection reset rather than the answer telling it to retry. Reading
// to drop holds no memory.
func refuseBusy(w http.ResponseWriter, r *http.Request, limit int64, err error) {
	rc := http.NewResponseController(w)
	_ = rc.EnableFullDuplex() // an error: the body is dropped after the answer instead
	writeBusy(w, nil, err)
	_ = rc.Flush()
	_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, limit))
}
