package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAnswersTable prints, with -v, the text and _meta the agent gets for a
// tool call under every failure class and every lock status, from real runs
// of mcpwrap (for the closing note), and checks that each carries
// class and retryable.
func TestAnswersTable(t *testing.T) {
	if !testing.Verbose() {
		t.Skip("prints a table: run with -v")
	}
	t.Parallel()
	forbidden := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "forbidden", http.StatusForbidden)
	}))
	t.Cleanup(forbidden.Close)
	as := startAuthServer(t)
	demo := []string{mcpwrapPath, "demo-server"}
	rows := []struct {
		row    string
		config string
		state  string // the server's state file, when set
		env    []string
		args   []string
		tool   string
	}{
		{row: "available (discover_tools)", config: `{}`, args: wrapArgs("notes", demo...), tool: "discover_tools"},
		{row: "transient", config: `{}`, args: append([]string{"--ready-timeout", "300ms"}, wrapArgs("slowcaps", append(fixtureCommand(t, fixtureSlowCaps), "20s")...)...), tool: "echo"},
		{row: "permanent", config: `{}`, args: wrapArgs("missing", "mcpwrap-e2e-no-such-command"), tool: "echo"},
		{row: "denied", config: `{}`, args: []string{"--name", "forbidden", "--url", forbidden.URL + "/mcp"}, tool: "echo"},
		{row: "login_required", config: `{}`, env: []string{"MCPWRAP_BROWSER=none", "MCPWRAP_TOKEN_STORE=file"},
			args: []string{"--name", "notes", "--url", as.URL + "/mcp", "--ready-timeout", "1s"}, tool: "whoami"},
		{row: "server_disabled", config: `{"servers":{"notes":{"enabled":false}}}`, args: wrapArgs("notes", demo...), tool: "echo"},
		{row: "disabled_by_config", config: `{"servers":{"notes":{"tools":{"overrides":{"echo":false}}}}}`, args: wrapArgs("notes", demo...), tool: "echo"},
		{row: "disabled_by_user", config: `{}`, state: `{"server":"notes","version":2,"disabled":["echo"]}`, args: wrapArgs("notes", demo...), tool: "echo"},
		{row: "pending_approval", config: `{"servers":{"notes":{"approval":"manual"}}}`, args: wrapArgs("notes", demo...), tool: "echo"},
		{row: "disabled_unknown (store unreadable)", config: `{}`, state: `{"server":"notes","version":2,"disabled":[`, args: wrapArgs("notes", demo...), tool: "echo"},
	}
	out := make([]string, len(rows))
	for i, r := range rows {
		t.Run(r.row, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
			defer cancel()
			env := append(mcpwrapEnv(t, r.config), r.env...)
			if r.state != "" {
				dir := filepath.Join(strings.TrimPrefix(env[1], "MCPWRAP_STATE_DIR="), "servers")
				require.NoError(t, os.MkdirAll(dir, 0o700))
				require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.json"), []byte(r.state), 0o600))
			}
			s := startLineSession(ctx, t, env, mcpwrapPath, r.args...)
			s.Initialize(ctx, t)
			var res toolResult
			for id := 1; ; id++ { // until the load has an outcome (a sign-in, a denial)
				res = callResult(ctx, t, s, id, map[string]any{"name": r.tool, "arguments": map[string]any{}})
				if r.row == "transient" || !strings.Contains(res.text(), "still starting up") {
					break
				}
			}
			meta, err := json.Marshal(res.Meta)
			require.NoError(t, err)
			if r.tool == "discover_tools" {
				var d struct {
					StructuredContent struct{ Server json.RawMessage } `json:"structuredContent"`
				}
				raw := decodeResponse(t, s.Call(ctx, t, 99, "tools/call", map[string]any{"name": r.tool, "arguments": map[string]any{}}))
				require.NoError(t, json.Unmarshal(raw.Result, &d))
				out[i] = "| " + r.row + " | (discover_tools' server) | " + string(d.StructuredContent.Server) + " |"
				return
			}
			assert.True(t, res.IsError)
			assert.Contains(t, res.Meta, "class")
			assert.Contains(t, res.Meta, "retryable")
			out[i] = "| " + r.row + " | " + strings.ReplaceAll(res.text(), "|", `\|`) + " | `" + string(meta) + "` |"
		})
	}
	t.Cleanup(func() { t.Log("\n| case | text | _meta |\n|---|---|---|\n" + strings.Join(out, "\n")) })
}
