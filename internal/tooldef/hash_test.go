package tooldef

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func mustHash(t *testing.T, tool string) string {
	t.Helper()
	d, err := Parse([]byte(tool))
	require.NoError(t, err)
	return d.Hash
}

// TestHashPinnedEncoding pins the canonical encoding: approved hashes are
// persisted, so changing it would put every tool back to pending approval.
func TestHashPinnedEncoding(t *testing.T) {
	t.Parallel()
	tool := `{
		"name": "t", "title": "T", "annotations": {"readOnlyHint": true},
		"inputSchema": {"type": "object", "properties": {"n": {"maximum": 1.50, "type": "number"}}},
		"description": "say \"hi\"\n\u00e9\u0001"
	}`
	canonical := `{"description":"say \"hi\"\n` + "\u00e9" + `\u0001","inputSchema":{"properties":{"n":{"maximum":15e-1,"type":"number"}},"type":"object"},"name":"t"}`
	sum := sha256.Sum256([]byte(canonical))
	assert.Equal(t, hex.EncodeToString(sum[:]), mustHash(t, tool))
}

func TestHashEquivalentDefinitions(t *testing.T) {
	t.Parallel()
	base := `{"name":"read_file","description":"Read a file","inputSchema":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}`
	tests := []struct {
		name  string
		other string
	}{
		{
			name: "key order and whitespace",
			other: `{
				"inputSchema": { "required": ["path"], "properties": { "path": { "type": "string" } }, "type": "object" },
				"description": "Read a file",
				"name": "read_file"
			}`,
		},
		{
			name:  "annotations, title, icons and _meta excluded",
			other: `{"annotations":{"readOnlyHint":true},"title":"Read","icons":[],"_meta":{"x":1},"name":"read_file","description":"Read a file","inputSchema":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}`,
		},
		{
			name:  "null outputSchema is absent",
			other: `{"name":"read_file","outputSchema":null,"description":"Read a file","inputSchema":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}`,
		},
		{
			name:  "string escapes",
			other: `{"name":"read_\u0066ile","description":"Read a\u0020file","inputSchema":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}`,
		},
	}
	want := mustHash(t, base)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, want, mustHash(t, tt.other))
		})
	}
}

func TestHashDistinguishesDefinitions(t *testing.T) {
	t.Parallel()
	base := `{"name":"t","description":"d","inputSchema":{"type":"object"}}`
	tests := []struct {
		name  string
		other string
	}{
		{name: "description", other: `{"name":"t","description":"d!","inputSchema":{"type":"object"}}`},
		{name: "description removed", other: `{"name":"t","inputSchema":{"type":"object"}}`},
		{name: "name", other: `{"name":"u","description":"d","inputSchema":{"type":"object"}}`},
		{name: "inputSchema", other: `{"name":"t","description":"d","inputSchema":{"type":"object","properties":{}}}`},
		{name: "outputSchema added", other: `{"name":"t","description":"d","inputSchema":{"type":"object"},"outputSchema":{"type":"object"}}`},
		{name: "empty description is not absent", other: `{"name":"t","description":"","inputSchema":{"type":"object"}}`},
		{name: "description moved into the schema", other: `{"name":"t","inputSchema":{"type":"object","description":"d"}}`},
	}
	want := mustHash(t, base)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.NotEqual(t, want, mustHash(t, tt.other))
		})
	}
}

func TestHashNumbers(t *testing.T) {
	t.Parallel()
	tool := func(n string) string {
		return `{"name":"t","inputSchema":{"type":"object","maximum":` + n + `}}`
	}
	one := mustHash(t, tool("1"))
	for _, n := range []string{"1.0", "1e0", "10E-1", "0.1e1", "1.000"} {
		assert.Equal(t, one, mustHash(t, tool(n)), n)
	}
	for _, n := range []string{"2", "-1", "1.0000000000000000000001", "10"} {
		assert.NotEqual(t, one, mustHash(t, tool(n)), n)
	}
	// Integers beyond float64 precision stay distinct.
	assert.NotEqual(t, mustHash(t, tool("9007199254740993")), mustHash(t, tool("9007199254740992")))
}

func TestCanonicalNumber(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want string
	}{
		{in: "0", want: "0"},
		{in: "-0", want: "0"},
		{in: "0.000", want: "0"},
		{in: "0e10", want: "0"},
		{in: "1", want: "1"},
		{in: "-1", want: "-1"},
		{in: "1.0", want: "1"},
		{in: "1e0", want: "1"},
		{in: "10e-1", want: "1"},
		{in: "100", want: "100"},
		{in: "1E+2", want: "100"},
		{in: "1.5", want: "15e-1"},
		{in: "-1.50", want: "-15e-1"},
		{in: "0.001", want: "1e-3"},
		{in: "1e20", want: "100000000000000000000"},
		{in: "1e21", want: "1e21"},
		{in: "123456789012345678901", want: "123456789012345678901"},
		{in: "1234567890123456789012", want: "1234567890123456789012e0"},
		{in: "1e99999999999999999999", want: "1e99999999999999999999"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, canonicalNumber(tt.in))
		})
	}
}

func TestHashErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		tool string
	}{
		{name: "empty", tool: ``},
		{name: "not JSON", tool: `{"name":`},
		{name: "null", tool: `null`},
		{name: "array", tool: `[{"name":"t"}]`},
		{name: "no name", tool: `{"description":"d"}`},
		{name: "empty name", tool: `{"name":""}`},
		{name: "non-string name", tool: `{"name":7}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(tt.tool))
			require.ErrorIs(t, err, ErrInvalid)
		})
	}
}

// BenchmarkParse measures the per-tool cost of reading a definition
// (hashing included), paid once per catalog refresh.
func BenchmarkParse(b *testing.B) {
	raw := []byte(benchTool)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(raw); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkIdentify is BenchmarkParse without the hash, as the sidecar's
// catalog index reads definitions.
func BenchmarkIdentify(b *testing.B) {
	raw := []byte(benchTool)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Identify(raw); err != nil {
			b.Fatal(err)
		}
	}
}

const benchTool = `{"name":"write_file","title":"Write","description":"Create a new file or completely overwrite an existing file with new content.",
	"inputSchema":{"type":"object","properties":{"path":{"type":"string","description":"Path to write"},"content":{"type":"string"},
	"mode":{"type":"string","enum":["overwrite","append"],"default":"overwrite"},"max":{"type":"integer","minimum":0,"maximum":1048576}},
	"required":["path","content"],"additionalProperties":false},"annotations":{"readOnlyHint":false,"destructiveHint":true}}`
