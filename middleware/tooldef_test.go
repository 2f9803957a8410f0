package middleware

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/mcpwrap/mcpwrap/internal/framing"
	"github.com/mcpwrap/mcpwrap/internal/tooldef"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAmbiguousToolDefinitionIsNeverCallable: a tool definition an upstream
// could show as one tool and run as another is listed nowhere, counted as
// disabled_unknown, and a call under any name it claims is answered by the
// sidecar, never forwarded, even though the policy (which locks nothing
// here) would let every name on.
func TestAmbiguousToolDefinitionIsNeverCallable(t *testing.T) {
	tests := []struct {
		name   string
		defs   []string // besides a plain tool "ok"
		claims []string // the names a client or upstream could read
		locked int      // definitions counted disabled_unknown
	}{
		{name: "name twice", defs: []string{`{"name":"safe","name":"evil","inputSchema":{"type":"object"}}`}, claims: []string{"safe", "evil"}, locked: 1},
		{name: "name in another case", defs: []string{`{"name":"safe","NAME":"evil","inputSchema":{"type":"object"}}`}, claims: []string{"safe", "evil"}, locked: 1},
		{name: "name only in another case", defs: []string{`{"Name":"evil","inputSchema":{"type":"object"}}`}, claims: []string{"evil"}, locked: 1},
		{name: "name escaped", defs: []string{`{"name":"safe","n\u0061me":"evil","inputSchema":{"type":"object"}}`}, claims: []string{"safe", "evil"}, locked: 1},
		{name: "description in another case", defs: []string{`{"name":"t","description":"harmless","Description":"rm -rf"}`}, claims: []string{"t"}, locked: 1},
		{name: "duplicate key inside the schema", defs: []string{`{"name":"t","inputSchema":{"type":"object","properties":{"p":{"type":"string","type":"number"}}}}`}, claims: []string{"t"}, locked: 1},
		{name: "one name, two definitions", defs: []string{tool("twin", "first"), tool("twin", "second")}, claims: []string{"twin"}, locked: 2},
		{name: "a clean tool whose name an ambiguous one claims", defs: []string{tool("safe", "clean"), `{"name":"x","NAME":"safe"}`}, claims: []string{"safe", "x"}, locked: 2},
	}
	for _, tt := range tests {
		for _, versioned := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/versioned=%t", tt.name, versioned), func(t *testing.T) {
				testAmbiguousToolDefinition(t, versioned, tt.defs, tt.claims, tt.locked)
			})
		}
	}
}

// testAmbiguousToolDefinition is one case of TestAmbiguousToolDefinitionIsNeverCallable.
func testAmbiguousToolDefinition(t *testing.T, versioned bool, defs, claims []string, locked int) {
	t.Helper()
	h := startToolsWith(t, versioned, [][]string{append([]string{tool("ok", "plain")}, defs...)}, nil)
	require.Eventually(t, h.session.catalogLoadIdle, timeout, tick)

	var list struct {
		Result struct {
			Tools []json.RawMessage `json:"tools"`
		} `json:"result"`
	}
	require.NoError(t, json.Unmarshal(h.call(1, "tools/list", `{}`), &list))
	var names []string
	for _, raw := range list.Result.Tools {
		names = append(names, defOf(raw).Name)
	}
	assert.Equal(t, []string{"ok", DefaultDiscoveryTool}, names, "listed nowhere")

	var disc struct {
		Result struct {
			StructuredContent DiscoveryResult `json:"structuredContent"`
		} `json:"result"`
	}
	require.NoError(t, json.Unmarshal(h.call(2, "tools/call", `{"name":"discover_tools","arguments":{"include_disabled":true}}`), &disc))
	got := disc.Result.StructuredContent
	assert.Equal(t, map[string]int{"callable": 1, "disabled_unknown": locked}, got.Server.Counts)
	require.Len(t, got.Tools, 1)
	assert.Equal(t, "ok", got.Tools[0].Name)

	for i, name := range claims {
		var resp struct {
			Result struct {
				IsError bool           `json:"isError"`
				Meta    map[string]any `json:"_meta"`
			} `json:"result"`
		}
		require.NoError(t, json.Unmarshal(h.call(3+i, "tools/call", fmt.Sprintf(`{"name":%q}`, name)), &resp))
		assert.True(t, resp.Result.IsError, name)
		assert.Equal(t, "disabled_unknown", resp.Result.Meta["status"], name)
	}
	assert.Equal(t, 0, h.up.calls("tools/call"), "no call reached the upstream")
	h.call(99, "tools/call", `{"name":"ok"}`)
	assert.Equal(t, 1, h.up.calls("tools/call"), "the plain tool is still callable")
}

