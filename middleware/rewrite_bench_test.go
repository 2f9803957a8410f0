package middleware_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/mcpwrap/mcpwrap/internal/gate"
	"github.com/mcpwrap/mcpwrap/internal/policy"
	"github.com/mcpwrap/mcpwrap/internal/state"
	"github.com/mcpwrap/mcpwrap/middleware"
	"github.com/stretchr/testify/require"
)

// BenchmarkToolsListRewrite10k measures the rewrite plus classification of
// one tools/list page of 10,000 tools, a tenth of them locked by operator
// policy, with the real gate (config rules, tofu approvals, user state).
func BenchmarkToolsListRewrite10k(b *testing.B) {
	var tools []string
	for i := range 10_000 {
		name := fmt.Sprintf("read_%05d", i)
		if i%10 == 0 {
			name = fmt.Sprintf("write_%05d", i)
		}
		tools = append(tools, fmt.Sprintf(`{"name":%q,"description":"tool number %d does one thing well","inputSchema":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]},"annotations":{"readOnlyHint":%t}}`, name, i, i%10 != 0))
	}
	msg := []byte(`{"jsonrpc":"2.0","id":1,"result":{"tools":[` + strings.Join(tools, ",") + `]}}`)

	eval, err := policy.NewEvaluator(policy.Options{Rules: policy.Rules{Overrides: map[string]bool{"write_*": false}}})
	require.NoError(b, err)
	g := gate.New("bench", eval, state.Open(b.TempDir(), nil), nil)
	g.Reload(context.Background())
	s := &middleware.Session{Name: "bench", Tools: g}

	out := s.RewriteToolsList(msg) // warm the definition cache, as the first tools/list does
	require.Contains(b, string(out), `"discover_tools"`)
	require.NotContains(b, string(out), `"write_00010"`)
	b.SetBytes(int64(len(msg)))
	b.ResetTimer()
	for b.Loop() {
		s.RewriteToolsList(msg)
	}
}
