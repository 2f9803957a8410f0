package telemetry

import (
	"context"
	"sync"

	"github.com/mcpwrap/mcpwrap/middleware"
)

// side is what a decorated Conn reports to: its Observer, and which side
// of the Session it is.
type side struct {
	o      *Observer
	client bool
}

// conn decorates a Conn: it meets middleware.Conn's contract by
// forwarding, and reports each message to its Observer.
type conn struct {
	delegate middleware.Conn
	s        *side
}

// streaming is what the Session asks of a Conn that streams long messages
// and coalesces writes (middleware.StreamConn, the stdio upstream): a
// decorator that hid them would turn those off.
type streaming interface {
	Buffered() bool
	HoldMessage(msg []byte) error
	Flush() error
	ReadHead() (msg []byte, whole bool, err error)
	ReadPart() (part []byte, last bool, err error)
	BeginMessage() middleware.MessageWriter
}

// streamConn decorates a streaming Conn, forwarding every capability.
type streamConn struct {
	conn
	streaming streaming
}

// decorate returns c decorated, keeping its capabilities.
func decorate(c middleware.Conn, s *side) middleware.Conn {
	d := conn{delegate: c, s: s}
	if st, ok := c.(streaming); ok {
		return &streamConn{conn: d, streaming: st}
	}
	return &d
}

func (c *conn) ReadMessage() ([]byte, error) {
	msg, err := c.delegate.ReadMessage()
	if err == nil {
		c.s.o.read(c.s, msg, true)
	}
	return msg, err
}

func (c *conn) WriteMessage(ctx context.Context, msg []byte) error {
	if c.s.client {
		err := c.delegate.WriteMessage(ctx, msg)
		c.s.o.Metrics.relayed(c.s.o.Server, true, false, len(msg))
		if err == nil {
			c.s.o.answered(msg, true)
		}
		return err
	}
	ctx, msg = c.s.o.forwarding(ctx, msg)
	c.s.o.Metrics.relayed(c.s.o.Server, false, false, len(msg))
	return c.delegate.WriteMessage(ctx, msg)
}

func (c *conn) Close() error {
	if c.s.client {
		c.s.o.closed()
	}
	return c.delegate.Close()
}

func (c *streamConn) Buffered() bool { return c.streaming.Buffered() }
func (c *streamConn) Flush() error   { return c.streaming.Flush() }

func (c *streamConn) HoldMessage(msg []byte) error {
	if c.s.client {
		err := c.streaming.HoldMessage(msg)
		c.s.o.Metrics.relayed(c.s.o.Server, true, false, len(msg))
		if err == nil {
			c.s.o.answered(msg, true)
		}
		return err
	}
	_, msg = c.s.o.forwarding(context.Background(), msg)
	c.s.o.Metrics.relayed(c.s.o.Server, false, false, len(msg))
	return c.streaming.HoldMessage(msg)
}

func (c *streamConn) ReadHead() ([]byte, bool, error) {
	msg, whole, err := c.streaming.ReadHead()
	if err == nil {
		c.s.o.read(c.s, msg, whole)
	}
	return msg, whole, err
}

func (c *streamConn) ReadPart() ([]byte, bool, error) {
	part, last, err := c.streaming.ReadPart()
	c.s.o.Metrics.relayed(c.s.o.Server, c.s.client, true, len(part))
	return part, last, err
}

// BeginMessage decorates the message writer: a message written in parts
// is seen by its head, its first part, and its trace context is not
// added (the head of a long request would have to be rewritten as it
// passes).
func (c *streamConn) BeginMessage() middleware.MessageWriter {
	return &partsWriter{delegate: c.streaming.BeginMessage(), s: c.s}
}

// partsWriter decorates a MessageWriter. Its End may run concurrently
// with Write (see middleware.MessageWriter), hence mu.
type partsWriter struct {
	delegate middleware.MessageWriter
	s        *side

	mu      sync.Mutex
	head    []byte // the first part, kept until End when it is the client's
	started bool
}

func (w *partsWriter) Write(part []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.started {
		w.started = true
		if w.s.client {
			w.head = append([]byte(nil), part...)
		} else {
			w.s.o.forwardingHead(part)
		}
	}
	w.s.o.Metrics.relayed(w.s.o.Server, w.s.client, false, len(part))
	return w.delegate.Write(part)
}

func (w *partsWriter) End() (bool, error) {
	first, err := w.delegate.End()
	w.mu.Lock()
	head := w.head
	w.mu.Unlock()
	if first && w.s.client && head != nil {
		w.s.o.answered(head, false)
	}
	return first, err
}
