package middleware

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCallVerdictFollowsThePolicy: a call is judged by the policy as it is
// now, whether the Session judges from the verdicts it keeps (a
// VersionedPolicy) or asks the policy on each call; a kept verdict is used
// only while the policy's version has not moved, so a change is never
// missed, even before ReevaluateTools runs.
func TestCallVerdictFollowsThePolicy(t *testing.T) {
	tests := []struct {
		name      string
		versioned bool
		// perCall is how many definitions the policy evaluates for a call
		// to a known tool once the catalog is evaluated.
		perCall int64
	}{
		{name: "versioned policy", versioned: true, perCall: 0},
		{name: "plain policy", versioned: false, perCall: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := startToolsWith(t, tt.versioned, [][]string{{tool("a", "x"), tool("b", "y")}}, nil)
			require.Eventually(t, h.session.catalogLoadIdle, timeout, tick)
			id := 0
			status := func() string { // calls a; "" when it reached the upstream
				t.Helper()
				id++
				before := h.up.calls("tools/call")
				var resp struct {
					Result struct {
						IsError bool           `json:"isError"`
						Meta    map[string]any `json:"_meta"`
					} `json:"result"`
				}
				raw := h.call(id, "tools/call", `{"name":"a"}`)
				for strings.Contains(string(raw), `"notifications/tools/list_changed"`) {
					raw = h.client.next() // the change is announced
				}
				require.NoError(t, json.Unmarshal(raw, &resp))
				if h.up.calls("tools/call") > before {
					return ""
				}
				require.True(t, resp.Result.IsError, "%s", raw)
				return fmt.Sprint(resp.Result.Meta["status"])
			}

			assert.Equal(t, "", status(), "callable")
			h.policy.set("a", "disabled_by_user") // no ReevaluateTools yet
			assert.Equal(t, "disabled_by_user", status(), "judged by the policy as it is now")
			h.session.ReevaluateTools()
			evaluated := h.policy.evaluated.Load()
			assert.Equal(t, "disabled_by_user", status())
			assert.Equal(t, tt.perCall, h.policy.evaluated.Load()-evaluated, "definitions evaluated for one call")
			h.policy.set("a", "")
			assert.Equal(t, "", status(), "callable again")
		})
	}
}

// TestCallVerdictFollowsTheCatalog: a definition that changes is judged
// anew (its verdict kept for the old one is not used), and a call to a tool
// the catalog no longer has waits for the catalog as any unknown call does.
func TestCallVerdictFollowsTheCatalog(t *testing.T) {
	for _, versioned := range []bool{false, true} {
		t.Run(fmt.Sprintf("versioned=%t", versioned), func(t *testing.T) {
			h := startRaw(t, rawOptions{policy: newDescPolicy(versioned), catalog: `{"tools":[{"name":"a","description":"benign"}]}`})
			h.client.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}}` + "\n")
			assert.Equal(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}}`, string(h.up.next()), "callable")

			h.client.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}` + "\n")
			h.answer(h.expect("tools/list"), `{"tools":[{"name":"a","description":"now evil"}]}`)
			h.nextResponse("2")
			h.client.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"a"}}` + "\n")
			assert.Contains(t, string(h.nextResponse("3")), `"pending_approval"`, "the changed definition is judged")
		})
	}
}

// versionedDesc is a descPolicy that is a VersionedPolicy: its verdicts
// depend on the definitions alone, so its version never moves.
type versionedDesc struct{ *descPolicy }

func (versionedDesc) Version() uint64 { return 0 }

func newDescPolicy(versioned bool) ToolPolicy {
	if versioned {
		return versionedDesc{&descPolicy{}}
	}
	return &descPolicy{}
}

// TestCallVerdictIsNeverOlderThanTheCatalog: the verdicts kept for a
// catalog are dropped with it, before anything re-evaluates the new one, so
// a changed definition is never judged by its predecessor's verdict.
func TestCallVerdictIsNeverOlderThanTheCatalog(t *testing.T) {
	s := &Session{Name: "fx", Tools: newDescPolicy(true)}
	s.once.Do(s.init)
	setCatalog := func(def string) {
		s.cat.set([]json.RawMessage{json.RawMessage(def)})
	}
	setCatalog(`{"name":"a","description":"benign"}`)
	s.view() // evaluates and keeps the verdicts
	require.NotNil(t, s.cat.verdicts.Load().avail, "verdicts kept")
	a, known, _ := s.callVerdict("a")
	require.True(t, known)
	assert.True(t, a.Callable())

	setCatalog(`{"name":"a","description":"now evil"}`)
	a, known, _ = s.callVerdict("a")
	require.True(t, known)
	assert.Equal(t, "pending_approval", a.Status)
}

