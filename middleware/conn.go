package middleware

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	// valid only until the next call. An error matching [ErrMessageTooLarge]
	// (best a [*MessageTooLargeError]) reports one dropped message, and a
	// [*RequestFailedError] one request whose answer will never come; any
	// other error ends the stream.
	ReadMessage() ([]byte, error)
	// WriteMessage sends one message. It blocks while the peer is not
	// reading, which is how backpressure propagates. When ctx is already
	// done it returns ctx.Err() and writes nothing. A wait that ctx can
	// end (for a turn behind other writes, for an HTTP request to reach
	// the server) ends when ctx is done: the message is given up and
	// ctx.Err() returned. A write blocked on a peer that stopped reading,
	// such as a pipe, need not watch ctx: Close ends it (a [Session] closes
	// a Conn whose write it still waits for as Run ends). ctx bounds this
	// write only; it is not kept.
	WriteMessage(ctx context.Context, msg []byte) error
	// Close releases the connection.
	Close() error
}

// DefaultMaxMessageBytes is the message-size limit of a [StreamConn] made
// with none, and mcpwrap's default max_line_bytes: 64 MiB.
const DefaultMaxMessageBytes = 64 << 20

// ErrMessageTooLarge is matched, with errors.Is, by the error a [Conn]
// returns for a message over its size limit. The message was dropped; the
// stream is still usable.
var ErrMessageTooLarge = errors.New("message too large")

// MessageTooLargeError is how a [Conn] reports a message it dropped for its
// size; it matches [ErrMessageTooLarge]. Its ID and Method let the
// [Session] answer the request the message was, or tell the upstream its
// request's answer was lost, rather than leave either hanging. A Conn that
// returns any other error wrapping ErrMessageTooLarge reports a dropped
// message whose size, limit, id and method are unknown.
type MessageTooLargeError struct {
	Size  int64 // the message's size in bytes, without framing
	Limit int   // the limit it exceeded, in bytes
	// ID and Method are the message's top-level "id" (raw JSON) and
	// "method", or nil and "" when the Conn did not find them (or found
	// them ambiguous).
	ID     json.RawMessage
	Method string
	// Err is the Conn's own error underneath, such as its reader's, or nil.
	Err error
}

// Error describes the dropped message.
func (e *MessageTooLargeError) Error() string {
	return fmt.Sprintf("message of %d bytes exceeds the %d-byte limit; dropped", e.Size, e.Limit)
}

// Is reports whether target is [ErrMessageTooLarge].
func (e *MessageTooLargeError) Is(target error) bool { return target == ErrMessageTooLarge }

// Unwrap returns Err.
func (e *MessageTooLargeError) Unwrap() error { return e.Err }

// RequestFailedError is how a [Conn] reports a request it sent whose
// answer will never come, while the stream goes on: the transport that
// carried it failed (a remote's response cut off mid-stream, a response
// stream that could not be resumed, a request refused with an HTTP status
// and no JSON-RPC answer). Err keeps that failure's type, so that a
// request of the [Session]'s own fails with it and a load is classified by
// what happened (a connection cut mid-stream is transient), not by an
// error code standing in for it; a client's request is answered with an
// error saying why.
type RequestFailedError struct {
	// ID is the request's top-level "id" (raw JSON).
	ID json.RawMessage
	// Err is why no answer will come.
	Err error
}

// Error names the request and why it failed.
func (e *RequestFailedError) Error() string {
	return fmt.Sprintf("request %s got no answer: %v", e.ID, e.Err)
}

// Unwrap returns Err.
func (e *RequestFailedError) Unwrap() error { return e.Err }

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
// over maxMessageBytes (0 means [DefaultMaxMessageBytes]) are dropped with
// a [*MessageTooLargeError]. Close calls closer, when it is not nil.
func NewStreamConn(r io.Reader, w io.Writer, closer io.Closer, maxMessageBytes int) *StreamConn {
	if maxMessageBytes <= 0 {
		maxMessageBytes = DefaultMaxMessageBytes
	}
	return &StreamConn{r: framing.NewReader(r, maxMessageBytes), w: framing.NewWriter(w), closer: closer}
}

