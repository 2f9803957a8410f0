package framing

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPeekValidAgreesWithEncodingJSON(t *testing.T) {
	tests := []struct {
		name string
		line string
	}{
		{name: "request", line: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":[1,-2.5e+3,true,false,null,"\u00e9\n"]}}}`},
		{name: "bad escape", line: `{"id":1,"method":"m","params":{"s":"\x"}}`},
		{name: "short unicode escape", line: `{"id":1,"method":"m","params":"\u12"}`},
		{name: "leading zero", line: `{"id":01,"method":"m"}`},
		{name: "bare minus", line: `{"id":-,"method":"m"}`},
		{name: "fraction without digits", line: `{"id":1.,"method":"m"}`},
		{name: "exponent without digits", line: `{"id":1e,"method":"m"}`},
		{name: "misspelt literal", line: `{"id":1,"method":"m","params":[nul]}`},
		{name: "trailing comma", line: `{"id":1,"method":"m","params":[1,]}`},
		{name: "missing colon nested", line: `{"id":1,"method":"m","params":{"a" 1}}`},
		{name: "wrong closer", line: `{"id":1,"method":"m","params":[1}}`},
		{name: "garbage after a batch", line: `[{"id":1,"method":"m"}] x`},
		{name: "invalid UTF-8 is valid JSON", line: "{\"id\":1,\"method\":\"m\",\"params\":\"\xff\"}"},
		{name: "ambiguous but valid", line: `{"id":1,"id":2,"method":"m"}`},
		{name: "nesting at the limit", line: `{"id":1,"method":"m","params":` + strings.Repeat("[", maxDepth-1) + strings.Repeat("]", maxDepth-1) + `}`},
		{name: "nesting past the limit", line: `{"id":1,"method":"m","params":` + strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth) + `}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkPeekValid(t, []byte(tt.line))
		})
	}
}

// checkPeekValid holds PeekValid to json.Valid and to Peek's envelope.
func checkPeekValid(t *testing.T, line []byte) {
	env, err := PeekValid(line)
	valid := json.Valid(line)
	top := bytes.TrimLeft(line, " \t\r\n")
	switch {
	case err == nil || errors.Is(err, ErrAmbiguous):
		require.True(t, valid, "PeekValid accepted invalid JSON %q", line)
	case valid && len(top) > 0 && (top[0] == '{' || top[0] == '['):
		// Valid JSON refused only for what Peek refuses in valid JSON.
		require.ErrorContains(t, err, "method is not a string", "PeekValid refused valid JSON %q", line)
	}
	if valid {
		penv, perr := Peek(line)
		assert.Equal(t, perr, err, "same verdict as Peek on valid JSON")
		assert.Equal(t, penv, env, "same envelope as Peek")
	}
	if valid && (err == nil || errors.Is(err, ErrAmbiguous)) {
		checkParamsMembers(t, line, env)
	}
}

// checkParamsMembers holds the members of params that env holds to what
// encoding/json reads in line, a valid JSON message.
func checkParamsMembers(t *testing.T, line []byte, env Envelope) {
	var name, args, token []byte
	if top, ok := jsonMembers(line); ok {
		if params := top.first("params"); params != nil {
			if members, ok := jsonMembers(params); ok {
				names := 0
				for _, m := range members {
					if strings.EqualFold(m.key, "name") {
						names++
						if names == 1 && m.key == "name" {
							name = m.value
						}
					}
				}
				if names != 1 {
					name = nil // ambiguous: upstreams read different names
				}
				args = members.first("arguments")
				if meta, ok := jsonMembers(members.first("_meta")); ok {
					token = meta.first("progressToken")
				}
			}
		}
	}
	assert.Equal(t, string(name), string(env.Name), "params' name")
	assert.Equal(t, name == nil, env.Name == nil, "params' name present")
	assert.Equal(t, string(args), string(env.Arguments), "params' arguments")
	assert.Equal(t, string(token), string(env.ProgressToken), "params' _meta.progressToken")
	assert.Equal(t, token == nil, env.ProgressToken == nil, "params' _meta.progressToken present")
}

// jsonMember is one member of a JSON object as encoding/json reads it.
type jsonMember struct {
	key   string
	value []byte
}

type jsonObject []jsonMember

// first returns the value of the first member called key, or nil.
func (o jsonObject) first(key string) []byte {
	for _, m := range o {
		if m.key == key {
			return m.value
		}
	}
	return nil
}

// jsonMembers returns the members of raw, in order and with duplicates,
// when it is a JSON object, read by encoding/json.
func jsonMembers(raw []byte) (jsonObject, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	var members jsonObject
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, false
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		members = append(members, jsonMember{key: tok.(string), value: bytes.TrimSpace(v)})
	}
	return members, true
}

func TestPeekParamsMembers(t *testing.T) {
	tests := []struct {
		name   string
		line   string
		peek   bool // Peek, not PeekValid
		want   string
		args   string
		token  string
		errIs  error
		anyErr bool
	}{
		{name: "tools/call", line: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"name":"inner"},"_meta":{"progressToken":"t1"}}}`,
			want: `"echo"`, args: `{"name":"inner"}`, token: `"t1"`},
		{name: "params before method", line: `{"params":{"_meta":{"progressToken":7},"name":"a"},"id":1,"method":"tools/call"}`, want: `"a"`, token: `7`},
		{name: "spaces around", line: `{"id":1,"method":"m","params": { "name" : "a" , "arguments" : [ 1 ] } }`, want: `"a"`, args: `[ 1 ]`},
		{name: "escaped member names", line: `{"id":1,"method":"m","params":{"n\u0061me":"a","\u0061rguments":{},"_m\u0065ta":{"progress\u0054oken":2}}}`,
			want: `"a"`, args: `{}`, token: `2`},
		{name: "name twice", line: `{"id":1,"method":"m","params":{"name":"a","name":"b"}}`},
		{name: "name in another case", line: `{"id":1,"method":"m","params":{"name":"a","Name":"b"}}`},
		{name: "escaped case variant", line: `{"id":1,"method":"m","params":{"name":"a","N\u0061me":"b"}}`},
		{name: "only another case", line: `{"id":1,"method":"m","params":{"NAME":"a"}}`},
		{name: "name not a string is read", line: `{"id":1,"method":"m","params":{"name":5}}`, want: `5`},
		{name: "first arguments", line: `{"id":1,"method":"m","params":{"arguments":1,"arguments":2,"Arguments":3}}`, args: `1`},
		{name: "first _meta only", line: `{"id":1,"method":"m","params":{"_meta":{},"_meta":{"progressToken":1}}}`},
		{name: "first progressToken", line: `{"id":1,"method":"m","params":{"_meta":{"progressToken":1,"progressToken":2}}}`, token: `1`},
		{name: "_meta not an object", line: `{"id":1,"method":"m","params":{"_meta":[{"progressToken":1}]}}`},
		{name: "progressToken outside _meta", line: `{"method":"notifications/progress","params":{"progressToken":1}}`},
		{name: "nested name not read", line: `{"id":1,"method":"m","params":{"arguments":{"name":"x"}}}`, args: `{"name":"x"}`},
		{name: "params not an object", line: `{"id":1,"method":"m","params":["name"]}`},
		{name: "no params", line: `{"id":1,"method":"m"}`},
		{name: "params twice: the first is read", line: `{"id":1,"method":"m","params":{"name":"a"},"params":{"name":"b"}}`, want: `"a"`, errIs: ErrAmbiguous},
		{name: "invalid inside params", line: `{"id":1,"method":"m","params":{"name":"a","x":tru}}`, anyErr: true},
		{name: "Peek skips params it cannot walk", line: `{"id":1,"method":"m","params":{"name":"a" "x":@}}`, peek: true},
		{name: "Peek: a malformed escape in a member name", line: `{"id":1,"method":"m","params":{"name":"a","\x":1}}`, peek: true},
		{name: "Peek: a long malformed member name", line: `{"id":1,"method":"m","params":{"name":"a","` + strings.Repeat("y", 100) + `\x":1}}`, peek: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			peek := PeekValid
			if tt.peek {
				peek = Peek
			}
			env, err := peek([]byte(tt.line))
			switch {
			case tt.anyErr:
				require.Error(t, err)
				return
			case tt.errIs != nil:
				require.ErrorIs(t, err, tt.errIs)
			default:
				require.NoError(t, err)
			}
			assert.Equal(t, tt.want, string(env.Name), "Name")
			assert.Equal(t, tt.args, string(env.Arguments), "Arguments")
			assert.Equal(t, tt.token, string(env.ProgressToken), "ProgressToken")
			if json.Valid([]byte(tt.line)) {
				checkParamsMembers(t, []byte(tt.line), env)
			}
		})
	}
}

