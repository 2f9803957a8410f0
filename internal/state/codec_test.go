package state

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var when = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// sampleState exercises every field.
func sampleState() *State {
	var s State
	fs := s.Server("filesystem")
	fs.Disable("write_file")
	fs.Disable("move_file")
	fs.Approve("read_file", Approval{
		Hash:       "sha256:aa",
		Definition: json.RawMessage(`{"name":"read_file","description":"Reads <one> file & more"}`),
		ApprovedAt: when,
	})
	fs.Catalog = &Catalog{
		SeenAt: when,
		Tools: map[string]CatalogTool{
			"read_file": {Hash: "sha256:aa", Definition: json.RawMessage(`{"name":"read_file"}`)},
		},
	}
	s.Server("linear").Disable("delete_issue")
	s.Server("untouched") // empty: not written
	return &s
}

const sampleFile = `{
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
        }
      },
      "catalog": {
        "seen_at": "2026-01-02T03:04:05Z",
        "tools": {
          "read_file": {
            "definition": {
              "name": "read_file"
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
    "linear": {
      "disabled": [
        "delete_issue"
      ]
    }
  },
  "version": 1
}
`

func TestEncodeIsReadableAndSorted(t *testing.T) {
	data, err := encode(sampleState())
	require.NoError(t, err)
	assert.Equal(t, sampleFile, string(data))
}

func TestDecodeRoundTrip(t *testing.T) {
	s, err := decode([]byte(sampleFile))
	require.NoError(t, err)
	fs := s.Server("filesystem")
	assert.True(t, fs.IsDisabled("write_file"))
	a, ok := fs.Approval("read_file")
	require.True(t, ok)
	assert.Equal(t, "sha256:aa", a.Hash)
	assert.True(t, when.Equal(a.ApprovedAt))
	assert.JSONEq(t, `{"name":"read_file","description":"Reads <one> file & more"}`, string(a.Definition))

	data, err := encode(s)
	require.NoError(t, err)
	assert.Equal(t, sampleFile, string(data))
}

func TestDecodeNormalizes(t *testing.T) {
	s, err := decode([]byte(`{"version": 1, "servers": {
		"a": {"disabled": ["z", "b", "z"]},
		"empty": {},
		"null": null,
		"nocatalogtools": {"catalog": {"seen_at": "2026-01-02T03:04:05Z"}}
	}}`))
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "nocatalogtools"}, s.ServerNames())
	assert.Equal(t, []string{"b", "z"}, s.Server("a").Disabled)
	assert.NotNil(t, s.Server("nocatalogtools").Catalog.Tools)
}

// corruptFiles are state files that must be refused, never rewritten.
var corruptFiles = []struct {
	name        string
	data        string
	wantVersion bool // the error wraps ErrUnsupportedVersion
}{
	{name: "empty file", data: ``},
	{name: "truncated", data: `{"servers": {"a": {"disabled": ["x"`},
	{name: "not an object", data: `["version", 1]`},
	{name: "null", data: `null`, wantVersion: true},
	{name: "newer version", data: `{"servers": {}, "version": 2}`, wantVersion: true},
	{name: "missing version", data: `{"servers": {"a": {"disabled": ["x"]}}}`, wantVersion: true},
	{name: "unknown field", data: `{"servers": {"a": {"disabeld": ["x"]}}, "version": 1}`},
	{name: "wrong type", data: `{"servers": {"a": {"disabled": "x"}}, "version": 1}`},
	{name: "bad time", data: `{"servers": {"a": {"approvals": {"t": {"approved_at": "yesterday"}}}}, "version": 1}`},
	{name: "trailing data", data: `{"servers": {}, "version": 1} {"servers": {}, "version": 1}`},
}

func TestDecodeRefusesCorruptFiles(t *testing.T) {
	for _, tt := range corruptFiles {
		t.Run(tt.name, func(t *testing.T) {
			s, err := decode([]byte(tt.data))
			require.Error(t, err)
			assert.Nil(t, s)
			assert.Equal(t, tt.wantVersion, errors.Is(err, ErrUnsupportedVersion), "err: %v", err)
		})
	}
}

func TestEncodeRejectsInvalidDefinition(t *testing.T) {
	var s State
	s.Server("a").Approve("t", Approval{Hash: "h", Definition: json.RawMessage(`{not json`)})
	_, err := encode(&s)
	assert.Error(t, err)
}

// FuzzDecode: any input either decodes or fails cleanly, and whatever
// decodes re-encodes to a file that decodes to the same state.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(sampleFile))
	f.Add([]byte(`{"servers": {}, "version": 1}`))
	f.Add([]byte(`{"version": 1, "servers": {"a": {"disabled": ["z", "b", "z"]}, "n": null}}`))
	f.Add([]byte(`{"Version": 1, "SERVERS": {"\u00e9\ud800": {"approvals": {"<t>": {` +
		`"approved_at": "2026-01-02T03:04:05.123456789+05:30", "definition": [1e400, -0.0, "\u2028", {"a": {}}],` +
		`"hash": "h"}}, "catalog": {"seen_at": "0000-01-01T00:00:00-23:59", "tools": {"": {"definition": null}}}}}}`))
	for _, c := range corruptFiles {
		f.Add([]byte(c.data))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := decode(data)
		if err != nil {
			require.Nil(t, s)
			return
		}
		first, err := encode(s)
		require.NoError(t, err, "a decoded state must encode")
		again, err := decode(first)
		require.NoError(t, err, "an encoded state must decode:\n%s", first)
		second, err := encode(again)
		require.NoError(t, err)
		require.Equal(t, string(first), string(second))
	})
}
