package middleware_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mcpwrap/mcpwrap/internal/gate"
	"github.com/mcpwrap/mcpwrap/internal/policy"
	"github.com/mcpwrap/mcpwrap/internal/state"
	"github.com/mcpwrap/mcpwrap/middleware"
	"github.com/stretchr/testify/require"
)

// BenchmarkToolsListRewrite10k measures the rewrite of one tools/list page
// of 10,000 tools in the steady state of a session: the catalog loaded (as
// the sidecar does right after the handshake) and recorded as the tofu
// baseline, so that every definition's hash is compared with its approved
// one. A tenth of the tools are locked by operator policy, ten by the user
// and a hundred changed since their approval (pending_approval). It
// includes reading the message's envelope, as the upstream pump does.
func BenchmarkToolsListRewrite10k(b *testing.B) {
	benchmarkRewrite(b, rewriteBench{loaded: true})
}

// BenchmarkToolsListRewriteReordered10k is BenchmarkToolsListRewrite10k
// with a page that lists the catalog in reverse order: no definition
// follows the one before it in the catalog, so each is scanned and looked
// up by its hash.
func BenchmarkToolsListRewriteReordered10k(b *testing.B) {
	benchmarkRewrite(b, rewriteBench{loaded: true, reversed: true})
}

// BenchmarkToolsListRewriteUncataloged10k is BenchmarkToolsListRewrite10k
// before the sidecar has loaded the catalog: the page is judged alone.
func BenchmarkToolsListRewriteUncataloged10k(b *testing.B) {
	benchmarkRewrite(b, rewriteBench{})
}

// rewriteBench says what a tools/list rewrite benchmark measures.
type rewriteBench struct {
	loaded   bool // the catalog is loaded
	reversed bool // the page lists it in reverse order
}

func benchmarkRewrite(b *testing.B, o rewriteBench) {
	approved := rewriteBenchCatalog(0)
	current := rewriteBenchCatalog(100) // a hundred definitions changed since their approval
	ctx := context.Background()

	eval, err := policy.NewEvaluator(policy.Options{Rules: policy.Rules{Overrides: map[string]bool{"write_*": false}}})
	require.NoError(b, err)
	store := state.Open(b.TempDir(), nil)
	require.NoError(b, store.Update(ctx, "bench", func(srv *state.Server) error {
		for i := range 10 {
			srv.Disable(fmt.Sprintf("read_%05d", 10*i+2))
		}
		return nil
	}))
	g := gate.New("bench", eval, store, nil)
	g.Reload(ctx)
	g.CatalogSeen(ctx, approved) // the baseline
	s := &middleware.Session{Name: "bench", Tools: g, CatalogSeen: func(all []json.RawMessage) { g.CatalogSeen(ctx, all) }}
	g.CatalogSeen(ctx, current) // the load after the handshake
	s.MarkAvailable()
	if o.loaded {
		s.LoadCatalog(current)
		s.ReevaluateTools()
	}
	page := current
	if o.reversed {
		page = slices.Clone(current)
		slices.Reverse(page)
	}
	msg := []byte(`{"jsonrpc":"2.0","id":1,"result":{"tools":[` + string(joinRaw(page)) + `]}}`)

	out := string(s.RewriteToolsList(msg))
	for _, want := range []string{`"discover_tools"`, `"read_00013"`, "1110 tool(s) are locked"} {
		require.True(b, strings.Contains(out, want), "the rewrite lacks %s: %.300s", want, out[strings.LastIndex(out, "Find the tools"):])
	}
	for _, locked := range []string{`"write_00010"`, `"read_00012"`, `"read_00011"`} { // config, user, pending approval
		require.False(b, strings.Contains(out, locked), "the rewrite shows %s", locked)
	}
	b.SetBytes(int64(len(msg)))
	b.ResetTimer()
	for b.Loop() {
		s.RewriteToolsList(msg)
	}
}

// rewriteBenchCatalog returns 10,000 tool definitions, every tenth a
// write_ tool, the first changed of them (every read_ tool numbered 1 mod
// 10) with a changed description.
func rewriteBenchCatalog(changed int) []json.RawMessage {
	tools := make([]json.RawMessage, 0, 10_000)
	for i := range 10_000 {
		name := fmt.Sprintf("read_%05d", i)
		if i%10 == 0 {
			name = fmt.Sprintf("write_%05d", i)
		}
		desc := fmt.Sprintf("tool number %d does one thing well", i)
		if i%10 == 1 && i/10 < changed {
			desc += ", and now another"
		}
		tools = append(tools, json.RawMessage(fmt.Sprintf(`{"name":%q,"description":%q,"inputSchema":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]},"annotations":{"readOnlyHint":%t}}`, name, desc, i%10 != 0)))
	}
	return tools
}

func joinRaw(tools []json.RawMessage) []byte {
	parts := make([]string, len(tools))
	for i, t := range tools {
		parts[i] = string(t)
	}
	return []byte(strings.Join(parts, ","))
}