// TestPeekValidDoesNotAllocate: the client pump reads every message with
// PeekValid, a tools/call's params included.
func TestPeekValidDoesNotAllocate(t *testing.T) {
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"ping"},"_meta":{"progressToken":1}}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":0.5}}`,
		`{"jsonrpc":"2.0","id":"a","result":{"content":[]}}`,
	} {
		msg := []byte(line)
		allocs := testing.AllocsPerRun(100, func() {
			if _, err := PeekValid(msg); err != nil {
				t.Fatal(err)
			}
		})
		assert.Zero(t, allocs, "allocations peeking %s", line)
	}
}

func TestEnvelopeRebase(t *testing.T) {
	line := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"a":1},"_meta":{"progressToken":"p"}}}`)
	env, err := PeekValid(line)
	require.NoError(t, err)
	kept := bytes.Clone(line)
	moved := env.Rebase(line, kept)
	clear(line) // the buffer is read into again
	want, err := PeekValid(kept)
	require.NoError(t, err)
	assert.Equal(t, want, moved)
	assert.Panics(t, func() { env.Rebase(line[:10], kept[:10]) }, "members that do not alias the message")
}

// FuzzPeekValid compares the one-pass validator with encoding/json on any
// input, valid or not.
func FuzzPeekValid(f *testing.F) {
	seedGolden(f)
	for _, s := range []string{`{}`, `[]`, `{"id":1e5}`, `{"a":"\ud800"}`, `{"a":[{}]}`, `[1,2] `, `{"id":-0.0E-0}`, "{\"a\":\"\t\"}",
		`{"id":1,"method":"tools/call","params":{"name":"a","arguments":{"x":1},"_meta":{"progressToken":"t"}}}`,
		`{"params":{"N\u0061me":"a","name":"b","_meta":{"progressToken":1}},"method":"tools/call","id":1}`,
		`{"method":"m","params":{"\u005fmeta":{"progress\u0054oken":[1]},"arguments":null,"arguments":2}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		checkPeekValid(t, line)
	})
}

