package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDisabledServerIsNeverStarted: a server that is `enabled: false` is not spawned, not even
// for a handshake, and a call is told server_disabled, also when the server could not start
// anyway (its load error would be news the operator does not need). Enabling it in the config
// file starts it without a restart of mcpwrap.
func TestDisabledServerIsNeverStarted(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	for _, tc := range []struct {
		name    string
		command []string
	}{
		{name: "missing", command: []string{"mcpwrap-e2e-no-such-command"}},
		{name: "notes", command: []string{mcpwrapPath, "demo-server", "--pid-file", pidFile}},
	} {
		env := mcpwrapEnv(t, `{"servers":{"`+tc.name+`":{"enabled":false}}}`)
		s := startLineSession(ctx, t, env, mcpwrapPath, wrapArgs(tc.name, tc.command...)...)
		requireResult(t, s.Initialize(ctx, t))
		res := callResult(ctx, t, s, 1, map[string]any{"name": "echo", "arguments": map[string]any{"text": "hi"}})
		assert.True(t, res.IsError, res.text())
		assert.Equal(t, "server_disabled", res.Meta["status"], res.text())
		assert.Equal(t, "permanent", res.Meta["class"], res.text())
		assert.Equal(t, false, res.Meta["retryable"], res.text())
		assert.Contains(t, res.text(), "servers."+tc.name+".enabled: true")
		assert.NotContains(t, res.text(), "command not found")
		assert.NoFileExists(t, pidFile, "the disabled server was started")

		if tc.name != "notes" {
			continue
		}
		// Enabled in the file: the server starts, and the client is told its tools changed.
		require.NoError(t, os.WriteFile(envValue(env, "MCPWRAP_CONFIG"), []byte(`{"servers":{"notes":{"enabled":true,"approval":"off"}}}`), 0o600))
		require.Eventually(t, func() bool {
			res := callResult(ctx, t, s, 2, map[string]any{"name": "echo", "arguments": map[string]any{"text": "hi"}})
			return !res.IsError && res.text() == "hi"
		}, 20*time.Second, 200*time.Millisecond, "the enabled server never answered")
		assert.FileExists(t, pidFile)
		var changed bool
		for _, l := range s.All() {
			var n struct{ Method string }
			changed = changed || json.Unmarshal(l, &n) == nil && n.Method == "notifications/tools/list_changed"
		}
		assert.True(t, changed, "the client is told its tools changed")
	}
}
