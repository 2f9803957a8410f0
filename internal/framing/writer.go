package framing

import (
	"io"
	"sync"
)

// smallLine is the size under which a line and its newline are copied into
// one buffer and written with a single call.
const smallLine = 32 << 10

// A Writer writes newline-terminated lines.
//
// A Writer is safe for concurrent use: each line is written whole, never
// interleaved with another. A slow destination blocks the caller, which is
// how backpressure reaches the producer.
type Writer struct {
	mu  sync.Mutex
	w   io.Writer
	buf []byte
}

// NewWriter returns a Writer that writes to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write writes line followed by "\n". line must not contain a newline.
func (w *Writer) Write(line []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(line) < smallLine {
		w.buf = append(append(w.buf[:0], line...), '\n')
		_, err := w.w.Write(w.buf)
		return err
	}
	if _, err := w.w.Write(line); err != nil {
		return err
	}
	_, err := w.w.Write(newline)
	return err
}

var newline = []byte{'\n'}
