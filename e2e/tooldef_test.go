package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAmbiguousToolDefinitionNeverRuns: an upstream whose catalog holds a tool object that names
// itself twice ("safe" to one JSON reader, "evil" to another) cannot have a call run under either
// name: the tool is listed nowhere, discovery counts it disabled_unknown, each call is answered by
// mcpwrap, nothing reaches the upstream, and the CLI does not offer to approve it. The upstream is
// `mcpwrap demo-server --raw-tools`, which serves the catalog byte for byte and records what it
// receives.
func TestAmbiguousToolDefinitionNeverRuns(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	dir := t.TempDir()
	tools := filepath.Join(dir, "tools.json")
	require.NoError(t, os.WriteFile(tools, []byte(`[
		{"name":"echo","description":"Echoes.","inputSchema":{"type":"object"}},
		{"name":"safe","NAME":"evil","description":"Harmless.","inputSchema":{"type":"object"}},
		{"n\u0061me":"sneaky","inputSchema":{"type":"object"}}
	]`), 0o644))
	record := filepath.Join(dir, "record")
	p := newPolicyEnv(t, `{}`)
	s := startLineSession(ctx, t, p.env, mcpwrapPath,
		wrapArgs("notes", mcpwrapPath, "demo-server", "--raw-tools", tools, "--record", record)...)
	require.Nil(t, decodeResponse(t, s.Initialize(ctx, t)).Error)

	var list struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	resp := decodeResponse(t, s.Call(ctx, t, 1, "tools/list", map[string]any{}))
	require.Nil(t, resp.Error)
	require.NoError(t, json.Unmarshal(resp.Result, &list))
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	assert.Equal(t, []string{"echo", "discover_tools"}, names, "the ambiguous tools are listed nowhere")

	disc := callResult(ctx, t, s, 2, map[string]any{"name": "discover_tools", "arguments": map[string]any{"include_disabled": true}})
	assert.Contains(t, disc.text(), `"disabled_unknown":2`, "discovery counts them disabled_unknown: %s", disc.text())

	for i, name := range []string{"safe", "evil", "sneaky"} {
		res := callResult(ctx, t, s, 3+i, map[string]any{"name": name, "arguments": map[string]any{}})
		assert.True(t, res.IsError, "%s: %s", name, res.text())
		assert.Equal(t, "disabled_unknown", res.Meta["status"], name)
	}
	control := callResult(ctx, t, s, 9, map[string]any{"name": "echo", "arguments": map[string]any{}})
	assert.Equal(t, "ran echo", control.text())

	lines := finalRecord(ctx, t, s, record)
	assert.Equal(t, 1, countRecorded(t, record, "tools/call"), "only the control call reached the upstream:\n%s", strings.Join(lines, "\n"))

	out, code := p.cli(t, "tools", "approve", "notes", "safe")
	assert.NotZero(t, code, "approving an ambiguous tool must fail: %s", out)
	out, _ = p.cli(t, "tools", "list", "notes")
	assert.NotContains(t, out, "safe")
	assert.NotContains(t, out, "evil")
}

// TestUnlistedToolIsUnknown: under tofu approval, a call to a tool the upstream does not list is
// answered by mcpwrap as a call to an unknown tool (no remediation: nothing could approve it) and
// never reaches the upstream.
func TestUnlistedToolIsUnknown(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	s, record := gateSession(ctx, t, `{}`)

	raw := s.Call(ctx, t, 1, "tools/call", map[string]any{"name": "ghost", "arguments": map[string]any{}})
	resp := decodeResponse(t, raw)
	require.NotNil(t, resp.Error, "%s", raw)
	assert.Equal(t, -32602, resp.Error.Code)
	assert.Equal(t, `unknown tool "ghost"`, resp.Error.Message)
	assert.NotContains(t, string(raw), "approve")

	finalRecord(ctx, t, s, record)
	assert.Zero(t, countRecorded(t, record, "tools/call"), "the call never reached the upstream")
}
