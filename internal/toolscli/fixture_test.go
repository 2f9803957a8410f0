package toolscli

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/internal/config"
	"github.com/mcpwrap/mcpwrap/internal/gate"
	"github.com/mcpwrap/mcpwrap/internal/policy"
	"github.com/mcpwrap/mcpwrap/internal/state"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// Fixed times, so that outputs are reproducible.
var (
	seenAt     = time.Date(2026, 4, 1, 9, 0, 0, 0, time.UTC)
	approvedAt = time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)
	now        = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
)

// fixture is a config file and a state directory in a temp dir, found
// through the environment as a user's would be.
type fixture struct {
	t          *testing.T
	configPath string
	stateDir   string
	store      *state.FileStore
}

func newFixture(t *testing.T, configJSON string) *fixture {
	t.Helper()
	dir := t.TempDir()
	f := &fixture{
		t:          t,
		configPath: filepath.Join(dir, "config.json"),
		stateDir:   filepath.Join(dir, "state"),
	}
	if configJSON != "" {
		require.NoError(t, os.WriteFile(f.configPath, []byte(configJSON), 0o600))
	}
	f.store = state.Open(f.stateDir, nil)
	return f
}

func (f *fixture) env() Env {
	vars := map[string]string{config.EnvStateDir: f.stateDir}
	if _, err := os.Stat(f.configPath); err == nil {
		vars[config.EnvConfig] = f.configPath
	} else {
		// No config: the default location, in the temp dir, with no file.
		home := filepath.Dir(f.configPath)
		vars["HOME"], vars["XDG_CONFIG_HOME"], vars["AppData"] = home, home, home
	}
	return Env{
		Getenv: func(k string) string { return vars[k] },
		Now:    func() time.Time { return now },
	}
}

// result is what one Run produced.
type result struct {
	code           int
	stdout, stderr string
}

func (f *fixture) run(args ...string) result {
	f.t.Helper()
	var stdout, stderr bytes.Buffer
	code := Run(context.Background(), args, f.env(), &stdout, &stderr)
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// sidecarSees records a catalog exactly as a running sidecar does, through
// the gate: the last seen catalog, and the tofu baseline on first sight.
func (f *fixture) sidecarSees(server string, defs ...json.RawMessage) {
	f.t.Helper()
	file, err := config.Load(f.configPath)
	require.NoError(f.t, err)
	cfg := file.Server(server)
	eval, err := policy.NewEvaluator(policy.Options{ServerDisabled: !cfg.Enabled, Rules: cfg.Tools, Approval: cfg.Approval})
	require.NoError(f.t, err)
	g := gate.New(server, eval, f.store, nil)
	g.Reload(context.Background())
	g.CatalogSeen(context.Background(), defs)
}

// sidecarStatuses returns the statuses a sidecar's gate gives the catalog.
func (f *fixture) sidecarStatuses(server string, defs []json.RawMessage) []policy.Status {
	f.t.Helper()
	file, err := config.Load(f.configPath)
	require.NoError(f.t, err)
	cfg := file.Server(server)
	eval, err := policy.NewEvaluator(policy.Options{ServerDisabled: !cfg.Enabled, Rules: cfg.Tools, Approval: cfg.Approval})
	require.NoError(f.t, err)
	g := gate.New(server, eval, f.store, nil)
	g.Reload(context.Background())
	out := make([]policy.Status, len(defs))
	for i, a := range g.Evaluate(defs) {
		require.True(f.t, a.InScope)
		out[i] = policy.Callable
		if a.Status != "" {
			out[i] = policy.Status(a.Status)
		}
	}
	return out
}

// edit changes a server's state directly, as a test's precondition.
func (f *fixture) edit(server string, fn func(srv *state.Server)) {
	f.t.Helper()
	require.NoError(f.t, f.store.Update(context.Background(), server, func(srv *state.Server) error {
		fn(srv)
		return nil
	}))
}

// record sets a server's last catalog, seen at seenAt.
func (f *fixture) record(server string, defs ...json.RawMessage) {
	f.t.Helper()
	f.edit(server, func(srv *state.Server) {
		c := &state.Catalog{SeenAt: seenAt, Tools: map[string]state.CatalogTool{}}
		for _, d := range defs {
			t, err := policy.ParseTool(d)
			require.NoError(f.t, err)
			c.Tools[t.Name] = state.CatalogTool{Definition: d, Hash: t.Hash}
		}
		srv.Catalog = c
	})
}

// approve records an approval of def, made at approvedAt.
func (f *fixture) approve(server string, def json.RawMessage) {
	f.t.Helper()
	t, err := policy.ParseTool(def)
	require.NoError(f.t, err)
	f.edit(server, func(srv *state.Server) {
		srv.Approve(t.Name, state.Approval{ApprovedAt: approvedAt, Definition: def, Hash: t.Hash})
	})
}

func (f *fixture) load(server string) *state.Server {
	f.t.Helper()
	srv, err := f.store.Load(context.Background(), server)
	require.NoError(f.t, err)
	return srv
}

// stateBytes returns the contents of server s's state file (nil when there
// is none).
func (f *fixture) stateBytes() []byte {
	f.t.Helper()
	data, err := os.ReadFile(f.store.Path("s"))
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(f.t, err)
	return data
}

// toolDef returns an MCP tool definition.
func toolDef(name, description string, readOnly bool) json.RawMessage {
	def := map[string]any{
		"name":        name,
		"description": description,
		"inputSchema": map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}},
	}
	if readOnly {
		def["annotations"] = map[string]any{"readOnlyHint": true}
	}
	raw, err := json.Marshal(def)
	if err != nil {
		panic(err)
	}
	return raw
}

// golden compares got with testdata/name, rewriting it under -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test -update to create it")
	require.Equal(t, string(want), got)
}
