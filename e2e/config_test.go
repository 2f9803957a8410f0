package e2e

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestConfigTypoFailsClosed: a typo in the config file does not end the
// session. The handshake is answered, no tool is callable, the discovery
// tool and every call quote the file, line and column; fixing the file
// brings the tools back with tools/list_changed.
func TestConfigTypoFailsClosed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p := newPolicyEnv(t, "{\n  \"servers\": {\n    \"notes\": {\"tools\": {\"defualt\": \"all\"}}\n  }\n}\n")
	path := strings.TrimPrefix(p.env[0], "MCPWRAP_CONFIG=")
	changed := make(chan struct{}, 4)
	cs := p.connect(ctx, t, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		changed <- struct{}{}
	}})

	assert.Equal(t, []string{"discover_tools"}, listNames(ctx, t, cs))
	text, res := callText(ctx, t, cs, "discover_tools", map[string]any{})
	assert.False(t, res.IsError)
	var answer struct {
		Notice string `json:"notice"`
	}
	require.NoError(t, json.Unmarshal([]byte(text), &answer), text)
	assert.Contains(t, answer.Notice, "mcpwrap's config file has an error: "+path+":3:25:")
	assert.Contains(t, answer.Notice, "fix it and the tools will appear")
	text, _ = callText(ctx, t, cs, "discover_tools", map[string]any{"include_disabled": true})
	assert.Contains(t, text, `"disabled_unknown"`)
	text, res = callText(ctx, t, cs, "echo", map[string]any{"text": "hi"})
	assert.True(t, res.IsError)
	assert.Contains(t, text, path+":3:25:")

	require.NoError(t, os.WriteFile(path, []byte(`{"servers": {"notes": {"tools": {"default": "all"}}}}`), 0o600))
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatal("no tools/list_changed after the config file was fixed")
	}
	assert.Contains(t, listNames(ctx, t, cs), "echo")
	text, res = callText(ctx, t, cs, "echo", map[string]any{"text": "back"})
	assert.False(t, res.IsError, text)
	assert.Equal(t, "back", text)
}
