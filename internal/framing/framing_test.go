package framing

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReader(t *testing.T) {
	tests := []struct {
		name  string
		input string
		max   int
		want  []string // lines, or "ERR" for a LineTooLongError
	}{
		{name: "lines", input: "a\nb\n", want: []string{"a", "b"}},
		{name: "last line without newline", input: "a\nb", want: []string{"a", "b"}},
		{name: "blank lines skipped", input: "\n  \r\na\n\n", want: []string{"a"}},
		{name: "carriage return kept", input: "a\r\n", want: []string{"a\r"}},
		{name: "line at the limit", input: "abcd\n", max: 4, want: []string{"abcd"}},
		{name: "line over the limit", input: "abcde\nok\n", max: 4, want: []string{"ERR", "ok"}},
		{name: "long line over the limit", input: strings.Repeat("x", 200<<10) + "\nok\n", max: 1 << 10, want: []string{"ERR", "ok"}},
		{name: "long line within the limit", input: strings.Repeat("y", 200<<10) + "\n", max: 1 << 20, want: []string{strings.Repeat("y", 200<<10)}},
		{name: "over the limit at EOF", input: "abcde", max: 4, want: []string{"ERR"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewReader(strings.NewReader(tt.input), tt.max)
			var got []string
			for {
				line, err := r.Read()
				if errors.Is(err, io.EOF) {
					break
				}
				if errors.Is(err, ErrLineTooLong) {
					got = append(got, "ERR")
					continue
				}
				require.NoError(t, err)
				got = append(got, string(line))
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestLineTooLongErrorKeepsSizeAndHead(t *testing.T) {
	line := `{"jsonrpc":"2.0","id":42,"result":"` + strings.Repeat("z", 300<<10) + `"}`
	r := NewReader(strings.NewReader(line+"\n"), 1<<10)
	_, err := r.Read()
	var e *LineTooLongError
	require.ErrorAs(t, err, &e)
	assert.Equal(t, int64(len(line)), e.Size)
	assert.Len(t, e.Head, HeadBytes)
	env, _ := Peek(e.Head)
	assert.Equal(t, "42", string(env.ID), "the id is recoverable from the head")

	request := `{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{"x":"` + strings.Repeat("z", 300<<10) + `"}}`
	_, err = NewReader(strings.NewReader(request+"\n"), 1<<10).Read()
	require.ErrorAs(t, err, &e)
	env, _ = Peek(e.Head)
	assert.Equal(t, "sampling/createMessage", env.Method, "so is the method: it was a request")
}

func TestLineTooLongErrorFindsTheIDAnywhere(t *testing.T) {
	big := strings.Repeat("z", 300<<10)
	tests := []struct {
		name   string
		line   string
		id     string
		method string
	}{
		{name: "id first", line: `{"id":1,"result":"` + big + `"}`, id: "1"},
		{name: "id after the payload", line: `{"jsonrpc":"2.0","result":{"text":"` + big + `"},"id":"late"}`, id: `"late"`},
		{name: "request with id and method last", line: `{"params":{"x":"` + big + `"},"id":{"a":[1,2]} ,"method":"sampling/createMessage"}`, id: `{"a":[1,2]}`, method: "sampling/createMessage"},
		{name: "nested ids are not the id", line: `{"result":{"id":99,"items":[{"id":98}],"s":"\"id\":97` + big + `"},"id":7}`, id: "7"},
		{name: "escaped member name", line: `{"result":"` + big + `","\u0069d":8}`, id: "8"},
		{name: "spaces around the id", line: `{"result":"` + big + `", "id" :  9 }`, id: "9"},
		{name: "duplicate id", line: `{"id":1,"result":"` + big + `","id":2}`},
		{name: "id in another case", line: `{"id":1,"result":"` + big + `","ID":2}`},
		{name: "duplicate method", line: `{"id":3,"method":"a","params":"` + big + `","method":"b"}`, id: "3"},
		{name: "a batch has no id", line: `[{"id":1,"result":"` + big + `"}]`},
		{name: "an id too long to keep", line: `{"result":0,"id":"` + big + `"}`},
		{name: "truncated at EOF after the id", line: `{"id":4,"result":"` + big, id: "4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewReader(strings.NewReader(tt.line+"\nnext\n"), 1<<10).Read()
			var e *LineTooLongError
			require.ErrorAs(t, err, &e)
			assert.Equal(t, tt.id, string(e.ID))
			assert.Equal(t, tt.method, e.Method)
		})
	}
}

func TestWriterWritesWholeLines(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	require.NoError(t, w.Write([]byte(`{"a":1}`)))
	big := bytes.Repeat([]byte("b"), writeBuffer*2)
	require.NoError(t, w.Write(big))
	assert.Equal(t, `{"a":1}`+"\n"+string(big)+"\n", buf.String())
}

func TestPeekRefusesAmbiguousRoutingMembers(t *testing.T) {
	tests := []struct {
		name   string
		line   string
		id     string // the id still reported
		method string
	}{
		{name: "duplicate method", line: `{"id":1,"method":"ping","method":"tools/call"}`, id: "1", method: "ping"},
		{name: "escaped duplicate method", line: `{"id":1,"method":"ping","m\u0065thod":"tools/call"}`, id: "1", method: "ping"},
		{name: "escaped duplicate params", line: `{"id":1,"method":"a","params":{},"p\u0061rams":{}}`, id: "1", method: "a"},
		{name: "method in another case", line: `{"id":1,"method":"ping","METHOD":"tools/call"}`, id: "1", method: "ping"},
		{name: "only a case variant", line: `{"id":1,"Method":"tools/call"}`, id: "1"},
		{name: "unicode case fold", line: `{"id":1,"method":"a","paramſ":{}}`, id: "1", method: "a"},
		{name: "duplicate id", line: `{"id":1,"id":2,"method":"a"}`, method: "a"},
		{name: "duplicate result", line: `{"id":1,"result":{},"result":{}}`, id: "1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, err := Peek([]byte(tt.line))
			require.ErrorIs(t, err, ErrAmbiguous)
			assert.Equal(t, tt.id, string(env.ID))
			assert.Equal(t, tt.method, env.Method)
		})
	}
}

func TestIDKey(t *testing.T) {
	tests := []struct {
		name string
		a, b string
		same bool
	}{
		{name: "escaped slash", a: `"list\/1"`, b: `"list/1"`, same: true},
		{name: "unicode escape", a: `"mcpwrap\u002d1"`, b: `"mcpwrap-1"`, same: true},
		{name: "fraction", a: `1.0`, b: `1`, same: true},
		{name: "exponent", a: `1e2`, b: `100`, same: true},
		{name: "negative zero", a: `-0`, b: `0`, same: true},
		{name: "beyond 2^53 rounds as JavaScript does", a: `9007199254740993`, b: `9007199254740992`, same: true},
		{name: "string and number differ", a: `"1"`, b: `1`, same: false},
		{name: "different strings", a: `"a"`, b: `"b"`, same: false},
		{name: "different numbers", a: `1.5`, b: `1`, same: false},
		{name: "null", a: `null`, b: `null`, same: true},
		{name: "object re-encoded with sorted members", a: `{"b":1,"a":"x"}`, b: `{"a":"x","b":1}`, same: true},
		{name: "object with whitespace", a: `{ "a" : [ 1 , 2 ] }`, b: `{"a":[1,2]}`, same: true},
		{name: "object with re-encoded scalars", a: `{"a\u002db":1.0,"c":"\/"}`, b: `{"c":"/","a-b":1}`, same: true},
		{name: "nested object", a: `[{"y":null,"x":true}]`, b: `[{"x":true,"y":null}]`, same: true},
		{name: "different objects", a: `{"a":1}`, b: `{"a":2}`, same: false},
		{name: "array order matters", a: `[1,2]`, b: `[2,1]`, same: false},
		{name: "object and string differ", a: `{"a":1}`, b: `"{\"a\":1}"`, same: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.same, IDKey([]byte(tt.a)) == IDKey([]byte(tt.b)))
		})
	}
}

func TestPeek(t *testing.T) {
	tests := []struct {
		name   string
		line   string
		kind   Kind
		id     string
		method string
		err    bool
	}{
		{name: "request", line: `{"jsonrpc":"2.0","id":1,"method":"ping"}`, kind: Request, id: "1", method: "ping"},
		{name: "string id with escapes", line: `{"id":"a\"b\\","method":"x"}`, kind: Request, id: `"a\"b\\"`, method: "x"},
		{name: "escaped method", line: `{"method":"tools\/call","id":2}`, kind: Request, id: "2", method: "tools/call"},
		{name: "notification", line: `{"jsonrpc":"2.0","method":"notifications/initialized"}`, kind: Notification, method: "notifications/initialized"},
		{name: "response", line: ` { "result" : {"a":[1,{"b":"}"}]} , "id" : 1e3 } `, kind: Response, id: "1e3"},
		{name: "error response with null id", line: `{"id":null,"error":{"code":-32700}}`, kind: Response, id: "null"},
		{name: "batch", line: `[{"id":1,"method":"a"}]`, kind: Batch},
		{name: "empty object", line: `{}`, kind: Invalid},
		{name: "banner", line: `Starting server...`, err: true},
		{name: "trailing garbage", line: `{"id":1,"method":"a"} x`, err: true},
		{name: "unterminated", line: `{"id":1,"method":"a"`, err: true},
		{name: "mismatched brackets", line: `{"params":[1}, "id":1}`, err: true},
		{name: "method not a string", line: `{"method":5,"id":1}`, err: true},
		{name: "escaped member name", line: `{"m\u0065thod":"ping","\u0069d":3}`, kind: Request, id: "3", method: "ping"},
		{name: "unknown member in another case", line: `{"jsonrpc":"2.0","Jsonrpc":1,"id":1,"method":"a"}`, kind: Request, id: "1", method: "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, err := Peek([]byte(tt.line))
			if tt.err {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.kind, env.Kind)
			assert.Equal(t, tt.id, string(env.ID))
			assert.Equal(t, tt.method, env.Method)
		})
	}
}

