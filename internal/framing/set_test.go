package framing

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSetMember(t *testing.T) {
	tests := []struct {
		name    string
		obj     string
		member  string
		value   string
		want    string // the whole result, byte for byte
		wantErr error  // matched with errors.Is; nil with want "" for any error
	}{
		{name: "replaced where it is", obj: `{"a":1,"b":2,"c":3}`, member: "b", value: `"x"`, want: `{"a":1,"b":"x","c":3}`},
		{name: "added last", obj: `{"a":1}`, member: "b", value: `[true]`, want: `{"a":1,"b":[true]}`},
		{name: "added to an empty object", obj: `{}`, member: "a", value: `1`, want: `{"a":1}`},
		{name: "added inside the spaces", obj: " { \"a\" : 1 }\n", member: "b", value: `2`, want: " { \"a\" : 1,\"b\":2 }\n"},
		{name: "added to spaces only", obj: `{ }`, member: "a", value: `1`, want: `{"a":1 }`},
		{name: "others kept as sent", obj: `{"z":12345678901234567890123,"a":"<\u00e9>","n":1.0e0,"s":"x"}`, member: "s", value: `"y"`,
			want: `{"z":12345678901234567890123,"a":"<\u00e9>","n":1.0e0,"s":"y"}`},
		{name: "other duplicates kept", obj: `{"d":1,"d":2}`, member: "a", value: `0`, want: `{"d":1,"d":2,"a":0}`},
		{name: "an escaped spelling is the member", obj: `{"\u0061":1}`, member: "a", value: `2`, want: `{"\u0061":2}`},
		{name: "the name encoded", obj: `{}`, member: "q\"\\", value: `1`, want: `{"q\"\\":1}`},
		{name: "a member of the same name inside is another", obj: `{"x":{"a":1}}`, member: "a", value: `2`, want: `{"x":{"a":1},"a":2}`},
		{name: "twice", obj: `{"a":1,"a":2}`, member: "a", value: `3`, wantErr: ErrAmbiguous},
		{name: "also in another letter case", obj: `{"a":1,"A":2}`, member: "a", value: `3`, wantErr: ErrAmbiguous},
		{name: "only in another letter case", obj: `{"A":2}`, member: "a", value: `3`, wantErr: ErrAmbiguous},
		{name: "an array", obj: `[1]`, member: "a", value: `1`, wantErr: ErrNotObject},
		{name: "null", obj: `null`, member: "a", value: `1`, wantErr: ErrNotObject},
		{name: "empty", obj: ``, member: "a", value: `1`, wantErr: ErrNotObject},
		{name: "malformed inside", obj: `{"a":1,"b":[01]}`, member: "a", value: `2`},
		{name: "a bad escape inside", obj: `{"a":1,"b":"\x"}`, member: "a", value: `2`},
		{name: "a control character inside", obj: "{\"a\":1,\"b\":\"\t\"}", member: "a", value: `2`},
		{name: "trailing bytes", obj: `{}0`, member: "a", value: `1`},
		{name: "two objects", obj: `{} {}`, member: "a", value: `1`},
		{name: "unclosed", obj: `{"a":1`, member: "a", value: `2`},
		{name: "the value malformed", obj: `{}`, member: "a", value: `tru`},
		{name: "the value two values", obj: `{}`, member: "a", value: `1 2`},
		{name: "no value", obj: `{}`, member: "a", value: ``},
		{name: "the value's spaces left out", obj: `{"a":1}`, member: "a", value: " 2\n", want: `{"a":2}`},
		{name: "a name not UTF-8", obj: `{}`, member: "\xff", value: `1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := []byte(tt.obj)
			got, err := SetMember(obj, tt.member, []byte(tt.value))
			assert.Equal(t, tt.obj, string(obj), "obj is never written")
			if tt.want == "" {
				require.Error(t, err)
				if tt.wantErr != nil {
					assert.ErrorIs(t, err, tt.wantErr)
				}
				assert.Nil(t, got)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(got))
		})
	}
}

func TestSetMemberPath(t *testing.T) {
	const key = "io.modelcontextprotocol/subscriptionId"
	meta := []string{"params", "_meta", key}
	tests := []struct {
		name    string
		obj     string
		path    []string
		value   string
		want    string
		wantErr error
	}{
		{name: "set where it is", obj: `{"method":"m","params":{"_meta":{"` + key + `":"a","x":1},"p":2}}`, path: meta, value: `"b"`,
			want: `{"method":"m","params":{"_meta":{"` + key + `":"b","x":1},"p":2}}`},
		{name: "added to _meta", obj: `{"params":{"_meta":{"x":1},"p":2}}`, path: meta, value: `"b"`,
			want: `{"params":{"_meta":{"x":1,"` + key + `":"b"},"p":2}}`},
		{name: "_meta made", obj: `{"params":{"p":12345678901234567890}}`, path: meta, value: `"b"`,
			want: `{"params":{"p":12345678901234567890,"_meta":{"` + key + `":"b"}}}`},
		{name: "params made", obj: `{"jsonrpc":"2.0","method":"m"}`, path: meta, value: `"b"`,
			want: `{"jsonrpc":"2.0","method":"m","params":{"_meta":{"` + key + `":"b"}}}`},
		{name: "a null _meta made", obj: `{"params":{"_meta":null}}`, path: meta, value: `1`, want: `{"params":{"_meta":{"` + key + `":1}}}`},
		{name: "null params made", obj: `{"params":null}`, path: meta, value: `1`, want: `{"params":{"_meta":{"` + key + `":1}}}`},
		{name: "a null member set", obj: `{"a":null}`, path: []string{"a"}, value: `1`, want: `{"a":1}`},
		{name: "params an array", obj: `{"params":[1]}`, path: meta, value: `1`, wantErr: ErrNotObject},
		{name: "_meta a string", obj: `{"params":{"_meta":"x"}}`, path: meta, value: `1`, wantErr: ErrNotObject},
		{name: "_meta twice", obj: `{"params":{"_meta":{},"_meta":{}}}`, path: meta, value: `1`, wantErr: ErrAmbiguous},
		{name: "the key in another letter case", obj: `{"params":{"_meta":{"IO.modelcontextprotocol/subscriptionId":1}}}`, path: meta, value: `1`, wantErr: ErrAmbiguous},
		{name: "malformed beyond the path", obj: `{"params":{"_meta":{}},"x":[1,]}`, path: meta, value: `1`},
		{name: "malformed inside the path", obj: `{"params":{"_meta":{"y":+1}}}`, path: meta, value: `1`},
		{name: "no path", obj: `{}`, path: nil, value: `1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := SetMemberPath([]byte(tt.obj), tt.path, []byte(tt.value))
			if tt.want == "" {
				require.Error(t, err)
				if tt.wantErr != nil {
					assert.ErrorIs(t, err, tt.wantErr)
				}
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(got))
		})
	}
}

