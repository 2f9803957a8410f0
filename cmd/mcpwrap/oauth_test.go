package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/internal/auth"
)

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
	var out bytes.Buffer
	writeSignIns(&out, dir, now)
	assert.Contains(t, out.String(), "https://mcp.example/mcp  https://as.example  signed in (expires in 52m0s)")
	for _, secret := range []string{"secret-access", "secret-refresh", "pw", "key=k"} {
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
