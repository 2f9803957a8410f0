package main

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/internal/config"
	"github.com/mcpwrap/mcpwrap/internal/stores"
	"github.com/mcpwrap/mcpwrap/internal/upstream"
	"github.com/mcpwrap/mcpwrap/resilience"
)

// TestDialerExpandsURLFromEntryEnv checks what mcpwrap install relies on:
// --url '${VAR}' with VAR in the client entry's env reaches the server.
func TestDialerExpandsURLFromEntryEnv(t *testing.T) {
	t.Parallel()
	type seen struct{ query, auth string }
	requests := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case requests <- seen{query: r.URL.RawQuery, auth: r.Header.Get("Authorization")}:
		default:
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	}))
	t.Cleanup(srv.Close)

	o := wrapOptions{
		name:    "api",
		url:     "${MCPWRAP_URL_API}",
		headers: headerFlags{"Authorization: ${MCPWRAP_HDR_API_AUTHORIZATION}"},
		env: map[string]string{
			"MCPWRAP_URL_API":               srv.URL + "/mcp?token=s3cret",
			"MCPWRAP_HDR_API_AUTHORIZATION": "Bearer x",
		},
	}
	dial := dialer(o, config.Server{}, nil, io.Discard, slog.New(slog.DiscardHandler))
	conn, err := dial(t.Context())
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })

	require.NoError(t, conn.WriteMessage(t.Context(), []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`)))
	got := <-requests
	assert.Equal(t, seen{query: "token=s3cret", auth: "Bearer x"}, got)
}

// A --url server that cannot be reached as configured fails each load with
// the cause, classified, so that the agent is told (the process no longer
// exits before it serves).
func TestDialerFailsEachLoadWithTheCause(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		o        wrapOptions
		setupErr error
		is       error
	}{
		{name: "unset URL variable", o: wrapOptions{name: "api", url: "${MCPWRAP_URL_UNSET_IN_THIS_TEST}"}, is: upstream.ErrUnsetVariable},
		{name: "malformed URL", o: wrapOptions{name: "api", url: "ftp://files.example/mcp"}, is: resilience.ErrConfig},
		{name: "malformed header", o: wrapOptions{name: "api", url: "https://h/mcp", headers: headerFlags{"no colon"}}, is: resilience.ErrConfig},
		{name: "sign-in store", o: wrapOptions{name: "api", url: "https://h/mcp"}, setupErr: fmt.Errorf("%w: mkdir: denied", resilience.ErrStateDir), is: resilience.ErrStateDir},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dial := dialer(tt.o, config.Server{}, tt.setupErr, io.Discard, slog.New(slog.DiscardHandler))
			for range 2 { // every load, not only the first
				_, err := dial(t.Context())
				require.ErrorIs(t, err, tt.is)
				assert.Equal(t, resilience.Permanent, resilience.Classify(err).Class)
			}
		})
	}
}

// TestDefaultNames: the default --name comes from what identifies the
// server, so two servers whose entry point is index.js differ.
func TestDefaultNames(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{name: "filesystem index.js", args: []string{"--", "node", "e2e/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js", "/tmp"}, want: "filesystem"},
		{name: "memory index.js", args: []string{"--", "node", "e2e/node_modules/@modelcontextprotocol/server-memory/dist/index.js"}, want: "memory"},
		{name: "npx with a version", args: []string{"--", "npx", "-y", "@modelcontextprotocol/server-everything@2025.9.12"}, want: "everything"},
		{name: "docker image", args: []string{"--", "docker", "run", "-i", "--rm", "ghcr.io/github/github-mcp-server"}, want: "github"},
		{name: "url host", args: []string{"--url", "https://mcp.example.com/mcp"}, want: "mcp.example.com"},
		{name: "--name wins", args: []string{"--name", "notes", "--", "node", "index.js"}, want: "notes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o, err := parseWrapFlags(tt.args, io.Discard)
			require.NoError(t, err)
			assert.Equal(t, tt.want, o.name)
		})
	}
}

// TestCallTimeoutFlagOverridesConfig: --call-timeout replaces the config's
// call_timeout, 0 included (no bound), and reaches the Session.
func TestCallTimeoutFlagOverridesConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	configPath := filepath.Join(dir, "config.json")
	require.NoError(t, os.WriteFile(configPath, []byte(`{"defaults": {"call_timeout": "2m"}}`), 0o600))
	tests := []struct {
		name  string
		flags []string
		want  time.Duration
	}{
		{name: "from config", want: 2 * time.Minute},
		{name: "flag", flags: []string{"--call-timeout", "5s"}, want: 5 * time.Second},
		{name: "flag turns it off", flags: []string{"--call-timeout", "0"}, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"--config", configPath, "--state-dir", filepath.Join(dir, "state"), "--name", "srv"}, tt.flags...)
			o, err := parseWrapFlags(append(args, "--", "srv"), io.Discard)
			require.NoError(t, err)
			logger := slog.New(slog.DiscardHandler)
			srv, tools, err := loadPolicy(t.Context(), o, new(stores.Set), logger)
			require.NoError(t, err)
			assert.Equal(t, tt.want, srv.CallTimeout)
			assert.Equal(t, tt.want, newSession(o, srv, tools, nil, logger).CallTimeout)
		})
	}
}
