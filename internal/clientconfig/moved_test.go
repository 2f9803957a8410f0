package clientconfig

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMovedValues(t *testing.T) {
	env := map[string]string{"TOKEN": "tok", "TEAM": "eng", "NESTED": "${TOKEN}", "EMPTY": ""}
	tests := []struct {
		name  string
		value string // of the variable read
		read  string // its name; MCPWRAP_HDR_S_AUTHORIZATION unless set
		want  string
	}{
		{name: "a reference among text", value: "Bearer ${TOKEN}", want: "Bearer tok"},
		{name: "several", value: "${TEAM}:${TOKEN}", want: "eng:tok"},
		{name: "in a moved URL", read: "MCPWRAP_URL_S", value: "https://x/mcp?team=${TEAM}", want: "https://x/mcp?team=eng"},
		{name: "already expanded by the client", value: "Bearer tok", want: "Bearer tok"},
		{name: "a default, the variable unset", value: "${UNSET:-anon}", want: "anon"},
		{name: "a default, the variable empty", value: "${EMPTY:-anon}", want: "anon"},
		{name: "a default, the variable set", value: "${TEAM:-anon}", want: "eng"},
		{name: "unset, no default: left as written", value: "Bearer ${UNSET}", want: "Bearer ${UNSET}"},
		{name: "a bare $VAR is text", value: "Bearer $TOKEN", want: "Bearer $TOKEN"},
		{name: "not a name", value: "${1X} ${} ${A-B}", want: "${1X} ${} ${A-B}"},
		{name: "a value is not expanded again", value: "${NESTED}", want: "${TOKEN}"},
		{name: "another variable is getenv's own", read: "MY_HEADER", value: "Bearer ${TOKEN}", want: "Bearer ${TOKEN}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			read := tt.read
			if read == "" {
				read = "MCPWRAP_HDR_S_AUTHORIZATION"
			}
			getenv := MovedValues(func(name string) string {
				if name == read {
					return tt.value
				}
				return env[name]
			})
			assert.Equal(t, tt.want, getenv(read))
		})
	}
}

// FuzzMovedValues: with every variable unset and no default, a moved value
// is left as written; with every variable set to text without "$", no
// reference is left.
func FuzzMovedValues(f *testing.F) {
	for _, seed := range []string{"Bearer ${TOKEN}", "${A:-b}", "${A${B}}", "${", "${A:-${B}}", "$${A}}", "${A:-}"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, value string) {
		const moved = "MCPWRAP_HDR_S_X"
		unset := MovedValues(func(name string) string {
			if name == moved {
				return value
			}
			return ""
		})
		if !clientRefPattern.MatchString(value) || !containsDefault(value) {
			require.Equal(t, value, unset(moved))
		}
		set := MovedValues(func(name string) string {
			if name == moved {
				return value
			}
			return "<" + name + ">"
		})
		require.False(t, clientRefPattern.MatchString(set(moved)), "%q gives %q", value, set(moved))
	})
}

// containsDefault reports whether a reference in s has a default.
func containsDefault(s string) bool {
	for _, m := range clientRefPattern.FindAllStringSubmatchIndex(s, -1) {
		if m[4] >= 0 {
			return true
		}
	}
	return false
}
