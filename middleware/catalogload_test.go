package middleware

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/internal/framing"
	"github.com/mcpwrap/mcpwrap/resilience"
)

// TestFailedCatalogFailsTheLoad: after a good handshake, an upstream whose
// tools/list fails has not loaded (the catalog is part of the load): the
// call waiting for the catalog is told the classified failure and its
// cause, never "disabled_unknown, check mcpwrap's log", and the status is
// not "available" but the failure's class.
func TestFailedCatalogFailsTheLoad(t *testing.T) {
	tests := []struct {
		name   string
		err    string // the upstream's JSON-RPC error to tools/list
		class  resilience.Class
		reason string
	}{
		{name: "permanent", err: `{"code":-32603,"message":"database schema missing"}`, class: resilience.Permanent,
			reason: "cannot list its tools: JSON-RPC error -32603: database schema missing"},
		{name: "denied", err: `{"code":-32001,"message":"Unauthorized: token expired"}`, class: resilience.Denied,
			reason: "cannot list its tools: JSON-RPC error -32001: Unauthorized: token expired"},
		{name: "transient", err: `{"code":-32001,"message":"request timed out"}`, class: resilience.Transient,
			reason: "cannot list its tools: JSON-RPC error -32001: request timed out"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := startRaw(t, rawOptions{policy: lockedSecret})
			list := h.expect("tools/list")
			h.client.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"open"}}` + "\n")
			h.up.send(`{"jsonrpc":"2.0","id":` + string(list) + `,"error":` + tt.err + "}\n")

			var resp struct {
				Result struct {
					Content []struct{ Text string } `json:"content"`
					IsError bool                    `json:"isError"`
					Meta    map[string]any          `json:"_meta"`
				} `json:"result"`
			}
			for {
				msg := h.client.next()
				require.NoError(t, json.Unmarshal(msg, &resp))
				if resp.Result.IsError {
					break
				}
			}
			require.Len(t, resp.Result.Content, 1)
			text := resp.Result.Content[0].Text
			assert.NotContains(t, text, "check mcpwrap's log")
			assert.Contains(t, text, tt.reason)
			assert.Equal(t, tt.class.String(), resp.Result.Meta["class"])
			assert.Equal(t, tt.class.Retryable(), resp.Result.Meta["retryable"])
			// Not available; its class may have moved on since (the call may
			// have asked for a reconnect, whose dial the fixture refuses).
			require.Eventually(t, func() bool { return h.session.Status().Class != resilience.Available }, timeout, tick)
		})
	}
}

// TestFailingFirstCatalogIsOneLoadingStatus: an upstream whose handshake
// succeeds and whose first tools/list fails a few times before it answers
// is loading, not available, until its catalog is loaded: the status is
// the load's transient one, with the attempt under way and the last
// failure, for every attempt, and available only once the catalog loads.
// The client hears of its tools once when its view of them changes (it
// was answered by the upstream, which then failed) and once when they
// come, not twice per retry. Before, each retry's handshake published
// "available" until its catalog failed, and the client got two
// notifications/tools/list_changed per retry.
func TestFailingFirstCatalogIsOneLoadingStatus(t *testing.T) {
	client, clientConn := newPeer(t, 0)
	dials := make(chan *peer, 16)
	s := &Session{Name: "fx", Client: clientConn, Tools: lockedSecret,
		Dial: func(context.Context) (Conn, error) {
			up, conn := newPeer(t, 0)
			dials <- up
			return conn, nil
		},
		Retrier: &resilience.Retrier{
			Policy:   resilience.Policy{Initial: time.Millisecond, MaxAttempts: 10, Jitter: -1},
			NewTimer: newInstantTimer,
		}}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	client.send(clientInitialize + "\n")

	const failures = 3
	var up *peer
	for attempt := 1; attempt <= failures+1; attempt++ {
		select {
		case up = <-dials:
		case <-time.After(timeout):
			require.FailNow(t, "no new attempt", "attempt %d, status: %+v", attempt, s.Status())
		}
		env, err := framing.Peek(up.next())
		require.NoError(t, err)
		require.Equal(t, "initialize", env.Method)
		up.send(`{"jsonrpc":"2.0","id":` + string(env.ID) + `,"result":` + initializeResult + "}\n")
		if attempt == 1 {
			assert.Contains(t, string(client.next()), `"id":0`, "the client's initialize is answered by the upstream")
		}
		var list []byte
		for list == nil {
			env, err = framing.Peek(up.next())
			require.NoError(t, err)
			if env.Method == "tools/list" {
				list = env.ID
			}
		}
		// The handshake is done, the first catalog not loaded: loading.
		st := s.Status()
		assert.Equal(t, resilience.Transient, st.Class, "attempt %d: %s", attempt, st.Message())
		assert.Equal(t, attempt, st.Attempts)
		assert.Contains(t, st.Message(), "still starting up (attempt "+strconv.Itoa(attempt))
		if attempt > 1 {
			assert.Contains(t, st.Message(), "Last error: cannot list its tools: JSON-RPC error -32001: request timed out")
		}
		if attempt <= failures {
			up.send(`{"jsonrpc":"2.0","id":` + string(list) + `,"error":{"code":-32001,"message":"request timed out"}}` + "\n")
			if attempt == 1 {
				// The client, answered by the upstream, now sees the
				// discovery tool alone: told once.
				assert.Equal(t, `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`, string(client.next()))
			}
			continue
		}
		up.send(`{"jsonrpc":"2.0","id":` + string(list) + `,"result":` + secretCatalog + "}\n")
	}
	require.Eventually(t, func() bool { return s.Status().Class == resilience.Available }, timeout, tick)
	assert.Equal(t, failures+1, s.Status().Attempts)
	// The tools came back: told once, and nothing else since the first.
	assert.Equal(t, `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`, string(client.next()))
	client.send(`{"jsonrpc":"2.0","id":7,"method":"ping"}` + "\n")
	ping, err := framing.Peek(up.next())
	require.NoError(t, err)
	require.Equal(t, "ping", ping.Method)
	up.send(`{"jsonrpc":"2.0","id":` + string(ping.ID) + `,"result":{}}` + "\n")
	assert.Equal(t, `{"jsonrpc":"2.0","id":7,"result":{}}`, string(client.next()), "no list_changed per retry")
	cancel()
	<-done
}

// TestToolsListWaitsForTheFirstCatalog: a client's tools/list that comes
// while the load waits for its first catalog (the handshake done) is not
// relayed then, when the agent would be shown the upstream's tools, or the
// discovery tool saying it is not available, while the status says it is
// loading: it waits for the catalog. Loaded, the list is relayed and the
// client gets the upstream's answer as it is, with no list_changed; failed,
// the client is told once that its tools changed and gets the discovery
// tool alone, whose text, like the discovery tool's answer, is the status.
func TestToolsListWaitsForTheFirstCatalog(t *testing.T) {
	const catalog = `{"tools":[{"name":"open","inputSchema":{"type":"object"}}]}`
	tests := []struct {
		name  string
		first string // the upstream's answer to the sidecar's first tools/list: a result or an error member
	}{
		{name: "loaded", first: `"result":` + catalog},
		{name: "failed", first: `"error":{"code":-32001,"message":"request timed out"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client, clientConn := newPeer(t, 0)
			up, upConn := newPeer(t, 0)
			conns := make(chan Conn, 1)
			conns <- upConn
			s := &Session{Name: "fx", Client: clientConn, Tools: &fakePolicy{status: map[string]string{}},
				Dial: func(ctx context.Context) (Conn, error) {
					select { // one upstream; a retry waits
					case c := <-conns:
						return c, nil
					case <-ctx.Done():
						return nil, ctx.Err()
					}
				},
				Retrier: &resilience.Retrier{NewTimer: newInstantTimer}}
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			go s.Run(ctx)
			handshake(t, client, up)
			list, err := framing.Peek(up.next())
			require.NoError(t, err)
			require.Equal(t, "tools/list", list.Method, "the load's first catalog")

			client.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}` + "\n")
			relayed, err := framing.Peek(up.next())
			require.NoError(t, err)
			require.Equal(t, "tools/list", relayed.Method, "the client's tools/list goes at once: no round trip added")
			client.send(`{"jsonrpc":"2.0","id":2,"method":"ping"}` + "\n")
			require.Equal(t, "ping", expectMethod(t, up))
			up.send(`{"jsonrpc":"2.0","id":` + string(relayed.ID) + `,"result":` + catalog + "}\n")
			up.send(`{"jsonrpc":"2.0","id":2,"result":{}}` + "\n")
			require.Equal(t, `{"jsonrpc":"2.0","id":2,"result":{}}`, string(client.next()), "the tools/list answer waits for the status; what follows it does not")
			st := s.Status()
			assert.Equal(t, resilience.Transient, st.Class, "loading: %s", st.Message())

			up.send(`{"jsonrpc":"2.0","id":` + string(list.ID) + `,` + tt.first + "}\n")
			if tt.name == "loaded" {
				assert.Equal(t, `{"jsonrpc":"2.0","id":1,"result":`+catalog+`}`, string(client.next()), "the upstream's answer, as it is")
				assert.Equal(t, resilience.Available, s.Status().Class)
				client.send(`{"jsonrpc":"2.0","id":3,"method":"ping"}` + "\n")
				require.Equal(t, "ping", expectMethod(t, up))
				up.send(`{"jsonrpc":"2.0","id":3,"result":{}}` + "\n")
				assert.Equal(t, `{"jsonrpc":"2.0","id":3,"result":{}}`, string(client.next()), "no list_changed")
				return
			}
			assert.Equal(t, `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`, string(client.next()))
			var answer struct {
				Result struct {
					Tools []struct{ Name, Description string } `json:"tools"`
				} `json:"result"`
			}
			require.NoError(t, json.Unmarshal(client.next(), &answer))
			require.Len(t, answer.Result.Tools, 1, "the discovery tool alone")
			assert.Equal(t, DefaultDiscoveryTool, answer.Result.Tools[0].Name)
			assert.Contains(t, answer.Result.Tools[0].Description, "is not available (transient)")

			client.send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"` + DefaultDiscoveryTool + `"}}` + "\n")
			var found struct {
				Result struct {
					StructuredContent DiscoveryResult `json:"structuredContent"`
				} `json:"result"`
			}
			require.NoError(t, json.Unmarshal(client.next(), &found))
			server := found.Result.StructuredContent.Server
			assert.Equal(t, resilience.Transient, server.Status)
			assert.Contains(t, server.Message, "is still starting up")
			assert.Contains(t, server.Message, "Last error: cannot list its tools: JSON-RPC error -32001: request timed out")
			assert.Equal(t, resilience.Transient, s.Status().Class)
		})
	}
}

// expectMethod returns the method of the next message up receives.
func expectMethod(t *testing.T, up *peer) string {
	t.Helper()
	env, err := framing.Peek(up.next())
	require.NoError(t, err)
	return env.Method
}
