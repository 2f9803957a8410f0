package toolscli

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/mcpwrap/mcpwrap/internal/config"
	"github.com/mcpwrap/mcpwrap/internal/framing"
	"github.com/mcpwrap/mcpwrap/internal/gate"
	"github.com/mcpwrap/mcpwrap/internal/policy"
	"github.com/mcpwrap/mcpwrap/internal/state"
	"github.com/mcpwrap/mcpwrap/internal/tooldef"
	"github.com/mcpwrap/mcpwrap/middleware"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The spellings and values a generated tool object is built from: every
// member that names or defines a tool, in its exact, case-variant and
// escaped spellings, and values that repeat names or nest duplicate keys.
var (
	genKeys = []string{
		`"name"`, `"NAME"`, `"Name"`, `"n\u0061me"`, `"nam\u0065"`,
		`"description"`, `"Description"`, `"descriptio\u006e"`,
		`"inputSchema"`, `"inputschema"`, `"input` + "\u017f" + `chema"`,
		`"outputSchema"`, `"OUTPUTSCHEMA"`,
		`"annotations"`, `"Annotations"`, `"title"`, `"_meta"`,
	}
	genValues = []string{
		`"a"`, `"b"`, `"A"`, `"\u0061"`, `""`, `7`, `null`, `true`,
		`{"type":"object"}`, `{"type":"object","type":"string"}`, `{"type":"object","typ\u0065":"string"}`,
		`{"properties":{"p":{"type":"string"}},"Properties":{}}`,
		`{"readOnlyHint":true}`, `{"readOnlyHint":false,"readOnlyHint":true}`, `{"readonlyhint":true}`,
		`[{"a":1},{"a":1,"a":2}]`,
	}
)

// generate builds up to 8 tool objects from gen: each byte pair picks a
// member spelling and a value; a byte with the top bits set ends an object.
func generate(gen []byte) [][]byte {
	var defs [][]byte
	obj := []byte{'{'}
	flush := func() {
		if len(obj) > 1 {
			defs = append(defs, append(obj, '}'))
		}
		obj = []byte{'{'}
	}
	for i := 0; i+1 < len(gen) && len(defs) < 8; i += 2 {
		if gen[i] >= 0xf0 {
			flush()
			i--
			continue
		}
		if len(obj) > 1 {
			obj = append(obj, ',')
		}
		obj = append(obj, genKeys[int(gen[i])%len(genKeys)]...)
		obj = append(obj, ':')
		obj = append(obj, genValues[int(gen[i+1])%len(genValues)]...)
	}
	flush()
	return defs
}

// FuzzToolIdentity checks that every reader of a catalog names the same
// tool for each definition, or all refuse it: the definition parser
// (tooldef.Parse and Identify), the catalog index the sidecar routes calls
// by (tooldef.Index), the policy (ParseTool), the hash, the gate (its
// verdicts and the catalog it records in the store) and the CLI (which
// reads the recorded catalog). It also checks that a definition accepted
// as a trusted tool reads the same under the readers an upstream or client
// may use (case-insensitive last-wins, exact last-wins, exact first-wins).
func FuzzToolIdentity(f *testing.F) {
	for _, seed := range []string{
		`[{"name":"a"}]`,
		`[{"name":"a","inputSchema":{"type":"object"}},{"name":"b","annotations":{"readOnlyHint":true}}]`,
		`[{"name":"safe","name":"evil"}]`,
		`[{"name":"safe","NAME":"evil"}]`,
		`[{"Name":"evil"}]`,
		`[{"n\u0061me":"evil"}]`,
		`[{"name":"safe"},{"name":"x","NAME":"safe"}]`,
		`[{"name":"twin","description":"1"},{"name":"twin","description":"2"}]`,
		`[{"name":"t","description":"a","Description":"b"}]`,
		`[{"name":"t","inputSchema":{"type":"object","type":"string"}}]`,
		`[{"name":"t","outputSchema":{"a":[{"k":1,"k\u0020":2,"k":3}]}}]`,
		`[{"name":"t","annotations":{"readOnlyHint":false,"READONLYHINT":true}}]`,
		`[{"name":"t","inputSchema":{"type":tru}}]`,
		`[{"name":"\u0074"},{"name":"t"}]`,
		"[{\"name\":\"\xff\"},{\"name\":\"\xfe\"}]",
		`[{"name":"a\/b"},{"name":"a/b"}]`,
	} {
		f.Add([]byte(seed), []byte{})
	}
	f.Add([]byte(`[]`), []byte{0, 0, 1, 1, 0xff, 0, 1, 3, 0})
	f.Add([]byte(`[]`), []byte{0, 0, 8, 9, 0xff, 0, 0, 13, 14})
	f.Add([]byte(`[]`), []byte{4, 1, 0xff, 0, 1})

	f.Fuzz(func(t *testing.T, catalog, gen []byte) {
		var defs []json.RawMessage
		if elems, err := framing.Elements(catalog); err == nil {
			for _, e := range elems {
				defs = append(defs, json.RawMessage(e))
			}
		}
		for _, d := range generate(gen) {
			defs = append(defs, d)
		}
		if len(defs) == 0 || len(defs) > 16 {
			return
		}
		checkToolIdentity(t, defs)
	})
}

