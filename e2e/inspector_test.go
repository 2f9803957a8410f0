package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// inspectorToolNotFound is the inspector CLI's exit code when the tool to call is not in
// tools/list (it checks before calling).
const inspectorToolNotFound = 5

// inspector runs `@modelcontextprotocol/inspector --cli` in JSON mode. Its stdio transport hands
// the server a minimal environment (HOME, PATH, SHELL, TERM) plus its -e entries, so the
// hermetic mcpwrap settings travel as -e.
type inspector struct {
	t    *testing.T
	home string   // the inspector's HOME, so it reads and writes no real user state
	env  []string // KEY=VALUE entries for the target server, passed as -e
}

func newInspector(t *testing.T, serverEnv ...string) *inspector {
	t.Helper()
	return &inspector{
		t:    t,
		home: t.TempDir(),
		env:  append(mcpwrapEnv(t, `{}`), serverEnv...),
	}
}

// inspectorResult is one inspector run: its exit code and the JSON it printed (the answer,
// wrapped as {"result": …}, or {"error": {"code", "message"}}).
type inspectorResult struct {
	ExitCode int
	Result   json.RawMessage `json:"result"`
	Error    json.RawMessage `json:"error"`
}

// Run runs the inspector with options (its own flags, e.g. --method) against target, a command
// line. It fails the test only when the inspector could not run or printed no JSON.
func (in *inspector) Run(ctx context.Context, target []string, options ...string) inspectorResult {
	in.t.Helper()
	args := []string{npmBin(in.t, "@modelcontextprotocol/inspector", "mcp-inspector"), "--cli", "--format", "json"}
	for _, kv := range in.env {
		args = append(args, "-e", kv)
	}
	args = append(args, options...)
	args = append(args, "--")
	args = append(args, target...)

	p := startProcess(ctx, in.t, processOptions{Env: []string{"HOME=" + in.home}}, nodePath(in.t), args...)
	err := p.Wait(ctx)
	var res inspectorResult
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		res.ExitCode = exit.ExitCode()
	case err != nil:
		require.NoError(in.t, err, "inspector %s", strings.Join(options, " "))
	}
	// The answer is on stdout; a failure's {"error": …} envelope is the last line on stderr.
	out := strings.TrimSpace(p.Output())
	if out == "" && res.ExitCode != 0 {
		stderr := strings.Split(strings.TrimSpace(p.Stderr()), "\n")
		out = stderr[len(stderr)-1]
	}
	require.NoError(in.t, json.Unmarshal([]byte(out), &res), "inspector %s: exit %d, output %q\nstderr:\n%s",
		strings.Join(options, " "), res.ExitCode, out, p.Stderr())
	return res
}

// wrapped returns the command line that runs upstream behind mcpwrap.
func wrapped(name string, upstream ...string) []string {
	return append([]string{mcpwrapPath}, wrapArgs(name, upstream...)...)
}

// TestInspectorServerEverything lists server-everything's tools with and without mcpwrap, and
// calls echo through it.
func TestInspectorServerEverything(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	in := newInspector(t)
	server := []string{nodePath(t), npmBin(t, "@modelcontextprotocol/server-everything", "mcp-server-everything")}

	direct := in.Run(ctx, server, "--method", "tools/list")
	require.Zero(t, direct.ExitCode, "direct tools/list: %s", direct.Error)
	through := in.Run(ctx, wrapped("everything", server...), "--method", "tools/list")
	require.Zero(t, through.ExitCode, "wrapped tools/list: %s", through.Error)
	assert.JSONEq(t, string(direct.Result), string(through.Result), "tools/list through mcpwrap")
	assert.Equal(t, toolNames(t, direct.Result), toolNames(t, through.Result))

	echo := in.Run(ctx, wrapped("everything", server...),
		"--method", "tools/call", "--tool-name", "echo", "--tool-arg", "message=hello through mcpwrap")
	require.Zero(t, echo.ExitCode, "echo: %s", echo.Error)
	assert.Equal(t, []string{"Echo: hello through mcpwrap"}, resultTexts(t, echo.Result))

	missing := in.Run(ctx, wrapped("everything", server...), "--method", "tools/call", "--tool-name", "no_such_tool")
	assert.Equal(t, inspectorToolNotFound, missing.ExitCode, "calling an unknown tool: %s", missing.Error)
	assert.Contains(t, string(missing.Error), "tool_not_found")
}

// TestInspectorServerFilesystem reads a file in a temporary directory through mcpwrap.
func TestInspectorServerFilesystem(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	root := t.TempDir()
	file := filepath.Join(root, "greeting.txt")
	require.NoError(t, os.WriteFile(file, []byte("hello from a temp dir\n"), 0o600))
	server := []string{nodePath(t), npmBin(t, "@modelcontextprotocol/server-filesystem", "mcp-server-filesystem"), root}

	res := newInspector(t).Run(ctx, wrapped("filesystem", server...),
		"--method", "tools/call", "--tool-name", "read_text_file", "--tool-arg", "path="+file)
	require.Zero(t, res.ExitCode, "read_text_file: %s", res.Error)
	assert.Equal(t, []string{"hello from a temp dir\n"}, resultTexts(t, res.Result))
}

// TestInspectorServerMemory creates an entity through one mcpwrap process and reads it back
// through another (the graph persists in MEMORY_FILE_PATH, in a temporary directory).
func TestInspectorServerMemory(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	in := newInspector(t, "MEMORY_FILE_PATH="+filepath.Join(t.TempDir(), "memory.jsonl"))
	server := wrapped("memory", nodePath(t), npmBin(t, "@modelcontextprotocol/server-memory", "mcp-server-memory"))

	created := in.Run(ctx, server, "--method", "tools/call", "--tool-name", "create_entities",
		"--tool-args-json", `{"entities":[{"name":"mcpwrap","entityType":"sidecar","observations":["relays MCP byte for byte"]}]}`)
	require.Zero(t, created.ExitCode, "create_entities: %s", created.Error)

	opened := in.Run(ctx, server, "--method", "tools/call", "--tool-name", "open_nodes",
		"--tool-args-json", `{"names":["mcpwrap"]}`)
	require.Zero(t, opened.ExitCode, "open_nodes: %s", opened.Error)
	texts := resultTexts(t, opened.Result)
	require.Len(t, texts, 1)
	var graph struct {
		Entities []struct {
			Name         string   `json:"name"`
			EntityType   string   `json:"entityType"`
			Observations []string `json:"observations"`
		} `json:"entities"`
	}
	require.NoError(t, json.Unmarshal([]byte(texts[0]), &graph), "open_nodes text: %s", texts[0])
	require.Len(t, graph.Entities, 1)
	assert.Equal(t, "mcpwrap", graph.Entities[0].Name)
	assert.Equal(t, "sidecar", graph.Entities[0].EntityType)
	assert.Equal(t, []string{"relays MCP byte for byte"}, graph.Entities[0].Observations)
}

// toolNames returns the tool names of a tools/list result, in order.
func toolNames(t *testing.T, result json.RawMessage) []string {
	t.Helper()
	var list struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	require.NoError(t, json.Unmarshal(result, &list))
	names := make([]string, 0, len(list.Tools))
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	return names
}

// resultTexts returns the text blocks of a tools/call result.
func resultTexts(t *testing.T, result json.RawMessage) []string {
	t.Helper()
	var call struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	}
	require.NoError(t, json.Unmarshal(result, &call))
	var texts []string
	for _, c := range call.Content {
		if c.Type == "text" {
			texts = append(texts, c.Text)
		}
	}
	return texts
}
