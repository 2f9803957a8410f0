// Package framing reads and writes newline-delimited JSON-RPC messages, the
// framing of MCP's stdio transport, and peeks at a message's envelope
// (id, method, result, error) without decoding the rest of it.
//
// Lines are handed over exactly as they were read, minus the terminating
// newline, so that a relay can forward them byte for byte.
package framing

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// DefaultMaxLineBytes is the line-size limit a zero [Reader.MaxLineBytes]
// stands for: 64 MiB.
const DefaultMaxLineBytes = 64 << 20

// ErrLineTooLong is the sentinel matched by a [*LineTooLongError].
var ErrLineTooLong = errors.New("framing: line too long")

// LineTooLongError reports a line that exceeded the size limit. The line was
// discarded up to and including its newline; the next Read starts on the line
// after it, so the stream stays usable.
type LineTooLongError struct {
	Limit int    // the limit in bytes
	Size  int64  // how many bytes the line had (without its newline)
	Head  []byte // the line's first bytes (at most [HeadBytes])
	// ID and Method are the line's top-level "id" (raw JSON) and "method"
	// (decoded), wherever they are in it, found while it was skipped, so
	// that its sender can be answered. They are nil and "" when the line
	// has none, spells one twice or in another letter case (as [Peek]
	// would refuse), or has an id over 1 KiB.
	ID     []byte
	Method string
}

// HeadBytes is how much of an oversized line a [LineTooLongError] keeps.
const HeadBytes = 4 << 10

func (e *LineTooLongError) Error() string {
	return fmt.Sprintf("line of %d bytes exceeds the %d-byte limit; dropped", e.Size, e.Limit)
}

// Is reports whether target is [ErrLineTooLong].
func (e *LineTooLongError) Is(target error) bool { return target == ErrLineTooLong }

// A Reader splits a byte stream into lines.
//
// A Reader is not safe for concurrent use.
type Reader struct {
	br   *bufio.Reader
	max  int
	buf  []byte     // holds a line that did not fit in br's buffer
	scan envScanner // reads the id of an oversized line as it is skipped
}

// NewReader returns a Reader that reads from r and refuses lines longer than
// maxLineBytes (0 means [DefaultMaxLineBytes]).
func NewReader(r io.Reader, maxLineBytes int) *Reader {
	if maxLineBytes <= 0 {
		maxLineBytes = DefaultMaxLineBytes
	}
	return &Reader{br: bufio.NewReaderSize(r, 64<<10), max: maxLineBytes}
}

// Read returns the next non-blank line without its trailing "\n". The slice
// is valid only until the next call to Read.
//
// A line longer than the limit yields a [*LineTooLongError]; it is skipped
// without being buffered whole, and Read may be called again. Any other
// error is final. At EOF a last line without a newline is returned first,
// then io.EOF.
func (r *Reader) Read() ([]byte, error) {
	for {
		line, err := r.readLine()
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(line)) > 0 {
			return line, nil
		}
	}
}

func (r *Reader) readLine() ([]byte, error) {
	r.buf = r.buf[:0]
	for {
		chunk, err := r.br.ReadSlice('\n')
		switch {
		case err == nil:
			chunk = chunk[:len(chunk)-1]
			if len(r.buf)+len(chunk) > r.max {
				return nil, r.tooLong(chunk, int64(len(r.buf)+len(chunk)))
			}
			if len(r.buf) == 0 {
				return chunk, nil // the common case: no copy
			}
			r.buf = append(r.buf, chunk...)
			return r.buf, nil
		case errors.Is(err, bufio.ErrBufferFull):
			if len(r.buf)+len(chunk) > r.max {
				return nil, r.discard(r.tooLong(chunk, int64(len(r.buf)+len(chunk))))
			}
			r.buf = append(r.buf, chunk...)
		case errors.Is(err, io.EOF) && len(r.buf)+len(chunk) > 0:
			if len(r.buf)+len(chunk) > r.max {
				return nil, r.tooLong(chunk, int64(len(r.buf)+len(chunk)))
			}
			r.buf = append(r.buf, chunk...)
			return r.buf, nil
		default:
			return nil, err
		}
	}
}

// tooLong builds the error for an oversized line whose first bytes are in
// r.buf followed by chunk.
func (r *Reader) tooLong(chunk []byte, size int64) *LineTooLongError {
	head := make([]byte, 0, HeadBytes)
	head = append(head, r.buf[:min(len(r.buf), HeadBytes)]...)
	head = append(head, chunk[:min(len(chunk), HeadBytes-len(head))]...)
	r.scan = envScanner{key: r.scan.key[:0], val: r.scan.val[:0]}
	r.scan.write(r.buf)
	r.scan.write(chunk)
	e := &LineTooLongError{Limit: r.max, Size: size, Head: head}
	e.ID, e.Method = r.scan.result()
	return e
}

// discard skips the rest of an oversized line and completes e's size.
func (r *Reader) discard(e *LineTooLongError) error {
	r.buf = r.buf[:0]
	if cap(r.buf) > 1<<20 {
		r.buf = nil // give a huge buffer back rather than keep it for good
	}
	for {
		chunk, err := r.br.ReadSlice('\n')
		switch {
		case err == nil:
			chunk = chunk[:len(chunk)-1]
			e.Size += int64(len(chunk))
			r.scan.write(chunk)
			e.ID, e.Method = r.scan.result()
			return e
		case errors.Is(err, bufio.ErrBufferFull):
			e.Size += int64(len(chunk))
			r.scan.write(chunk)
		case errors.Is(err, io.EOF):
			e.Size += int64(len(chunk))
			r.scan.write(chunk)
			e.ID, e.Method = r.scan.result()
			return e
		default:
			return err
		}
	}
}