// TestSetMemberPathSplicesOnce: the object set in is the only part of the
// result that is not obj's own bytes at their own offsets, whatever the
// depth; obj's spare capacity is never written.
func TestSetMemberPathSplicesOnce(t *testing.T) {
	buf := make([]byte, 0, 256)
	obj := append(buf, `{"params":{"_meta":{"k":1}},"tail":"x"}`...)
	spare := buf[len(obj):cap(obj)]
	out, err := SetMemberPath(obj, []string{"params", "_meta", "k"}, []byte(`22`))
	require.NoError(t, err)
	assert.Equal(t, `{"params":{"_meta":{"k":22}},"tail":"x"}`, string(out))
	assert.Equal(t, make([]byte, len(spare)), spare[:len(spare):len(spare)], "nothing written past obj")
}

// FuzzSetMember holds SetMember to encoding/json: it fails exactly when
// obj is not one valid object, value not one valid value, the name not
// UTF-8, or the object names the member twice or in another letter case
// (as encoding/json's decoder reads the names); otherwise the result
// decodes to obj's object with the member set, and every byte of it but
// the value set, or the member added, is obj's.
func FuzzSetMember(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"a":1}`, `{ "a" : 1 , "b":[1,{}] }`, `{"_meta":{"x":1}}`, `{"a":1,"A":2}`, `[]`, `{"a":"}"}`,
		`{}0`, `{"\u0061":1}`, `{"b":12345678901234567890123,"c":"<>"}`, `{"a":01}`, `{"b":"\x"}`, " {\"b\":1}\n",
		`{"a":{"a":1}}`, `{"b":1,"b":2}`, `{"a":null}`,
	} {
		f.Add([]byte(s), "a", []byte(`{"v":true}`))
	}
	f.Add([]byte(`{}`), "\xff", []byte(`1`))
	f.Add([]byte(`{}`), "a", []byte(`1 2`))
	f.Fuzz(func(t *testing.T, obj []byte, name string, value []byte) {
		before := bytes.Clone(obj)
		out, err := SetMember(obj, name, value)
		require.Equal(t, before, obj, "obj is never written")

		keys, isObject := topKeys(obj)
		matches, exact := 0, 0
		for _, k := range keys {
			if strings.EqualFold(k, name) {
				matches++
				if k == name {
					exact++
				}
			}
		}
		wantErr := !json.Valid(obj) || !isObject || !json.Valid(value) || !utf8.ValidString(name) ||
			matches > 1 || matches == 1 && exact == 0
		if wantErr {
			require.Error(t, err, "SetMember(%q, %q, %q) = %q", obj, name, value, out)
			return
		}
		require.NoError(t, err, "SetMember(%q, %q, %q)", obj, name, value)

		want := decode(t, obj).(map[string]any)
		want[name] = decode(t, value)
		value = bytes.Trim(value, " \t\r\n")
		assert.Equal(t, want, decode(t, out), "SetMember(%q, %q, %q) = %q", obj, name, value, out)

		// Every byte but the value set or the member added is obj's.
		members, err := Members(out)
		require.NoError(t, err)
		off := func(part []byte) int { return cap(out) - cap(part) }
		if exact == 1 { // replaced: out is obj with the old value's bytes swapped
			old, _, _ := LookupMember(obj, name)
			at := cap(obj) - cap(old)
			want := append(append(bytes.Clone(obj[:at]), value...), obj[at+len(old):]...)
			assert.Equal(t, string(want), string(out), "SetMember(%q, %q, %q)", obj, name, value)
			return
		}
		last := members[len(members)-1]
		require.Equal(t, value, last.Value)
		start := off(last.Name)
		if len(members) > 1 {
			prev := members[len(members)-2].Value
			start = off(prev) + len(prev) // the comma added
		}
		rest := append(bytes.Clone(out[:start]), out[off(last.Value)+len(last.Value):]...)
		assert.Equal(t, string(obj), string(rest), "SetMember(%q, %q, %q) = %q", obj, name, value, out)
	})
}

// FuzzSetMemberPath holds SetMemberPath, two deep, to encoding/json: the
// result decodes to obj's object with the inner object (made when absent
// or null) holding the member set.
func FuzzSetMemberPath(f *testing.F) {
	for _, s := range []string{`{}`, `{"p":{}}`, `{"p":null}`, `{"p":{"a":1,"b":2}}`, `{"p":[]}`, `{"p":{"a":1},"P":{}}`, `{"p":{"A":1}}`, `{"q":1,"p":{"a":{"a":2}}}`} {
		f.Add([]byte(s), "a", []byte(`"v"`))
	}
	f.Fuzz(func(t *testing.T, obj []byte, name string, value []byte) {
		out, err := SetMemberPath(obj, []string{"p", name}, value)
		if wantSetPathErr(obj, name, value) {
			require.Error(t, err, "SetMemberPath(%q, p.%q, %q) = %q", obj, name, value, out)
			return
		}
		require.NoError(t, err, "SetMemberPath(%q, p.%q, %q)", obj, name, value)
		want := decode(t, obj).(map[string]any)
		inner, _ := want["p"].(map[string]any)
		if inner == nil {
			require.Nil(t, want["p"], "SetMemberPath(%q) set in a %T", obj, want["p"])
			inner = map[string]any{}
		}
		inner[name] = decode(t, value)
		want["p"] = inner
		assert.Equal(t, want, decode(t, out), "SetMemberPath(%q, p.%q, %q) = %q", obj, name, value, out)
	})
}

// wantSetPathErr reports whether setting p.name to value in obj must fail,
// by encoding/json's reading: obj or value not JSON, obj not an object, a
// name not UTF-8, "p" or name matched in another letter case or more than
// once at its level, or p neither absent, null nor an object.
func wantSetPathErr(obj []byte, name string, value []byte) bool {
	ambiguous := func(keys []string, name string) bool {
		matches, exact := 0, 0
		for _, k := range keys {
			if strings.EqualFold(k, name) {
				matches++
				if k == name {
					exact++
				}
			}
		}
		return matches > 1 || matches == 1 && exact == 0
	}
	keys, isObject := topKeys(obj)
	if !json.Valid(obj) || !isObject || !json.Valid(value) || !utf8.ValidString(name) || ambiguous(keys, "p") {
		return true
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(obj, &top) != nil {
		return true
	}
	p, found := top["p"]
	if !found || string(bytes.TrimSpace(p)) == "null" {
		return false
	}
	inner, isObject := topKeys(p)
	return !isObject || ambiguous(inner, name)
}

// topKeys returns the names of obj's members as encoding/json's decoder
// reads them, and whether obj is an object.
func topKeys(obj []byte) ([]string, bool) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return keys, true
		}
		k, _ := tok.(string)
		keys = append(keys, k)
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return keys, true
		}
	}
	return keys, true
}

// decode reads b, one JSON value, with its numbers as spelled.
func decode(t *testing.T, b []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	require.NoError(t, dec.Decode(&v))
	_, err := dec.Token()
	require.True(t, errors.Is(err, io.EOF), "one value in %q", b)
	return v
}
