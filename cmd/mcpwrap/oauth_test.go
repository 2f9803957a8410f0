package main

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/internal/auth"
	"github.com/mcpwrap/mcpwrap/internal/config"
	"github.com/mcpwrap/mcpwrap/internal/stores"
)

// TestWriteSignIns: status and doctor list each sign-in by its name and
// its URLs' origins, never a token, user info, path or query: some
// services put the key in the path (…/sk-ak-…/mcp).
func TestWriteSignIns(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("MCPWRAP_TOKEN_STORE", "file")
	store, err := auth.OpenStore(dir, func(k string) string { return map[string]string{"MCPWRAP_TOKEN_STORE": "file"}[k] }, nil)
	require.NoError(t, err)
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	require.NoError(t, store.SaveToken(context.Background(), auth.Token{
		ServerURL: "https://user:pw@mcp.example/mcp?key=k", Issuer: "https://as.example",
		AccessToken: "secret-access", RefreshToken: "secret-refresh", Expiry: now.Add(52 * time.Minute),
	}, nil))
	require.NoError(t, store.SaveToken(context.Background(), auth.Token{
		ServerURL: "https://mcp.example/sk-ak-SECRET/mcp", Name: "linear", Issuer: "https://as.example/tenant-SECRET",
		AccessToken: "secret-access-2",
	}, nil))
	var out bytes.Buffer
	var opened stores.Set
	defer opened.Close()
	writeSignIns(t.Context(), &out, filepath.Join(dir, "config.json"), config.StoreFile, dir, &opened, now)
	assert.Contains(t, out.String(), "  -       https://mcp.example  https://as.example  signed in (expires in 52m0s)\n")
	assert.Contains(t, out.String(), "  linear  https://mcp.example  https://as.example  signed in\n")
	for _, secret := range []string{"secret-access", "secret-refresh", "pw", "key=k", "SECRET", "example/"} {
		assert.NotContains(t, out.String(), secret)
	}
}

func TestLoginArguments(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "no name", args: []string{"login"}, wantErr: "mcpwrap login: give the server's name"},
		{name: "two names", args: []string{"logout", "a", "b"}, wantErr: `mcpwrap logout: unexpected arguments ["b"]`},
		{name: "bad port", args: []string{"login", "a", "--oauth-redirect-port", "x"}, wantErr: `--oauth-redirect-port: "x" is not a whole number`},
		{name: "unknown flag", args: []string{"login", "a", "--nope"}, wantErr: "unknown flag --nope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tt.args, nil, &stdout, &stderr)
			assert.Equal(t, exitUsage, code)
			assert.Contains(t, stderr.String(), tt.wantErr)
		})
	}
}

func TestOAuthFlagsLayering(t *testing.T) {
	entry := oauthFlags{clientID: "entry-id", clientSecretEnv: "ENTRY_SECRET", scopes: "a b", redirectPort: 4000}
	tests := []struct {
		name      string
		cli       oauthFlags
		cfg       config.OAuth
		wantFlags oauthFlags
		wantCfg   config.OAuth
	}{
		{
			name:      "no flags keep the entry's and the config's",
			cfg:       config.OAuth{ClientMetadataURL: "https://cfg.example/meta"},
			wantFlags: entry,
			wantCfg: config.OAuth{ClientID: "entry-id", ClientSecretEnv: "ENTRY_SECRET", ClientMetadataURL: "https://cfg.example/meta",
				Scopes: []string{"a", "b"}, RedirectPort: 4000},
		},
		{
			name: "the command line's flags win",
			cli:  oauthFlags{clientID: "cli-id", clientMetadataURL: "https://cli.example/meta", scopes: "x,y z", redirectPort: 5000},
			cfg:  config.OAuth{ClientID: "cfg-id", ClientMetadataURL: "https://cfg.example/meta", Scopes: []string{"cfg"}},
			wantFlags: oauthFlags{clientID: "cli-id", clientSecretEnv: "ENTRY_SECRET", clientMetadataURL: "https://cli.example/meta",
				scopes: "x,y z", redirectPort: 5000},
			wantCfg: config.OAuth{ClientID: "cli-id", ClientSecretEnv: "ENTRY_SECRET", ClientMetadataURL: "https://cli.example/meta",
				Scopes: []string{"x", "y", "z"}, RedirectPort: 5000},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := entry.overriddenBy(tt.cli)
			assert.Equal(t, tt.wantFlags, got)
			cfg := tt.cfg
			got.apply(&cfg)
			assert.Equal(t, tt.wantCfg, cfg)
		})
	}
}
