package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/internal/config"
	"github.com/mcpwrap/mcpwrap/internal/pgstore"
	"github.com/mcpwrap/mcpwrap/internal/pgtest"
	"github.com/mcpwrap/mcpwrap/internal/state"
)

// mcpwrap tools, status and doctor work against the PostgreSQL store
// $MCPWRAP_STORE names, its password from $PGPASSFILE: a toggle made by
// `tools` is in the database, status and doctor name the store (host,
// port, database; no user) and say whether it can be used, and with the
// database down they say so.
func TestCommandsUseThePostgreSQLStore(t *testing.T) {
	c := pgtest.Own(t)
	dsn, err := c.CreateDB(t.Context())
	require.NoError(t, err)
	dir := t.TempDir()
	t.Setenv("PGPASSFILE", c.PassFile)
	t.Setenv(config.EnvStore, dsn)
	t.Setenv(config.EnvStateDir, filepath.Join(dir, "state"))
	t.Setenv(config.EnvConfig, "")
	t.Setenv("XDG_CONFIG_HOME", dir) // no config file
	t.Setenv("HOME", dir)

	s, err := pgstore.Open(dsn, pgstore.Options{})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	require.NoError(t, s.Update(t.Context(), "s", func(srv *state.Server) error {
		srv.Catalog = &state.Catalog{SeenAt: time.Now().UTC(), Tools: map[string]state.CatalogTool{
			"a": {Definition: json.RawMessage(`{"name":"a","inputSchema":{"type":"object"}}`), Hash: "sha256:a"},
		}}
		return nil
	}))

	ctx := context.Background()
	mcpwrap := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := run(ctx, args, nil, &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}
	code, _, stderr := mcpwrap("tools", "disable", "s", "a")
	require.Equal(t, exitOK, code, stderr)
	srv, err := s.Load(t.Context(), "s")
	require.NoError(t, err)
	assert.Equal(t, []string{"a"}, srv.Disabled, "the toggle is in the database")

	code, stdout, stderr := mcpwrap("tools", "list", "s")
	require.Equal(t, exitOK, code, stderr)
	assert.Contains(t, stdout, "disabled_by_user")

	code, stdout, _ = mcpwrap("status")
	require.Equal(t, exitOK, code)
	assert.Contains(t, stdout, "State store ($MCPWRAP_STORE): PostgreSQL postgres://localhost:5432/")
	assert.Contains(t, stdout, ": available")
	assert.NotContains(t, stdout, pgtest.User+"@")

	clients := filepath.Join(dir, "clients.json")
	require.NoError(t, os.WriteFile(clients, []byte(`{"mcpServers":{"s":{"command":"/nonexistent/server"}}}`), 0o600))
	_, stdout, _ = mcpwrap("doctor", "--config-path", clients, "--timeout", "5s")
	assert.Contains(t, stdout, "State store ($MCPWRAP_STORE): PostgreSQL postgres://localhost:5432/")

	require.NoError(t, c.Stop())
	code, stdout, _ = mcpwrap("status")
	require.Equal(t, exitOK, code)
	assert.Contains(t, stdout, "cannot be used: state store unavailable")
	code, _, stderr = mcpwrap("tools", "enable", "s", "a")
	assert.Equal(t, exitError, code)
	assert.Contains(t, stderr, "state store unavailable")
}
