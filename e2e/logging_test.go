package e2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLogFileHoldsServerStderr: with --log-file (which install sets), the server's stderr lines
// go to the log file, tagged, as well as to mcpwrap's stderr, and a clean shutdown logs nothing
// that reads like a failure.
func TestLogFileHoldsServerStderr(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	env := mcpwrapEnv(t, `{}`)
	logFile := filepath.Join(t.TempDir(), "logs", "notes.log")
	s := startLineSession(ctx, t, env, mcpwrapPath, "--log-file", logFile, "--name", "notes", "--",
		mcpwrapPath, "demo-server", "--stderr", "notes-server: listening on stdio")
	requireResult(t, s.Initialize(ctx, t))
	s.CloseAndDrain(ctx, t)

	log, err := os.ReadFile(logFile)
	require.NoError(t, err)
	assert.Contains(t, string(log), `INF server stderr server=notes stream=stderr line="notes-server: listening on stdio"`)
	assert.Contains(t, s.proc.Stderr(), "notes-server: listening on stdio\n", "and still on stderr")
	assert.Contains(t, string(log), "session ended")
	for _, failure := range []string{"ERR", "WRN", "canceled", "class=permanent"} {
		assert.NotContains(t, string(log), failure, "a clean shutdown")
	}
}

// TestShutdownWhileLoadingLogsNoFailure: a client that leaves while the server is still starting
// is a clean shutdown: no "load canceled" classified as a permanent failure, no catalog error.
func TestShutdownWhileLoadingLogsNoFailure(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	env := mcpwrapEnv(t, `{}`)
	s := startLineSession(ctx, t, env, mcpwrapPath, "--name", "slow", "--ready-timeout", "100ms", "--",
		mcpwrapPath, "demo-server", "--start-delay", "2s")
	requireResult(t, s.Initialize(ctx, t)) // answered by mcpwrap: the server is still starting
	s.CloseAndDrain(ctx, t)

	stderr := s.proc.Stderr()
	assert.Contains(t, stderr, "session ended")
	for _, failure := range []string{"load canceled", "class=permanent", "cannot load the tool catalog", "ERR"} {
		assert.NotContains(t, stderr, failure)
	}
}
