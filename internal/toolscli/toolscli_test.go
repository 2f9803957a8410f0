package toolscli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/internal/state"
)

func TestUsage(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string // a part of it
		stderr string // a part of it
	}{
		{name: "no command", args: nil, code: ExitUsage, stderr: "Usage: mcpwrap tools COMMAND"},
		{name: "help", args: []string{"--help"}, code: ExitOK, stdout: "3  refused by operator policy"},
		{name: "help command", args: []string{"help"}, code: ExitOK, stdout: "approve SERVER (TOOL...|--all)"},
		{name: "unknown command", args: []string{"frobnicate"}, code: ExitUsage, stderr: `unknown command "frobnicate"`},
		{name: "command help", args: []string{"enable", "--help"}, code: ExitOK, stdout: "Usage: mcpwrap tools enable SERVER TOOL..."},
		{name: "command help lists the global flags", args: []string{"diff", "-h"}, code: ExitOK, stdout: "-state-dir string"},
		{name: "command help has the exit codes", args: []string{"list", "--help"}, code: ExitOK, stdout: "Exit codes:"},
		{name: "unknown flag", args: []string{"list", "--jsn"}, code: ExitUsage, stderr: "flag provided but not defined: -jsn"},
		{name: "too many operands", args: []string{"list", "a", "b"}, code: ExitUsage, stderr: "usage: mcpwrap tools list [SERVER] [--json]"},
		{name: "too few operands", args: []string{"enable", "s"}, code: ExitUsage, stderr: "usage: mcpwrap tools enable SERVER TOOL..."},
		{name: "diff takes one tool", args: []string{"diff", "s", "a", "b"}, code: ExitUsage, stderr: "usage: mcpwrap tools diff SERVER TOOL"},
		{name: "flag of another command", args: []string{"disable", "s", "a", "--all"}, code: ExitUsage, stderr: "-all"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, `{"servers": {"s": {}}}`)
			res := f.run(tt.args...)
			assert.Equal(t, tt.code, res.code)
			if tt.stdout != "" {
				assert.Contains(t, res.stdout, tt.stdout)
			}
			if tt.stderr != "" {
				assert.Contains(t, res.stderr, tt.stderr)
				assert.Empty(t, res.stdout)
			}
			assert.Nil(t, f.stateBytes(), "a usage error writes nothing")
		})
	}
}

// `--` ends the flags, so a tool named like a flag can be given.
func TestDoubleDashEndsFlags(t *testing.T) {
	f := newFixture(t, `{"servers": {"s": {}}}`)
	res := f.run("disable", "s", "--", "--json", "-x")
	require.Equal(t, 0, res.code, res.stderr)
	assert.Equal(t, []string{"--json", "-x"}, f.load("s").Disabled)
}

// --config and --state-dir win over the environment, as for the wrap command.
func TestFlagsOverrideEnvironment(t *testing.T) {
	f := newFixture(t, `{"servers": {"elsewhere": {}}}`) // the environment points here
	dir := t.TempDir()
	configPath := filepath.Join(dir, "other.json")
	require.NoError(t, os.WriteFile(configPath, []byte(`{"servers": {"s": {}}}`), 0o600))
	stateDir := filepath.Join(dir, "state")

	res := f.run("disable", "--config", configPath, "s", "a", "--state-dir", stateDir)
	require.Equal(t, 0, res.code, res.stderr)
	srv, err := state.Open(stateDir, nil).Load(context.Background(), "s")
	require.NoError(t, err)
	assert.Equal(t, []string{"a"}, srv.Disabled)
	assert.Nil(t, f.stateBytes(), "the environment's state dir is untouched")
}

func TestNoHome(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := Run(context.Background(), []string{"list"}, Env{}, &stdout, &stderr)
	assert.Equal(t, ExitError, code)
	assert.Contains(t, stderr.String(), "use --config or $MCPWRAP_CONFIG")
}

func TestInvalidConfig(t *testing.T) {
	f := newFixture(t, `{"servers": {"s": {"tools": {"defualt": "none"}}}}`)
	for _, args := range [][]string{{"list"}, {"disable", "s", "a"}} {
		res := f.run(args...)
		assert.Equal(t, ExitError, res.code, args)
		assert.Contains(t, res.stderr, f.configPath+":1:", args)
		assert.Contains(t, res.stderr, "defualt", args)
	}
	assert.Nil(t, f.stateBytes())
}

// A corrupt store is named, with how to fix it, by every command, and is
// never written.
func TestCorruptStore(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{name: "list", args: []string{"list"}},
		{name: "list json", args: []string{"list", "--json"}},
		{name: "list one server", args: []string{"list", "s"}},
		{name: "enable", args: []string{"enable", "s", "a"}},
		{name: "disable", args: []string{"disable", "s", "a"}},
		{name: "approve", args: []string{"approve", "s", "a"}},
		{name: "approve all", args: []string{"approve", "s", "--all"}},
		{name: "diff", args: []string{"diff", "s", "a"}},
	}
	// The server's file, or the version 1 file of every server, cut short.
	corrupts := []struct {
		path func(f *fixture) string
		data []byte
	}{
		{path: func(f *fixture) string { return f.store.Path("s") }, data: []byte(`{"server": "s", "version": 2, "disabled": ["a"]` + "\n")},
		{path: func(f *fixture) string { return filepath.Join(f.stateDir, state.LegacyFileName) },
			data: []byte(`{"version": 1, "servers": {"s": {"disabled": ["a"]` + "\n")},
	}
	for _, tt := range tests {
		for _, c := range corrupts {
			t.Run(tt.name, func(t *testing.T) {
				f := newFixture(t, `{"servers": {"s": {}}}`)
				path := c.path(f)
				require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
				require.NoError(t, os.WriteFile(path, c.data, 0o600))

				res := f.run(tt.args...)
				assert.Equal(t, ExitError, res.code)
				assert.Empty(t, res.stdout)
				assert.Contains(t, res.stderr, "state file "+path+" is unreadable")
				assert.Contains(t, res.stderr, "mcpwrap will not modify it")
				assert.Contains(t, res.stderr, "repair it by hand, or move it aside")
				after, err := os.ReadFile(path)
				require.NoError(t, err)
				assert.Equal(t, c.data, after, "the file is left as it was")
			})
		}
	}
}

// A --config file that does not exist is an error, as for the wrap command:
// silently using the defaults would judge tools by the wrong policy (and let
// `enable` pass a tool the intended config denies).
func TestMissingConfigFlag(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{name: "list", args: []string{"list"}},
		{name: "enable", args: []string{"enable", "s", "a"}},
		{name: "disable", args: []string{"disable", "s", "a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, `{"servers": {"s": {"tools": {"default": "none"}}}}`)
			require.NoError(t, f.store.Update(context.Background(), "s", func(srv *state.Server) error {
				srv.Disable("b") // the store knows the server
				return nil
			}))
			before := f.stateBytes()
			missing := filepath.Join(t.TempDir(), "typo.json")
			res := f.run(append(tt.args, "--config", missing)...)
			assert.Equal(t, ExitError, res.code)
			assert.Empty(t, res.stdout)
			assert.Contains(t, res.stderr, "--config "+missing+": no such file")
			assert.Equal(t, before, f.stateBytes(), "nothing is written")
		})
	}
}
