package telemetry

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/internal/framing"
)

// FuzzWithMeta: whatever params a request has, the trace context set is
// what its _meta then holds, the rest of params and _meta is kept, and the
// message stays valid JSON.
func FuzzWithMeta(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{"x":[1,{"y":"\u003c"}]}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{ }}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"traceparent":"x","tracestate":"y","progressToken":1}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"traceparent":"x"}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"trace\u0070arent":"x","a":{}}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":null}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[1]}`,
	} {
		f.Add(seed)
	}
	kv := traceContext{traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", tracestate: "k=v"}
	f.Fuzz(func(t *testing.T, msg string) {
		env, err := framing.PeekValid([]byte(msg))
		if err != nil || env.Kind != framing.Request {
			return
		}
		out, ok := withMeta([]byte(msg), env.Params, kv)
		if !ok {
			require.Equal(t, msg, string(out))
			return
		}
		require.True(t, json.Valid(out), "%s", out)
		var before, after struct {
			Params map[string]json.RawMessage
		}
		if json.Unmarshal([]byte(msg), &before) != nil || json.Unmarshal(out, &after) != nil {
			return // ambiguous spellings: not compared
		}
		var meta map[string]any
		require.NoError(t, json.Unmarshal(after.Params["_meta"], &meta))
		require.Equal(t, kv.traceparent, meta["traceparent"])
		require.Equal(t, kv.tracestate, meta["tracestate"])
		for k, v := range before.Params {
			if k != "_meta" {
				require.JSONEq(t, string(v), string(after.Params[k]), k)
			}
		}
	})
}
