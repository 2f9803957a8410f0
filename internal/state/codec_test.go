package state

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var when = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// sampleServer exercises every field: an approval whose definition the
// catalog holds (kept once), and one whose definition it does not.
func sampleServer() *Server {
	var srv Server
	srv.Disable("write_file")
	srv.Disable("move_file")
	srv.Approve("read_file", Approval{
		Hash:       "sha256:aa",
		Definition: json.RawMessage(`{"name":"read_file","description":"Reads <one> file & more"}`),
		ApprovedAt: when,
	})
	srv.Approve("edit_file", Approval{
		Hash:       "sha256:bb",
		Definition: json.RawMessage(`{"name":"edit_file"}`),
		ApprovedAt: when,
	})
	srv.Catalog = &Catalog{
		SeenAt: when,
		Tools: map[string]CatalogTool{
			"read_file": {Hash: "sha256:aa", Definition: json.RawMessage(`{"name":"read_file","description":"Reads <one> file & more"}`)},
			"edit_file": {Hash: "sha256:cc", Definition: json.RawMessage(`{"name":"edit_file","description":"changed"}`)},
		},
	}
	return &srv
}

const sampleFile = `{
  "server": "filesystem",
  "version": 2,
  "approvals": {
    "edit_file": {
      "approved_at": "2026-01-02T03:04:05Z",
      "definition": {
        "name": "edit_file"
      },
      "hash": "sha256:bb"
    },
    "read_file": {
      "approved_at": "2026-01-02T03:04:05Z",
      "hash": "sha256:aa"
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
}
`

func TestEncodeIsReadableAndSorted(t *testing.T) {
	data, err := encode("filesystem", sampleServer())
	require.NoError(t, err)
	assert.Equal(t, sampleFile, string(data))
}

func TestDecodeRoundTrip(t *testing.T) {
	srv, err := decode([]byte(sampleFile), "filesystem")
	require.NoError(t, err)
	assert.True(t, srv.IsDisabled("write_file"))
	a, ok := srv.Approval("read_file")
	require.True(t, ok)
	assert.Equal(t, "sha256:aa", a.Hash)
	assert.True(t, when.Equal(a.ApprovedAt))
	assert.JSONEq(t, `{"name":"read_file","description":"Reads <one> file & more"}`, string(a.Definition),
		"the approved definition kept once, in the catalog")
	a, _ = srv.Approval("edit_file")
	assert.JSONEq(t, `{"name":"edit_file"}`, string(a.Definition), "a definition the catalog no longer holds is kept")

	data, err := encode("filesystem", srv)
	require.NoError(t, err)
	assert.Equal(t, sampleFile, string(data))
}

// TestApprovedDefinitionsAreKeptOnce: a catalog approved whole (a tofu
// baseline) costs its own size once, not twice as in version 1.
func TestApprovedDefinitionsAreKeptOnce(t *testing.T) {
	var srv Server
	srv.Catalog = &Catalog{SeenAt: when, Tools: map[string]CatalogTool{}}
	size := 0
	for i := range 50 {
		name := fmt.Sprintf("tool_%d", i)
		def := json.RawMessage(fmt.Sprintf(`{"name":%q,"description":%q}`, name, strings.Repeat("x", 1000)))
		srv.Catalog.Tools[name] = CatalogTool{Definition: def, Hash: name}
		srv.Approve(name, Approval{ApprovedAt: when, Definition: def, Hash: name})
		size += len(def)
	}
	data, err := encode("s", &srv)
	require.NoError(t, err)
	assert.Less(t, len(data), size*12/10, "every definition is kept once")
}

func TestDecodeNormalizes(t *testing.T) {
	srv, err := decode([]byte(`{"version": 2, "server": "a", "disabled": ["z", "b", "z"],
		"catalog": {"seen_at": "2026-01-02T03:04:05Z"}}`), "a")
	require.NoError(t, err)
	assert.Equal(t, []string{"b", "z"}, srv.Disabled)
	assert.NotNil(t, srv.Catalog.Tools)
}

func TestDecodeRefusesAnotherServersFile(t *testing.T) {
	_, err := decode([]byte(`{"version": 2, "server": "a", "disabled": ["x"]}`), "b")
	assert.ErrorContains(t, err, `holds the state of server "a"`)
}

