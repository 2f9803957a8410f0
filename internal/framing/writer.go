package framing

import (
	"errors"
	"io"
	"sync"
)

// writeBuffer is how many bytes of lines a Writer gathers into one write.
const writeBuffer = 64 << 10

// holdBytes is how many bytes of lines Hold keeps back before it writes
// them: about ten small messages. Past it, the reader at the other end
// starts on them while the writer's caller reads and judges the rest of a
// burst, rather than waiting for the whole burst; ten messages a write
// keep the write calls few.
const holdBytes = 1 << 10

// A Writer writes newline-terminated lines.
//
// A Writer is safe for concurrent use: each line is written whole, never
// interleaved with another. A slow destination blocks the caller, which is
// how backpressure reaches the producer.
type Writer struct {
	mu  sync.Mutex
	w   io.Writer
	buf []byte // lines held back by Hold, then the line being written
}

// NewWriter returns a Writer that writes to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write writes line followed by "\n", after any lines held back, with
// one write call when they fit in 64 KiB. line must not contain a newline.
func (w *Writer) Write(line []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.add(line, false)
}

// Hold is Write for a line that another will follow at once: it is kept
// back to be written with the next Write or Flush, or with the lines kept
// back before it once they come to 1 KiB. A caller that holds a line must
// call Write or Flush before it waits for anything.
func (w *Writer) Hold(line []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.add(line, true)
}

// Flush writes the lines held back, if any.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.flush()
}

func (w *Writer) add(line []byte, hold bool) error {
	if len(w.buf)+len(line) >= writeBuffer {
		if err := w.flush(); err != nil {
			return err
		}
		if len(line) >= writeBuffer {
			// Too large to copy: written where it is, then its newline.
			if _, err := w.w.Write(line); err != nil {
				return err
			}
			_, err := w.w.Write(newline)
			return err
		}
	}
	w.buf = append(append(w.buf, line...), '\n')
	if hold && len(w.buf) < holdBytes {
		return nil
	}
	return w.flush()
}

func (w *Writer) flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	_, err := w.w.Write(w.buf)
	w.buf = w.buf[:0]
	return err
}

var newline = []byte{'\n'}

// ErrLineEnded is returned by [LineStream.Write] once the line has been
// ended, by [LineStream.End], before all its parts were written.
var ErrLineEnded = errors.New("framing: line already ended")

// A LineStream is one line written in parts, as they arrive (see
// [Writer.Stream]). It holds its Writer from Stream until End: no other
// line is written meanwhile, so a slow destination holds up every writer
// until the line is done.
//
// Write is called from one goroutine at a time; End may be called from
// any goroutine, concurrently with Write, and more than once: the first
// call ends the line, so that a watchdog can end a line whose source has
// stalled and let the other writers go on.
type LineStream struct {
	w     *Writer
	mu    sync.Mutex
	ended bool
	err   error // the first write error
}

// Stream begins a line to be written in parts, after the lines held back.
// The caller must call End.
func (w *Writer) Stream() *LineStream {
	w.mu.Lock()
	return &LineStream{w: w, err: w.flush()}
}

// Write writes the line's next part, which must not contain a newline. It
// returns [ErrLineEnded] once End has been called, and the first write
// error, if any, from then on.
func (s *LineStream) Write(part []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return ErrLineEnded
	}
	if s.err == nil && len(part) > 0 {
		_, s.err = s.w.w.Write(part)
	}
	return s.err
}

// End ends the line with its newline, whatever was written of it, so that
// the destination's next line starts clean, and releases the Writer. It
// reports whether this call ended the line (false when another had), and
// the first write error.
func (s *LineStream) End() (first bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return false, s.err
	}
	s.ended = true
	if s.err == nil {
		_, s.err = s.w.w.Write(newline)
	}
	s.w.mu.Unlock()
	return true, s.err
}
