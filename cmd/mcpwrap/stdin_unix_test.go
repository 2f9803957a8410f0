//go:build unix

package main

import (
	"io"
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
		if strings.Contains(g, "TestClosableStdinEndsABlockedRead.func") && strings.Contains(g, ").Read(") &&
			(strings.Contains(g, "[IO wait") || strings.Contains(g, "[syscall")) {
			return true
		}
	}
	return false
}

// TestClosableStdinWaitsInASystemCall: a read waiting for the client waits
// in a system call, not in Go's runtime poller; that keeps the runtime's
// monitor thread from sleeping and being woken again on every message (the
// relay's CPU per small round trip).
func TestClosableStdinWaitsInASystemCall(t *testing.T) {
	var fds [2]int
	require.NoError(t, syscall.Pipe(fds[:]))
	r, w := os.NewFile(uintptr(fds[0]), "stdin"), os.NewFile(uintptr(fds[1]), "client")
	defer r.Close()
	defer w.Close()
	in, closer := closableStdin(r)
	require.NotNil(t, closer)
	defer closer.Close()

	read := make(chan string, 1)
	go func() {
		buf := make([]byte, 64)
		n, _ := in.Read(buf)
		read <- string(buf[:n])
	}()
	require.Eventually(t, func() bool { return readState() != "" }, 5*time.Second, time.Millisecond, "the read is blocked")
	assert.Equal(t, "syscall", readState(), "where the read waits")

	_, err := w.Write([]byte("{}\n"))
	require.NoError(t, err)
	assert.Equal(t, "{}\n", <-read)
}

// TestClosableStdinReadsToEOF: what the client writes arrives whole and in
// order, then EOF once it closes its end.
func TestClosableStdinReadsToEOF(t *testing.T) {
	var fds [2]int
	require.NoError(t, syscall.Pipe(fds[:]))
	r, w := os.NewFile(uintptr(fds[0]), "stdin"), os.NewFile(uintptr(fds[1]), "client")
	defer r.Close()
	in, closer := closableStdin(r)
	require.NotNil(t, closer)
	defer closer.Close()

	want := strings.Repeat(`{"jsonrpc":"2.0","method":"x"}`+"\n", 10000) // more than a pipe holds
	go func() {
		w.Write([]byte(want))
		w.Close()
	}()
	got, err := io.ReadAll(in)
	require.NoError(t, err)
	assert.Equal(t, want, string(got))
}

// readState is the state ("IO wait", "syscall", ...) of the goroutine of
// TestClosableStdinWaitsInASystemCall that is reading, or "" when it is
// not reading.
func readState() string {
	buf := make([]byte, 1<<20)
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if !strings.Contains(g, "TestClosableStdinWaitsInASystemCall.func") || !strings.Contains(g, ").Read(") {
			continue
		}
		head, _, _ := strings.Cut(g, "\n")
		if _, state, ok := strings.Cut(head, "["); ok {
			state, _, _ = strings.Cut(state, "]")
			state, _, _ = strings.Cut(state, ",")
			if state == "IO wait" || state == "syscall" {
				return state
			}
		}
	}
	return ""
}
