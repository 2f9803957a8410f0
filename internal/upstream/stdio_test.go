package upstream

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/middleware"
	"github.com/mcpwrap/mcpwrap/resilience"
)

// A message over the limit is reported as the relay's error, with its size
// and head, and the stream goes on.
func TestStdioOversizedMessageIsDropped(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	s, err := StartStdio(ctx, fixtureCommand(t, "echo"), 100)
	require.NoError(t, err)
	defer s.Close()

	big := `{"jsonrpc":"2.0","method":"ping","id":1,"params":{"pad":"` + strings.Repeat("x", 300) + `"}}`
	require.NoError(t, s.WriteMessage(t.Context(), []byte(big)))
	require.NoError(t, s.WriteMessage(t.Context(), []byte(`{"jsonrpc":"2.0","method":"ping","id":2}`)))
	_, err = s.ReadMessage()
	require.ErrorIs(t, err, middleware.ErrMessageTooLarge)
	tooLong, ok := errors.AsType[*middleware.MessageTooLargeError](err)
	require.True(t, ok, "want a MessageTooLargeError, got %v", err)
	assert.Equal(t, int64(len(big)), tooLong.Size)
	assert.Equal(t, 100, tooLong.Limit)
	assert.Equal(t, "1", string(tooLong.ID))
	assert.Equal(t, "ping", tooLong.Method)

	msg, err := s.ReadMessage()
	require.NoError(t, err, "the stream goes on after a dropped message")
	assert.JSONEq(t, `{"jsonrpc":"2.0","method":"ping","id":2}`, string(msg))
}

// TestStdioCloseReleasesPipes: Close must release mcpwrap's ends of the
// child's pipes, or every restart (and every HTTP session's child) leaks a
// descriptor.
func TestStdioCloseReleasesPipes(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	s, err := StartStdio(ctx, fixtureCommand(t, "echo"), 0)
	require.NoError(t, err)

	require.NoError(t, s.WriteMessage(t.Context(), []byte(`{"jsonrpc":"2.0","method":"ping","id":1}`)))
	msg, err := s.ReadMessage()
	require.NoError(t, err)
	assert.JSONEq(t, `{"jsonrpc":"2.0","method":"ping","id":1}`, string(msg))

	require.NoError(t, s.Close())

	_, err = s.Process().Stdout().Read(make([]byte, 1))
	assert.ErrorIs(t, err, os.ErrClosed, "stdout's read end is still open")
	_, err = s.Process().Stdin().Write([]byte("x"))
	assert.ErrorIs(t, err, os.ErrClosed, "stdin's write end is still open")

	_, err = s.ReadMessage()
	var exit *resilience.ExitError
	assert.True(t, errors.As(err, &exit), "ReadMessage after Close: %v", err)
}
