// Package framing reads and writes newline-delimited JSON-RPC messages, the
// framing of MCP's stdio transport, and peeks at a message's envelope
// (id, method, result, error) without decoding the rest of it.
//
// Lines are handed over exactly as they were read, minus the terminating
// newline, so that a relay can forward them byte for byte.
package framing

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
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

// minBuffer is a Reader's buffer size, to which it returns after a line
// that made it grow.
const minBuffer = 64 << 10

// A Reader splits a byte stream into lines.
//
// It reads into one buffer of its own, which starts at 64 KiB, doubles
// when a line does not fit (up to just past the limit) and is given back
// once a line that needed more has been consumed: a large message costs
// about twice its size while it is read, and nothing after.
//
// A Reader is not safe for concurrent use.
type Reader struct {
	r       io.Reader
	max     int
	buf     []byte // unread bytes are buf[start:end]
	start   int
	end     int
	scanned int        // bytes at buf[start:] known to hold no newline
	err     error      // the read error to report once buf is used up
	scan    envScanner // reads the id of an oversized line as it is skipped

	// mapped is buf when buf is a large buffer mapped from the OS, which
	// unmapped returns at once when it is given back (or, should the
	// Reader be dropped first, cleanup does).
	mapped  []byte
	cleanup runtime.Cleanup
}

// mapFrom is the buffer size from which a Reader takes its buffer from
// the OS (on Linux) rather than the Go heap: given back, it leaves the
// process's memory at once, and it never makes the collector, which
// paces itself on the heap's size, let the heap grow by twice a large
// message; growing it moves its pages instead of copying them.
const mapFrom = 1 << 20

