package middleware

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/internal/era"
	"github.com/mcpwrap/mcpwrap/internal/framing"
)

// memoryPolicy is a fakePolicy that remembers the upstream, as the gate
// does in the state store.
type memoryPolicy struct {
	*fakePolicy
	remembered *UpstreamInfo
	seen       chan UpstreamInfo
}

func (p *memoryPolicy) RememberedUpstream() (UpstreamInfo, bool) {
	if p.remembered == nil {
		return UpstreamInfo{}, false
	}
	return *p.remembered, true
}

func (p *memoryPolicy) UpstreamSeen(_ context.Context, u UpstreamInfo) { p.seen <- u }

// TestDegradedHandshakeKeepsTheUpstreamsCapabilities: when the upstream is
// slower than the ready timeout, the sidecar's own answer to the client's
// handshake advertises the capabilities and serverInfo the upstream showed
// in its last successful load (each list as changing), not only tools; the
// lists of resources and prompts are empty until the upstream is ready,
// when the client is told each changed. A server never loaded is
// advertised with tools only. A successful load is remembered.
func TestDegradedHandshakeKeepsTheUpstreamsCapabilities(t *testing.T) {
	const upstreamCaps = `{"tools":{},"resources":{"subscribe":true},"prompts":{},"logging":{}}`
	tests := []struct {
		name       string
		remembered *UpstreamInfo
		method     string // the client's handshake
		wantCaps   string
		wantInfo   string
	}{
		{name: "remembered", method: "initialize",
			remembered: &UpstreamInfo{Capabilities: json.RawMessage(upstreamCaps), ServerInfo: json.RawMessage(`{"name":"everything","version":"2.0"}`)},
			wantCaps:   `{"tools":{"listChanged":true},"resources":{"subscribe":true,"listChanged":true},"prompts":{"listChanged":true},"logging":{}}`,
			wantInfo:   `{"name":"everything","version":"2.0"}`},
		{name: "remembered, 2026-07-28", method: "server/discover",
			remembered: &UpstreamInfo{Capabilities: json.RawMessage(upstreamCaps), ServerInfo: json.RawMessage(`{"name":"everything","version":"2.0"}`)},
			wantCaps:   `{"tools":{"listChanged":true},"resources":{"subscribe":true,"listChanged":true},"prompts":{"listChanged":true},"logging":{}}`,
			wantInfo:   `{"name":"everything","version":"2.0"}`},
		{name: "never loaded", method: "initialize",
			wantCaps: `{"tools":{"listChanged":true}}`,
			wantInfo: `{"name":"slow","version":"mcpwrap-degraded"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := &fakeClock{}
			client, clientConn := newPeer(t, 0)
			up, upConn := newPeer(t, 0)
			memory := &memoryPolicy{fakePolicy: &fakePolicy{status: map[string]string{}}, remembered: tt.remembered, seen: make(chan UpstreamInfo, 1)}
			s := &Session{Name: "slow", Client: clientConn, Dial: dialOnce(upConn), Tools: memory, hooks: hooks{afterFunc: clock.afterFunc}}
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			go s.Run(ctx)

			params := `{"protocolVersion":"2025-11-25"}`
			if tt.method == "server/discover" {
				params = `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`
			}
			client.send(`{"jsonrpc":"2.0","id":0,"method":"` + tt.method + `","params":` + params + "}\n")
			hs, err := framing.Peek(up.next()) // the upstream takes its time
			require.NoError(t, err)
			require.Eventually(t, func() bool { return clock.fire() > 0 }, timeout, tick, "the ready timeout")
			var answer struct {
				Result struct {
					Capabilities json.RawMessage            `json:"capabilities"`
					ServerInfo   json.RawMessage            `json:"serverInfo"`
					Meta         map[string]json.RawMessage `json:"_meta"`
				} `json:"result"`
			}
			require.NoError(t, json.Unmarshal(client.next(), &answer))
			assert.JSONEq(t, tt.wantCaps, string(answer.Result.Capabilities))
			info := answer.Result.ServerInfo
			if tt.method == "server/discover" {
				info = answer.Result.Meta[era.MetaServerInfo]
			}
			assert.JSONEq(t, tt.wantInfo, string(info))

			for method, want := range map[string]string{
				"resources/list": `{"resources":[]}`, "resources/templates/list": `{"resourceTemplates":[]}`, "prompts/list": `{"prompts":[]}`,
			} {
				client.send(`{"jsonrpc":"2.0","id":1,"method":"` + method + `"}` + "\n")
				assert.JSONEq(t, `{"jsonrpc":"2.0","id":1,"result":`+want+`}`, string(client.next()), method)
			}

			// The upstream is ready: each list the client holds is told changed.
			result := `{"protocolVersion":"2025-11-25","capabilities":` + upstreamCaps + `,"serverInfo":{"name":"everything","version":"2.1"}}`
			if tt.method == "server/discover" {
				result = `{"supportedVersions":["2026-07-28"],"capabilities":` + upstreamCaps + `,"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"everything","version":"2.1"}}}`
			}
			up.send(`{"jsonrpc":"2.0","id":` + string(hs.ID) + `,"result":` + result + "}\n")
			for { // its first catalog completes the load
				env, err := framing.Peek(up.next())
				require.NoError(t, err)
				if env.Method == "tools/list" {
					up.send(`{"jsonrpc":"2.0","id":` + string(env.ID) + `,"result":{"tools":[]}}` + "\n")
					break
				}
			}
			var told []string
			for range 3 {
				env, err := framing.Peek(client.next())
				require.NoError(t, err)
				told = append(told, env.Method)
			}
			assert.ElementsMatch(t, []string{"notifications/tools/list_changed", "notifications/resources/list_changed", "notifications/prompts/list_changed"}, told)

			select {
			case u := <-memory.seen:
				assert.JSONEq(t, upstreamCaps, string(u.Capabilities), "the load is remembered")
				assert.JSONEq(t, `{"name":"everything","version":"2.1"}`, string(u.ServerInfo))
				if tt.method == "initialize" {
					assert.Equal(t, "2025-11-25", u.ProtocolVersion, "the version it agreed to")
				} else {
					assert.Empty(t, u.ProtocolVersion, "a discover agrees to none")
				}
			case <-time.After(timeout):
				t.Fatal("the load was not remembered")
			}
		})
	}
}
