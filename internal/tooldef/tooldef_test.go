package tooldef

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		raw          string
		wantName     string
		wantDesc     string
		wantReadOnly bool
	}{
		{name: "read-only", raw: `{"name":"a","annotations":{"readOnlyHint":true}}`, wantName: "a", wantReadOnly: true},
		{name: "explicitly not read-only", raw: `{"name":"b","annotations":{"readOnlyHint":false}}`, wantName: "b"},
		{name: "no annotations", raw: `{"name":"c"}`, wantName: "c"},
		{name: "null annotations", raw: `{"name":"c","annotations":null}`, wantName: "c"},
		{name: "annotations not an object", raw: `{"name":"c","annotations":[true]}`, wantName: "c"},
		{name: "readOnlyHint not a boolean", raw: `{"name":"d","annotations":{"readOnlyHint":"yes"}}`, wantName: "d"},
		{name: "description", raw: `{"name":"e","description":"Does \u0065"}`, wantName: "e", wantDesc: "Does e"},
		{name: "description not a string", raw: `{"name":"e","description":7}`, wantName: "e"},
		{name: "escaped name value", raw: `{"name":"read_\u0066ile"}`, wantName: "read_file"},
		{name: "other members may repeat", raw: `{"name":"f","title":"x","title":"y","Title":"z"}`, wantName: "f"},
		{name: "schema keys differing in case", raw: `{"name":"g","inputSchema":{"type":"object","Type":"string"}}`, wantName: "g"},
		{name: "duplicate keys outside the hashed members", raw: `{"name":"h","_meta":{"a":1,"a":2}}`, wantName: "h"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Parse([]byte(tt.raw))
			require.NoError(t, err)
			assert.Equal(t, tt.wantName, got.Name)
			assert.Equal(t, tt.wantDesc, got.Description)
			assert.Equal(t, tt.wantReadOnly, got.ReadOnly)
			assert.Len(t, got.Hash, 64)
			id, err := Identify([]byte(tt.raw))
			require.NoError(t, err)
			got.Hash = ""
			assert.Equal(t, got, id, "Identify reads what Parse reads")
			assert.Equal(t, []string{tt.wantName}, Claims([]byte(tt.raw)))
		})
	}
}

// TestParseRefusesAmbiguous covers every way a definition can read as two
// tools: Parse and Identify both refuse it, and Claims names every name a
// reader could take it for.
func TestParseRefusesAmbiguous(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		raw        string
		wantClaims []string
	}{
		{name: "name twice", raw: `{"name":"safe","name":"evil"}`, wantClaims: []string{"safe", "evil"}},
		{name: "name in upper case", raw: `{"name":"safe","NAME":"evil"}`, wantClaims: []string{"safe", "evil"}},
		{name: "name in title case only", raw: `{"Name":"evil"}`, wantClaims: []string{"evil"}},
		{name: "name escaped", raw: `{"n\u0061me":"evil"}`, wantClaims: []string{"evil"}},
		{name: "name escaped beside name", raw: `{"name":"safe","n\u0061me":"evil"}`, wantClaims: []string{"safe", "evil"}},
		{name: "name escaped with the same value", raw: `{"name":"safe","nam\u0065":"safe"}`, wantClaims: []string{"safe"}},
		{name: "description twice", raw: `{"name":"t","description":"a","description":"b"}`, wantClaims: []string{"t"}},
		{name: "description in another case", raw: `{"name":"t","Description":"b"}`, wantClaims: []string{"t"}},
		{name: "inputSchema twice", raw: `{"name":"t","inputSchema":{},"inputSchema":{"type":"object"}}`, wantClaims: []string{"t"}},
		{name: "inputSchema in lower case", raw: `{"name":"t","inputschema":{}}`, wantClaims: []string{"t"}},
		{name: "inputSchema with a long s", raw: `{"name":"t","input` + "\u017f" + `chema":{}}`, wantClaims: []string{"t"}},
		{name: "outputSchema escaped", raw: `{"name":"t","outputSchem\u0061":{}}`, wantClaims: []string{"t"}},
		{name: "annotations twice", raw: `{"name":"t","annotations":{},"annotations":{"readOnlyHint":true}}`, wantClaims: []string{"t"}},
		{name: "annotations in another case", raw: `{"name":"t","ANNOTATIONS":{"readOnlyHint":true}}`, wantClaims: []string{"t"}},
		{name: "readOnlyHint twice", raw: `{"name":"t","annotations":{"readOnlyHint":false,"readOnlyHint":true}}`, wantClaims: []string{"t"}},
		{name: "readOnlyHint in another case", raw: `{"name":"t","annotations":{"readonlyhint":true}}`, wantClaims: []string{"t"}},
		{name: "readOnlyHint escaped", raw: `{"name":"t","annotations":{"readOnlyHin\u0074":true}}`, wantClaims: []string{"t"}},
		{name: "duplicate schema key", raw: `{"name":"t","inputSchema":{"type":"object","type":"string"}}`, wantClaims: []string{"t"}},
		{name: "duplicate schema key escaped", raw: `{"name":"t","inputSchema":{"type":"object","typ\u0065":"string"}}`, wantClaims: []string{"t"}},
		{name: "duplicate key deep in a schema", raw: `{"name":"t","outputSchema":{"anyOf":[{"properties":{"p":{"const":1,"const":2}}}]}}`, wantClaims: []string{"t"}},
		{name: "duplicate key in annotations", raw: `{"name":"t","annotations":{"title":"a","title":"b"}}`, wantClaims: []string{"t"}},
		{name: "duplicate property in the description's place", raw: `{"name":"t","description":{"a":1,"a":1}}`, wantClaims: []string{"t"}},
		{name: "keys equal once invalid UTF-8 is replaced", raw: "{\"name\":\"t\",\"inputSchema\":{\"\xff\":1,\"\xfe\":2}}", wantClaims: []string{"t"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d, err := Parse([]byte(tt.raw))
			require.ErrorIs(t, err, ErrAmbiguous)
			assert.Zero(t, d)
			_, err = Identify([]byte(tt.raw))
			require.ErrorIs(t, err, ErrAmbiguous)
			assert.Equal(t, tt.wantClaims, Claims([]byte(tt.raw)))
		})
	}
}

func TestParseRefusesInvalid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		raw  string
	}{
		{name: "empty", raw: ``},
		{name: "truncated", raw: `{"name":`},
		{name: "malformed nested value", raw: `{"name":"t","inputSchema":{"type":tru}}`},
		{name: "malformed value outside the hashed members", raw: `{"name":"t","_meta":[1,]}`},
		{name: "trailing bytes", raw: `{"name":"t"} x`},
		{name: "null", raw: `null`},
		{name: "array", raw: `[{"name":"t"}]`},
		{name: "no name", raw: `{"description":"d"}`},
		{name: "empty name", raw: `{"name":""}`},
		{name: "non-string name", raw: `{"name":7}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(tt.raw))
			require.ErrorIs(t, err, ErrInvalid)
			_, err = Identify([]byte(tt.raw))
			require.ErrorIs(t, err, ErrInvalid)
		})
	}
}
