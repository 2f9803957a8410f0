package httpfront

import (
	"bytes"
	"encoding/json"
	"github.com/mcpwrap/mcpwrap/internal/era"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/internal/framing"
	"github.com/mcpwrap/mcpwrap/internal/jsonrpc"
)

// parseBodyReference is parseBody as it was before it read a body in one
// pass: json.Valid, then framing.Peek of the body and of each message.
func parseBodyReference(body []byte) ([]incoming, bool, *postError) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, false, &postError{code: jsonrpc.CodeInvalidRequest, message: "Invalid Request: the body is empty"}
	}
	if !json.Valid(body) {
		return nil, false, &postError{code: jsonrpc.CodeParseError, message: "Parse error: the body is not valid JSON"}
	}
	env, err := framing.Peek(body)
	if err != nil {
		return nil, false, &postError{code: jsonrpc.CodeInvalidRequest, message: "Invalid Request: " + err.Error()}
	}
	raws := [][]byte{body}
	batch := env.Kind == framing.Batch
	if batch {
		if raws, err = framing.Elements(body); err != nil || len(raws) == 0 {
			return nil, true, &postError{code: jsonrpc.CodeInvalidRequest, message: "Invalid Request: an empty or malformed batch"}
		}
	}
	msgs := make([]incoming, 0, len(raws))
	for _, raw := range raws {
		if bytes.ContainsAny(raw, "\r\n") {
			raw = compactInPlace(raw)
		}
		env, err := framing.Peek(raw)
		switch {
		case err != nil:
			return nil, batch, &postError{id: env.ID, code: jsonrpc.CodeInvalidRequest, message: "Invalid Request: " + err.Error()}
		case env.Kind == framing.Invalid, env.Kind == framing.Batch:
			return nil, batch, &postError{id: env.ID, code: jsonrpc.CodeInvalidRequest,
				message: "Invalid Request: a message must be a JSON-RPC request, notification or response"}
		}
		msgs = append(msgs, incoming{msg: raw, env: env})
	}
	return msgs, batch, nil
}

// FuzzParseBody holds parseBody to its reference: the same messages,
// envelopes and errors.
func FuzzParseBody(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","_meta":{"progressToken":7}}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"b"}]`,
		"{\"jsonrpc\":\"2.0\",\n\"id\":1,\"result\":{}}",
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","NAME":"b"}}`,
		`{"jsonrpc":"2.0"}`, `[]`, `[1]`, `{"id":1,"id":2}`, `"x"`, `{`, ` `, `{"jsonrpc":"2.0","id":1,"method":"a"} x`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, gotBatch, gotErr := parseBody(bytes.Clone(body))
		want, wantBatch, wantErr := parseBodyReference(bytes.Clone(body))
		require.Equal(t, wantErr, gotErr)
		assert.Equal(t, wantBatch, gotBatch)
		require.Len(t, got, len(want))
		for i := range want {
			assert.Equal(t, string(want[i].msg), string(got[i].msg))
			assert.Equal(t, want[i].env, got[i].env)
		}
	})
}

// parseFactsReference is how parseFacts read _meta before it read it in
// place: decoded into a map (and encoded again), its version decoded by
// encoding/json.
func parseFactsReference(env framing.Envelope) requestFacts {
	f := parseFacts(env) // the name facts are unchanged
	f.metaVersion, f.metaAmbiguous = "", false
	metaRaw, _, err := framing.LookupMember(env.Params, "_meta")
	f.metaAmbiguous = err != nil
	var meta map[string]json.RawMessage
	if metaRaw != nil && json.Unmarshal(metaRaw, &meta) == nil {
		version, _, err := framing.LookupMember(metaRaw, era.MetaProtocolVersion)
		f.metaAmbiguous = f.metaAmbiguous || err != nil
		if version != nil {
			_ = json.Unmarshal(version, &f.metaVersion)
		}
	}
	return f
}

// FuzzParseFacts holds parseFacts's reading of _meta to encoding/json's.
func FuzzParseFacts(f *testing.F) {
	for _, seed := range []string{
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"name":"a"}`,
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-\u00307-28"}}`,
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":5}}`,
		`{"_meta":null}`, `{"_meta":[1]}`, `{"_meta":{},"_META":{}}`,
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":"a","io.modelcontextprotocol/protocolversion":"b"}}`,
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":"\ud800"}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, params []byte) {
		if !json.Valid(params) {
			return // parseBody refuses it first
		}
		msg := append(append([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":`), params...), '}')
		env, err := framing.Peek(msg)
		if err != nil {
			return
		}
		assert.Equal(t, parseFactsReference(env), parseFacts(env))
	})
}
