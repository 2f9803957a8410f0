package middleware

import (
	"errors"
	"io"
	"sync"

	"github.com/mcpwrap/mcpwrap/internal/framing"
)

// A Conn is one side of a [Session]: a stream of JSON-RPC messages.
//
// ReadMessage is called from one goroutine at a time; WriteMessage may be
// called concurrently with ReadMessage and with itself; Close may be called
// at any time, more than once, and makes blocked calls return.
type Conn interface {
	// ReadMessage returns the next message, without framing. The slice is
	// valid only until the next call. An error wrapping [ErrMessageTooLarge]
	// reports one dropped message; any other error ends the stream.
	ReadMessage() ([]byte, error)
	// WriteMessage sends one message. It blocks while the peer is not
	// reading, which is how backpressure propagates.
	WriteMessage(msg []byte) error
	// Close releases the connection.
	Close() error
}

// ErrMessageTooLarge is wrapped by the error a [Conn] returns for a message
// over its size limit. The message was dropped; the stream is still usable.
var ErrMessageTooLarge = framing.ErrLineTooLong

// StreamConn is a [Conn] over a byte stream carrying newline-delimited
// JSON-RPC, such as stdio.
type StreamConn struct {
	r      *framing.Reader
	w      *framing.Writer
	closer io.Closer
	once   sync.Once
	err    error
}

// NewStreamConn returns a Conn reading from r and writing to w. Messages
// over maxMessageBytes (0 means 64 MiB) are dropped with an error wrapping
// [ErrMessageTooLarge]. Close calls closer, when it is not nil.
func NewStreamConn(r io.Reader, w io.Writer, closer io.Closer, maxMessageBytes int) *StreamConn {
	return &StreamConn{r: framing.NewReader(r, maxMessageBytes), w: framing.NewWriter(w), closer: closer}
}

// ReadMessage implements [Conn].
func (c *StreamConn) ReadMessage() ([]byte, error) { return c.r.Read() }

// WriteMessage implements [Conn].
func (c *StreamConn) WriteMessage(msg []byte) error { return c.w.Write(msg) }

// Buffered reports whether a whole message is already buffered, so that
// the next ReadMessage returns it without waiting.
func (c *StreamConn) Buffered() bool { return c.r.Buffered() }

// HoldMessage is WriteMessage for a message that another will follow at
// once: it is kept back (up to 64 KiB of messages) to be written together
// with the next WriteMessage or Flush. The caller must call WriteMessage
// or Flush before it waits for anything.
func (c *StreamConn) HoldMessage(msg []byte) error { return c.w.Hold(msg) }

// Flush writes the messages HoldMessage kept back, if any.
func (c *StreamConn) Flush() error { return c.w.Flush() }

// Close implements [Conn].
func (c *StreamConn) Close() error {
	c.once.Do(func() {
		if c.closer != nil {
			c.err = c.closer.Close()
		}
	})
	return c.err
}

// A bufferedReader is a [Conn] that tells whether its next message is
// already buffered (StreamConn, the stdio upstream).
type bufferedReader interface{ Buffered() bool }

// A holdingWriter is a [Conn] that can keep a message back to write it
// with the next ones in one go (StreamConn).
type holdingWriter interface {
	HoldMessage(msg []byte) error
	Flush() error
}

// oversize extracts the size details of a dropped message, if err has them.
func oversize(err error) (*framing.LineTooLongError, bool) {
	var e *framing.LineTooLongError
	return e, errors.As(err, &e)
}