// ReadMessage implements [Conn].
func (c *StreamConn) ReadMessage() ([]byte, error) {
	msg, err := c.r.Read()
	return msg, tooLarge(err)
}

// tooLarge returns err, the framing's error for a line too long as a
// [*MessageTooLargeError].
func tooLarge(err error) error {
	if e, ok := errors.AsType[*framing.LineTooLongError](err); ok {
		return &MessageTooLargeError{Size: e.Size, Limit: e.Limit, ID: e.ID, Method: e.Method, Err: e}
	}
	return err
}

// WriteMessage implements [Conn]. It checks ctx only before it writes: a
// write blocked on a peer that is not reading ends when Close closes the
// underlying writer.
func (c *StreamConn) WriteMessage(ctx context.Context, msg []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return c.w.Write(msg)
}

// ReadHead is ReadMessage for a caller that may relay a long message as it
// arrives. It returns the next message whole (whole is true) when it fits
// in the read buffer (64 KiB); else the message's first bytes, its head,
// which it does not consume. The caller then calls ReadMessage for the
// whole message (bound by the size limit), or ReadPart until it reports
// the message's end (bound by nothing: no more than the buffer is held).
// The slice is valid only until the next call.
func (c *StreamConn) ReadHead() (msg []byte, whole bool, err error) {
	msg, whole, err = c.r.ReadHead()
	return msg, whole, tooLarge(err)
}

// ReadPart returns the next bytes of the message whose head ReadHead
// returned, starting with that head; last reports the message's end. An
// error (io.EOF when the stream ended) comes with last: the message was cut
// off. The slice is valid only until the next call.
func (c *StreamConn) ReadPart() (part []byte, last bool, err error) { return c.r.ReadPart() }

// BeginMessage begins a message written in parts as they arrive, such as
// one read with ReadPart: no other message is written until it is ended.
func (c *StreamConn) BeginMessage() MessageWriter { return c.w.Stream() }

// Buffered reports whether a whole message is already buffered, so that
// the next ReadMessage returns it without waiting.
func (c *StreamConn) Buffered() bool { return c.r.Buffered() }

// HoldMessage is WriteMessage for a message that another will follow at
// once: it is kept back (up to 1 KiB of messages) to be written together
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

// A headReader is a [Conn] that can hand over a long message's head
// before the rest has arrived, then the rest in parts (StreamConn, the
// stdio upstream).
type headReader interface {
	ReadHead() (msg []byte, whole bool, err error)
	ReadPart() (part []byte, last bool, err error)
}

// A MessageWriter writes one message in parts, as they arrive; see
// [StreamConn.BeginMessage]. It holds its Conn's writing side until End.
//
// Write is called from one goroutine at a time; End may be called from any
// goroutine, concurrently with Write, and more than once: the first call
// ends the message, whatever was written of it, so that a watchdog can end
// a message whose sender stalled. Write fails once the message has ended.
type MessageWriter interface {
	// Write writes the message's next part, which holds no newline.
	Write(part []byte) error
	// End ends the message and frees the Conn's writing side. It reports
	// whether this call ended it, and the first write error.
	End() (first bool, err error)
}

// A partsWriter is a [Conn] that can write a message in parts as they
// arrive (StreamConn, the stdio upstream).
type partsWriter interface {
	BeginMessage() MessageWriter
}

// oversize reports whether err reports a dropped message, and its details
// (zero when the Conn gave none).
func oversize(err error) (*MessageTooLargeError, bool) {
	if e, ok := errors.AsType[*MessageTooLargeError](err); ok {
		return e, true
	}
	if errors.Is(err, ErrMessageTooLarge) {
		return &MessageTooLargeError{Err: err}, true
	}
	return nil, false
}
