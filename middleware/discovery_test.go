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
