package framing

import (
	"io"
	"sync"
)

// writeBuffer is how many bytes of lines a Writer gathers into one write.
const writeBuffer = 64 << 10

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
// back to be written with the next Write or Flush, or as soon as the lines
// kept back would exceed 64 KiB. A caller that holds a line must call
// Write or Flush before it waits for anything.
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
	if hold {
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

// WriteParts writes one line given in parts: each part next returns, until
// it reports the last, then "\n". The lines held back go first, and no
// other line is written meanwhile, so a slow destination holds up every
// writer until the line is done. An error from next ends the line early:
// its newline is written, so that the destination's next line starts
// clean, and the error is returned. After a write error the rest of the
// parts are still taken from next, so that its source ends the line too,
// and the write error is returned.
func (w *Writer) WriteParts(next func() (part []byte, last bool, err error)) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	werr := w.flush()
	for {
		part, last, err := next()
		if werr == nil && len(part) > 0 {
			_, werr = w.w.Write(part)
		}
		if err != nil {
			if werr == nil {
				_, werr = w.w.Write(newline)
			}
			return err
		}
		if last {
			if werr == nil {
				_, werr = w.w.Write(newline)
			}
			return werr
		}
	}
}
