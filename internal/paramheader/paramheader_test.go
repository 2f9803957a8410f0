package paramheader

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHeaders(t *testing.T) {
	bindings := []Binding{{Path: []string{"v"}, Header: "V"}}
	tests := []struct {
		name, args string
		want       map[string]string
	}{
		{name: "plain string", args: `{"v":"us-west1"}`, want: map[string]string{"Mcp-Param-V": "us-west1"}},
		{name: "non-ASCII string", args: `{"v":"日本"}`, want: map[string]string{"Mcp-Param-V": "=?base64?5pel5pys?="}},
		{name: "surrounding blank", args: `{"v":" x"}`, want: map[string]string{"Mcp-Param-V": "=?base64?IHg=?="}},
		{name: "control character", args: `{"v":"a\nb"}`, want: map[string]string{"Mcp-Param-V": "=?base64?YQpi?="}},
		{name: "looks encoded", args: `{"v":"=?base64?abc?="}`, want: map[string]string{"Mcp-Param-V": "=?base64?PT9iYXNlNjQ/YWJjPz0=?="}},
		{name: "true", args: `{"v":true}`, want: map[string]string{"Mcp-Param-V": "true"}},
		{name: "integer", args: `{"v":42}`, want: map[string]string{"Mcp-Param-V": "42"}},
		{name: "integer spelled as a float", args: `{"v":42.0}`, want: map[string]string{"Mcp-Param-V": "42"}},
		{name: "fraction", args: `{"v":1.5}`, want: map[string]string{}},
		{name: "beyond the safe integers", args: `{"v":9007199254740993}`, want: map[string]string{}},
		{name: "object", args: `{"v":{"a":1}}`, want: map[string]string{}},
		{name: "null", args: `{"v":null}`, want: map[string]string{}},
		{name: "absent", args: `{}`, want: map[string]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Headers(bindings, []byte(`{"name":"t","arguments":`+tt.args+`}`)))
		})
	}
}

