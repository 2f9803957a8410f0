package toolscli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/internal/audit"
	"github.com/mcpwrap/mcpwrap/internal/config"
	"github.com/mcpwrap/mcpwrap/internal/policy"
	"github.com/mcpwrap/mcpwrap/internal/state"
	"github.com/mcpwrap/mcpwrap/internal/tooldef"
)

func TestEnableRefusedByOperatorPolicy(t *testing.T) {
	tests := []struct {
		name   string
		config string
		tool   string // disabled by the user beforehand, so enabling would change the store
		lock   policy.Status
	}{
		{
			name:   "override false",
			config: `{"servers": {"s": {"tools": {"overrides": {"write_*": false}}}}}`,
			tool:   "write_file",
			lock:   policy.DisabledByConfig,
		},
		{
			name:   "read_only default excludes a writing tool",
			config: `{"servers": {"s": {"tools": {"default": "read_only"}}}}`,
			tool:   "write_file",
			lock:   policy.DisabledByConfig,
		},
		{
			name:   "none default",
			config: `{"defaults": {"tools": {"default": "none"}}, "servers": {"s": {}}}`,
			tool:   "read_file",
			lock:   policy.DisabledByConfig,
		},
		{
			name:   "server disabled",
			config: `{"servers": {"s": {"enabled": false}}}`,
			tool:   "read_file",
			lock:   policy.ServerDisabled,
		},
		{
			name:   "tool not in the catalog, denied whatever its annotations",
			config: `{"servers": {"s": {"tools": {"default": "none", "overrides": {"read_file": true}}}}}`,
			tool:   "ghost",
			lock:   policy.DisabledByConfig,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.config)
			f.record("s", toolDef("read_file", "Reads.", true), toolDef("write_file", "Writes.", false))
			f.edit("s", func(srv *state.Server) { srv.Disable(tt.tool) })
			before := f.stateBytes()

			res := f.run("enable", "s", tt.tool)
			assert.Equal(t, ExitRefused, res.code)
			assert.Empty(t, res.stdout)
			assert.Contains(t, res.stderr, "refused to enable s/"+tt.tool)
			assert.Contains(t, res.stderr, policy.RemediationFor(tt.lock, "s", tt.tool))
			assert.Contains(t, res.stderr, f.configPath)
			assert.Equal(t, before, f.stateBytes(), "nothing written")
		})
	}
}

// A refusal applies to its tool only: the others of the same command are
// enabled, and the exit code still says something was refused.
func TestEnableRefusesOnlyTheDeniedTool(t *testing.T) {
	f := newFixture(t, `{"servers": {"s": {"tools": {"overrides": {"write_file": false}}}}}`)
	f.record("s", toolDef("read_file", "Reads.", true), toolDef("write_file", "Writes.", false))
	f.edit("s", func(srv *state.Server) {
		srv.Disable("read_file")
		srv.Disable("write_file")
	})

	res := f.run("enable", "s", "write_file", "read_file")
	assert.Equal(t, ExitRefused, res.code)
	assert.Equal(t, "s/read_file: enabled\n", res.stdout)
	assert.Equal(t, []string{"write_file"}, f.load("s").Disabled)
}

func TestDisableEnableRoundTrip(t *testing.T) {
	f := newFixture(t, `{"servers": {"s": {}}}`)
	f.sidecarSees("s", toolDef("a", "A.", true), toolDef("b", "B.", false))
	status := func(tool string) policy.Status {
		t.Helper()
		v, err := NewTools(mustConfig(t, f), nil, nil).view("s", f.load("s"))
		require.NoError(t, err)
		return v.status(tool)
	}

	steps := []struct {
		args           []string
		stdout, stderr string
		disabled       []string
	}{
		{args: []string{"disable", "s", "a", "b"}, stdout: "s/a: disabled\ns/b: disabled\n", disabled: []string{"a", "b"}},
		{args: []string{"disable", "s", "a"}, stdout: "s/a: was already disabled\n", disabled: []string{"a", "b"}},
		{args: []string{"enable", "s", "a"}, stdout: "s/a: enabled\n", disabled: []string{"b"}},
		{args: []string{"enable", "s", "a"}, stdout: "s/a: was not disabled\n", disabled: []string{"b"}},
		{args: []string{"enable", "s", "b"}, stdout: "s/b: enabled\n", disabled: nil},
	}
	for _, step := range steps {
		res := f.run(step.args...)
		require.Equal(t, 0, res.code, "%v: %s", step.args, res.stderr)
		assert.Equal(t, step.stdout, res.stdout, step.args)
		if step.stderr == "" {
			assert.Empty(t, res.stderr, step.args)
		} else {
			assert.Contains(t, res.stderr, step.stderr, step.args)
		}
		assert.Equal(t, step.disabled, f.load("s").Disabled, step.args)
		for _, tool := range []string{"a", "b"} {
			want := policy.Callable
			if f.load("s").IsDisabled(tool) {
				want = policy.DisabledByUser
			}
			assert.Equal(t, want, status(tool), "%v: %s", step.args, tool)
		}
	}
}

