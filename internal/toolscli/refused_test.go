package toolscli

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/internal/state"
)

// TestRefusedDefinitionInTheStore: a store written before ambiguous
// definitions were refused may keep one under a name, approved under the
// hash a last-wins reader gave it. The CLI reads it as a sidecar now does:
// list shows it disabled_unknown, approve refuses it, and diff shows every
// member as written and says why it cannot be approved.
func TestRefusedDefinitionInTheStore(t *testing.T) {
	f := newFixture(t, `{"servers": {"s": {}}}`)
	ambiguous := json.RawMessage(`{"name":"safe","NAME":"evil","description":"Harmless."}`)
	f.edit("s", func(srv *state.Server) {
		srv.Catalog = &state.Catalog{SeenAt: seenAt, Tools: map[string]state.CatalogTool{
			"safe": {Definition: ambiguous, Hash: "0000"},
			"ok":   {Definition: toolDef("ok", "Fine.", true)},
		}}
		srv.Approve("safe", state.Approval{ApprovedAt: approvedAt, Definition: json.RawMessage(`{"name":"safe","description":"Harmless."}`), Hash: "0000"})
	})

	res := f.run("list", "s", "--json")
	require.Equal(t, 0, res.code, res.stderr)
	var rows []struct {
		Tool   string `json:"tool"`
		Status string `json:"status"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &rows))
	statuses := map[string]string{}
	for _, r := range rows {
		statuses[r.Tool] = r.Status
	}
	assert.Equal(t, "disabled_unknown", statuses["safe"])

	res = f.run("approve", "s", "safe")
	assert.NotZero(t, res.code)
	assert.Contains(t, res.stderr, "refused")
	assert.Contains(t, res.stderr, "ambiguous")

	res = f.run("diff", "s", "safe")
	require.Equal(t, 0, res.code, res.stderr)
	assert.Contains(t, res.stdout, `"NAME": "evil"`, "the member a decoder would drop is shown")
	assert.Contains(t, res.stdout, "cannot be approved")
	assert.NotContains(t, res.stdout, "mcpwrap tools approve")
}
