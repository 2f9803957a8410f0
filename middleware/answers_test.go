package middleware

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/resilience"
)

// This file holds tests of what every answer the sidecar makes itself
// carries for the agent: its class and retryability, its cause, and no
// pointer to a tool the agent cannot see.

// TestRejectionsCarryClassAndRetryable: a call to a locked tool is
// answered with _meta holding the lock's status, its class (permanent:
// the lock is lifted by someone acting on it, never by waiting) and
// retryable false, whatever the lock, as load failures carry theirs.
func TestRejectionsCarryClassAndRetryable(t *testing.T) {
	for _, status := range []string{"disabled_by_config", "disabled_by_user", "pending_approval", "disabled_unknown", "server_disabled"} {
		t.Run(status, func(t *testing.T) {
			h := startTools(t, [][]string{{tool("locked", "a locked tool"), tool("open", "an open tool")}}, map[string]string{"locked": status})
			r := readResult(t, h.call(1, "tools/call", `{"name":"locked","arguments":{}}`))
			require.True(t, r.Result.IsError)
			assert.Equal(t, map[string]any{"status": status, "class": "permanent", "retryable": false}, r.Result.Meta)
		})
	}
	t.Run("server_disabled, never started", func(t *testing.T) {
		client, clientConn := newPeer(t, 0)
		s := &Session{Name: "off", Client: clientConn, Tools: &fakePolicy{status: map[string]string{}},
			Dial: func(context.Context) (Conn, error) {
				return nil, &resilience.Error{Class: resilience.Permanent, Code: resilience.CodeServerDisabled, Reason: "the server is disabled"}
			}}
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		go s.Run(ctx)
		client.send(clientInitialize + "\n")
		client.next() // answered degraded: the server is not started
		client.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"any"}}` + "\n")
		r := readResult(t, nextAnswer(t, client))
		require.True(t, r.Result.IsError)
		assert.Equal(t, map[string]any{"status": "server_disabled", "class": "permanent", "retryable": false}, r.Result.Meta)
	})
	t.Run("server_disabled, remembered, on demand", func(t *testing.T) {
		// A memory of a server turned off withholds the version it agreed
		// to (as the gate does): the client is told it is disabled, never
		// greeted from memory as if it would start.
		client, clientConn := newPeer(t, 0)
		memory := &memoryPolicy{fakePolicy: &fakePolicy{status: map[string]string{}},
			remembered: &UpstreamInfo{Capabilities: json.RawMessage(`{"tools":{}}`), ServerInfo: json.RawMessage(`{"name":"off","version":"2"}`)}}
		s := &Session{Name: "off", Client: clientConn, Tools: memory,
			Dial: OnDemand(func(context.Context) (Conn, error) {
				return nil, &resilience.Error{Class: resilience.Permanent, Code: resilience.CodeServerDisabled, Reason: "the server is disabled"}
			})}
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		go s.Run(ctx)
		client.send(clientInitialize + "\n")
		var hs struct {
			Result struct {
				Instructions string `json:"instructions"`
			} `json:"result"`
		}
		require.NoError(t, json.Unmarshal(client.next(), &hs))
		assert.Contains(t, hs.Result.Instructions, "Server 'off' is disabled in mcpwrap's config", "answered degraded, with why")
		client.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}` + "\n")
		assert.Contains(t, string(nextAnswer(t, client)), `"name":"discover_tools"`, "the discovery tool")
		client.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"any"}}` + "\n")
		r := readResult(t, nextAnswer(t, client))
		require.True(t, r.Result.IsError)
		assert.Equal(t, map[string]any{"status": "server_disabled", "class": "permanent", "retryable": false}, r.Result.Meta)
	})
}

// nextAnswer returns the client's next message that is not a
// notification.
func nextAnswer(t *testing.T, client *peer) []byte {
	t.Helper()
	for {
		msg := client.next()
		if !strings.Contains(string(msg), `"method":"notifications/`) {
			return msg
		}
	}
}

// TestDiscoveryNeverPointsToIt: with the discovery tool never listed, no
// answer sends the agent to it: a rejection is asked of the policy with no
// discovery tool, and tools/list while the upstream is not ready lists
// nothing rather than the discovery tool.
func TestDiscoveryNeverPointsToIt(t *testing.T) {
	never := func(s *Session) { s.Discovery = DiscoveryNever }
	h := startToolsConfigured(t, false, [][]string{{tool("locked", "a locked tool")}}, map[string]string{"locked": "disabled_by_user"}, never)
	r := readResult(t, h.call(1, "tools/call", `{"name":"locked","arguments":{}}`))
	require.True(t, r.Result.IsError)
	require.Len(t, r.Result.Content, 1)
	assert.Equal(t, "locked is disabled_by_user; see ", r.Result.Content[0].Text, "the policy is given no discovery tool to name")

	client, clientConn := newPeer(t, 0)
	s := &Session{Name: "down", Client: clientConn, Tools: &fakePolicy{status: map[string]string{}}, Discovery: DiscoveryNever,
		Dial: func(context.Context) (Conn, error) {
			return nil, &resilience.SpawnError{Command: "fixture", Err: exec.ErrNotFound}
		}}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go s.Run(ctx)
	client.send(clientInitialize + "\n")
	client.next() // answered degraded
	client.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}` + "\n")
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`, string(nextAnswer(t, client)))
}

// TestCrashedRequestCarriesData: a request in flight when the upstream
// crashed is answered -32603 "upstream restarted; request not completed"
// with data as a load failure's answer carries it: the status, its class,
// whether a retry helps, and the cause.
func TestCrashedRequestCarriesData(t *testing.T) {
	h := start(t, 0)
	h.client.send(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"x://y"}}` + "\n")
	h.up.next()
	h.up.closeSend() // the upstream crashes
	r := readResult(t, nextAnswer(t, h.client))
	require.NotNil(t, r.Error)
	assert.Equal(t, codeInternalError, r.Error.Code)
	assert.Equal(t, "upstream restarted; request not completed", r.Error.Message)
	assert.Equal(t, "transient", r.Error.Data["class"])
	assert.Equal(t, "transient", r.Error.Data["status"])
	assert.Equal(t, true, r.Error.Data["retryable"])
	assert.Equal(t, "connection reset or closed mid-stream", r.Error.Data["error"], "the cause")
	raw, err := json.Marshal(r.Error.Data)
	require.NoError(t, err)
	assert.NotContains(t, string(raw), `"reason"`, "no code for a crash")
}