func TestBindings(t *testing.T) {
	tests := []struct {
		name    string
		schema  string
		want    []Binding
		invalid bool
	}{
		{name: "top level and nested",
			schema: `{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"opts":{"type":"object","properties":{"dry":{"type":"boolean","x-mcp-header":"Dry-Run"}}}}}`,
			want:   []Binding{{Path: []string{"opts", "dry"}, Header: "Dry-Run"}, {Path: []string{"region"}, Header: "Region"}}},
		{name: "not a primitive", schema: `{"properties":{"o":{"type":"object","x-mcp-header":"O"}}}`, invalid: true},
		{name: "number is not allowed", schema: `{"properties":{"o":{"type":"number","x-mcp-header":"O"}}}`, invalid: true},
		{name: "not a token", schema: `{"properties":{"o":{"type":"string","x-mcp-header":"a b"}}}`, invalid: true},
		{name: "empty name", schema: `{"properties":{"o":{"type":"string","x-mcp-header":""}}}`, invalid: true},
		{name: "twice in another case", schema: `{"properties":{"a":{"type":"string","x-mcp-header":"X"},"b":{"type":"string","x-mcp-header":"x"}}}`, invalid: true},
		{name: "no annotation", schema: `{"properties":{"a":{"type":"string"}}}`},
		{name: "not a schema", schema: `[1]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Bindings([]byte(tt.schema))
			if tt.invalid {
				require.ErrorIs(t, err, ErrInvalidAnnotation)
				return
			}
			require.NoError(t, err)
			slices.SortFunc(got, func(a, b Binding) int { return strings.Compare(a.Header, b.Header) })
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestValidate(t *testing.T) {
	bindings := []Binding{{Path: []string{"region"}, Header: "Region"}, {Path: []string{"n"}, Header: "N"}, {Path: []string{"o", "n"}, Header: "On"}}
	tests := []struct {
		name   string
		args   string
		header map[string]string
		ok     bool
	}{
		{name: "match", args: `{"region":"eu","n":3}`, header: map[string]string{"Mcp-Param-Region": "eu", "Mcp-Param-N": "3"}, ok: true},
		{name: "integer in another spelling", args: `{"n":3}`, header: map[string]string{"Mcp-Param-N": "3.0"}, ok: true},
		{name: "base64", args: `{"region":"日本"}`, header: map[string]string{"Mcp-Param-Region": "=?base64?5pel5pys?="}, ok: true},
		{name: "absent and no header", args: `{}`, ok: true},
		{name: "empty string, empty header", args: `{"region":""}`, header: map[string]string{"Mcp-Param-Region": ""}, ok: true},
		{name: "mismatch", args: `{"region":"eu"}`, header: map[string]string{"Mcp-Param-Region": "us"}},
		{name: "missing header", args: `{"region":"eu"}`},
		{name: "header for a null argument", args: `{"region":null}`, header: map[string]string{"Mcp-Param-Region": "eu"}},
		{name: "bad base64", args: `{"region":"eu"}`, header: map[string]string{"Mcp-Param-Region": "=?base64?***?="}},
		{name: "not a primitive", args: `{"region":{"a":1}}`, header: map[string]string{"Mcp-Param-Region": "x"}},
		{name: "escaped member name", args: `{"r\u0065gion":"eu"}`, header: map[string]string{"Mcp-Param-Region": "eu"}, ok: true},
		// An argument that parsers read differently matches no header: an
		// upstream decoding into a struct (Go's encoding/json) matches
		// member names in any letter case, last wins; others take only the
		// exact spelling.
		{name: "argument also in another letter case", args: `{"region":"us","Region":"eu"}`, header: map[string]string{"Mcp-Param-Region": "us"}},
		{name: "argument also in another letter case, other header", args: `{"region":"us","Region":"eu"}`, header: map[string]string{"Mcp-Param-Region": "eu"}},
		{name: "argument only in another letter case", args: `{"REGION":"eu"}`, header: map[string]string{"Mcp-Param-Region": "eu"}},
		{name: "argument only in another letter case, no header", args: `{"REGION":"eu"}`},
		{name: "duplicate argument", args: `{"region":"us","region":"eu"}`, header: map[string]string{"Mcp-Param-Region": "eu"}},
		{name: "nested argument also in another letter case", args: `{"o":{"n":1,"N":2}}`, header: map[string]string{"Mcp-Param-On": "1"}},
		{name: "nested object also in another letter case", args: `{"o":{"n":1},"O":{"n":2}}`, header: map[string]string{"Mcp-Param-On": "1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tt.header {
				h.Set(k, v)
			}
			err := Validate(h, bindings, []byte(`{"arguments":`+tt.args+`}`))
			if tt.ok {
				assert.NoError(t, err)
			} else {
				assert.ErrorIs(t, err, ErrMismatch)
			}
		})
	}
	for _, params := range []string{
		`{"arguments":{"region":"us"},"Arguments":{"region":"eu"}}`,
		`{"Arguments":{"region":"eu"}}`,
		`{"arguments":{"region":"us"},"arguments":{"region":"eu"}}`,
	} {
		for _, header := range []string{"us", "eu"} {
			h := http.Header{"Mcp-Param-Region": {header}}
			assert.ErrorIs(t, Validate(h, bindings, []byte(params)), ErrMismatch, "%s with %s", params, header)
		}
	}
}

// FuzzHeaders: whatever the definitions and arguments, the headers produced
// are valid HTTP and pass the server's validation.
func FuzzHeaders(f *testing.F) {
	f.Add([]byte(`{"properties":{"r":{"type":"string","x-mcp-header":"R"}}}`), []byte(`{"name":"t","arguments":{"r":"x"}}`))
	f.Add([]byte(`{"properties":{"o":{"type":"object","properties":{"n":{"type":"integer","x-mcp-header":"N"}}}}}`), []byte(`{"arguments":{"o":{"n":7}}}`))
	f.Fuzz(func(t *testing.T, schema, params []byte) {
		b, err := Bindings(schema)
		if err != nil {
			return
		}
		h := http.Header{}
		for name, v := range Headers(b, params) {
			require.True(t, strings.HasPrefix(name, Prefix))
			for i := 0; i < len(v); i++ {
				require.False(t, v[i] < 0x20 || v[i] == 0x7f, "header value %q", v)
			}
			h.Set(name, v)
		}
		if len(h) > 0 {
			require.NoError(t, Validate(h, b, params))
		}
	})
}