// TestUnknownToolIsRefused: once a server's catalog is recorded, a tool it
// lacks and the user never disabled is unknown: disable and enable exit 1
// (as the README's exit-code table says), name the tool and write nothing.
// A tool the user disabled that has since left the catalog can still be
// enabled, and before any catalog was recorded a tool may be disabled
// ahead of the server's first load, with a warning.
func TestUnknownToolIsRefused(t *testing.T) {
	f := newFixture(t, `{"servers": {"s": {}, "fresh": {}}}`)
	f.sidecarSees("s", toolDef("a", "A.", true))
	require.NoError(t, f.store.Update(context.Background(), "s", func(srv *state.Server) error { srv.Disable("gone"); return nil }))

	tests := []struct {
		args           []string
		code           int
		stdout, stderr string
		disabled       []string // of server s afterwards
	}{
		{args: []string{"disable", "s", "a", "no_such_tool"}, code: ExitError,
			stderr: `server "s" has no tool "no_such_tool" in its last catalog`, disabled: []string{"gone"}},
		{args: []string{"enable", "s", "no_such_tool"}, code: ExitError,
			stderr: `server "s" has no tool "no_such_tool" in its last catalog`, disabled: []string{"gone"}},
		{args: []string{"disable", "s", "gone"}, code: ExitOK, stdout: "s/gone: was already disabled\n",
			stderr: `warning: s/gone: not in the last catalog of server "s"`, disabled: []string{"gone"}},
		{args: []string{"enable", "s", "gone"}, code: ExitOK, stdout: "s/gone: enabled\n",
			stderr: `warning: s/gone: not in the last catalog of server "s"`, disabled: nil},
		{args: []string{"disable", "fresh", "later"}, code: ExitOK, stdout: "fresh/later: disabled\n",
			stderr: `warning: fresh/later: no catalog of server "fresh" was recorded yet`, disabled: nil},
	}
	for _, tt := range tests {
		res := f.run(tt.args...)
		assert.Equal(t, tt.code, res.code, "%v: %s", tt.args, res.stderr)
		assert.Equal(t, tt.stdout, res.stdout, tt.args)
		assert.Contains(t, res.stderr, tt.stderr, tt.args)
		assert.Equal(t, tt.disabled, f.load("s").Disabled, tt.args)
	}
	assert.Equal(t, []string{"later"}, f.load("fresh").Disabled)
}

// Enabling a tool that something else still locks says so, and how to
// unlock it.
func TestEnableNotesWhatStillLocks(t *testing.T) {
	f := newFixture(t, `{"servers": {"s": {}}}`)
	f.sidecarSees("s", toolDef("a", "A.", true))
	f.sidecarSees("s", toolDef("a", "A, changed.", true))
	f.edit("s", func(srv *state.Server) { srv.Disable("a") })

	res := f.run("enable", "s", "a")
	require.Equal(t, 0, res.code, res.stderr)
	assert.Equal(t, "s/a: enabled\ns/a: still locked (pending_approval): "+
		"review it with 'mcpwrap tools diff s a', then approve it with: mcpwrap tools approve s a\n", res.stdout)
}