// descPolicy locks tools whose description mentions "evil", the way
// pinning locks a tool whose definition changed.
type descPolicy struct{ fakePolicy }

func (p *descPolicy) Evaluate(tools []json.RawMessage) []Availability {
	out := make([]Availability, len(tools))
	for i, t := range tools {
		out[i].InScope = true
		if strings.Contains(defOf(t).Description, "evil") {
			out[i].Status = "pending_approval"
		}
	}
	return out
}

// TestCallIsJudgedByTheDefinitionTheClientSaw: when the upstream changes a
// tool's definition without list_changed (a rug pull), the client's
// tools/list hides it (the page is evaluated), and a call is judged by that
// changed definition, never by the one cached before, and not forwarded.
func TestCallIsJudgedByTheDefinitionTheClientSaw(t *testing.T) {
	h := startRaw(t, rawOptions{policy: &descPolicy{},
		catalog: `{"tools":[{"name":"a","description":"benign"}]}`})
	h.client.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}` + "\n")
	h.answer(h.expect("tools/list"), `{"tools":[{"name":"a","description":"now evil"}]}`)
	var list listResponse
	require.NoError(t, json.Unmarshal(h.nextResponse("1"), &list))
	require.NotContains(t, list.names(), "a", "the changed tool is hidden")

	h.client.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"a"}}` + "\n")
	h.client.send(`{"jsonrpc":"2.0","id":3,"method":"ping"}` + "\n")
	assert.Equal(t, `{"jsonrpc":"2.0","id":3,"method":"ping"}`, string(h.up.next()),
		"the hidden, changed tool must not be callable")
}

// TestToolsListFollowsThePolicy: a tools/list page is judged by the policy
// as it is now. With a VersionedPolicy the page takes the verdicts kept for
// the catalog while the policy's version has not moved, without asking the
// policy about any definition again; a move, even before ReevaluateTools
// runs, has the catalog evaluated anew.
func TestToolsListFollowsThePolicy(t *testing.T) {
	tests := []struct {
		name      string
		versioned bool
		perList   int64 // definitions the policy evaluates for one tools/list once the catalog is evaluated
	}{
		{name: "versioned policy", versioned: true, perList: 0},
		{name: "plain policy", versioned: false, perList: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := startToolsWith(t, tt.versioned, [][]string{{tool("a", "x"), tool("b", "y")}}, nil)
			require.Eventually(t, h.session.catalogLoadIdle, timeout, tick)
			id := 0
			list := func() []string {
				t.Helper()
				id++
				raw := h.call(id, "tools/list", `{}`)
				for strings.Contains(string(raw), `"notifications/tools/list_changed"`) {
					raw = h.client.next() // the change is announced
				}
				var resp listResponse
				require.NoError(t, json.Unmarshal(raw, &resp))
				return resp.names()
			}

			assert.Equal(t, []string{"a", "b"}, list())
			evaluated := h.policy.evaluated.Load()
			assert.Equal(t, []string{"a", "b"}, list())
			assert.Equal(t, tt.perList, h.policy.evaluated.Load()-evaluated, "definitions evaluated for one tools/list")

			h.policy.set("a", "disabled_by_user") // no ReevaluateTools yet
			assert.Equal(t, []string{"b", DefaultDiscoveryTool}, list(), "judged by the policy as it is now")
			h.policy.set("a", "")
			assert.Equal(t, []string{"a", "b"}, list(), "callable again")
		})
	}
}

// TestParseCallReadsACatalogNameWithoutAllocating: the name of a call to a
// tool in the catalog is the catalog's own string, so reading it costs the
// call path no allocation; any other name is decoded as before.
func TestParseCallReadsACatalogNameWithoutAllocating(t *testing.T) {
	s := &Session{Name: "fx", Tools: newDescPolicy(true)}
	s.once.Do(s.init)
	s.cat.set([]json.RawMessage{json.RawMessage(`{"name":"echo"}`)})
	tests := []struct {
		name     string
		params   string
		want     string
		wantFree bool // read without allocating
	}{
		{name: "a tool in the catalog", params: `{"name":"echo","arguments":{}}`, want: "echo", wantFree: true},
		{name: "a tool in the catalog, escaped", params: `{"name":"\u0065cho"}`, want: "echo"},
		{name: "a tool not in the catalog", params: `{"name":"other"}`, want: "other"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := callEnvelope(t, []byte(tt.params))
			var p callParams
			var err error
			allocs := testing.AllocsPerRun(100, func() { p, err = s.parseCall(env) })
			require.NoError(t, err)
			assert.Equal(t, tt.want, p.Name)
			assert.Equal(t, tt.wantFree, allocs == 0, "%v allocations", allocs)
		})
	}
}