// NewReader returns a Reader that reads from r and refuses lines longer than
// maxLineBytes (0 means [DefaultMaxLineBytes]).
func NewReader(r io.Reader, maxLineBytes int) *Reader {
	if maxLineBytes <= 0 {
		maxLineBytes = DefaultMaxLineBytes
	}
	return &Reader{r: r, max: maxLineBytes}
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

// Buffered reports whether a whole line is already buffered, so that the
// next Read returns it without reading (blank lines count).
func (r *Reader) Buffered() bool {
	return bytes.IndexByte(r.buf[r.start+r.scanned:r.end], '\n') >= 0
}

func (r *Reader) readLine() ([]byte, error) {
	r.release()
	for {
		if i := bytes.IndexByte(r.buf[r.start+r.scanned:r.end], '\n'); i >= 0 {
			line := r.buf[r.start : r.start+r.scanned+i]
			r.start += r.scanned + i + 1
			r.scanned = 0
			if len(line) > r.max {
				return nil, r.tooLong(line, int64(len(line)))
			}
			return line, nil
		}
		r.scanned = r.end - r.start
		if r.scanned > r.max {
			e := r.tooLong(r.buf[r.start:r.end], int64(r.scanned))
			r.start, r.end, r.scanned = 0, 0, 0
			return nil, r.discard(e)
		}
		if r.err != nil {
			if r.scanned == 0 || !errors.Is(r.err, io.EOF) {
				return nil, r.err
			}
			line := r.buf[r.start:r.end]
			r.start, r.scanned = r.end, 0
			return line, nil
		}
		r.fill()
	}
}

// fill reads more into the buffer, making room first: it moves the unread
// bytes to the front, or doubles the buffer when they fill it.
func (r *Reader) fill() {
	switch n := r.end - r.start; {
	case r.buf == nil:
		r.buf = make([]byte, minBuffer)
	case n == len(r.buf):
		// Only up to one byte past the limit is ever needed to tell that a
		// line is too long.
		r.grow(max(min(2*len(r.buf), r.max+1), len(r.buf)+1))
	case r.start > 0 && r.end == len(r.buf):
		copy(r.buf, r.buf[r.start:r.end])
		r.start, r.end = 0, n
	}
	r.read()
}

// grow replaces the buffer, which is full (so r.start is 0), with one of
// size bytes that starts with its contents.
func (r *Reader) grow(size int) {
	n := r.end
	if r.mapped != nil {
		if grown := remapBuffer(r.mapped, size); grown != nil {
			r.cleanup.Stop()
			r.adopt(grown)
			return
		}
	} else if size >= mapFrom {
		if grown := mapBuffer(size); grown != nil {
			copy(grown, r.buf[:n])
			r.adopt(grown)
			return
		}
	}
	grown := make([]byte, size)
	copy(grown, r.buf[:n])
	r.unmap()
	r.buf = grown
}

// adopt makes b, a buffer mapped from the OS, the Reader's buffer.
func (r *Reader) adopt(b []byte) {
	r.buf, r.mapped = b, b
	r.cleanup = runtime.AddCleanup(r, unmapBuffer, b)
}

// unmap gives a buffer mapped from the OS back, once r.buf no longer
// refers to it.
func (r *Reader) unmap() {
	if r.mapped == nil {
		return
	}
	r.cleanup.Stop()
	unmapBuffer(r.mapped)
	r.mapped = nil
}

// read reads once into the free end of the buffer, recording an error, or
// io.ErrNoProgress when the source keeps returning nothing.
func (r *Reader) read() {
	for range 100 {
		n, err := r.r.Read(r.buf[r.end:])
		r.end += n
		if err != nil {
			r.err = err
			return
		}
		if n > 0 {
			return
		}
	}
	r.err = io.ErrNoProgress
}

// release gives back a buffer grown for a line that has been consumed,
// once what is left of it fits in a buffer of the usual size.
func (r *Reader) release() {
	if len(r.buf) <= minBuffer || r.end-r.start > minBuffer/2 {
		return
	}
	small := make([]byte, minBuffer)
	r.end = copy(small, r.buf[r.start:r.end])
	r.buf, r.start = small, 0
	r.unmap()
}

// tooLong builds the error for an oversized line whose first bytes (all of
// them, or as many as were buffered) are in part.
func (r *Reader) tooLong(part []byte, size int64) *LineTooLongError {
	head := bytes.Clone(part[:min(len(part), HeadBytes)])
	r.scan = envScanner{key: r.scan.key[:0], val: r.scan.val[:0]}
	r.scan.write(part)
	e := &LineTooLongError{Limit: r.max, Size: size, Head: head}
	e.ID, e.Method = r.scan.result()
	return e
}

// discard skips the rest of an oversized line, whose first bytes went into
// e and are no longer buffered, and completes e's size. The rest is read
// into a buffer of the usual size, so skipping costs no memory.
func (r *Reader) discard(e *LineTooLongError) error {
	if len(r.buf) > minBuffer {
		r.buf = make([]byte, minBuffer)
		r.unmap()
	}
	for {
		if r.end > 0 {
			chunk := r.buf[:r.end]
			if i := bytes.IndexByte(chunk, '\n'); i >= 0 {
				e.Size += int64(i)
				r.scan.write(chunk[:i])
				e.ID, e.Method = r.scan.result()
				r.start = i + 1
				return e
			}
			e.Size += int64(len(chunk))
			r.scan.write(chunk)
			r.end = 0
		}
		if r.err != nil {
			e.ID, e.Method = r.scan.result()
			if errors.Is(r.err, io.EOF) {
				return e
			}
			return r.err
		}
		r.read()
	}
}

// ReadHead is [Reader.Read] for a reader that may relay a long line as it
// arrives rather than hold it whole. A line is long when it is no shorter
// than 64 KiB or passes the size limit, whichever is less. ReadHead returns
// the next non-blank line whole (whole is true) when it is not long; else,
// as soon as that is known, the line's head, its first 64 KiB (or limit
// plus one byte), and whole is false. Which lines are long depends on
// their length alone, not on how they arrive. The head is not consumed:
// the caller then either calls Read, which returns the whole line as if
// ReadHead had not been called (bound by the size limit), or ReadPart
// until it reports the line's end, which relays the line in parts whatever
// its size. The slice is valid only until the next call.
func (r *Reader) ReadHead() (line []byte, whole bool, err error) {
	for {
		line, whole, err := r.readHead()
		if err != nil || !whole || len(bytes.TrimSpace(line)) > 0 {
			return line, whole, err
		}
	}
}

func (r *Reader) readHead() ([]byte, bool, error) {
	r.release()
	long := min(minBuffer, r.max+1) // fits the buffer, so it never grows here
	for {
		if i := bytes.IndexByte(r.buf[r.start+r.scanned:r.end], '\n'); i >= 0 {
			n := r.scanned + i
			if n >= long {
				return r.buf[r.start : r.start+long], false, nil
			}
			line := r.buf[r.start : r.start+n] // within the limit: long is at most max+1
			r.start += n + 1
			r.scanned = 0
			return line, true, nil
		}
		r.scanned = r.end - r.start
		if r.scanned >= long {
			return r.buf[r.start : r.start+long], false, nil
		}
		if r.err != nil {
			line, err := r.readLine()
			return line, true, err
		}
		r.fill()
	}
}

// ReadPart returns the next bytes of the line whose head [Reader.ReadHead]
// returned, starting with that head, and consumes them; last reports the
// line's end: its newline, consumed and not returned. The line is not
// bound by the size limit, and costs no more memory than the buffer. A
// stream that ends before the newline yields last and its error (io.EOF
// when it just ended): the line was cut off. The slice is valid only until
// the next call.
func (r *Reader) ReadPart() (part []byte, last bool, err error) {
	for {
		if r.start == r.end {
			if r.err != nil {
				return nil, true, r.err
			}
			r.start, r.end, r.scanned = 0, 0, 0
			r.read()
			continue
		}
		buffered := r.buf[r.start:r.end]
		if i := bytes.IndexByte(buffered, '\n'); i >= 0 {
			r.start += i + 1
			r.scanned = 0
			return buffered[:i], true, nil
		}
		r.start, r.scanned = r.end, 0
		return buffered, false, nil
	}
}
