package upstream

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHeaderValue(t *testing.T) {
	tests := []struct {
		name, raw, want string
		ok              bool
	}{
		{name: "plain string", raw: `"us-west1"`, want: "us-west1", ok: true},
		{name: "non-ASCII string", raw: `"日本"`, want: "=?base64?5pel5pys?=", ok: true},
		{name: "surrounding blank", raw: `" x"`, want: "=?base64?IHg=?=", ok: true},
		{name: "control character", raw: `"a\nb"`, want: "=?base64?YQpi?=", ok: true},
		{name: "looks encoded", raw: `"=?base64?abc?="`, want: "=?base64?PT9iYXNlNjQ/YWJjPz0=?=", ok: true},
		{name: "empty string", raw: `""`, want: "", ok: true},
		{name: "true", raw: `true`, want: "true", ok: true},
		{name: "integer", raw: `42`, want: "42", ok: true},
		{name: "integer spelled as a float", raw: `42.0`, want: "42", ok: true},
		{name: "fraction", raw: `1.5`},
		{name: "beyond the safe integers", raw: `9007199254740993`},
		{name: "object", raw: `{"a":1}`},
		{name: "null", raw: `null`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := headerValue(json.RawMessage(tt.raw))
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestToolParamHeaders(t *testing.T) {
	tests := []struct {
		name   string
		result string
		want   map[string][]paramBinding
	}{
		{name: "top level and nested",
			result: `{"tools":[{"name":"t","inputSchema":{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"opts":{"type":"object","properties":{"dry":{"type":"boolean","x-mcp-header":"Dry-Run"}}}}}}]}`,
			want:   map[string][]paramBinding{"t": {{path: []string{"opts", "dry"}, header: "Dry-Run"}, {path: []string{"region"}, header: "Region"}}}},
		{name: "not a primitive", result: `{"tools":[{"name":"t","inputSchema":{"properties":{"o":{"type":"object","x-mcp-header":"O"}}}}]}`,
			want: map[string][]paramBinding{}},
		{name: "not a token", result: `{"tools":[{"name":"t","inputSchema":{"properties":{"o":{"type":"string","x-mcp-header":"a b"}}}}]}`,
			want: map[string][]paramBinding{}},
		{name: "twice in another case", result: `{"tools":[{"name":"t","inputSchema":{"properties":{"a":{"type":"string","x-mcp-header":"X"},"b":{"type":"string","x-mcp-header":"x"}}}}]}`,
			want: map[string][]paramBinding{}},
		{name: "no annotation", result: `{"tools":[{"name":"t","inputSchema":{"properties":{"a":{"type":"string"}}}}]}`,
			want: map[string][]paramBinding{}},
		{name: "not a tools result", result: `[1]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := toolParamHeaders([]byte(tt.result))
			for _, b := range got {
				// map order: sort for the comparison
				if len(b) == 2 && b[0].header > b[1].header {
					b[0], b[1] = b[1], b[0]
				}
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

func FuzzToolParamHeaders(f *testing.F) {
	f.Add([]byte(`{"tools":[{"name":"t","inputSchema":{"properties":{"r":{"type":"string","x-mcp-header":"R"}}}}]}`), []byte(`{"name":"t","arguments":{"r":"x"}}`))
	f.Fuzz(func(t *testing.T, result, params []byte) {
		h := http.Header{}
		for _, b := range toolParamHeaders(result) {
			setParamHeaders(h, b, params)
		}
		for name, values := range h {
			require.True(t, strings.HasPrefix(name, paramHeaderPrefix))
			for _, v := range values {
				require.True(t, validHeaderValue(v), "header value %q", v)
			}
		}
	})
}

// TestRemoteSendsToolDesignatedHeaders: a 2026-07-28 tools/call carries
// the Mcp-Param headers its tool's definition designates, learnt from the
// tools/list result the connection relayed.
func TestRemoteSendsToolDesignatedHeaders(t *testing.T) {
	rec := newRecorder(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		switch {
		case strings.Contains(string(body), `"tools/list"`):
			io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"deploy","inputSchema":{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"count":{"type":"integer","x-mcp-header":"Count"},"note":{"type":"string","x-mcp-header":"Note"}}}}]}}`)
		default:
			io.WriteString(w, `{"jsonrpc":"2.0","id":2,"result":{"content":[]}}`)
		}
	}))
	ts := httptest.NewServer(rec)
	t.Cleanup(ts.Close)
	p := newPeer(t, dial(t, ts.URL))
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	p.call(1, "tools/list", `{`+meta+`}`)
	p.call(2, "tools/call", `{"name":"deploy","arguments":{"region":"eu-west1","count":3,"note":null},`+meta+`}`)

	seen := rec.requests()
	require.Len(t, seen, 2)
	call := seen[1].Header
	assert.Equal(t, "tools/call", call.Get("Mcp-Method"))
	assert.Equal(t, "deploy", call.Get("Mcp-Name"))
	assert.Equal(t, "eu-west1", call.Get("Mcp-Param-Region"))
	assert.Equal(t, "3", call.Get("Mcp-Param-Count"))
	assert.Empty(t, call.Values("Mcp-Param-Note"), "a null argument has no header")
}