// seedGolden adds every message of the middleware's golden transcript to f.
// FuzzIDKey checks that an id keeps its key when a peer re-encodes it the
// way Go's encoding/json does (numbers as float64, objects sorted, strings
// re-escaped), and that ids of different values get different keys.
func FuzzIDKey(f *testing.F) {
	for _, s := range []string{`1`, `1.0`, `"a\/b"`, `{"b":1,"a":[2,"x"]}`, `[{"k":-0}]`, `null`, `{"a":1,"a":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		IDKey(raw)                 // must not panic on anything
		raw = bytes.TrimSpace(raw) // as Peek hands ids over
		key := IDKey(raw)
		var v any
		// Invalid UTF-8 is replaced when re-encoded, a value changed, not
		// re-spelled; encoding/json keeps only the last of duplicate members.
		if len(raw) == 0 || !utf8.Valid(raw) || json.Unmarshal(raw, &v) != nil || hasDuplicateMember(raw) {
			return
		}
		again, err := json.Marshal(v)
		if err != nil {
			return
		}
		require.Equal(t, key, IDKey(again), "re-encoded %s as %s", raw, again)
	})
}

// hasDuplicateMember reports whether some object in the JSON value raw
// repeats a member name (encoding/json keeps the last, IDKey both).
func hasDuplicateMember(raw []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(raw))
	type frame struct {
		object bool
		seen   map[string]bool
		key    bool // the next string token is a member name
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.key {
			if name, ok := tok.(string); ok {
				if top.seen[name] {
					return true
				}
				top.seen[name] = true
				top.key = false
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{object: true, seen: map[string]bool{}, key: true})
			continue
		case json.Delim('['):
			stack = append(stack, &frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		if len(stack) > 0 && stack[len(stack)-1].object {
			stack[len(stack)-1].key = true // a value ended
		}
	}
}

func seedGolden(f *testing.F) {
	f.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "middleware", "testdata", "passthrough.jsonl"))
	require.NoError(f, err)
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "> ") || strings.HasPrefix(line, "< ") {
			f.Add([]byte(line[2:]))
		}
	}
	f.Add([]byte("banner\n{}"))
	f.Add([]byte(`{"id":"\u00e9","method":"\ud83d"}`))
}

// FuzzPeek checks Peek against encoding/json on every input that is valid
// JSON: the same id, method and presence of result and error.
func FuzzPeek(f *testing.F) {
	seedGolden(f)
	f.Fuzz(func(t *testing.T, line []byte) {
		env, err := Peek(line)
		if !json.Valid(line) {
			return // Peek may or may not notice; it must only not panic
		}
		trimmed := bytes.TrimSpace(line)
		if len(trimmed) == 0 || (trimmed[0] != '{' && trimmed[0] != '[') {
			require.Error(t, err)
			return
		}
		if trimmed[0] == '[' {
			require.NoError(t, err)
			require.Equal(t, Batch, env.Kind)
			return
		}
		if errors.Is(err, ErrAmbiguous) {
			require.True(t, hasAmbiguousKey(t, line), "ambiguous without a repeated or re-cased routing member")
			return
		}
		require.False(t, hasAmbiguousKey(t, line), "a repeated or re-cased routing member went unnoticed")
		// A map, not a struct: encoding/json matches struct fields case-
		// insensitively, JSON-RPC members are case-sensitive.
		var ref map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(line, &ref))
		if m, ok := ref["method"]; ok {
			var method string
			if json.Unmarshal(m, &method) != nil {
				require.Error(t, err, "a method that is not a string")
				return
			}
			require.Equal(t, method, env.Method)
		}
		require.NoError(t, err)
		require.Equal(t, string(ref["id"]), string(env.ID))
		require.Equal(t, ref["result"] != nil, env.Result != nil, "result presence")
		require.Equal(t, ref["error"] != nil, env.Error != nil, "error presence")
	})
}

// hasAmbiguousKey reports, with encoding/json's tokenizer, whether the
// object line has a routing member twice or in another letter case.
func hasAmbiguousKey(t *testing.T, line []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(line))
	_, err := dec.Token() // {
	require.NoError(t, err)
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		require.NoError(t, err)
		key := tok.(string)
		var skip json.RawMessage
		require.NoError(t, dec.Decode(&skip))
		for _, r := range []string{"id", "method", "params", "result", "error"} {
			if strings.EqualFold(key, r) {
				if key != r || seen[r] {
					return true
				}
				seen[r] = true
			}
		}
	}
	return false
}

// FuzzReader checks that splitting never loses or invents bytes: the lines
// read, rejoined, equal the input's non-blank lines.
func FuzzReader(f *testing.F) {
	seedGolden(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		const max = 64
		r := NewReader(bytes.NewReader(data), max)
		var want [][]byte
		for _, l := range bytes.Split(data, []byte("\n")) {
			// Oversized lines are reported even when blank: the reader
			// cannot know without buffering them.
			if len(bytes.TrimSpace(l)) > 0 || len(l) > max {
				want = append(want, l)
			}
		}
		for i := 0; ; i++ {
			line, err := r.Read()
			if errors.Is(err, io.EOF) {
				require.Equal(t, len(want), i)
				return
			}
			require.Less(t, i, len(want))
			if errors.Is(err, ErrLineTooLong) {
				require.Greater(t, len(want[i]), max)
				var e *LineTooLongError
				require.ErrorAs(t, err, &e)
				// The id found while skipping is the one Peek reads in the whole line.
				if env, perr := Peek(want[i]); perr == nil && json.Valid(want[i]) && len(env.ID) <= maxScannedValue {
					require.Equal(t, string(env.ID), string(e.ID), "id of %q", want[i])
					require.Equal(t, env.Method, e.Method, "method of %q", want[i])
				}
				continue
			}
			require.NoError(t, err)
			require.Equal(t, want[i], line)
		}
	})
}

func TestElements(t *testing.T) {
	tests := []struct {
		name    string
		arr     string
		want    []string
		wantErr bool
	}{
		{name: "empty", arr: `[]`, want: []string{}},
		{name: "values", arr: ` [1, "a,]", {"b":[2]} ,null] `, want: []string{`1`, `"a,]"`, `{"b":[2]}`, `null`}},
		{name: "not an array", arr: `{}`, wantErr: true},
		{name: "unterminated", arr: `[1,2`, wantErr: true},
		{name: "trailing garbage", arr: `[1] x`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Elements([]byte(tt.arr))
			if tt.wantErr {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			strs := []string{}
			for _, e := range got {
				strs = append(strs, string(e))
			}
			assert.Equal(t, tt.want, strs)
		})
	}
}

func TestMembersSplit(t *testing.T) {
	obj := []byte(`{"tools":[{"name":"a"},{"name":"b"}],"t\u006fols2":[1],"other":[3],"nextCursor":"c"}`)
	members, err := MembersSplit(obj, func(name string) bool { return strings.HasPrefix(name, "tools") })
	require.NoError(t, err)
	require.Len(t, members, 4)
	assert.Equal(t, `[{"name":"a"},{"name":"b"}]`, string(members[0].Value))
	require.Len(t, members[0].Elements, 2, "split in the same pass")
	assert.Equal(t, `{"name":"b"}`, string(members[0].Elements[1]))
	assert.Len(t, members[1].Elements, 1, "names are compared decoded")
	assert.Nil(t, members[2].Elements, "not asked for")
	assert.Nil(t, members[3].Elements, "not an array")

	plain, err := Members(obj)
	require.NoError(t, err)
	for i := range plain {
		assert.Equal(t, string(members[i].Value), string(plain[i].Value))
		assert.Nil(t, plain[i].Elements)
	}
}

func TestLookupMember(t *testing.T) {
	tests := []struct {
		name, obj string
		want      string // "": not found
		ambiguous bool
	}{
		{name: "found", obj: `{"a":1,"uri":"x"}`, want: `"x"`},
		{name: "escaped name", obj: `{"ur\u0069":"x"}`, want: `"x"`},
		{name: "absent", obj: `{"a":1}`},
		{name: "not an object", obj: `[1]`},
		{name: "twice", obj: `{"uri":"x","uri":"y"}`, ambiguous: true},
		{name: "also in another letter case", obj: `{"uri":"x","URI":"y"}`, ambiguous: true},
		{name: "only in another letter case", obj: `{"Uri":"y"}`, ambiguous: true},
		{name: "a bad escape", obj: `{"\ud800":1,"uri":"x"}`, want: `"x"`}, // a lone surrogate decodes (to U+FFFD)
		{name: "malformed after a match", obj: `{"uri":"x",`},
		{name: "malformed after twice", obj: `{"uri":"x","uri":"y",}`}, // malformed is not found, not ambiguous
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, found, err := LookupMember([]byte(tt.obj), "uri")
			if tt.ambiguous {
				assert.ErrorIs(t, err, ErrAmbiguous)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want != "", found)
			assert.Equal(t, tt.want, string(v))
		})
	}
}

// FuzzLookupMember: a value LookupMember finds without ambiguity is the
// one encoding/json reads, into a map (exact names) and into a struct
// (names in any letter case) alike; when it finds none, neither does.
func FuzzLookupMember(f *testing.F) {
	for _, obj := range []string{`{"uri":"x"}`, `{"ur\u0069":1,"a":2}`, `{"uri":1,"URI":2}`, `{"Uri":3}`, `{"a":{"uri":1}}`, `[1]`} {
		f.Add([]byte(obj))
	}
	f.Fuzz(func(t *testing.T, obj []byte) {
		value, found, err := LookupMember(obj, "uri")
		var m map[string]json.RawMessage
		var st struct {
			URI json.RawMessage `json:"uri"`
		}
		if err != nil || json.Unmarshal(obj, &m) != nil || json.Unmarshal(obj, &st) != nil {
			return
		}
		if !found {
			assert.Nil(t, st.URI, "encoding/json found one in %s", obj)
			return
		}
		assert.Equal(t, string(m["uri"]), string(value), "as a map")
		assert.Equal(t, string(st.URI), string(value), "as a struct")
	})
}

// FuzzEachMember: EachMember yields what Members returns, member by
// member, and the error it returns; stopped early, it yields a prefix.
func FuzzEachMember(f *testing.F) {
	for _, obj := range []string{`{}`, `{"a":1,"b":[2,{"c":3}]}`, `{"a":1,`, `{"a" 1}`, ` { "\u0061" : "x" } `, `[1]`} {
		f.Add([]byte(obj), uint8(1))
	}
	f.Fuzz(func(t *testing.T, obj []byte, stop uint8) {
		want, wantErr := Members(obj)
		var got []Member
		err := EachMember(obj, func(m Member) bool {
			got = append(got, m)
			return true
		})
		assert.Equal(t, wantErr, err)
		if wantErr == nil {
			assert.Equal(t, want, got)
		} else {
			assert.Nil(t, want)
		}
		var prefix []Member
		_ = EachMember(obj, func(m Member) bool {
			prefix = append(prefix, m)
			return len(prefix) < int(stop)
		})
		assert.Equal(t, got[:min(len(got), max(int(stop), 1))], prefix)
	})
}

// The scanner skips what it does not keep by looking only at the bytes
// that can end it; a quote, a bracket or routing text inside a string, and
// escapes, must not end it early, whatever the pieces.
func TestEnvScannerSkipsWhatItDoesNotKeep(t *testing.T) {
	tests := []struct {
		name   string
		line   string
		id     string
		method string
	}{
		{name: "escaped quotes around routing text", line: `{"params":{"t":"x\",\"id\":9,\"method\":\"tools/call\",\"y"},"id":1,"method":"m"}`, id: `1`, method: "m"},
		{name: "escaped backslash before the closing quote", line: `{"params":"a\\","id":1,"method":"m"}`, id: `1`, method: "m"},
		{name: "structure inside a string", line: `{"params":{"t":"}]},{[\"id\":7"},"id":1,"method":"m"}`, id: `1`, method: "m"},
		{name: "nested arrays and numbers", line: `{"params":[1,[2,{"a":3,"b":[true,null]}],-4.5e3],"id":1,"method":"m"}`, id: `1`, method: "m"},
		{name: "unicode escapes", line: `{"params":"\u0022\u005c","id":"\u0061","method":"m"}`, id: `"\u0061"`, method: "m"},
		{name: "routing members first", line: `{"id":2,"method":"m","params":"` + strings.Repeat(`\"x`, 100) + `"}`, id: `2`, method: "m"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.True(t, json.Valid([]byte(tt.line)), tt.line)
			for size := 1; size <= len(tt.line); size++ {
				var s envScanner
				for b := range slices.Chunk([]byte(tt.line), size) {
					s.write(b)
				}
				id, method := s.result()
				require.Equal(t, tt.id, string(id), "pieces of %d", size)
				require.Equal(t, tt.method, method, "pieces of %d", size)
			}
		})
	}
}

// FuzzEnvScanner checks the scanner that recovers the id of an oversized
// line against Peek, fed in pieces of one byte, of seven, and split once:
// on every valid, unambiguous object it finds the same id and method.
func FuzzEnvScanner(f *testing.F) {
	f.Add([]byte(`{"params":{"t":"x\",\"id\":9,\"y"},"id":1,"method":"m"}`))
	seedGolden(f)
	f.Fuzz(func(t *testing.T, line []byte) {
		// In pieces of one byte (a backslash and what it escapes apart),
		// of a few, and split once.
		for _, size := range []int{1, 7, max(1, len(line)/3)} {
			var s envScanner
			for b := range slices.Chunk(line, size) {
				s.write(b)
			}
			id, method := s.result() // must not panic on anything
			env, err := Peek(line)
			if err != nil || !json.Valid(line) || len(env.ID) > maxScannedValue {
				return
			}
			require.Equal(t, string(env.ID), string(id), "pieces of %d", size)
			require.Equal(t, env.Method, method, "pieces of %d", size)
		}
	})
}

// TestRoutingVariantFastRefusal holds routingVariant's fast refusal to
// Unicode's case folding: every spelling a case-insensitive parser matches
// to a routing key begins with that key's ASCII letter in either case, and
// is no longer than the bound the refusal uses.
func TestRoutingVariantFastRefusal(t *testing.T) {
	for _, key := range routingKeys {
		longest := 0
		for i, r := range key {
			widest := utf8.RuneLen(r)
			for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
				widest = max(widest, utf8.RuneLen(f))
				if i == 0 {
					assert.Less(t, f, rune(utf8.RuneSelf), "%q begins with %q, which folds to %q", key, r, f)
				}
			}
			longest += widest
		}
		assert.LessOrEqual(t, longest, len("paramſ"), "the longest variant of %q", key)
	}
}

// TestMemberWatch: a routing member spelled again is seen wherever the
// object is split into pieces, and nothing else is taken for one.
func TestMemberWatch(t *testing.T) {
	tests := []struct {
		name       string
		obj        string
		id, method bool
	}{
		{name: "each once", obj: `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"id":2,"method":"x","s":"\"id\":3"}}`},
		{name: "method again", obj: `{"id":1,"method":"ping","params":{},"method":"tools/call"}`, method: true},
		{name: "method in another case", obj: `{"id":1,"method":"ping","params":{},"Method":"tools/call"}`, method: true},
		{name: "method escaped", obj: `{"id":1,"method":"ping","params":{},"meth\u006fd":"tools/call"}`, method: true},
		{name: "id again", obj: `{"id":1,"result":{"s":"}"},"id":2}`, id: true},
		{name: "id in another case", obj: `{"id":1,"result":[],"ID":2}`, id: true},
		{name: "after the object", obj: `{"id":1,"result":{}} ,"id":2}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for split := range len(tt.obj) + 1 {
				var w MemberWatch
				w.Write([]byte(tt.obj[:split]))
				w.Write([]byte(tt.obj[split:]))
				id, method := w.Twice()
				assert.Equal(t, tt.id, id, "id, split at %d", split)
				assert.Equal(t, tt.method, method, "method, split at %d", split)
			}
		})
	}
}

// FuzzMemberWatch holds MemberWatch to Peek: an object it sees spell "id"
// or "method" twice, fed in two pieces split anywhere, is one Peek finds
// ambiguous.
func FuzzMemberWatch(f *testing.F) {
	seedGolden(f)
	f.Add([]byte(`{"id":1,"method":"ping","params":{},"Method":"tools/call"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		var w MemberWatch
		half := len(line) / 3
		w.Write(line[:half])
		w.Write(line[half:])
		id, method := w.Twice()
		if !id && !method || !json.Valid(line) {
			return
		}
		_, err := Peek(line)
		require.ErrorIs(t, err, ErrAmbiguous, "%s", line)
	})
}