func TestApprove(t *testing.T) {
	var (
		a1 = toolDef("a", "A.", true)
		a2 = toolDef("a", "A, changed.", true)
		b1 = toolDef("b", "B.", true)
		b2 = toolDef("b", "B, changed.", true)
		c1 = toolDef("c", "C.", true)
		d1 = toolDef("d", "D, new.", true)
	)
	approval := func(def json.RawMessage, at time.Time) state.Approval {
		d, err := tooldef.Parse(def)
		require.NoError(t, err)
		return state.Approval{ApprovedAt: at, Definition: def, Hash: d.Hash}
	}
	baseline := map[string]state.Approval{"a": approval(a1, approvedAt), "b": approval(b1, approvedAt), "c": approval(c1, approvedAt)}
	tofu := `{"servers": {"s": {}}}`

	tests := []struct {
		name       string
		config     string
		noBaseline bool     // no approval recorded yet
		disabled   []string // disabled by the user beforehand
		args       []string
		code       int
		stdout     string
		stderr     string // a part of it
		approvals  map[string]state.Approval
		statuses   map[string]policy.Status
	}{
		{
			name:      "one tool",
			config:    tofu,
			args:      []string{"approve", "s", "a"},
			stdout:    "s/a: approved\n",
			approvals: map[string]state.Approval{"a": approval(a2, now), "b": baseline["b"], "c": baseline["c"]},
			statuses:  map[string]policy.Status{"a": policy.Callable, "b": policy.PendingApproval, "c": policy.Callable, "d": policy.PendingApproval},
		},
		{
			name:   "several tools",
			config: tofu,
			args:   []string{"approve", "s", "d", "a"},
			stdout: "s/d: approved\ns/a: approved\n",
			approvals: map[string]state.Approval{
				"a": approval(a2, now), "b": baseline["b"], "c": baseline["c"], "d": approval(d1, now),
			},
			statuses: map[string]policy.Status{"a": policy.Callable, "b": policy.PendingApproval, "c": policy.Callable, "d": policy.Callable},
		},
		{
			name:   "all",
			config: tofu,
			args:   []string{"approve", "--all", "s"},
			stdout: "s/a: approved\ns/b: approved\ns/c: already approved (2026-03-01T08:00:00Z)\ns/d: approved\n",
			approvals: map[string]state.Approval{
				"a": approval(a2, now), "b": approval(b2, now), "c": baseline["c"], "d": approval(d1, now),
			},
			statuses: map[string]policy.Status{"a": policy.Callable, "b": policy.Callable, "c": policy.Callable, "d": policy.Callable},
		},
		{
			name:      "a tool not in the catalog approves nothing",
			config:    tofu,
			args:      []string{"approve", "s", "a", "nosuch", "gone"},
			code:      ExitError,
			stderr:    `server "s" has no tools "nosuch", "gone" in its last catalog (seen 2026-04-01T09:00:00Z)`,
			approvals: baseline,
		},
		{
			name:      "unknown server",
			config:    tofu,
			args:      []string{"approve", "t", "a"},
			code:      ExitError,
			stderr:    `unknown server "t"`,
			approvals: baseline,
		},
		{
			name:      "tools and --all",
			config:    tofu,
			args:      []string{"approve", "s", "a", "--all"},
			code:      ExitUsage,
			stderr:    "either tool names or --all",
			approvals: baseline,
		},
		{
			name:      "neither tools nor --all",
			config:    tofu,
			args:      []string{"approve", "s"},
			code:      ExitUsage,
			stderr:    "name the tools to approve, or use --all",
			approvals: baseline,
		},
		{
			name:       "tofu without a baseline records the whole catalog",
			config:     tofu,
			noBaseline: true,
			args:       []string{"approve", "s", "a"},
			stdout:     "s/a: approved\n",
			stderr:     `server "s" had no approval baseline: recorded all 4 tools`,
			approvals: map[string]state.Approval{
				"a": approval(a2, now), "b": approval(b2, now), "c": approval(c1, now), "d": approval(d1, now),
			},
			statuses: map[string]policy.Status{"a": policy.Callable, "b": policy.Callable, "c": policy.Callable, "d": policy.Callable},
		},
		{
			name:       "manual approves only what is named",
			config:     `{"servers": {"s": {"approval": "manual"}}}`,
			noBaseline: true,
			args:       []string{"approve", "s", "a"},
			stdout:     "s/a: approved\n",
			approvals:  map[string]state.Approval{"a": approval(a2, now)},
			statuses:   map[string]policy.Status{"a": policy.Callable, "b": policy.PendingApproval, "c": policy.PendingApproval, "d": policy.PendingApproval},
		},
		{
			name:      "says what still locks the tool",
			config:    tofu,
			disabled:  []string{"a"},
			args:      []string{"approve", "s", "a"},
			stdout:    "s/a: approved\ns/a: still locked (disabled_by_user): enable it with: mcpwrap tools enable s a\n",
			approvals: map[string]state.Approval{"a": approval(a2, now), "b": baseline["b"], "c": baseline["c"]},
			statuses:  map[string]policy.Status{"a": policy.DisabledByUser},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.config)
			f.record("s", a2, b2, c1, d1)
			if !tt.noBaseline {
				f.approve("s", a1)
				f.approve("s", b1)
				f.approve("s", c1)
			}
			f.edit("s", func(srv *state.Server) {
				for _, tool := range tt.disabled {
					srv.Disable(tool)
				}
			})

			res := f.run(tt.args...)
			assert.Equal(t, tt.code, res.code, res.stderr)
			assert.Equal(t, tt.stdout, res.stdout)
			if tt.stderr == "" {
				assert.Empty(t, res.stderr)
			} else {
				assert.Contains(t, res.stderr, tt.stderr)
			}
			srv := f.load("s")
			got := srv.Approvals
			require.Len(t, got, len(tt.approvals))
			for tool, want := range tt.approvals {
				assert.Equal(t, want.Hash, got[tool].Hash, tool)
				assert.JSONEq(t, string(want.Definition), string(got[tool].Definition), tool)
				assert.True(t, want.ApprovedAt.Equal(got[tool].ApprovedAt), "%s approved at %v", tool, got[tool].ApprovedAt)
			}
			v, err := NewTools(mustConfig(t, f), nil, nil).view("s", srv)
			require.NoError(t, err)
			for tool, want := range tt.statuses {
				assert.Equal(t, want, v.status(tool), tool)
			}
		})
	}
}

