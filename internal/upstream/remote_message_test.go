package upstream

import (
	"bytes"
	"encoding/json"
	"github.com/mcpwrap/mcpwrap/internal/era"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/internal/framing"
)

func TestNewOutbound(t *testing.T) {
	tests := []struct {
		name        string
		msg         string
		kind        framing.Kind
		method      string
		calls       []string
		metaVersion string
		mcpName     string
	}{
		{
			name:   "request",
			msg:    `{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"echo"}}`,
			kind:   framing.Request,
			method: "tools/call",
			calls:  []string{`"a"`},
		},
		{
			name:        "2026-07-28 request names its tool",
			msg:         `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
			kind:        framing.Request,
			method:      "tools/call",
			calls:       []string{"2"},
			metaVersion: "2026-07-28",
			mcpName:     "echo",
		},
		{
			name:        "2026-07-28 resource read names its URI",
			msg:         `{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"file:///a","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`,
			kind:        framing.Request,
			method:      "resources/read",
			calls:       []string{"3"},
			metaVersion: "2026-07-28",
			mcpName:     "file:///a",
		},
		{
			name:   "notification",
			msg:    `{"jsonrpc":"2.0","method":"notifications/initialized"}`,
			kind:   framing.Notification,
			method: "notifications/initialized",
		},
		{
			name: "response",
			msg:  `{"jsonrpc":"2.0","id":5,"result":{}}`,
			kind: framing.Response,
		},
		{
			name:  "batch",
			msg:   `[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"n"},{"jsonrpc":"2.0","id":"x","method":"b"}]`,
			kind:  framing.Batch,
			calls: []string{"1", `"x"`},
		},
		{
			name: "not JSON is still sent",
			msg:  `hello`,
			kind: framing.Invalid,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg := []byte(tt.msg)
			out := newOutbound(msg)
			assert.Equal(t, tt.msg, string(out.body))
			msg[0] = '!'
			assert.Equal(t, tt.msg, string(out.body), "the body is a private copy")
			assert.Equal(t, tt.kind, out.kind)
			assert.Equal(t, tt.method, out.method)
			var calls []string
			for _, id := range out.calls {
				calls = append(calls, string(id))
			}
			assert.Equal(t, tt.calls, calls)
			assert.Equal(t, tt.metaVersion, out.metaVersion)
			assert.Equal(t, tt.mcpName, out.name)
		})
	}
}

func TestIDKey(t *testing.T) {
	tests := []struct {
		name string
		a, b string
		same bool
	}{
		{name: "same integer", a: "1", b: " 1", same: true},
		{name: "integer and integral float", a: "1", b: "1.0", same: true},
		{name: "string and number differ", a: `"1"`, b: "1", same: false},
		{name: "escaped string", a: `"\u0061"`, b: `"a"`, same: true},
		{name: "big integers stay exact", a: "12345678901234567890", b: "12345678901234567891", same: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.same, idKey([]byte(tt.a)) == idKey([]byte(tt.b)))
		})
	}
}

func TestNormalize(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    string
		wantErr bool
	}{
		{name: "one line is kept byte for byte", in: ` {"b" : 1,  "a":"x y"} ` + "\n", want: `{"b" : 1,  "a":"x y"}`},
		{name: "several lines are compacted", in: "{\n  \"a\": \"x y\",\r\n  \"b\": [1, 2]\n}", want: `{"a":"x y","b":[1,2]}`},
		{name: "not JSON", in: "<html>", wantErr: true},
		{name: "empty", in: "", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := normalize([]byte(tt.in))
			if tt.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(got))
		})
	}
}

func TestAnsweredIDs(t *testing.T) {
	tests := []struct {
		name string
		msg  string
		want []string
	}{
		{name: "result", msg: `{"jsonrpc":"2.0","id":1,"result":{}}`, want: []string{"1"}},
		{name: "error", msg: `{"jsonrpc":"2.0","id":"a","error":{"code":1,"message":"m"}}`, want: []string{`"a"`}},
		{name: "request", msg: `{"jsonrpc":"2.0","id":1,"method":"ping"}`},
		{name: "notification", msg: `{"jsonrpc":"2.0","method":"n"}`},
		{name: "batch", msg: `[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","method":"n"}]`, want: []string{"1"}},
		{name: "head of a dropped response", msg: `{"jsonrpc":"2.0","id":4,"result":{"text":"xxxx`, want: []string{"4"}},
		{name: "head of a dropped request", msg: `{"jsonrpc":"2.0","id":4,"method":"x","params":{"text":"xxxx`},
		{name: "head of a dropped response mentioning a method", msg: `{"id":4,"result":{"method":"m","a":[{"method":1}]},"pad":"xxxx`, want: []string{"4"}},
		{name: "head without an id", msg: `{"jsonrpc":"2.0","result":{"text":"xxxx`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, id := range answeredIDs([]byte(tt.msg)) {
				got = append(got, string(id))
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

// FuzzRequestFacts holds requestFacts, which reads in place, to
// requestFactsDecoded (encoding/json, as a server reads the request).
func FuzzRequestFacts(f *testing.F) {
	for _, seed := range []string{
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"name":"a","arguments":{}}`,
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"uri":"file:///x"}`,
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":5},"name":"a"}`,
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"name":5}`,
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"uri":[],"name":"a"}`,
		`{"_meta":"io.modelcontextprotocol/protocolVersion","name":"a"}`,
		`{"_meta":null,"name":null,"x":"io.modelcontextprotocol/protocolVersion"}`,
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":"a"},"NAME":"b","name":"c"}`,
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":"a"},"_meta":{"io.modelcontextprotocol/protocolVersion":"b"}}`,
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":"\ud800"},"name":"\u0061"}`,
		`["io.modelcontextprotocol/protocolVersion"]`,
	} {
		f.Add("tools/call", []byte(seed))
	}
	f.Add("resources/read", []byte(`{"_meta":{"io.modelcontextprotocol/protocolVersion":"v"},"uri":"u","name":"n"}`))
	f.Add("prompts/get", []byte(`{"_meta":{"io.modelcontextprotocol/protocolVersion":"v"},"uri":"u","name":"n"}`))
	f.Fuzz(func(t *testing.T, method string, params []byte) {
		if !json.Valid(params) {
			return // a request's params are valid JSON by then
		}
		wantVersion, wantName := "", ""
		if bytes.Contains(params, []byte(era.MetaProtocolVersion)) {
			wantVersion, wantName = requestFactsDecoded(method, params)
		}
		gotVersion, gotName := requestFacts(method, params)
		assert.Equal(t, wantVersion, gotVersion, "version")
		assert.Equal(t, wantName, gotName, "name")
	})
}
