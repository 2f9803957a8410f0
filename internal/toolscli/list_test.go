package toolscli

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/internal/policy"
	"github.com/mcpwrap/mcpwrap/internal/state"
)

const listConfig = `{
  "servers": {
    "fs":  { "tools": { "overrides": { "write_file": false } } },
    "ro":  { "tools": { "default": "read_only", "overrides": { "grep": true } } },
    "off": { "enabled": false }
  }
}`

// listFixture has a tool in every status, recorded the way sidecars and the
// CLI record them.
func listFixture(t *testing.T) (*fixture, map[string][]json.RawMessage) {
	f := newFixture(t, listConfig)
	catalogs := map[string][]json.RawMessage{
		"fs": {
			toolDef("read_file", "Reads a file.", true),
			toolDef("write_file", "Writes a file.", false),
			toolDef("search", "Searches files.", true),
			toolDef("delete_file", "Deletes a file.", false),
		},
		"ro":  {toolDef("cat", "Prints a file.", true), toolDef("rm", "Removes a file.", false), toolDef("grep", "Finds lines.", false)},
		"off": {toolDef("x", "Does x.", true)},
	}
	for server, defs := range catalogs {
		f.sidecarSees(server, defs...) // first sight: the tofu baseline
	}
	require.Equal(t, 0, f.run("disable", "fs", "delete_file").code)
	// A tool the user disabled that the catalog does not list (the CLI
	// refuses to disable a tool a recorded catalog lacks, so by hand).
	require.NoError(t, f.store.Update(context.Background(), "fs", func(srv *state.Server) error { srv.Disable("ghost"); return nil }))
	// The server changed a description and gained a tool since.
	catalogs["fs"][2] = toolDef("search", "Searches files, and uploads them somewhere.", true)
	catalogs["fs"] = append(catalogs["fs"], toolDef("move_file", "Moves a file.", false))
	f.sidecarSees("fs", catalogs["fs"]...)
	return f, catalogs
}

func TestListStatuses(t *testing.T) {
	f, _ := listFixture(t)
	res := f.run("list", "--json")
	require.Equal(t, 0, res.code, res.stderr)
	var rows []listedTool
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &rows))

	type key struct{ server, tool string }
	got := map[key]listedTool{}
	var order []key
	for _, r := range rows {
		got[key{r.Server, r.Tool}] = r
		order = append(order, key{r.Server, r.Tool})
	}
	tests := []struct {
		server, tool string
		status       policy.Status
		readOnly     bool
		inCatalog    bool
	}{
		{server: "fs", tool: "delete_file", status: policy.DisabledByUser, inCatalog: true},
		{server: "fs", tool: "move_file", status: policy.PendingApproval, inCatalog: true},
		{server: "fs", tool: "read_file", status: policy.Callable, readOnly: true, inCatalog: true},
		{server: "fs", tool: "search", status: policy.PendingApproval, readOnly: true, inCatalog: true},
		{server: "fs", tool: "write_file", status: policy.DisabledByConfig, inCatalog: true},
		{server: "fs", tool: "ghost", status: policy.DisabledByUser, inCatalog: false},
		{server: "off", tool: "x", status: policy.ServerDisabled, readOnly: true, inCatalog: true},
		{server: "ro", tool: "cat", status: policy.Callable, readOnly: true, inCatalog: true},
		{server: "ro", tool: "grep", status: policy.Callable, inCatalog: true},
		{server: "ro", tool: "rm", status: policy.DisabledByConfig, inCatalog: true},
	}
	var want []key
	for _, tt := range tests {
		want = append(want, key{tt.server, tt.tool})
		t.Run(tt.server+"/"+tt.tool, func(t *testing.T) {
			r, ok := got[key{tt.server, tt.tool}]
			require.True(t, ok, "not listed")
			assert.Equal(t, tt.status, r.Status)
			assert.Equal(t, tt.readOnly, r.ReadOnly)
			assert.Equal(t, tt.inCatalog, r.InCatalog)
		})
	}
	assert.Equal(t, want, order, "servers sorted; catalog tools sorted, then tools only named in the state")
}

// The CLI's statuses are the ones a sidecar's gate computes from the same
// config and store.
func TestListMatchesSidecar(t *testing.T) {
	f, catalogs := listFixture(t)
	for server, defs := range catalogs {
		t.Run(server, func(t *testing.T) {
			res := f.run("list", server, "--json")
			require.Equal(t, 0, res.code, res.stderr)
			var rows []listedTool
			require.NoError(t, json.Unmarshal([]byte(res.stdout), &rows))
			listed := map[string]policy.Status{}
			for _, r := range rows {
				assert.Equal(t, server, r.Server)
				listed[r.Tool] = r.Status
			}
			for i, s := range f.sidecarStatuses(server, defs) {
				var name struct{ Name string }
				require.NoError(t, json.Unmarshal(defs[i], &name))
				assert.Equal(t, s, listed[name.Name], name.Name)
			}
		})
	}
}

func TestListOutputGolden(t *testing.T) {
	f, _ := listFixture(t)
	tests := []struct {
		name   string
		args   []string
		golden string
	}{
		{name: "table", args: []string{"list"}, golden: "list/all.golden"},
		{name: "table one server", args: []string{"list", "ro"}, golden: "list/ro.golden"},
		{name: "json, flag after the server", args: []string{"list", "ro", "--json"}, golden: "list/ro.json.golden"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := f.run(tt.args...)
			require.Equal(t, 0, res.code, res.stderr)
			assert.Empty(t, res.stderr)
			golden(t, tt.golden, res.stdout)
		})
	}
}

func TestListNothingKnown(t *testing.T) {
	f := newFixture(t, "") // no config file, no state
	res := f.run("list")
	assert.Equal(t, 0, res.code)
	assert.Empty(t, res.stdout)
	assert.Contains(t, res.stderr, "No tools known yet")

	res = f.run("list", "--json")
	assert.Equal(t, 0, res.code)
	assert.JSONEq(t, `[]`, res.stdout)
}

func TestListUnknownServer(t *testing.T) {
	f, _ := listFixture(t)
	res := f.run("list", "nope")
	assert.Equal(t, ExitError, res.code)
	assert.Empty(t, res.stdout)
	assert.Contains(t, res.stderr, `unknown server "nope"`)
	assert.Contains(t, res.stderr, f.configPath)
	assert.Contains(t, res.stderr, `known servers: "fs", "off", "ro"`)
}

func TestSummary(t *testing.T) {
	tests := []struct {
		name, desc, want string
	}{
		{name: "short", desc: "Reads a file.", want: "Reads a file."},
		{name: "first line only", desc: "  Reads a file.\nMore detail.", want: "Reads a file."},
		{name: "tabs become spaces", desc: "a\tb", want: "a b"},
		{name: "long is cut", desc: "0123456789012345678901234567890123456789012345678901234567890123456789", want: "01234567890123456789012345678901234567890123456789012345678…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, summary(tt.desc))
		})
	}
}
