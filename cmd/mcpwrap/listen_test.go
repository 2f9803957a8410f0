package main

import (
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/internal/httpfront"
)

func TestListenFlags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    []string
		want    listenOptions
		wantErr string
	}{
		{name: "stdio mode", args: []string{"--", "srv"}},
		{name: "loopback", args: []string{"--listen", "127.0.0.1:8931", "--idle-timeout", "1m", "--max-sessions", "3", "--", "srv"},
			want: listenOptions{addr: "127.0.0.1:8931", idleTimeout: 60e9, maxSessions: 3}},
		{name: "localhost with a token and an origin",
			args: []string{"--listen", "localhost:0", "--auth-token-env", "TOK", "--allow-origin", "https://a.example", "--url", "https://h/mcp"},
			want: listenOptions{addr: "localhost:0", tokenEnv: "TOK", origins: stringsFlag{"https://a.example"}}},
		{name: "public with a token", args: []string{"--listen", "0.0.0.0:8931", "--listen-public", "--auth-token-env", "TOK", "--", "srv"},
			want: listenOptions{addr: "0.0.0.0:8931", public: true, tokenEnv: "TOK"}},
		{name: "every interface without --listen-public", args: []string{"--listen", ":8931", "--", "srv"},
			wantErr: "reachable from other machines"},
		{name: "public without a token", args: []string{"--listen", "192.168.1.5:8931", "--listen-public", "--", "srv"},
			wantErr: "needs --auth-token-env"},
		{name: "no port", args: []string{"--listen", "127.0.0.1", "--", "srv"}, wantErr: "want HOST:PORT"},
		{name: "slow-client limits", args: []string{"--listen", "127.0.0.1:0", "--header-timeout", "2s", "--body-timeout", "1m", "--max-conns", "40", "--", "srv"},
			want: listenOptions{addr: "127.0.0.1:0", conns: httpfront.ConnLimits{HeaderTimeout: 2e9, BodyTimeout: 60e9, MaxConns: 40}}},
		{name: "negative connection cap", args: []string{"--listen", "127.0.0.1:0", "--max-conns", "-1", "--", "srv"}, wantErr: "--max-conns"},
		{name: "negative body timeout", args: []string{"--listen", "127.0.0.1:0", "--body-timeout", "-1s", "--", "srv"}, wantErr: "--body-timeout"},
		{name: "negative session limit", args: []string{"--listen", "127.0.0.1:0", "--max-sessions", "-1", "--", "srv"}, wantErr: "--max-sessions"},
		{name: "companions without --listen", args: []string{"--auth-token-env", "TOK", "--", "srv"}, wantErr: "go with --listen"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o, err := parseWrapFlags(tt.args, io.Discard)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, o.listen)
		})
	}
}

func TestListenToken(t *testing.T) {
	t.Parallel()
	env := map[string]string{"TOK": " s3cret\n", "EMPTY": ""}
	getenv := func(k string) string { return env[k] }

	token, err := listenOptions{}.token(getenv)
	require.NoError(t, err)
	assert.Empty(t, token, "no token without --auth-token-env")

	token, err = listenOptions{tokenEnv: "TOK"}.token(getenv)
	require.NoError(t, err)
	assert.Equal(t, "s3cret", token)

	for _, name := range []string{"EMPTY", "UNSET"} {
		_, err = listenOptions{tokenEnv: name}.token(getenv)
		assert.ErrorContains(t, err, name)
	}
}
