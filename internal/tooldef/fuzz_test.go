package tooldef

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzParse checks that Parse never panics, that Identify refuses exactly
// what Parse refuses, and that an accepted definition means one thing: its
// name is what Go's case-insensitive reader and a map reader take, and its
// hash survives a decode and re-encode (which collapses duplicate keys, so
// a definition with any would hash differently after).
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		`{"name":"a"}`,
		`{"name":"a","description":"d","inputSchema":{"type":"object","properties":{"p":{"type":"number","maximum":1.5}}},"annotations":{"readOnlyHint":true}}`,
		`{"name":"a","name":"b"}`,
		`{"name":"a","NAME":"b"}`,
		`{"n\u0061me":"a"}`,
		`{"name":"a","inputSchema":{"x":1,"x":2}}`,
		`{"name":"a","inputSchema":{"x":1,"\u0078":2}}`,
		`{"name":"a","annotations":{"readOnlyHint":true,"ReadOnlyHint":false}}`,
		`{"name":"a","outputSchema":[[[{"k":[{"k":1}]}]]]}`,
		"{\"name\":\"a\",\"inputSchema\":{\"\xff\":1,\"\xfe\":2}}",
		`{"name":"a","_meta":{"x":1,"x":2},"title":"t","title":"u"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		d, err := Parse(raw)
		id, idErr := Identify(raw)
		require.Equal(t, err == nil, idErr == nil)
		if err != nil {
			require.Zero(t, d)
			return
		}
		id.Hash = d.Hash
		require.Equal(t, d, id)

		var s struct{ Name string }
		require.NoError(t, json.Unmarshal(raw, &s))
		require.Equal(t, d.Name, s.Name, "Go's case-insensitive reader")
		var m map[string]any
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		require.NoError(t, dec.Decode(&m))
		require.Equal(t, d.Name, m["name"], "a map reader")

		again, err := json.Marshal(m)
		require.NoError(t, err)
		d2, err := Parse(again)
		require.NoError(t, err, "%s", again)
		require.Equal(t, d, d2, "re-encoded: %s", again)
	})
}
