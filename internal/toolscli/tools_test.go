package toolscli

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/internal/policy"
)

// TestListNamesTheLockingRule: what the panel shows of a tool locked by
// operator policy (the rule and the config file's line), and the two
// definitions of a tool pending approval.
func TestListNamesTheLockingRule(t *testing.T) {
	f := newFixture(t, `{
  "defaults": {"tools": {"default": "read_only"}},
  "servers": {
    "s": {
      "approval": "manual",
      "tools": {
        "overrides": {
          "delete_*": false,
          "write_file": true
        }
      }
    },
    "off": {
      "enabled": false
    }
  }
}`)
	old, changed := toolDef("read_file", "Reads.", true), toolDef("read_file", "Reads a file.", true)
	f.approve("s", old)
	f.record("s", changed, toolDef("write_file", "Writes.", false), toolDef("delete_file", "Deletes.", false),
		toolDef("move_file", "Moves.", false))
	f.record("off", toolDef("read_file", "Reads.", true))
	tools := NewTools(mustConfig(t, f), f.store, nil)

	list, err := tools.List(context.Background(), "s")
	require.NoError(t, err)
	byName := map[string]Tool{}
	for _, tool := range list {
		byName[tool.Name] = tool
	}
	tests := []struct {
		tool   string
		status policy.Status
		rule   string
		line   int
	}{
		{tool: "delete_file", status: policy.DisabledByConfig, rule: `tools.overrides.delete_*: false`, line: 8},
		{tool: "move_file", status: policy.DisabledByConfig, rule: "tools.default: read_only", line: 2},
		{tool: "write_file", status: policy.PendingApproval},
		{tool: "read_file", status: policy.PendingApproval},
	}
	for _, tt := range tests {
		got := byName[tt.tool]
		assert.Equal(t, tt.status, got.Status, tt.tool)
		assert.Equal(t, tt.rule, got.Rule, tt.tool)
		assert.Equal(t, tt.line, got.Line, tt.tool)
		assert.Equal(t, tt.rule != "", got.Lock != "", tt.tool)
	}
	assert.JSONEq(t, string(old), string(byName["read_file"].Approved))
	assert.JSONEq(t, string(changed), string(byName["read_file"].Current))
	assert.Nil(t, byName["write_file"].Approved, "never approved")

	off, err := tools.List(context.Background(), "off")
	require.NoError(t, err)
	require.Len(t, off, 1)
	assert.Equal(t, policy.ServerDisabled, off[0].Lock)
	assert.Equal(t, "servers.off.enabled: false", off[0].Rule)
	assert.Equal(t, 14, off[0].Line)
}
