package toolscli

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// searchDef is a tool definition with enough schema to need two hunks.
func searchDef(description, limitType string, title string) json.RawMessage {
	def := `{
	  "name": "search",
	  "title": "` + title + `",
	  "description": "` + description + `",
	  "annotations": {"readOnlyHint": true},
	  "inputSchema": {
	    "type": "object",
	    "properties": {
	      "case_sensitive": {"type": "boolean"},
	      "exclude": {"type": "array", "items": {"type": "string"}},
	      "include": {"type": "array", "items": {"type": "string"}},
	      "limit": {"type": "` + limitType + `", "minimum": 1},
	      "path": {"type": "string"},
	      "query": {"type": "string"}
	    },
	    "required": ["query"]
	  }
	}`
	var compact bytes.Buffer
	if err := json.Compact(&compact, []byte(def)); err != nil {
		panic(err)
	}
	return compact.Bytes()
}

func TestDiffGolden(t *testing.T) {
	approved := searchDef("Searches files.", "integer", "Search")
	tests := []struct {
		name     string
		approved json.RawMessage // nil: never approved
		current  json.RawMessage // nil: not in the last catalog
		golden   string
	}{
		{
			name:     "changed",
			approved: approved,
			current:  searchDef("Searches files and uploads them.", "number", "Search"),
			golden:   "diff/changed.golden",
		},
		{
			name:     "only members outside the hash changed",
			approved: approved,
			current:  searchDef("Searches files.", "integer", "Find in files"),
			golden:   "diff/unhashed.golden",
		},
		{
			name:     "no change, whatever the key order",
			approved: approved,
			current:  json.RawMessage(`{"inputSchema":` + string(mustMember(t, approved, "inputSchema")) + `,"annotations":{"readOnlyHint":true},"description":"Searches files.","title":"Search","name":"search"}`),
			golden:   "diff/nochange.golden",
		},
		{
			name:    "never approved",
			current: approved,
			golden:  "diff/never.golden",
		},
		{
			name:     "not in the last catalog",
			approved: approved,
			golden:   "diff/gone.golden",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, `{"servers": {"s": {}}}`)
			other := toolDef("other", "Keeps the catalog non-empty.", true)
			if tt.current != nil {
				f.record("s", other, tt.current)
			} else {
				f.record("s", other)
			}
			f.approve("s", other)
			if tt.approved != nil {
				f.approve("s", tt.approved)
			}
			res := f.run("diff", "s", "search")
			require.Equal(t, 0, res.code, res.stderr)
			assert.Empty(t, res.stderr)
			golden(t, tt.golden, res.stdout)
		})
	}
}

func TestDiffUnknownTool(t *testing.T) {
	f := newFixture(t, `{"servers": {"s": {}}}`)
	res := f.run("diff", "s", "search")
	assert.Equal(t, ExitError, res.code)
	assert.Contains(t, res.stderr, `unknown tool "search": no catalog of server "s" was recorded yet`)

	f.record("s", toolDef("other", "Other.", true))
	res = f.run("diff", "s", "search")
	assert.Equal(t, ExitError, res.code)
	assert.Contains(t, res.stderr, `server "s" has no tool "search" in its last catalog (seen 2026-04-01T09:00:00Z)`)
}

func mustMember(t *testing.T, def json.RawMessage, key string) json.RawMessage {
	t.Helper()
	var members map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(def, &members))
	return members[key]
}

func TestPrettyLines(t *testing.T) {
	tests := []struct {
		name string
		def  string
		want []string
	}{
		{name: "sorted keys, indented", def: `{"b":1,"a":{"d":[1,2],"c":"<x>"}}`, want: []string{
			"{", `  "a": {`, `    "c": "<x>",`, `    "d": [`, "      1,", "      2", "    ]", "  },", `  "b": 1`, "}",
		}},
		{name: "numbers kept as written", def: `{"n":1.50,"m":1e3}`, want: []string{"{", `  "m": 1e3,`, `  "n": 1.50`, "}"}},
		{name: "not JSON is shown as is", def: "{not json\nsecond", want: []string{"{not json", "second"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, prettyLines(json.RawMessage(tt.def)))
		})
	}
}
