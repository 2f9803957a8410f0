package erabridge

import (
	"errors"
	"sync"

	"github.com/mcpwrap/mcpwrap/middleware"
)

// streamConn is the bridge over a Conn with every optional capability a
// Session looks for (a stdio child's): while both sides speak one era each
// goes straight to the upstream's Conn, so that cut-through relaying and
// write coalescing stay on; while the bridge translates, messages are
// whole (a message is translated whole) and written at once.
type streamConn struct {
	*Conn
	h headReader
	b bufferedReader
	w holdingWriter
	p partsWriter
}

// ReadHead returns the next message's head, or, unless both sides speak
// one era, the whole message.
func (c *streamConn) ReadHead() ([]byte, bool, error) {
	if mode(c.mode.Load()) == same {
		return c.h.ReadHead()
	}
	msg, err := c.ReadMessage()
	return msg, true, err
}

// ReadPart returns the next part of a message whose head ReadHead
// returned not whole, which only happens while both sides speak one era.
func (c *streamConn) ReadPart() ([]byte, bool, error) { return c.h.ReadPart() }

// Buffered reports whether the next message is at hand.
func (c *streamConn) Buffered() bool {
	switch mode(c.mode.Load()) {
	case same:
		return c.b.Buffered()
	case negotiating:
		return false
	}
	return c.pending()
}

// HoldMessage keeps msg back to write with the next, while both sides
// speak one era; else it writes it at once.
func (c *streamConn) HoldMessage(msg []byte) error {
	if mode(c.mode.Load()) == same {
		return c.w.HoldMessage(msg)
	}
	return c.WriteMessage(c.ctx, msg)
}

// Flush writes what HoldMessage kept back.
func (c *streamConn) Flush() error { return c.w.Flush() }

// BeginMessage begins a message written in parts: on the upstream's Conn
// while both sides speak one era, else gathered whole (up to
// MaxMessageBytes) and written, translated, when it ends.
func (c *streamConn) BeginMessage() middleware.MessageWriter {
	if mode(c.mode.Load()) == same {
		return c.p.BeginMessage()
	}
	return &wholeWriter{c: c.Conn}
}

// errTooLarge is a wholeWriter's error past MaxMessageBytes.
var errTooLarge = errors.New("erabridge: message over the size limit while translating")

// wholeWriter gathers a message written in parts and writes it whole.
type wholeWriter struct {
	c     *Conn
	mu    sync.Mutex
	buf   []byte
	ended bool
	err   error
}

func (w *wholeWriter) Write(part []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.ended:
		return errors.New("erabridge: message already ended")
	case w.err != nil:
		return w.err
	case len(w.buf)+len(part) > w.c.opts.MaxMessageBytes:
		w.err, w.buf = errTooLarge, nil
		return w.err
	}
	w.buf = append(w.buf, part...)
	return nil
}

func (w *wholeWriter) End() (bool, error) {
	w.mu.Lock()
	if w.ended {
		w.mu.Unlock()
		return false, w.err
	}
	w.ended = true
	buf, err := w.buf, w.err
	w.buf = nil
	w.mu.Unlock()
	if err == nil && len(buf) > 0 {
		err = w.c.WriteMessage(w.c.ctx, buf)
	}
	return true, err
}
