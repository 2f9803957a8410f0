package middleware

import (
	"context"
	"sync/atomic"
)

// A pumpTurn lets the requests the client pump relays to the upstream go
// out together when the client sent them together: while more is set (the
// client's next message is already buffered), a request is held back on
// the upstream's Conn, to be written with the next one; the pump clears
// more and flushes before it waits for the client again. Writes made off
// the pump (a call judged once the catalog has loaded) see the same turn.
// No lock orders them: a write that holds its request looks at more again
// after holding it, and the pump clears more before it flushes, so either
// the pump's flush comes after the hold, or the writer sees more cleared
// and flushes itself. Whatever is held is always flushed.
type pumpTurn struct {
	more atomic.Bool
}

// turnKey is the context key of the client pump's *pumpTurn.
type turnKey struct{}

// set sets more. Only the client pump calls it.
func (t *pumpTurn) set(more bool) {
	if t.more.Load() != more { // most messages of a burst leave it as it was
		t.more.Store(more)
	}
}

// writeRequest writes a client request to the upstream link l, held back
// while the client pump's turn in ctx says more follows at once.
func (s *Session) writeRequest(ctx context.Context, l *link, msg []byte) error {
	t, _ := ctx.Value(turnKey{}).(*pumpTurn)
	hw, ok := l.conn.(holdingWriter)
	if t == nil || !ok || !t.more.Load() {
		return l.conn.WriteMessage(ctx, msg)
	}
	if err := hw.HoldMessage(msg); err != nil {
		return err
	}
	if !t.more.Load() { // the pump's turn ended meanwhile: its flush may have come first
		return hw.Flush()
	}
	return nil
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
