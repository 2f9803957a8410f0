//go:build unix

package main

import (
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestClosableStdinEndsABlockedRead: closing a pipe stdin ends a read
// blocked on it, so the session's client pump ends with its Run; a reader
// that is not a pipe is left alone.
func TestClosableStdinEndsABlockedRead(t *testing.T) {
	// A pipe in blocking mode, as a client hands it over (os.Pipe's
	// would be non-blocking already).
	var fds [2]int
	require.NoError(t, syscall.Pipe(fds[:]))
	r, w := os.NewFile(uintptr(fds[0]), "stdin"), os.NewFile(uintptr(fds[1]), "client")
	defer w.Close()
	in, closer := closableStdin(r)
	require.NotNil(t, closer)
	read := make(chan error, 1)
	go func() {
		_, err := in.Read(make([]byte, 1))
		read <- err
	}()
	require.Eventually(t, readBlocked, 5*time.Second, time.Millisecond, "the read is blocked")
	require.NoError(t, closer.Close())
	select {
	case err := <-read:
		assert.Error(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("closing stdin did not end the read blocked on it")
	}

	r.Close()

	other := strings.NewReader("x")
	in, closer = closableStdin(other)
	assert.Same(t, other, in)
	assert.Nil(t, closer)
}

// readBlocked reports whether the test's reader goroutine is blocked
// reading (in the poller or in the system call).
func readBlocked() bool {
	buf := make([]byte, 1<<20)
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if strings.Contains(g, "TestClosableStdinEndsABlockedRead.func") && strings.Contains(g, "os.(*File).Read") &&
			(strings.Contains(g, "[IO wait") || strings.Contains(g, "[syscall")) {
			return true
		}
	}
	return false
}
