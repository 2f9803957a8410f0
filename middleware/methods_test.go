package middleware

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"testing"

	"github.com/mcpwrap/mcpwrap/internal/framing"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestClientMethods holds the table to what each of the client's methods
// is: one row per method the Session treats apart, and the zero methodInfo
// for any other.
func TestClientMethods(t *testing.T) {
	tests := []struct {
		method      string
		intercepted bool // refused inside a batch
		replayed    bool // the sidecar's own request of it carries the client's params as sent
		empty       bool // answered {} while no upstream is ready, without waiting
		reopened    bool // kept whole while in flight, sent again after a restart
		untimed     bool // no call timeout
		gated       bool // judged by the ToolPolicy
		asTool      bool // the sidecar's own answers are isError results
		streamable  bool // may be relayed as it arrives
		handled     bool // taken in place of the relay
		noted       bool // recorded before the relay
		unready     bool // answered by a handler of its own while no upstream is ready
		alone       bool // may be answered alone while unready, depending on its params
		notified    bool // a notification of it is handled
		filtered    bool // its answer is rewritten by the gate
	}{
		{method: "initialize", intercepted: true, replayed: true, handled: true},
		{method: "server/discover", intercepted: true, replayed: true, handled: true},
		{method: "notifications/initialized", intercepted: true, notified: true},
		{method: "ping", empty: true, streamable: true},
		{method: "logging/setLevel", intercepted: true, replayed: true, empty: true, noted: true},
		{method: "resources/subscribe", intercepted: true, replayed: true, empty: true, noted: true},
		{method: "resources/unsubscribe", intercepted: true, empty: true, noted: true},
		{method: "tools/list", intercepted: true, filtered: true, unready: true},
		{method: "tools/call", intercepted: true, gated: true, asTool: true, noted: true, unready: true, alone: true, notified: true},
		{method: "resources/list", streamable: true, unready: true},
		{method: "resources/templates/list", streamable: true, unready: true},
		{method: "prompts/list", streamable: true, unready: true},
		{method: "subscriptions/listen", reopened: true, untimed: true},
		{method: "notifications/cancelled", streamable: true, notified: true},
		{method: "resources/read", streamable: true},
		{method: "", streamable: true},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		t.Run(tt.method, func(t *testing.T) {
			seen[tt.method] = true
			m := clientMethods[tt.method]
			assert.Equal(t, tt.intercepted, m.is(intercepted), "intercepted")
			assert.Equal(t, tt.replayed, m.is(replayed), "replayed")
			assert.Equal(t, tt.empty, m.is(answeredEmpty), "answeredEmpty")
			assert.Equal(t, tt.reopened, m.is(reopened), "reopened")
			assert.Equal(t, tt.untimed, m.is(untimed), "untimed")
			assert.Equal(t, tt.untimed, openEnded(tt.method), "openEnded")
			assert.Equal(t, tt.gated, m.is(gated), "gated")
			assert.Equal(t, tt.asTool, m.is(answeredAsTool), "answeredAsTool")
			assert.Equal(t, tt.streamable, m.streamable(), "streamable")
			assert.Equal(t, tt.handled, m.handle != nil, "handle")
			assert.Equal(t, tt.noted, m.note != nil, "note")
			assert.Equal(t, tt.unready, m.unready != nil, "unready")
			assert.Equal(t, tt.alone, m.alone != nil, "alone")
			assert.Equal(t, tt.notified, m.notify != nil, "notify")
			assert.Equal(t, tt.filtered, m.is(filtered), "filtered")
		})
	}
	for _, method := range slices.Sorted(maps.Keys(clientMethods)) {
		assert.True(t, seen[method], "%s has a row of the table but no case here", method)
	}
}

// TestClientMethodsAreConsistent holds every row to what the code that
// reads the table takes for granted.
func TestClientMethodsAreConsistent(t *testing.T) {
	for method, m := range clientMethods {
		if m.handle != nil || m.note != nil || m.is(replayed) {
			// The sidecar must see it alone: a batch would carry it past.
			assert.True(t, m.is(intercepted), "%s has code of its own but is not intercepted", method)
		}
		if m.notify != nil && !m.is(intercepted) {
			// Inside a batch, which is forwarded whole, its notify runs but
			// cannot drop it.
			assert.Equal(t, "notifications/cancelled", method, "a notification handled inside a batch must be forwarded")
		}
		assert.False(t, m.is(answeredEmpty) && m.unready != nil, "%s: answeredEmpty or an unready handler, not both", method)
		if m.is(filtered) {
			// Its answer is rewritten whole: its request is read whole too.
			assert.True(t, m.is(intercepted), "%s is filtered but not intercepted", method)
		}
		if m.alone != nil {
			assert.NotNil(t, m.unready, "%s: alone says what unready answers", method)
		}
	}
}