// corruptFiles are state files that must be refused, never rewritten.
var corruptFiles = []struct {
	name        string
	data        string
	wantVersion bool // the error wraps ErrUnsupportedVersion
}{
	{name: "empty file", data: ``},
	{name: "truncated", data: `{"server": "a", "disabled": ["x"`},
	{name: "not an object", data: `["version", 2]`},
	{name: "null", data: `null`, wantVersion: true},
	{name: "newer version", data: `{"server": "a", "version": 3}`, wantVersion: true},
	{name: "version 1", data: `{"servers": {}, "version": 1}`},
	{name: "missing version", data: `{"server": "a", "disabled": ["x"]}`, wantVersion: true},
	{name: "unknown field", data: `{"server": "a", "disabeld": ["x"], "version": 2}`},
	{name: "wrong type", data: `{"server": "a", "disabled": "x", "version": 2}`},
	{name: "bad time", data: `{"server": "a", "approvals": {"t": {"approved_at": "yesterday"}}, "version": 2}`},
	{name: "trailing data", data: `{"server": "a", "version": 2} {"server": "a", "version": 2}`},
}

func TestDecodeRefusesCorruptFiles(t *testing.T) {
	for _, tt := range corruptFiles {
		t.Run(tt.name, func(t *testing.T) {
			srv, err := decode([]byte(tt.data), "a")
			require.Error(t, err)
			assert.Nil(t, srv)
			assert.Equal(t, tt.wantVersion, errors.Is(err, ErrUnsupportedVersion), "err: %v", err)
		})
	}
}

func TestEncodeRejectsInvalidDefinition(t *testing.T) {
	var srv Server
	srv.Approve("t", Approval{Hash: "h", Definition: json.RawMessage(`{not json`)})
	_, err := encode("a", &srv)
	assert.Error(t, err)
}

// FuzzDecode: any input either decodes or fails cleanly, and whatever
// decodes re-encodes to a file that decodes to the same state.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(sampleFile))
	f.Add([]byte(`{"server": "filesystem", "version": 2}`))
	f.Add([]byte(`{"version": 2, "server": "filesystem", "disabled": ["z", "b", "z"]}`))
	f.Add([]byte(`{"Version": 2, "SERVER": "filesystem", "approvals": {"<t>": {` +
		`"approved_at": "2026-01-02T03:04:05.123456789+05:30", "definition": [1e400, -0.0, "\u2028", {"a": {}}],` +
		`"hash": "h"}, "": {"approved_at": "2026-01-02T03:04:05Z", "hash": "h"}}, ` +
		`"catalog": {"seen_at": "0000-01-01T00:00:00-23:59", "tools": {"": {"definition": null, "hash": "h"}}}}`))
	for _, c := range corruptFiles {
		f.Add([]byte(c.data))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		srv, err := decode(data, "filesystem")
		if err != nil {
			require.Nil(t, srv)
			return
		}
		first, err := encode("filesystem", srv)
		require.NoError(t, err, "a decoded state must encode")
		again, err := decode(first, "filesystem")
		require.NoError(t, err, "an encoded state must decode:\n%s", first)
		second, err := encode("filesystem", again)
		require.NoError(t, err)
		require.Equal(t, string(first), string(second))
	})
}

// TestUpstreamRoundTrip: what a server said of itself in its last load is
// kept, readable, and read back; it alone keeps a server's file.
func TestUpstreamRoundTrip(t *testing.T) {
	srv := &Server{Upstream: &Upstream{SeenAt: when, Capabilities: json.RawMessage(`{"resources":{"subscribe":true},"tools":{}}`),
		ServerInfo: json.RawMessage(`{"name":"fs","version":"1.2"}`), Instructions: "Read <files>.", ProtocolVersion: "2025-11-25"}}
	assert.False(t, srv.Empty())
	data, err := encode("fs", srv)
	require.NoError(t, err)
	assert.Equal(t, `{
  "server": "fs",
  "version": 2,
  "upstream": {
    "capabilities": {
      "resources": {
        "subscribe": true
      },
      "tools": {}
    },
    "instructions": "Read <files>.",
    "protocol_version": "2025-11-25",
    "seen_at": "2026-01-02T03:04:05Z",
    "server_info": {
      "name": "fs",
      "version": "1.2"
    }
  }
}
`, string(data))
	back, err := decode(data, "fs")
	require.NoError(t, err)
	assert.True(t, back.Upstream.Same(srv.Upstream))
	assert.False(t, back.Upstream.Same(&Upstream{Capabilities: json.RawMessage(`{"tools":{}}`)}))
	instructions, version := *srv.Upstream, *srv.Upstream
	instructions.Instructions, version.ProtocolVersion = "Write.", "2025-06-18"
	assert.False(t, back.Upstream.Same(&instructions), "other instructions")
	assert.False(t, back.Upstream.Same(&version), "another protocol version")
	assert.True(t, (*Upstream)(nil).Same(nil))
}
