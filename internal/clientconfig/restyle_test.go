package clientconfig

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzRestyle: restyle only ever changes the whitespace between tokens of
// the new value, and a value laid out like itself is itself.
func FuzzRestyle(f *testing.F) {
	f.Add([]byte(`{"a": [1, 2], "b": {"c": "d"}}`), []byte(`{"b":{"c":"d","e":[]},"url":"x"}`), true)
	f.Add([]byte("[\n  \"x\",\n  \"y\"\n]"), []byte(`["w","x","y"]`), false)
	f.Add([]byte(`{ "headers": {"K": "v"} }`), []byte(`{"args":["--header","K: v"]}`), false)
	f.Add([]byte(`{}`), []byte(`{"env":{"A":"1"}}`), true)
	f.Fuzz(func(t *testing.T, old, value []byte, multiline bool) {
		old, value = bytes.TrimSpace(old), bytes.TrimSpace(value)
		if !json.Valid(old) || !json.Valid(value) {
			return
		}
		for _, l := range []layout{{indent: "  "}, {indent: "\t", crlf: true}, {}} {
			out := l.restyle(old, value, "  ", multiline)
			require.Equal(t, compact(t, value), compact(t, out), "restyle(%q, %q)", old, value)
			require.Equal(t, string(old), string(l.restyle(old, old, "  ", multiline)))
		}
	})
}

func compact(t *testing.T, b []byte) string {
	var buf bytes.Buffer
	require.NoError(t, json.Compact(&buf, b), "%q", b)
	return buf.String()
}
