package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/internal/pgtest"
)

// TestOAuthReplicasShareSignInsOnPostgreSQL: replicas (a state directory
// each, one PostgreSQL store) share the OAuth registration, so the second
// replica's sign-in registers no new client; with $MCPWRAP_STORE_KEY they
// share the tokens too, sealed in the table, and a replica with another
// key says it cannot open them, quoting no secret.
func TestOAuthReplicasShareSignInsOnPostgreSQL(t *testing.T) {
	t.Parallel()
	c := pgtest.Own(t)
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	as := startAuthServer(t)
	port := strconv.Itoa(freeLoopbackPort(t))
	key := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0x42}, 32))
	otherKey := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0x24}, 32))

	replica := func(dsn, key string) func(args ...string) (string, error) {
		env := append(signInEnv(t, t.TempDir(), filepath.Join(t.TempDir(), "browser.log"), false),
			"PGPASSFILE="+c.PassFile, "MCPWRAP_STORE="+dsn, "MCPWRAP_STORE_KEY="+key)
		return func(args ...string) (string, error) {
			cmd := exec.CommandContext(ctx, mcpwrapPath, args...)
			cmd.Env = append(os.Environ(), env...)
			out, err := cmd.CombinedOutput()
			return string(out), err
		}
	}
	login := []string{"login", "notes", "--url", as.URL + "/mcp", "--oauth-redirect-port", port}

	// Without a key: one registration for both, tokens on each machine.
	dsn, err := c.CreateDB(ctx)
	require.NoError(t, err)
	a, b := replica(dsn, ""), replica(dsn, "")
	out, err := a(login...)
	require.NoError(t, err, out)
	out, err = b("status")
	require.NoError(t, err, out)
	assert.NotContains(t, out, "signed in", "without a key, replica 1's token stays on its machine")
	out, err = b(login...)
	require.NoError(t, err, out)
	assert.Equal(t, 2, as.Counts().Authorizations)
	assert.Equal(t, 1, as.Counts().Registrations, "replica 2 signed in with replica 1's registration")

	// With a key: replica 2 is signed in by replica 1's sign-in.
	dsn, err = c.CreateDB(ctx)
	require.NoError(t, err)
	out, err = replica(dsn, key)(login...)
	require.NoError(t, err, out)
	out, err = replica(dsn, key)("status")
	require.NoError(t, err, out)
	assert.Contains(t, out, "signed in (expires in", "the sealed token reached the other replica")
	assert.Contains(t, out, "sealed with key")
	assertNoTokens(t, as, map[string]string{"status": out})

	out, err = replica(dsn, otherKey)("status")
	require.NoError(t, err, out)
	assert.Contains(t, out, "cannot be opened with $MCPWRAP_STORE_KEY")
	for _, secret := range []string{key, otherKey} {
		assert.NotContains(t, out, secret)
	}
	assertNoTokens(t, as, map[string]string{"status with another key": out})
}

// TestOAuthSignInReachesARunningReplicaOnPostgreSQL: with
// $MCPWRAP_STORE_KEY, a sidecar that runs on replica 2 before anyone signed
// in (no browser of its own) is told to sign in; `mcpwrap login` on replica
// 1 then brings its tools, with tools/list_changed: the sealed sign-in is
// announced through the database (DESIGN, Sign-ins).
func TestOAuthSignInReachesARunningReplicaOnPostgreSQL(t *testing.T) {
	t.Parallel()
	c := pgtest.Own(t)
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	as := startAuthServer(t)
	key := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0x42}, 32))
	dsn, err := c.CreateDB(ctx)
	require.NoError(t, err)
	shared := []string{"PGPASSFILE=" + c.PassFile, "MCPWRAP_STORE=" + dsn, "MCPWRAP_STORE_KEY=" + key}

	sidecarEnv := append(signInEnv(t, t.TempDir(), filepath.Join(t.TempDir(), "browser.log"), false), shared...)
	sidecarEnv = append(sidecarEnv, "MCPWRAP_BROWSER=none")
	s := startLineSession(ctx, t, sidecarEnv, mcpwrapPath, sidecarArgs(as, freeLoopbackPort(t), "--ready-timeout", "1s")...)
	s.Initialize(ctx, t)
	for i := 1; ; i++ {
		res := callWhoami(ctx, t, s, i)
		if strings.Contains(res.text(), "needs you to sign in") {
			break
		}
		require.Contains(t, res.text(), "still starting up")
		select {
		case <-ctx.Done():
			require.FailNow(t, "never told to sign in")
		case <-time.After(200 * time.Millisecond):
		}
	}

	login(ctx, t, as, append(signInEnv(t, t.TempDir(), filepath.Join(t.TempDir(), "cli.log"), false), shared...), freeLoopbackPort(t))
	waitNotification(ctx, t, s, "notifications/tools/list_changed")
	res := callWhoami(ctx, t, s, 100)
	assert.False(t, res.IsError, res.text())
	assert.Equal(t, "you are signed in", res.text())
	s.CloseAndDrain(ctx, t)
	assert.Equal(t, 1, as.Counts().Authorizations, "replica 1's sign-in, used by replica 2")
	assertNoTokens(t, as, map[string]string{"sidecar log": s.proc.Stderr()})
}
