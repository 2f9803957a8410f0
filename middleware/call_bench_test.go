package middleware

import (
	"strings"
	"testing"

	"github.com/mcpwrap/mcpwrap/internal/framing"
)

// BenchmarkReadCall10MiB is the relay's own reading of a client's 10 MiB
// tools/call, from the line to the tool name and arguments the gate
// judges: one validating pass, however large the arguments.
func BenchmarkReadCall10MiB(b *testing.B) {
	msg := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sink","arguments":{"data":"` + strings.Repeat("x", 10<<20) + `"},"_meta":{"progressToken":1}}}`)
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	for b.Loop() {
		env, err := framing.PeekValid(msg)
		if err != nil {
			b.Fatal(err)
		}
		p, err := new(Session).parseCall(env)
		if err != nil || p.Name != "sink" || progressKey(env.ProgressToken) == "" {
			b.Fatal(p.Name, err)
		}
	}
}

// BenchmarkKeepCall10MiB is what holding a 10 MiB tools/call costs (while
// the catalog loads, or the upstream restarts): a copy, and no read of it.
func BenchmarkKeepCall10MiB(b *testing.B) {
	msg := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sink","arguments":{"data":"` + strings.Repeat("x", 10<<20) + `"}}}`)
	env, err := framing.PeekValid(msg)
	if err != nil {
		b.Fatal(err)
	}
	s := &Session{}
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	for b.Loop() {
		kept, env, ok := s.keep(msg, env, false)
		if !ok || string(env.ID) != "1" {
			b.Fatal("not kept")
		}
		s.unhold(kept, true)
	}
}
