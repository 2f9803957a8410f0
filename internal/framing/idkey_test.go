package framing

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAppendIDKeyAllocatesNothingForCommonIDs(t *testing.T) {
	tests := []struct {
		name string
		id   string
		key  string
	}{
		{name: "integer", id: `42`, key: "n42"},
		{name: "zero", id: `0`, key: "n0"},
		{name: "negative", id: `-7`, key: "n-7"},
		{name: "15 digits", id: `123456789012345`, key: "n123456789012345"},
		{name: "plain string", id: `"req-1"`, key: "sreq-1"},
		{name: "empty string", id: `""`, key: "s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf [64]byte
			assert.Equal(t, tt.key, string(AppendIDKey(buf[:0], []byte(tt.id))))
			assert.Equal(t, tt.key, IDKey([]byte(tt.id)))
			m := map[string]int{tt.key: 1}
			id := []byte(tt.id)
			allocs := testing.AllocsPerRun(100, func() {
				if m[string(AppendIDKey(buf[:0], id))] != 1 {
					t.Fatal("not found")
				}
			})
			assert.Zero(t, allocs, "a lookup by a common id allocates nothing")
		})
	}
}

func TestAppendIDKeyKeepsByValueSemantics(t *testing.T) {
	tests := []struct {
		name string
		a, b string
	}{
		{name: "-0 and 0", a: `-0`, b: `0`},
		{name: "1.0 and 1", a: `1.0`, b: `1`},
		{name: "16 digits round like a float64", a: `9007199254740993`, b: `9007199254740992`},
		{name: "escaped and plain string", a: `"a\/b"`, b: `"a/b"`},
		{name: "object member order", a: `{"b":1,"a":2}`, b: `{"a":2,"b":1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, string(AppendIDKey(nil, []byte(tt.a))), string(AppendIDKey(nil, []byte(tt.b))))
		})
	}
}

// FuzzAppendIDKey checks that the allocation-free paths give the key the
// general one gives, for any input.
func FuzzAppendIDKey(f *testing.F) {
	for _, s := range []string{`1`, `-0`, `007`, `123456789012345`, `1234567890123456`, `"a"`, `"a\"`, `"é"`, `"a"b"`, `"`, `-`, `1e3`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		require.Equal(t, idKey(raw), string(AppendIDKey(nil, raw)), "id %q", raw)
		require.Equal(t, "x"+idKey(raw), string(AppendIDKey([]byte("x"), raw)), "appends to dst")
	})
}

func TestStringDecodesLikeEncodingJSON(t *testing.T) {
	for _, raw := range []string{`"tools/call"`, `"a\u0041"`, `"\u00e9"`, "\"\xff\"", `"x"`} {
		got, err := String([]byte(raw))
		require.NoError(t, err, raw)
		var want string
		require.NoError(t, json.Unmarshal([]byte(raw), &want))
		assert.Equal(t, want, got, raw)
	}
	_, err := String([]byte(`1`))
	assert.Error(t, err)
	method := []byte(`"tools/call"`)
	allocs := testing.AllocsPerRun(100, func() { _, _ = String(method) })
	assert.Zero(t, allocs, "a common method costs nothing")
}
