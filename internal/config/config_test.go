package config

import (
	"errors"
	"github.com/mcpwrap/mcpwrap/internal/erabridge"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/internal/policy"
)

func TestDefault(t *testing.T) {
	t.Parallel()
	want := Server{
		Name:         "fs",
		Enabled:      true,
		Tools:        policy.Rules{Default: policy.DefaultAll},
		Approval:     policy.ApprovalTOFU,
		ReadyTimeout: 30 * time.Second,
		Retry: Retry{
			Initial: 250 * time.Millisecond, MaxInterval: 5 * time.Second, Multiplier: 2,
			Jitter: 0.5, MaxAttempts: 6, MaxElapsed: 30 * time.Second,
		},
		DiscoveryTool: "discover_tools",
		Discovery:     DiscoveryAuto,
		MaxLineBytes:  64 << 20,

		MaxHeldRequests: 256,
		MaxHeldBytes:    64 << 20,
		MaxInFlight:     4096,
		MaxCatalogBytes: 64 << 20,

		UpstreamProtocol: erabridge.Auto,
	}
	assert.Equal(t, want, Default("fs"))
	var missing *File
	assert.Equal(t, want, missing.Server("fs"), "a nil File is all defaults")
	assert.Empty(t, missing.Names())
	assert.False(t, missing.Has("fs"))

	empty, err := Parse("config.json", []byte(`{}`))
	require.NoError(t, err)
	assert.Equal(t, want, empty.Server("fs"))
}

func TestLoadMissingFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "nope", "config.json")
	f, err := Load(path)
	require.NoError(t, err)
	assert.False(t, f.Found)
	assert.Equal(t, path, f.Path)
	assert.Equal(t, Default("fs"), f.Server("fs"))
}

// A config symlinked to a file that is gone (dotfiles moved) is broken, not
// missing: falling back to the defaults would silently drop operator policy
// and switch on every tool it turned off.
func TestLoadDanglingSymlink(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "config.json")
	require.NoError(t, os.Symlink(filepath.Join(dir, "dotfiles", "mcpwrap.json"), path))
	_, err := Load(path)
	require.ErrorIs(t, err, ErrInvalid)
	var cfgErr *Error
	require.ErrorAs(t, err, &cfgErr)
	assert.Equal(t, path, cfgErr.File)
	assert.Contains(t, err.Error(), "symbolic link")
}

func TestLoadUnreadable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir() // reading a directory fails, even as root
	_, err := Load(dir)
	require.ErrorIs(t, err, ErrInvalid)
	var cfgErr *Error
	require.ErrorAs(t, err, &cfgErr)
	assert.Equal(t, dir, cfgErr.File)
	assert.Zero(t, cfgErr.Line)
	assert.Equal(t, dir+": cannot read the config file: is a directory", err.Error())
	var pathErr *os.PathError
	assert.ErrorAs(t, err, &pathErr, "the cause stays reachable")
}

func TestLoadDesignExample(t *testing.T) {
	t.Parallel()
	f, err := Load(filepath.Join("testdata", "design.json"))
	require.NoError(t, err)
	assert.True(t, f.Found)
	assert.Equal(t, []string{"filesystem"}, f.Names())
	assert.True(t, f.Has("filesystem"))
	assert.False(t, f.Has("other"))

	want := Default("filesystem")
	want.Tools.Overrides = map[string]bool{"write_file": false, "move_*": false}
	want.Env = map[string]string{"ROOT": "/home/me"}
	assert.Equal(t, want, f.Server("filesystem"))
	assert.Equal(t, Default("other"), f.Server("other"))
}

func TestServerMerge(t *testing.T) {
	t.Parallel()
	f, err := Load(filepath.Join("testdata", "full.json"))
	require.NoError(t, err)
	assert.Equal(t, []string{"local", "remote"}, f.Names())

	inherited := Server{
		Name:    "remote",
		Enabled: true,
		Tools: policy.Rules{
			Default:   policy.DefaultReadOnly,
			Overrides: map[string]bool{"delete_*": false, "search": true},
		},
		Approval:     policy.ApprovalManual,
		ReadyTimeout: 20 * time.Second,
		Retry: Retry{
			Initial: 100 * time.Millisecond, MaxInterval: 2 * time.Second, Multiplier: 1.5,
			Jitter: 0.25, MaxAttempts: 4, MaxElapsed: 10 * time.Second,
		},
		RetryRefused:  true,
		Env:           map[string]string{"LOG_LEVEL": "info", "REGION": "eu"},
		DiscoveryTool: "find_tools",
		Discovery:     DiscoveryAlways,
		MaxLineBytes:  1 << 20,

		MaxHeldRequests: 16,
		MaxHeldBytes:    8 << 20,
		MaxInFlight:     64,
		MaxCatalogBytes: 1 << 20,

		UpstreamProtocol: erabridge.Stateless,
	}
	tests := []struct {
		name   string
		server string
		want   Server
	}{
		{name: "an empty entry inherits every default", server: "remote", want: inherited},
		{name: "a server the file does not name inherits too", server: "unnamed", want: func() Server {
			s := inherited
			s.Name = "unnamed"
			return s
		}()},
		{name: "set values override, false and zero included; maps merge key by key", server: "local", want: func() Server {
			s := inherited
			s.Name = "local"
			s.Enabled = false
			s.Tools.Overrides = map[string]bool{"delete_*": false, "search": false, "write_note": true}
			s.Approval = policy.ApprovalOff
			s.Retry.MaxAttempts = 1
			s.Retry.Jitter = 0
			s.RetryRefused = false
			s.Env = map[string]string{"LOG_LEVEL": "info", "REGION": "us", "TOKEN": ""}
			s.Discovery = DiscoveryNever
			s.MaxHeldRequests = 4
			s.UpstreamProtocol = erabridge.Session
			return s
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, f.Server(tt.server))
		})
	}
}