// BenchmarkPeekValid reads a small tools/call and a 10 MiB one.
func BenchmarkPeekValid(b *testing.B) {
	for _, bench := range []struct {
		name string
		args string
	}{
		{name: "Small", args: `{"text":"ping"}`},
		{name: "Call10MiB", args: `{"data":"` + strings.Repeat("x", 10<<20) + `"}`},
		{name: "Escaped1MiB", args: `{"data":"` + strings.Repeat(`x\n\u00e9`, 1<<20/9) + `"}`},
	} {
		b.Run(bench.name, func(b *testing.B) {
			msg := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":` + bench.args + `}}`)
			b.SetBytes(int64(len(msg)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := PeekValid(msg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestStringScanEveryOffset puts each kind of byte at every offset of
// strings long enough to be read eight bytes at a time, and holds the
// string scanners to a byte-at-a-time reading and to encoding/json.
func TestStringScanEveryOffset(t *testing.T) {
	for n := range 40 {
		for at := range n {
			for _, c := range []byte{'"', '\\', 0x00, 0x1f, ' ', 0x7f, 0x80, 0xff, 'n'} {
				s := bytes.Repeat([]byte{'x'}, n)
				s[at] = c
				quoted := append(append([]byte{'"'}, s...), `"rest`...)
				end, err := skipString(quoted, 0)
				wantEnd, wantErr := skipStringByByte(quoted)
				require.Equal(t, wantErr, err != nil, "skipString(%q) error", quoted)
				require.Equal(t, wantEnd, end, "skipString(%q)", quoted)
				checkPeekValid(t, append(append([]byte(`{"a":"`), s...), `"}`...))
			}
		}
	}
}

// skipStringByByte is skipString without its fast path.
func skipStringByByte(b []byte) (end int, bad bool) {
	for i := 1; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i + 1, false
		case c == '\\':
			i++
		case c < 0x20:
			return 0, true
		}
	}
	return 0, true
}

// BenchmarkPeekResponse is Peek of the small answer the relay reads most.
func BenchmarkPeekResponse(b *testing.B) {
	msg := []byte(`{"jsonrpc":"2.0","id":12345,"result":{"content":[{"type":"text","text":"ok"}]}}`)
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Peek(msg); err != nil {
			b.Fatal(err)
		}
	}
}