func checkToolIdentity(t *testing.T, defs []json.RawMessage) {
	ctx := context.Background()
	var index tooldef.Index
	parsed := make([]tooldef.Def, len(defs))
	errs := make([]error, len(defs))
	for i, raw := range defs {
		parsed[i], errs[i] = tooldef.Parse(raw)
		id, idErr := tooldef.Identify(raw)
		require.Equal(t, errs[i] == nil, idErr == nil, "Parse and Identify refuse alike: %s", raw)
		id.Hash = parsed[i].Hash
		require.Equal(t, parsed[i], id, "Parse and Identify read alike: %s", raw)
		index.Add(raw, id, idErr)

		pt, err := policy.ParseTool(raw)
		require.Equal(t, errs[i] == nil, err == nil, "the policy refuses what tooldef refuses: %s", raw)
		if errs[i] != nil {
			require.Equal(t, policy.Tool{Refused: true}, pt, "the policy trusts nothing of a refused definition")
		} else {
			require.Equal(t, policy.ToolOf(parsed[i]), pt, "the policy reads what tooldef reads")
		}

		claims := tooldef.Claims(raw)
		for _, name := range otherReaders(raw) {
			require.Contains(t, claims, name, "a name another reader takes is among the claims: %s", raw)
		}
		if errs[i] == nil {
			require.Equal(t, []string{parsed[i].Name}, claims)
			for _, name := range otherReaders(raw) {
				require.Equal(t, parsed[i].Name, name, "every reader names an accepted definition alike: %s", raw)
			}
		}
	}

	// The gate, recording the catalog under tofu and judging it.
	store := &memoryStore{}
	eval, err := policy.NewEvaluator(policy.Options{})
	require.NoError(t, err)
	g := gate.New("s", eval, store, nil)
	g.Reload(ctx)
	g.CatalogSeen(ctx, defs)
	avail := g.Evaluate(defs)
	srv, err := store.Load(ctx, "s")
	require.NoError(t, err)
	recorded := map[string]state.CatalogTool{}
	if srv.Catalog != nil {
		recorded = srv.Catalog.Tools
	}
	v := &serverView{name: "s", config: config.Server{Enabled: true}, eval: eval, user: srv}

	trusted := map[string]bool{}
	for i, raw := range defs {
		name := index.Name(i)
		if name == "" {
			require.Equal(t, middleware.Availability{InScope: true, Status: string(policy.DisabledUnknown), Pinned: true, Unapproved: true}, avail[i],
				"the gate locks a definition the index trusts under no name: %s", raw)
			for _, c := range tooldef.Claims(raw) {
				_, ok := recorded[c]
				require.False(t, ok, "the gate records no name an untrusted definition claims: %q in %s", c, raw)
				_, ok, claimed := index.Lookup(c)
				require.False(t, ok)
				require.True(t, claimed, "the index refuses every claim")
			}
			continue
		}
		trusted[name] = true
		require.NoError(t, errs[i])
		require.Equal(t, parsed[i].Name, name)
		require.Equal(t, middleware.Availability{InScope: true, Pinned: true}, avail[i], "tofu grants the first catalog: %s", raw)
		j, ok, _ := index.Lookup(name)
		require.True(t, ok)
		require.Equal(t, i, j)

		rec, ok := recorded[name]
		require.True(t, ok, "the gate records a trusted tool under its name: %s", raw)
		require.Equal(t, parsed[i].Hash, rec.Hash, "the recorded hash is tooldef's")

		info, ok := v.catalogTool(name)
		require.True(t, ok, "the CLI finds it")
		require.NoError(t, info.refused, "the CLI accepts it")
		require.Equal(t, policy.ToolOf(parsed[i]), info.tool, "the CLI reads what the sidecar reads")
		require.Equal(t, policy.Callable, v.status(name))
	}
	require.Len(t, recorded, len(trusted), "the gate records the trusted tools and nothing else")
}