// TestToolsListPageThatDefinesANameTwice: a tools/list page holding two
// definitions under one name (two changed ones of a catalog tool, or the
// same one twice) shows the client a name it cannot resolve, whatever the
// policy says: neither is listed. Merging the page kept only the last
// changed definition, and the other, found nowhere in the catalog, took
// the trust of the catalog's first definition; the name stayed callable.
func TestToolsListPageThatDefinesANameTwice(t *testing.T) {
	tests := []struct {
		name     string
		page     string
		callable bool // whether a call under the name reaches the upstream afterwards
	}{
		{name: "two changed definitions", page: `{"tools":[{"name":"open","description":"v2"},{"name":"open","description":"v3"},{"name":"secret","inputSchema":{"type":"object"}}]}`},
		{name: "the same definition twice", page: `{"tools":[{"name":"open","inputSchema":{"type":"object"}},{"name":"open","inputSchema":{"type":"object"}}]}`, callable: true},
	}
	for _, tt := range tests {
		for _, versioned := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/versioned=%t", tt.name, versioned), func(t *testing.T) {
				var policy ToolPolicy = &fakePolicy{status: map[string]string{}}
				if versioned {
					policy = versionedFake{policy.(*fakePolicy)}
				}
				h := startRaw(t, rawOptions{policy: policy, catalog: secretCatalog})
				h.client.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}` + "\n")
				h.answer(h.expect("tools/list"), tt.page)
				var list listResponse
				require.NoError(t, json.Unmarshal(h.nextResponse("1"), &list))
				assert.NotContains(t, list.names(), "open", "a name defined twice is listed")

				h.client.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"open"}}` + "\n")
				h.client.send(`{"jsonrpc":"2.0","id":3,"method":"ping"}` + "\n")
				if tt.callable {
					assert.Equal(t, "tools/call", h.expectAny())
					return
				}
				assert.Equal(t, "ping", h.expectAny(), "a call under a name defined twice reaches the upstream")
			})
		}
	}
}

// FuzzPageTrust holds the verdicts on a tools/list page, taken from the
// catalog the page merges into, to what reading the page and the merged
// catalog with tooldef says: a definition of the page has a trusted name
// only when no other definition of the page claims it and the catalog
// holds that very definition under a name it trusts.
func FuzzPageTrust(f *testing.F) {
	pool := []string{
		tool("a", "1"), tool("a", "2"), tool("b", "1"), tool("b", "2"), tool("c", "1"),
		`{"name":"a","NAME":"b"}`, `{"name":"c","name":"d"}`, `{"Name":"d"}`,
		`{"name":"e","description":"x","Description":"y"}`, `{"name":5}`, `{"name":"e"}`, `"e"`,
	}
	f.Add([]byte{2, 0, 2, 0, 0, 1})           // one definition twice
	f.Add([]byte{3, 0, 2, 4, 1, 1, 1, 2})     // two changed definitions of one tool
	f.Add([]byte{2, 0, 2, 5, 0, 2, 3})        // an ambiguous definition claims a listed name
	f.Add([]byte{0x82, 0, 2, 10, 1, 9, 3, 6}) // a small catalog limit
	f.Add([]byte{0x43, 0, 2, 4, 0, 2, 4, 0})  // split recognising the catalog's definitions
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 2 {
			return
		}
		n, versioned, guided, limit := int(data[0]&7), data[0]&8 != 0, data[0]&0x40 != 0, 0
		if data[0]&0x80 != 0 {
			limit = 60 + int(data[1])
		}
		data = data[2:]
		n = min(n, len(data))
		pick := func(b []byte) (out [][]byte) {
			for _, i := range b {
				out = append(out, []byte(pool[int(i)%len(pool)]))
			}
			return out
		}
		catalog, page := pick(data[:n]), pick(data[n:])

		var policy ToolPolicy = &fakePolicy{status: map[string]string{}}
		if versioned {
			policy = versionedFake{policy.(*fakePolicy)}
		}
		s := &Session{Name: "fz", Tools: policy, MaxCatalogBytes: limit}
		s.once.Do(s.init)
		s.cat.set(rawList(catalog))
		var guide pageGuide
		if guided { // split as the rewrite does, recognising the catalog's definitions
			guide.snap = s.cat.verdicts.Load()
			members, err := framing.MembersSplitKnown([]byte(`{"tools":[`+string(bytes.Join(page, []byte(",")))+`]}`), func(string) bool { return true }, guide.snap.knownDefinitions())
			require.NoError(t, err)
			page, guide.at = members[0].Elements, members[0].Known
		}
		v := s.pageVerdicts(page, guide)

		var pageIndex, merged tooldef.Index
		for _, def := range page {
			d, err := tooldef.Identify(def)
			pageIndex.Add(def, d, err)
		}
		all := s.cat.verdicts.Load().tools
		for _, def := range all {
			d, err := tooldef.Identify(def)
			merged.Add(def, d, err)
		}
		for k, def := range page {
			want := false
			if pageIndex.Name(k) != "" {
				for p, c := range all {
					want = want || (bytes.Equal(c, def) && merged.Name(p) != "")
				}
			}
			assert.Equal(t, want, v.at(k).Callable(), "definition %d of the page, %s", k, def)
		}
	})
}