func TestServerReturnsFreshMaps(t *testing.T) {
	t.Parallel()
	f, err := Load(filepath.Join("testdata", "full.json"))
	require.NoError(t, err)
	s := f.Server("local")
	s.Env["REGION"] = "mutated"
	s.Tools.Overrides["search"] = true
	again := f.Server("local")
	assert.Equal(t, "us", again.Env["REGION"])
	assert.False(t, again.Tools.Overrides["search"])
}

func TestServerRulesCompile(t *testing.T) {
	t.Parallel()
	f, err := Load(filepath.Join("testdata", "full.json"))
	require.NoError(t, err)
	for _, name := range f.Names() {
		s := f.Server(name)
		_, err := policy.NewEvaluator(policy.Options{ServerDisabled: !s.Enabled, Rules: s.Tools, Approval: s.Approval})
		assert.NoError(t, err, name)
	}
}

func TestErrorFormat(t *testing.T) {
	t.Parallel()
	cause := errors.New("boom")
	err := &Error{File: "c.json", Line: 3, Column: 4, Key: "k", Msg: "bad", Err: cause}
	assert.Equal(t, "c.json:3:4: bad", err.Error())
	assert.ErrorIs(t, err, ErrInvalid)
	assert.ErrorIs(t, err, cause)
	assert.Equal(t, "c.json: bad", (&Error{File: "c.json", Msg: "bad"}).Error())
}

func TestCallTimeout(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		input   string
		server  string
		want    time.Duration
		wantErr string
	}{
		{name: "default is none", input: `{}`, server: "fs", want: 0},
		{name: "from defaults", input: `{"defaults": {"call_timeout": "2m"}}`, server: "fs", want: 2 * time.Minute},
		{name: "per server", input: `{"defaults": {"call_timeout": "2m"}, "servers": {"fs": {"call_timeout": "30s"}}}`, server: "fs", want: 30 * time.Second},
		{name: "zero turns a default off", input: `{"defaults": {"call_timeout": "2m"}, "servers": {"fs": {"call_timeout": "0s"}}}`, server: "fs", want: 0},
		{name: "other servers keep the default", input: `{"defaults": {"call_timeout": "2m"}, "servers": {"fs": {"call_timeout": "0s"}}}`, server: "git", want: 2 * time.Minute},
		{name: "negative", input: `{"defaults": {"call_timeout": "-1s"}}`, wantErr: `"defaults.call_timeout": the duration must be positive, got "-1s"`},
		{name: "no unit", input: `{"defaults": {"call_timeout": "30"}}`, wantErr: `"defaults.call_timeout": invalid duration "30"`},
		{name: "number", input: `{"defaults": {"call_timeout": 30}}`, wantErr: `"defaults.call_timeout": expected a duration string`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, err := Parse("config.json", []byte(tt.input))
			if tt.wantErr != "" {
				require.ErrorIs(t, err, ErrInvalid)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, f.Server(tt.server).CallTimeout)
		})
	}
}

func TestAuditLog(t *testing.T) {
	tests := []struct {
		name    string
		doc     string
		want    string
		wantErr string
	}{
		{name: "absent", doc: `{}`, want: ""},
		{name: "absolute", doc: `{"audit_log": "/var/log/mcpwrap/audit.jsonl"}`, want: "/var/log/mcpwrap/audit.jsonl"},
		{name: "relative to the file", doc: `{"audit_log": "audit.jsonl"}`, want: "/etc/mcpwrap/audit.jsonl"},
		{name: "empty", doc: `{"audit_log": ""}`, wantErr: "audit_log must name a file"},
		{name: "not a string", doc: `{"audit_log": 1}`, wantErr: "a string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Parse("/etc/mcpwrap/config.json", []byte(tt.doc))
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, f.AuditLog)
		})
	}
}
