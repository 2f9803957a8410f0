package middleware

import (
	"encoding/json"
	"testing"

	"github.com/mcpwrap/mcpwrap/resilience"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The typed status of a discovery answer reaches the agent as the class
// word, and reads back as the same class.
func TestDiscoveryServerStatusIsTheClassWord(t *testing.T) {
	tests := []struct {
		class resilience.Class
		want  string
	}{
		{class: resilience.Available, want: `"available"`},
		{class: resilience.Transient, want: `"transient"`},
		{class: resilience.Permanent, want: `"permanent"`},
		{class: resilience.Denied, want: `"denied"`},
	}
	for _, tt := range tests {
		t.Run(tt.class.String(), func(t *testing.T) {
			b, err := json.Marshal(DiscoveryServer{Name: "fs", Status: tt.class})
			require.NoError(t, err)
			var raw map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(b, &raw))
			assert.Equal(t, tt.want, string(raw["status"]))

			var back DiscoveryServer
			require.NoError(t, json.Unmarshal(b, &back))
			assert.Equal(t, tt.class, back.Status)
			assert.Equal(t, tt.class == resilience.Available, UpstreamState{Status: tt.class}.Available())
		})
	}
}

// TestApprovedDescriptionsAreShown: under approval, a tool locked by the
// user whose definition is the approved one is described, and found by a
// query on its description; one pending approval is not, and its entry
// says its description is withheld.
func TestApprovedDescriptionsAreShown(t *testing.T) {
	policy := &fakePolicy{pinned: true, status: map[string]string{"open": "disabled_by_user", "secret": "pending_approval"}}
	h := startRaw(t, rawOptions{policy: policy,
		catalog: `{"tools":[{"name":"open","description":"opens files"},{"name":"secret","description":"uploads files"}]}`})
	h.client.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"discover_tools","arguments":{"query":"files","include_disabled":true}}}` + "\n")
	var resp struct {
		Result struct {
			StructuredContent DiscoveryResult `json:"structuredContent"`
		} `json:"result"`
	}
	require.NoError(t, json.Unmarshal(h.nextResponse("1"), &resp))
	require.NotNil(t, resp.Result.StructuredContent.Disabled)
	assert.Equal(t, []DiscoveredTool{{Name: "open", Server: "fx", Description: "opens files", Status: "disabled_by_user"}},
		*resp.Result.StructuredContent.Disabled)

	h.client.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"discover_tools","arguments":{"include_disabled":true}}}` + "\n")
	require.NoError(t, json.Unmarshal(h.nextResponse("2"), &resp))
	assert.Equal(t, []DiscoveredTool{
		{Name: "open", Server: "fx", Description: "opens files", Status: "disabled_by_user"},
		{Name: "secret", Server: "fx", Description: withheldNote, Status: "pending_approval"},
	}, *resp.Result.StructuredContent.Disabled)
}
