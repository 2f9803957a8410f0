package middleware

import (
	"context"
	"sync"
)

// A pumpTurn lets the requests the client pump relays to the upstream go
// out together when the client sent them together: while more is set (the
// client's next message is already buffered), a request is held back on
// the upstream's Conn, to be written with the next one; the pump clears
// more and flushes before it waits for the client again. Writes made off
// the pump (a call judged once the catalog has loaded) see the same turn:
// the lock orders them before or after the clearing, so whatever is held
// is always flushed.
type pumpTurn struct {
	mu   sync.Mutex
	more bool
}

// turnKey is the context key of the client pump's *pumpTurn.
type turnKey struct{}

// set sets more. Only the client pump calls it, so it alone writes more
// and may read it without the lock: most messages of a burst leave it as
// it was, and cost no lock.
func (t *pumpTurn) set(more bool) {
	if t.more == more {
		return
	}
	t.mu.Lock()
	t.more = more
	t.mu.Unlock()
}

// writeRequest writes a client request to the upstream link l, held back
// while the client pump's turn in ctx says more follows at once.
func (s *Session) writeRequest(ctx context.Context, l *link, msg []byte) error {
	t, _ := ctx.Value(turnKey{}).(*pumpTurn)
	hw, ok := l.conn.(holdingWriter)
	if t == nil || !ok {
		return l.conn.WriteMessage(ctx, msg)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.more {
		return hw.HoldMessage(msg)
	}
	return l.conn.WriteMessage(ctx, msg)
}

// endTurn clears the turn's more and writes what the ready upstream's Conn
// holds back.
func (s *Session) endTurn(t *pumpTurn) {
	t.set(false)
	l := s.readyLink()
	if l == nil {
		return
	}
	if hw, ok := l.conn.(holdingWriter); ok {
		if err := hw.Flush(); err != nil {
			s.log.Debug("cannot write to upstream", "error", err)
		}
	}
}
