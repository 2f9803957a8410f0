package state

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// version1File is a state file as mcpwrap wrote it before one file per
// server: the approval repeats the catalog's definition.
const version1File = `{
  "servers": {
    "filesystem": {
      "approvals": {
        "read_file": {
          "approved_at": "2026-01-02T03:04:05Z",
          "definition": {
            "name": "read_file",
            "description": "Reads <one> file & more"
          },
          "hash": "sha256:aa"
        },
        "edit_file": {
          "approved_at": "2026-01-02T03:04:05Z",
          "definition": {
            "name": "edit_file"
          },
          "hash": "sha256:bb"
        }
      },
      "catalog": {
        "seen_at": "2026-01-02T03:04:05Z",
        "tools": {
          "edit_file": {
            "definition": {
              "name": "edit_file",
              "description": "changed"
            },
            "hash": "sha256:cc"
          },
          "read_file": {
            "definition": {
              "name": "read_file",
              "description": "Reads <one> file & more"
            },
            "hash": "sha256:aa"
          }
        }
      },
      "disabled": [
        "move_file",
        "write_file"
      ]
    },
    "Linear Cloud": {
      "disabled": [
        "delete_issue"
      ]
    },
    "empty": {}
  },
  "version": 1
}
`

// assertSample asserts that srv is sampleServer(), but for whitespace in
// its definitions.
func assertSample(t *testing.T, srv *Server) {
	t.Helper()
	data, err := encode("filesystem", srv)
	require.NoError(t, err)
	assert.Equal(t, sampleFile, string(data))
}

func writeLegacy(t *testing.T, dir, data string) string {
	t.Helper()
	path := filepath.Join(dir, LegacyFileName)
	require.NoError(t, os.MkdirAll(dir, 0o700))
	require.NoError(t, os.WriteFile(path, []byte(data), 0o600))
	return path
}

// TestMigrateVersion1: the first use moves each server's state to its own
// file, unchanged but for the approved definitions kept once, keeps the old
// file as a backup and leaves a marker an older mcpwrap refuses.
func TestMigrateVersion1(t *testing.T) {
	dir := t.TempDir()
	legacy := writeLegacy(t, dir, version1File)
	store := Open(dir, nil)

	srv, err := store.Load(t.Context(), "filesystem")
	require.NoError(t, err)
	assertSample(t, srv)
	data, err := os.ReadFile(store.Path("filesystem"))
	require.NoError(t, err)
	assert.Equal(t, sampleFile, string(data))

	names, err := store.Servers(t.Context())
	require.NoError(t, err)
	assert.Equal(t, []string{"Linear Cloud", "filesystem"}, names)
	linear, err := store.Load(t.Context(), "Linear Cloud")
	require.NoError(t, err)
	assert.True(t, linear.IsDisabled("delete_issue"))
	assert.Contains(t, store.Path("Linear Cloud"), "linear_cloud~")

	backup, err := os.ReadFile(filepath.Join(dir, LegacyBackupName))
	require.NoError(t, err)
	assert.Equal(t, version1File, string(backup))
	marker, err := os.ReadFile(legacy)
	require.NoError(t, err)
	_, err = decodeLegacy(marker)
	assert.Error(t, err, "a version 1 reader (an older mcpwrap still running) fails closed on the marker")

	disable(t, store, "filesystem", "edit_file") // the migrated state is the state
	srv, err = Open(dir, nil).Load(t.Context(), "filesystem")
	require.NoError(t, err)
	assert.True(t, srv.IsDisabled("edit_file"))
}

