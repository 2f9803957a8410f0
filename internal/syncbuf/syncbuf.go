// Package syncbuf provides Buffer, a bytes.Buffer that concurrent writers
// and readers may share: tests collect a logger's, or a process's, output
// in one while it runs, and read it meanwhile.
package syncbuf

import (
	"bytes"
	"sync"
)

// A Buffer is a bytes.Buffer whose methods are safe for concurrent use.
// The zero value is an empty buffer ready to use.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p to the buffer.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
