package main

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/internal/config"
	"github.com/mcpwrap/mcpwrap/internal/upstream"
	"github.com/mcpwrap/mcpwrap/resilience"
)

func TestExpandURL(t *testing.T) {
	t.Parallel()
	env := map[string]string{"URL": "https://h/mcp?token=s3cret", "TOKEN": "s3cret", "REF": "${TOKEN}"}
	getenv := func(k string) string { return env[k] }
	tests := []struct {
		name      string
		raw       string
		want      string
		wantUnset bool   // the error wraps upstream.ErrUnsetVariable
		wantErr   string // the error's text; "" for none
	}{
		{name: "no reference", raw: "https://h/mcp?a=$b", want: "https://h/mcp?a=$b"},
		{name: "the whole URL, as install writes it", raw: "${URL}", want: "https://h/mcp?token=s3cret"},
		{name: "a part of the URL", raw: "https://h/mcp?token=${TOKEN}&x=1", want: "https://h/mcp?token=s3cret&x=1"},
		{name: "one pass: a value is not expanded again", raw: "https://h/${REF}", want: "https://h/${TOKEN}"},
		{
			name:      "unset variable, named",
			raw:       "https://h/mcp?token=${NOPE}",
			wantUnset: true,
			wantErr:   "invalid configuration: --url: ${NOPE}: environment variable is unset or empty",
		},
		{
			name:    "unclosed reference",
			raw:     "https://h/${TOKEN",
			wantErr: `invalid configuration: --url: "${" without a closing "}"`,
		},
		{
			name:    "no variable name, and the braces' content not echoed",
			raw:     "https://h/${s3cret-part}",
			wantErr: "invalid configuration: --url: a ${...} reference holds no valid variable name",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := expandURL(tt.raw, getenv)
			if tt.wantErr == "" {
				require.NoError(t, err)
				assert.Equal(t, tt.want, got)
				return
			}
			require.EqualError(t, err, tt.wantErr)
			require.ErrorIs(t, err, resilience.ErrConfig)
			assert.Equal(t, tt.wantUnset, errors.Is(err, upstream.ErrUnsetVariable))
			assert.NotContains(t, err.Error(), "s3cret")
		})
	}
}

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
	dial, err := dialer(o, config.Server{}, io.Discard, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	conn, err := dial(t.Context())
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })

	require.NoError(t, conn.WriteMessage([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`)))
	got := <-requests
	assert.Equal(t, seen{query: "token=s3cret", auth: "Bearer x"}, got)
}

func TestDialerRefusesUnsetURLVariable(t *testing.T) {
	t.Parallel()
	o := wrapOptions{name: "api", url: "${MCPWRAP_URL_UNSET_IN_THIS_TEST}"}
	_, err := dialer(o, config.Server{}, io.Discard, slog.New(slog.DiscardHandler))
	require.ErrorIs(t, err, upstream.ErrUnsetVariable)
	require.ErrorIs(t, err, resilience.ErrConfig)
}
