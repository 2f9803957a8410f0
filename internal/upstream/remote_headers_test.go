package upstream

import (
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/resilience"
)

func TestExpandHeaders(t *testing.T) {
	env := map[string]string{"TOKEN": "t0k3n", "TEAM": "core", "NEWLINE": "bad\n"}
	getenv := func(name string) string { return env[name] }
	tests := []struct {
		name    string
		specs   []string
		want    http.Header
		unset   bool     // the error wraps ErrUnsetVariable
		mention []string // the error names these
	}{
		{
			name:  "plain and expanded values",
			specs: []string{"Authorization: Bearer ${TOKEN}", "x-team:${TEAM}-${TEAM}", "X-Literal: a$b $c {d} $"},
			want: http.Header{
				"Authorization": {"Bearer t0k3n"},
				"X-Team":        {"core-core"},
				"X-Literal":     {"a$b $c {d} $"},
			},
		},
		{
			name:  "repeated names keep every value",
			specs: []string{"X-A: 1", "x-a: 2"},
			want:  http.Header{"X-A": {"1", "2"}},
		},
		{
			name:  "no specs",
			specs: nil,
			want:  http.Header{},
		},
		{
			name:    "unset variable",
			specs:   []string{"Authorization: Bearer ${MISSING_TOKEN}"},
			unset:   true,
			mention: []string{"MISSING_TOKEN", "Authorization"},
		},
		{
			name:    "no colon",
			specs:   []string{"X-Ok: 1", "Bearer sk-secret"},
			mention: []string{"#2"},
		},
		{
			name:    "invalid name",
			specs:   []string{"Bad Name: v"},
			mention: []string{"#1"},
		},
		{
			name:    "unterminated reference",
			specs:   []string{"X-Key: ${TOKEN"},
			mention: []string{"X-Key"},
		},
		{
			name:    "invalid variable name",
			specs:   []string{"X-Key: ${sk-abc}"},
			mention: []string{"X-Key"},
		},
		{
			name:    "control character from the environment",
			specs:   []string{"X-Key: ${NEWLINE}"},
			mention: []string{"X-Key"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ExpandHeaders(tt.specs, getenv)
			if tt.want != nil {
				require.NoError(t, err)
				assert.Equal(t, tt.want, got)
				return
			}
			require.Error(t, err)
			assert.ErrorIs(t, err, resilience.ErrConfig)
			if tt.unset {
				assert.ErrorIs(t, err, ErrUnsetVariable)
			}
			for _, m := range tt.mention {
				assert.Contains(t, err.Error(), m)
			}
			for _, secret := range []string{"t0k3n", "sk-secret", "sk-abc", "bad"} {
				assert.NotContains(t, err.Error(), secret, "errors never carry values")
			}
		})
	}
}

func TestExpandHeadersNilGetenv(t *testing.T) {
	_, err := ExpandHeaders([]string{"X: ${HOME}"}, nil)
	assert.ErrorIs(t, err, ErrUnsetVariable)
}

func TestExpandURL(t *testing.T) {
	t.Parallel()
	env := map[string]string{"URL": "https://h/mcp?token=s3cret", "TOKEN": "s3cret", "REF": "${TOKEN}"}
	getenv := func(k string) string { return env[k] }
	tests := []struct {
		name      string
		raw       string
		want      string
		wantUnset bool   // the error wraps ErrUnsetVariable
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
			got, err := ExpandURL(tt.raw, getenv)
			if tt.wantErr == "" {
				require.NoError(t, err)
				assert.Equal(t, tt.want, got)
				return
			}
			require.EqualError(t, err, tt.wantErr)
			require.ErrorIs(t, err, resilience.ErrConfig)
			assert.Equal(t, tt.wantUnset, errors.Is(err, ErrUnsetVariable))
			assert.NotContains(t, err.Error(), "s3cret")
		})
	}
}