func TestApproveWithoutCatalog(t *testing.T) {
	f := newFixture(t, `{"servers": {"s": {}}}`)
	res := f.run("approve", "s", "--all")
	assert.Equal(t, ExitError, res.code)
	assert.Contains(t, res.stderr, `nothing to approve: no catalog of server "s" was recorded yet`)
	assert.Nil(t, f.stateBytes())
}

// mustConfig loads the fixture's config file.
func mustConfig(t *testing.T, f *fixture) *config.File {
	t.Helper()
	file, err := config.Load(f.configPath)
	require.NoError(t, err)
	return file
}

func TestConcurrentDisable(t *testing.T) {
	f := newFixture(t, `{"servers": {"s": {}}}`)
	const n = 8
	var defs []json.RawMessage
	for i := range n {
		defs = append(defs, toolDef(fmt.Sprintf("tool%d", i), "T.", true))
	}
	f.sidecarSees("s", defs...)
	codes := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			var stdout, stderr bytes.Buffer
			codes[i] = Run(context.Background(), []string{"disable", "s", fmt.Sprintf("tool%d", i)}, f.env(), &stdout, &stderr)
		})
	}
	wg.Wait()
	want := make([]string, n)
	for i := range n {
		assert.Equal(t, 0, codes[i])
		want[i] = fmt.Sprintf("tool%d", i)
	}
	assert.Equal(t, want, f.load("s").Disabled)
}

// Every change the commands write is audited, with who made it; what
// changes nothing is not.
func TestChangesAreAudited(t *testing.T) {
	f := newFixture(t, `{"audit_log": "audit.jsonl", "servers": {"s": {"approval": "manual"}}}`)
	f.sidecarSees("s", toolDef("a", "A.", true), toolDef("b", "B.", false))
	for _, args := range [][]string{
		{"disable", "s", "a"}, {"disable", "s", "a"}, {"enable", "s", "a"}, {"approve", "s", "b"},
	} {
		res := f.run(args...)
		require.Equal(t, 0, res.code, "%v: %s", args, res.stderr)
	}
	raw, err := os.ReadFile(filepath.Join(filepath.Dir(f.configPath), "audit.jsonl"))
	require.NoError(t, err)
	var got []string
	for line := range strings.Lines(string(raw)) {
		var r audit.Record
		require.NoError(t, json.Unmarshal([]byte(line), &r))
		assert.Equal(t, "mcpwrap tools", r.By.Program)
		assert.Equal(t, os.Getpid(), r.By.PID)
		assert.Equal(t, now, r.Time.UTC())
		got = append(got, r.Event+" "+r.Server+"/"+r.Tool+" "+r.Action)
	}
	assert.Equal(t, []string{"toggle s/a disable", "toggle s/a enable", "approve s/b approve"}, got)
}
