package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLargeCatalogOfAnotherServerStaysApart (issue 21.7): one server's large
// catalog, approved whole, is not read by the sidecar of another server,
// neither at its start nor when it reloads its own state, and is kept once
// on disk. The store starts as the version 1 file an earlier mcpwrap wrote,
// every server in it, so the upgrade is exercised too.
func TestLargeCatalogOfAnotherServerStaysApart(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads the peak RSS from /proc")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p := newPolicyEnv(t, `{}`)

	// 1,000 tools of 10 KB: a 10 MB catalog and the same again in approvals.
	type entry struct {
		ApprovedAt string          `json:"approved_at,omitempty"`
		Definition json.RawMessage `json:"definition"`
		Hash       string          `json:"hash"`
	}
	tools, approvals := map[string]entry{}, map[string]entry{}
	catalogBytes := 0
	for i := range 1000 {
		name := fmt.Sprintf("tool_%04d", i)
		def := json.RawMessage(fmt.Sprintf(`{"name":%q,"description":%q,"inputSchema":{"type":"object"}}`, name, strings.Repeat("word ", 2000)))
		hash := fmt.Sprintf("%064d", i)
		tools[name] = entry{Definition: def, Hash: hash}
		approvals[name] = entry{ApprovedAt: "2026-01-02T03:04:05Z", Definition: def, Hash: hash}
		catalogBytes += len(def)
	}
	v1, err := json.MarshalIndent(map[string]any{"version": 1, "servers": map[string]any{
		"big":   map[string]any{"approvals": approvals, "catalog": map[string]any{"seen_at": "2026-01-02T03:04:05Z", "tools": tools}},
		"notes": map[string]any{"disabled": []string{"blob"}},
	}}, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(p.stateDir, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(p.stateDir, "state.json"), v1, 0o600))

	out, code := p.cli(t, "tools", "disable", "big", "tool_0001")
	require.Equal(t, 0, code, out)
	var stored int64
	require.NoError(t, filepath.WalkDir(p.stateDir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && !strings.HasSuffix(path, ".v1") {
			fi, err := d.Info()
			if err == nil {
				stored += fi.Size()
			}
		}
		return err
	}))
	assert.Less(t, stored, int64(catalogBytes)*13/10, "the state keeps each definition once (a backup of the version 1 file aside)")

	s := startLineSession(ctx, t, p.env, mcpwrapPath, "--name", "notes", "--", mcpwrapPath, "demo-server")
	s.Initialize(ctx, t)
	listed := func(id int) string { return string(s.Call(ctx, t, id, "tools/list", map[string]any{})) }
	require.NotContains(t, listed(1), `"blob"`, "the bystander's own state applies")

	out, code = p.cli(t, "tools", "disable", "big", "tool_0002") // another server's change
	require.Equal(t, 0, code, out)
	out, code = p.cli(t, "tools", "enable", "notes", "blob") // then its own
	require.Equal(t, 0, code, out)
	id := 2
	require.Eventually(t, func() bool { id++; return strings.Contains(listed(id), `"blob"`) },
		10*time.Second, 50*time.Millisecond, "the bystander reloads its own state")

	hwm, err := procStatusKiB(s.proc.Cmd.Process.Pid, "VmHWM:")
	require.NoError(t, err)
	t.Logf("bystander's peak RSS %d KiB with another server's %d-byte catalog in the store", hwm, catalogBytes)
	assert.Less(t, hwm, 48<<10, "the bystander must not read another server's catalog")
}
