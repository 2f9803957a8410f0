package erabridge

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/mcpwrap/mcpwrap/internal/era"
)

// FuzzParseMeta holds ParseMeta to encoding/json: what it reads without
// error is what a strict decoder of the same _meta reads, and a _meta it
// reads is an object.
func FuzzParseMeta(f *testing.F) {
	for _, s := range []string{
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"a"}}}`,
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","IO.modelcontextprotocol/protocolVersion":"2025-11-25"}}`,
		`{"_meta":{},"_META":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`,
		`{"_meta":{"io.modelcontextprotocol/protocolVersion":7}}`,
		`{"_meta":[]}`, `{"_meta":null}`, `{}`, `[]`, `{"_m\u0065ta":{}}`,
		`{"_meta":{"io.modelcontextprotocol/subscriptionId":"L","io.modelcontextprotocol/protocolVersion":"2026-07-28\u0000"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, params []byte) {
		m, found, err := ParseMeta(params)
		if err != nil {
			if !errors.Is(err, ErrBadMeta) {
				t.Fatalf("error %v does not wrap ErrBadMeta", err)
			}
			return
		}
		if !found || !json.Valid(params) {
			return
		}
		var p struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		}
		if json.Unmarshal(params, &p) != nil {
			return // a params encoding/json cannot decode: nothing to compare
		}
		var version string
		if raw, ok := p.Meta[era.MetaProtocolVersion]; ok {
			if json.Unmarshal(raw, &version) != nil {
				t.Fatalf("ParseMeta read a version encoding/json cannot: %q", raw)
			}
		}
		if version != m.ProtocolVersion {
			t.Fatalf("ParseMeta read version %q, encoding/json %q, in %s", m.ProtocolVersion, version, params)
		}
	})
}

// FuzzOpenState holds the requestState check: anything but the very state
// sealed for a round and binding is refused, and never panics.
func FuzzOpenState(f *testing.F) {
	key := []byte("0123456789abcdef0123456789abcdef")
	id := strings.Repeat("r", roundIDLen)
	sealed := sealState(key, id, binding{method: "tools/call", name: "ask"})
	for _, s := range []string{sealed, sealed + "=", "mcpwrap1.", "mcpwrap1..", "mcpwrap1.cnJycnJycnJycnJycnJycg.", strings.ToUpper(sealed), sealed[:len(sealed)-1]} {
		f.Add(s, "tools/call", "ask")
	}
	f.Fuzz(func(t *testing.T, state, method, name string) {
		got, err := openState(key, state, binding{method: method, name: name})
		if err != nil {
			if !errors.Is(err, ErrBadState) {
				t.Fatalf("error %v is not ErrBadState", err)
			}
			return
		}
		if state != sealed || method != "tools/call" || name != "ask" || got != id {
			t.Fatalf("openState accepted %q for %s %q (round %q)", state, method, name, got)
		}
	})
}

// FuzzRemoveMembers holds RemoveMembers to encoding/json: the result is an
// object with every member but the one removed.
func FuzzRemoveMembers(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, `{"a":1,"b":2}`, `{"b":2,"a":1}`, `{"b":2,"a":1,"c":3}`, `{ "a" : 1 , "a":2 }`, `{"a":{"a":1}}`} {
		f.Add([]byte(s), "a")
	}
	f.Fuzz(func(t *testing.T, obj []byte, name string) {
		out := RemoveMembers(obj, name)
		if !json.Valid(obj) {
			return
		}
		var before, after map[string]json.RawMessage
		if json.Unmarshal(obj, &before) != nil {
			return
		}
		if err := json.Unmarshal(out, &after); err != nil {
			t.Fatalf("RemoveMembers(%s, %q) = %s: %v", obj, name, out, err)
		}
		if _, ok := after[name]; ok {
			t.Fatalf("RemoveMembers(%s, %q) = %s: still there", obj, name, out)
		}
		delete(before, name)
		if len(before) != len(after) {
			t.Fatalf("RemoveMembers(%s, %q) = %s: members lost", obj, name, out)
		}
	})
}