// otherReaders returns the names readers other than tooldef may take the
// tool object raw for: Go's encoding/json (member names matched without
// regard to case, last wins), a map reader (exact, last wins) and a
// first-wins reader (exact, first wins), each when it yields a string.
func otherReaders(raw []byte) []string {
	var names []string
	add := func(name string) {
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	var s struct {
		Name *string `json:"name"`
	}
	if json.Unmarshal(raw, &s) == nil && s.Name != nil {
		add(*s.Name)
	}
	var m map[string]json.RawMessage
	var name string
	if json.Unmarshal(raw, &m) == nil && json.Unmarshal(m["name"], &name) == nil {
		add(name)
	}
	if members, err := framing.Members(raw); err == nil {
		for _, mem := range members {
			if k, err := mem.Key(); err == nil && k == "name" {
				if json.Unmarshal(mem.Value, &name) == nil {
					add(name)
				}
				break
			}
		}
	}
	return names
}

// memoryStore is an in-memory state.Store holding one server's state.
type memoryStore struct {
	mu  sync.Mutex
	srv state.Server
}

func (m *memoryStore) Load(context.Context, string) (*state.Server, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, err := json.Marshal(m.srv)
	if err != nil {
		return nil, fmt.Errorf("memoryStore: %w", err)
	}
	var cp state.Server
	if err := json.Unmarshal(b, &cp); err != nil {
		return nil, fmt.Errorf("memoryStore: %w", err)
	}
	return &cp, nil
}

func (m *memoryStore) Update(ctx context.Context, server string, fn func(*state.Server) error) error {
	srv, err := m.Load(ctx, server)
	if err != nil {
		return err
	}
	if err := fn(srv); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.srv = *srv
	return nil
}

func (m *memoryStore) Watch(ctx context.Context, _ string, _ func()) { <-ctx.Done() }

func (m *memoryStore) WatchAll(ctx context.Context, _ func()) { <-ctx.Done() }

func (m *memoryStore) Servers(context.Context) ([]string, error) { return []string{"s"}, nil }

// TestToolIdentityCases runs the identity checks on hand-picked catalogs.
func TestToolIdentityCases(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		catalog string
		trusted []string
	}{
		{name: "plain", catalog: `[{"name":"a"},{"name":"b"}]`, trusted: []string{"a", "b"}},
		{name: "case variant", catalog: `[{"name":"safe","NAME":"evil"},{"name":"c"}]`, trusted: []string{"c"}},
		{name: "escaped", catalog: `[{"n\u0061me":"evil"}]`},
		{name: "twins", catalog: `[{"name":"twin"},{"name":"twin","description":"x"},{"name":"c"}]`, trusted: []string{"c"}},
		{name: "claimed by an ambiguous one", catalog: `[{"name":"safe"},{"name":"x","Name":"safe"}]`},
		{name: "nested duplicate", catalog: `[{"name":"t","inputSchema":{"a":1,"a":2}},{"name":"u"}]`, trusted: []string{"u"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			elems, err := framing.Elements([]byte(tt.catalog))
			require.NoError(t, err)
			defs := make([]json.RawMessage, len(elems))
			var index tooldef.Index
			for i, e := range elems {
				defs[i] = e
				d, err := tooldef.Identify(e)
				index.Add(e, d, err)
			}
			checkToolIdentity(t, defs)
			var trusted []string
			for i := range defs {
				if n := index.Name(i); n != "" {
					trusted = append(trusted, n)
				}
			}
			assert.Equal(t, tt.trusted, trusted)
		})
	}
}
