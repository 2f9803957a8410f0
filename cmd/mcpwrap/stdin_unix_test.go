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

// stdinReader makes a closable reader of a client's stdin: closableStdin as
// mcpwrap uses it, or a pollStdin (what closableStdin falls back on where
// it has no blockingStdin).
type stdinReader struct {
	name string
	open func(t *testing.T, stdin *os.File) (io.Reader, io.Closer)
}

var stdinReaders = []stdinReader{
	{name: "closableStdin", open: func(t *testing.T, stdin *os.File) (io.Reader, io.Closer) {
		r, c := closableStdin(stdin)
		require.NotNil(t, c)
		return r, c
	}},
	{name: "pollStdin", open: func(t *testing.T, stdin *os.File) (io.Reader, io.Closer) {
		fd, err := syscall.Dup(int(stdin.Fd()))
		require.NoError(t, err)
		p, err := newPollStdin(fd, stdin.Name())
		require.NoError(t, err)
		return p, p
	}},
}

// clientStdin returns the two ends of a client's stdin of the given kind
// ("pipe" or "socket"), in blocking mode as a client hands them over
// (os.Pipe's would be non-blocking already).
func clientStdin(t *testing.T, kind string) (stdin, client *os.File) {
	var fds [2]int
	if kind == "socket" {
		var err error
		fds, err = syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
		require.NoError(t, err)
	} else {
		require.NoError(t, syscall.Pipe(fds[:]))
	}
	stdin, client = os.NewFile(uintptr(fds[0]), "stdin"), os.NewFile(uintptr(fds[1]), "client")
	t.Cleanup(func() { stdin.Close(); client.Close() })
	return stdin, client
}

// TestClosableStdinEndsABlockedRead: closing stdin ends a read blocked on
// it, so the session's client pump ends with its Run.
func TestClosableStdinEndsABlockedRead(t *testing.T) {
	for _, reader := range stdinReaders {
		for _, kind := range []string{"pipe", "socket"} {
			t.Run(reader.name+"/"+kind, func(t *testing.T) {
				stdin, _ := clientStdin(t, kind)
				in, closer := reader.open(t, stdin)
				read := make(chan error, 1)
				go func() {
					_, err := in.Read(make([]byte, 64))
					read <- err
				}()
				require.Eventually(t, func() bool { return readState(t.Name()) != "" }, 5*time.Second, time.Millisecond, "the read is blocked")
				require.NoError(t, closer.Close())
				select {
				case err := <-read:
					assert.ErrorIs(t, err, os.ErrClosed)
				case <-time.After(5 * time.Second):
					t.Fatal("closing stdin did not end the read blocked on it")
				}
				_, err := in.Read(make([]byte, 64))
				assert.ErrorIs(t, err, os.ErrClosed, "a read after Close")
			})
		}
	}
}

// TestClosableStdinLeavesOtherReadersAlone: a reader that is not a pipe or
// socket is returned as it is, with no closer.
func TestClosableStdinLeavesOtherReadersAlone(t *testing.T) {
	other := strings.NewReader("x")
	in, closer := closableStdin(other)
	assert.Same(t, other, in)
	assert.Nil(t, closer)
}

// TestClosableStdinWaitsInASystemCall: a read waiting for the client waits
// in a system call, not in Go's runtime poller; that keeps the runtime's
// monitor thread from sleeping and being woken again on every message (the
// relay's CPU per small round trip).
func TestClosableStdinWaitsInASystemCall(t *testing.T) {
	for _, reader := range stdinReaders {
		t.Run(reader.name, func(t *testing.T) {
			stdin, client := clientStdin(t, "pipe")
			in, closer := reader.open(t, stdin)
			defer closer.Close()
			read := make(chan string, 1)
			go func() {
				buf := make([]byte, 64)
				n, _ := in.Read(buf)
				read <- string(buf[:n])
			}()
			require.Eventually(t, func() bool { return readState(t.Name()) != "" }, 5*time.Second, time.Millisecond, "the read is blocked")
			assert.Equal(t, "syscall", readState(t.Name()), "where the read waits")

			_, err := client.Write([]byte("{}\n"))
			require.NoError(t, err)
			assert.Equal(t, "{}\n", <-read)
		})
	}
}

// TestClosableStdinReadsToEOF: what the client writes arrives whole and in
// order, then EOF once it closes its end.
func TestClosableStdinReadsToEOF(t *testing.T) {
	for _, reader := range stdinReaders {
		for _, kind := range []string{"pipe", "socket"} {
			t.Run(reader.name+"/"+kind, func(t *testing.T) {
				stdin, client := clientStdin(t, kind)
				in, closer := reader.open(t, stdin)
				defer closer.Close()
				want := strings.Repeat(`{"jsonrpc":"2.0","method":"x"}`+"\n", 10000) // more than a pipe holds
				go func() {
					client.Write([]byte(want))
					client.Close()
				}()
				got, err := io.ReadAll(in)
				require.NoError(t, err)
				assert.Equal(t, want, string(got))
			})
		}
	}
}

// readState is the state ("IO wait", "syscall") of the goroutine reading in
// the test or subtest named test, or "" when it is not waiting to read.
func readState(test string) string {
	fn := strings.NewReplacer("/", ".", "-", "_").Replace(test)
	if i := strings.IndexByte(fn, '.'); i >= 0 {
		fn = fn[:i] // the subtest's closure is named after its test
	}
	buf := make([]byte, 1<<20)
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if !strings.Contains(g, fn+".func") || !strings.Contains(g, ").Read(") {
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
