package e2e

import (
	"context"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestDemoTraceAct plays `mcpwrap demo` and checks its trace act prints one
// tool call's trace as a tree: the demo's client span, mcpwrap's server span
// under it, mcpwrap's client span under that (with the conventions'
// attributes), and the demo server's span, continued from _meta, under it.
func TestDemoTraceAct(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, mcpwrapPath, "demo").CombinedOutput()
	require.NoError(t, err, "%s", out)
	act := string(out)
	i := strings.Index(act, "What it did: a tool call's trace")
	require.GreaterOrEqual(t, i, 0, "no trace act:\n%s", out)
	act = act[i:]
	tree := regexp.MustCompile(`(?s)\n  demo-client +client tools/call echo +\S+\n` +
		`  └─ mcpwrap +server tools/call echo +\S+\n +mcp\.method\.name=tools/call gen_ai\.tool\.name=echo jsonrpc\.request\.id=\S+ mcp\.protocol\.version=2025-11-25 network\.transport=pipe\n.*?` +
		`\n     └─ mcpwrap +client tools/call echo +\S+\n +mcp\.method\.name=tools/call gen_ai\.tool\.name=echo .*?` +
		`\n        └─ demo-server +server tools/call +\S+\n`)
	require.Regexp(t, tree, act)
}