// TestClientMethodsInABatch walks the table: a batch holding a message of
// an intercepted method is refused whole, naming it; any other is
// relayed.
func TestClientMethodsInABatch(t *testing.T) {
	for _, method := range append(slices.Sorted(maps.Keys(clientMethods)), "resources/read") {
		t.Run(method, func(t *testing.T) {
			h := start(t, 0)
			elem := `{"jsonrpc":"2.0","id":"x","method":"` + method + `","params":{}}`
			if method == "notifications/initialized" || method == "notifications/cancelled" {
				elem = `{"jsonrpc":"2.0","method":"` + method + `","params":{}}`
			}
			batch := `[{"jsonrpc":"2.0","id":1,"method":"ping"},` + elem + `]`
			h.client.send(batch + "\n")
			if !clientMethods[method].is(intercepted) {
				assert.Equal(t, batch, string(h.up.next()))
				return
			}
			var resps []struct {
				ID    json.RawMessage `json:"id"`
				Error RPCError        `json:"error"`
			}
			require.NoError(t, json.Unmarshal(h.client.next(), &resps))
			require.NotEmpty(t, resps)
			assert.Equal(t, "mcpwrap does not relay "+method+" inside a batch; send it on its own", resps[0].Error.Message)
		})
	}
}

// TestClientMethodsWhileUnready walks the table: while no upstream is
// ready, an answeredEmpty request is answered {} and needs no upstream,
// a list of resources or prompts is answered empty, and a request of no
// row is answered with a JSON-RPC error carrying the status.
func TestClientMethodsWhileUnready(t *testing.T) {
	tests := []struct {
		method string
		params string
		want   string // the result, or "" for an error
		alone  bool   // answeredUnready
	}{
		{method: "ping", want: `{}`, alone: true},
		{method: "logging/setLevel", params: `{"level":"debug"}`, want: `{}`, alone: true},
		{method: "resources/subscribe", params: `{"uri":"a:b"}`, want: `{}`, alone: true},
		{method: "resources/unsubscribe", params: `{"uri":"a:b"}`, want: `{}`, alone: true},
		{method: "resources/list", want: `{"resources":[]}`},
		{method: "resources/templates/list", want: `{"resourceTemplates":[]}`},
		{method: "prompts/list", want: `{"prompts":[]}`},
		{method: "tools/call", params: `{"name":"discover_tools"}`, alone: true},
		{method: "tools/call", params: `{"name":"other"}`},
		{method: "resources/read", params: `{"uri":"a:b"}`},
	}
	for _, tt := range tests {
		t.Run(tt.method+tt.params, func(t *testing.T) {
			client, conn := newPeer(t, 0)
			s := &Session{Name: "fx", Client: conn}
			s.once.Do(s.init)
			msg := `{"jsonrpc":"2.0","id":7,"method":"` + tt.method + `"`
			if tt.params != "" {
				msg += `,"params":` + tt.params
			}
			env, err := framing.Peek([]byte(msg + "}"))
			require.NoError(t, err)
			assert.Equal(t, tt.alone, s.answeredUnready(env), "answeredUnready")
			s.answerUnready(context.Background(), env)
			var resp struct {
				ID     json.RawMessage `json:"id"`
				Result json.RawMessage `json:"result"`
				Error  *RPCError       `json:"error"`
			}
			require.NoError(t, json.Unmarshal(client.next(), &resp))
			assert.Equal(t, "7", string(resp.ID))
			switch {
			case tt.want != "":
				assert.JSONEq(t, tt.want, string(resp.Result))
			case clientMethods[tt.method].is(answeredAsTool):
				assert.Contains(t, string(resp.Result), `"content"`, "a tool result")
			default:
				require.NotNil(t, resp.Error)
				assert.Equal(t, codeInternalError, resp.Error.Code)
			}
		})
	}
}
