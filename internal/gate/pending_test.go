package gate

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/internal/policy"
	"github.com/mcpwrap/mcpwrap/internal/state"
)

// TestPendingToolsAreNeverSilent (issue 22.9): when a new catalog locks
// tools pending approval, the log says so once at warn, with the count and
// the commands, and every discovery notice names them until approved.
func TestPendingToolsAreNeverSilent(t *testing.T) {
	ctx := context.Background()
	store := &memStore{}
	var logs bytes.Buffer
	eval, err := policy.NewEvaluator(policy.Options{})
	require.NoError(t, err)
	g := New("fs", eval, store, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn})))
	g.Reload(ctx)

	g.CatalogSeen(ctx, []json.RawMessage{raw("read", "reads"), raw("write", "writes")}) // the baseline
	assert.Empty(t, g.Pending())
	assert.Empty(t, g.Notice())
	assert.Empty(t, logs.String(), "nothing is pending")

	changed := []json.RawMessage{raw("read", "reads"), raw("write", "writes, and uploads"), raw("new", "new")}
	g.CatalogSeen(ctx, changed)
	assert.Equal(t, []string{"new", "write"}, g.Pending())
	line := logs.String()
	assert.Contains(t, line, "level=WARN")
	assert.Contains(t, line, "pending approval")
	assert.Contains(t, line, "count=2")
	assert.Contains(t, line, "mcpwrap tools diff fs new")
	assert.Contains(t, line, "mcpwrap tools approve fs new write")
	notice := g.Notice()
	assert.Contains(t, notice, "2 tool(s) are locked pending approval")
	assert.Contains(t, notice, "new, write")
	assert.Contains(t, notice, "mcpwrap tools diff fs TOOL")

	logs.Reset()
	g.CatalogSeen(ctx, changed) // the same catalog again: said already
	assert.Empty(t, logs.String())

	require.NoError(t, store.Update(ctx, "fs", func(srv *state.Server) error {
		srv.Approve("new", state.Approval{Hash: mustHash(t, raw("new", "new"))})
		srv.Approve("write", state.Approval{Hash: mustHash(t, raw("write", "writes, and uploads"))})
		return nil
	}))
	watching := make(chan func(), 1)
	store.watching = watching
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); g.Watch(wctx, func() {}) }()
	(<-watching)() // the store reports the change, as after `mcpwrap tools approve`
	cancel()
	<-done
	assert.Empty(t, g.Pending())
	assert.Empty(t, g.Notice())
}

// TestReserialisedCatalogStaysApproved (issue 22.9): a catalog written
// again with other member order, whitespace and number spellings is the
// approved one; a change of meaning is not.
func TestReserialisedCatalogStaysApproved(t *testing.T) {
	ctx := context.Background()
	store := &memStore{}
	g := newGate(t, policy.Options{}, store)
	g.CatalogSeen(ctx, []json.RawMessage{
		json.RawMessage(`{"name":"read","description":"Reads","inputSchema":{"type":"object","properties":{"n":{"type":"number","maximum":1,"default":0.5}},"additionalProperties":false}}`),
	})
	tests := []struct {
		name    string
		def     string
		pending bool
	}{
		{name: "member order and whitespace", def: "{\n  \"inputSchema\": {\"additionalProperties\": false, \"properties\": {\"n\": {\"default\": 0.5, \"maximum\": 1, \"type\": \"number\"}}, \"type\": \"object\"},\n  \"description\": \"Reads\", \"name\": \"read\"\n}"},
		{name: "number spellings", def: `{"name":"read","description":"Reads","inputSchema":{"type":"object","properties":{"n":{"type":"number","maximum":1.0e0,"default":5E-1}},"additionalProperties":false}}`},
		{name: "string escapes", def: `{"name":"read","description":"R\u0065ads","inputSchema":{"type":"object","properties":{"n":{"type":"number","maximum":1,"default":0.5}},"additionalProperties":false}}`},
		{name: "annotations and title are not pinned", def: `{"name":"read","title":"Read","annotations":{"readOnlyHint":true},"description":"Reads","inputSchema":{"type":"object","properties":{"n":{"type":"number","maximum":1,"default":0.5}},"additionalProperties":false}}`},
		{name: "additionalProperties dropped", def: `{"name":"read","description":"Reads","inputSchema":{"type":"object","properties":{"n":{"type":"number","maximum":1,"default":0.5}}}}`, pending: true},
		{name: "maximum changed", def: `{"name":"read","description":"Reads","inputSchema":{"type":"object","properties":{"n":{"type":"number","maximum":10,"default":0.5}},"additionalProperties":false}}`, pending: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := "callable"
			if tt.pending {
				want = string(policy.PendingApproval)
			}
			assert.Equal(t, []string{want}, statuses(g.Evaluate([]json.RawMessage{json.RawMessage(tt.def)})))
		})
	}
}

func mustHash(t *testing.T, def json.RawMessage) string {
	t.Helper()
	tool, err := policy.ParseTool(def)
	require.NoError(t, err)
	return tool.Hash
}
