package middleware_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/mcpwrap/mcpwrap/internal/gate"
	"github.com/mcpwrap/mcpwrap/internal/policy"
	"github.com/mcpwrap/mcpwrap/internal/state"
	"github.com/mcpwrap/mcpwrap/middleware"
	"github.com/stretchr/testify/require"
)

// BenchmarkCallVerdict measures judging a tools/call to a known tool of a
// 10,000-tool catalog with the real gate: "kept" from the verdicts the
// Session keeps per catalog and policy version (no lock, no allocation),
// "evaluated" by asking the gate about the one definition, as each call
// did before the verdicts were kept (and still does right after the
// policy changed, until the catalog is re-evaluated).
func BenchmarkCallVerdict(b *testing.B) {
	tools := make([]json.RawMessage, 10_000)
	for i := range tools {
		name := fmt.Sprintf("read_%05d", i)
		if i%10 == 0 {
			name = fmt.Sprintf("write_%05d", i)
		}
		tools[i] = fmt.Appendf(nil, `{"name":%q,"description":"tool number %d does one thing well","inputSchema":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]},"annotations":{"readOnlyHint":%t}}`, name, i, i%10 != 0)
	}
	eval, err := policy.NewEvaluator(policy.Options{Rules: policy.Rules{Overrides: map[string]bool{"write_*": false}}})
	require.NoError(b, err)
	g := gate.New("bench", eval, state.Open(b.TempDir(), nil), nil)
	g.Reload(context.Background())
	s := &middleware.Session{Name: "bench", Tools: g}
	s.LoadCatalog(tools)
	g.CatalogSeen(context.Background(), tools) // records the tofu baseline: a new policy version
	s.LoadCatalog(tools)

	b.Run("kept", func(b *testing.B) {
		a, known := s.CallVerdict("read_05001")
		require.True(b, known)
		require.True(b, a.Callable())
		b.ReportAllocs()
		for b.Loop() {
			s.CallVerdict("read_05001")
		}
	})
	b.Run("evaluated", func(b *testing.B) {
		one := []json.RawMessage{tools[5001]}
		require.True(b, g.Evaluate(one)[0].Callable())
		b.ReportAllocs()
		for b.Loop() {
			_ = g.Evaluate([]json.RawMessage{tools[5001]})[0]
		}
	})
}

// TestCallVerdictAllocatesNothing: judging a call to a known tool, with
// the real gate, allocates nothing once the catalog is evaluated.
func TestCallVerdictAllocatesNothing(t *testing.T) {
	tools := []json.RawMessage{json.RawMessage(`{"name":"a","inputSchema":{"type":"object"}}`), json.RawMessage(`{"name":"b","inputSchema":{"type":"object"}}`)}
	eval, err := policy.NewEvaluator(policy.Options{})
	require.NoError(t, err)
	g := gate.New("fx", eval, state.Open(t.TempDir(), nil), nil)
	g.Reload(context.Background())
	g.CatalogSeen(context.Background(), tools)
	s := &middleware.Session{Name: "fx", Tools: g}
	s.LoadCatalog(tools)
	allocs := testing.AllocsPerRun(100, func() {
		if a, known := s.CallVerdict("b"); !known || !a.Callable() {
			t.Fatal("b is not callable")
		}
	})
	require.Zero(t, allocs)
}
