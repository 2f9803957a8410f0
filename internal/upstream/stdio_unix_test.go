//go:build unix

package upstream

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/resilience"
)

func init() {
	fixtures["close-pipe"] = fixtureClosePipe
}

// readyLine is the message fixtureClosePipe writes before closing a pipe.
const readyLine = `{"jsonrpc":"2.0","method":"notifications/ready"}`

// fixtureClosePipe closes its stdin or its stdout (args[0]), writing
// readyLine before closing stdout or after closing stdin, and then runs on
// until a signal kills it.
func fixtureClosePipe(args []string) int {
	unrelated := make(chan os.Signal, 1)
	signal.Notify(unrelated, syscall.SIGUSR2)
	switch args[0] {
	case "stdin":
		_ = os.Stdin.Close()
		if _, err := os.Stdout.WriteString(readyLine + "\n"); err != nil {
			return 1
		}
	case "stdout":
		if _, err := os.Stdout.WriteString(readyLine + "\n"); err != nil {
			return 1
		}
		_ = os.Stdout.Close()
	default:
		return 2
	}
	blockForever()
	return 0
}

// TestStdioDeadPipeIsACrash: a child that closes its stdout or its stdin
// but keeps running is dead to mcpwrap. Without a message being written,
// ReadMessage must end with the child's exit, the child having been
// stopped, so that the session answers what was in flight and restarts it.
func TestStdioDeadPipeIsACrash(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		pipe string
	}{
		{name: "closes stdout", pipe: "stdout"},
		{name: "closes stdin", pipe: "stdin"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			s, err := StartStdio(ctx, fixtureCommand(t, "close-pipe", tt.pipe), 0)
			require.NoError(t, err)
			t.Cleanup(func() { _ = s.Close() })
			msg, err := s.ReadMessage()
			require.NoError(t, err)
			require.Equal(t, readyLine, string(msg))

			read := make(chan error, 1)
			go func() {
				_, err := s.ReadMessage()
				read <- err
			}()
			select {
			case err = <-read:
			case <-time.After(10 * time.Second):
				require.FailNow(t, "ReadMessage still blocked: the child's dead pipe was not noticed")
			}

			var exit *resilience.ExitError
			require.ErrorAs(t, err, &exit)
			assert.Equal(t, "SIGTERM", exit.Signal, "stopped by mcpwrap, not exited: %v", err)
			assert.Error(t, s.WriteMessage(t.Context(), []byte(`{"jsonrpc":"2.0","method":"ping","id":1}`)), "a write to the dead child")
		})
	}
}

// TestStdioWriteToClosedStdin: a write that finds the child's stdin closed
// fails, and the child is stopped as for a dead pipe.
func TestStdioWriteToClosedStdin(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	s, err := StartStdio(ctx, fixtureCommand(t, "close-pipe", "stdin"), 0)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	s.proc.watch.Stop() // as where the pipe cannot be watched
	_, err = s.ReadMessage()
	require.NoError(t, err)

	err = s.WriteMessage(t.Context(), []byte(`{"jsonrpc":"2.0","method":"ping","id":1}`))
	require.ErrorIs(t, err, syscall.EPIPE, "the child closed its stdin before its first line")

	select {
	case <-s.proc.Done():
	case <-time.After(10 * time.Second):
		require.FailNow(t, "the child was not stopped after a failed write")
	}
	st, _ := s.proc.Exit()
	assert.Equal(t, "SIGTERM", st.Signal)
}