// TestMigrateCorruptVersion1FailsClosed: a version 1 file that cannot be
// parsed is never migrated nor modified, and every server's state is
// unreadable until the user repairs or moves it, as before.
func TestMigrateCorruptVersion1FailsClosed(t *testing.T) {
	for _, data := range []string{`{"version": 1, "servers": {"a": {"disabled": [`, `{"version": 1, "servers": {"a": {"disabeld": []}}}`, `{"version": 3}`} {
		t.Run(data, func(t *testing.T) {
			dir := t.TempDir()
			legacy := writeLegacy(t, dir, data)
			store := Open(dir, nil)

			_, err := store.Load(t.Context(), "a")
			assertCorrupt(t, legacy, err)
			assert.Contains(t, err.Error(), "this forgets all tool toggles and approvals")
			_, err = store.Load(t.Context(), "b")
			assertCorrupt(t, legacy, err)
			err = store.Update(t.Context(), "b", func(srv *Server) error { srv.Disable("t"); return nil })
			assertCorrupt(t, legacy, err)
			_, err = store.Servers(t.Context())
			assertCorrupt(t, legacy, err)

			after, err := os.ReadFile(legacy)
			require.NoError(t, err)
			assert.Equal(t, data, string(after))
			assert.NoDirExists(t, filepath.Join(dir, ServersDir))

			require.NoError(t, os.Rename(legacy, legacy+".bad")) // the user moves it aside
			srv, err := store.Load(t.Context(), "a")
			require.NoError(t, err)
			assert.True(t, srv.Empty())
		})
	}
}

// TestMigrateKeepsServerFiles: a server file written before (by a migration
// that stopped midway, then changed) is newer than the version 1 file.
func TestMigrateKeepsServerFiles(t *testing.T) {
	dir := t.TempDir()
	store := Open(dir, nil)
	disable(t, store, "Linear Cloud", "newer")
	writeLegacy(t, dir, version1File)

	srv, err := store.Load(t.Context(), "Linear Cloud")
	require.NoError(t, err)
	assert.Equal(t, []string{"newer"}, srv.Disabled)
	srv, err = store.Load(t.Context(), "filesystem")
	require.NoError(t, err)
	assertSample(t, srv)
}

// TestMigrateLargeCatalogIsApart: a server with a large catalog, approved
// whole, costs its catalog's size once, and another server's file holds
// nothing of it.
func TestMigrateLargeCatalogIsApart(t *testing.T) {
	type tool struct {
		Definition json.RawMessage `json:"definition"`
		Hash       string          `json:"hash"`
	}
	type approval struct {
		ApprovedAt string          `json:"approved_at"`
		Definition json.RawMessage `json:"definition"`
		Hash       string          `json:"hash"`
	}
	tools, approvals := map[string]tool{}, map[string]approval{}
	for i := range 200 {
		name := fmt.Sprintf("tool_%03d", i)
		def := json.RawMessage(fmt.Sprintf(`{"name":%q,"description":%q}`, name, strings.Repeat("word ", 2000)))
		hash := fmt.Sprintf("sha256:%03d", i)
		tools[name] = tool{Definition: def, Hash: hash}
		approvals[name] = approval{ApprovedAt: "2026-01-02T03:04:05Z", Definition: def, Hash: hash}
	}
	doc, err := json.MarshalIndent(map[string]any{"version": 1, "servers": map[string]any{
		"big":   map[string]any{"approvals": approvals, "catalog": map[string]any{"seen_at": "2026-01-02T03:04:05Z", "tools": tools}},
		"small": map[string]any{"disabled": []string{"x"}},
	}}, "", "  ")
	require.NoError(t, err)
	dir := t.TempDir()
	writeLegacy(t, dir, string(doc))
	store := Open(dir, nil)

	srv, err := store.Load(t.Context(), "small")
	require.NoError(t, err)
	assert.Equal(t, []string{"x"}, srv.Disabled)
	small, err := os.Stat(store.Path("small"))
	require.NoError(t, err)
	assert.Less(t, small.Size(), int64(1024), "the bystander's file holds its own state only")
	big, err := os.Stat(store.Path("big"))
	require.NoError(t, err)
	assert.Less(t, big.Size(), int64(len(doc))*6/10, "each approved definition is kept once")
}
