package e2e

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The gate tests drive the real binary with raw JSON-RPC lines (the inspector CLI hides locked
// tools, and a go-sdk client cannot send the ambiguous params below), wrapping `mcpwrap
// demo-server --record`, whose record file lists every message the upstream received.

// rpcResponse is a JSON-RPC response read raw.
type rpcResponse struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// toolResult is the part of a tools/call result the gate tests read.
type toolResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	IsError bool           `json:"isError"`
	Meta    map[string]any `json:"_meta"`
}

func (r toolResult) text() string {
	var texts []string
	for _, c := range r.Content {
		texts = append(texts, c.Text)
	}
	return strings.Join(texts, " ")
}

func decodeResponse(t *testing.T, raw json.RawMessage) rpcResponse {
	t.Helper()
	var resp rpcResponse
	require.NoError(t, json.Unmarshal(raw, &resp), "%s", raw)
	return resp
}

// callResult sends tools/call and requires a successful JSON-RPC response carrying a tool result.
func callResult(ctx context.Context, t *testing.T, s *lineSession, id int, params any) toolResult {
	t.Helper()
	raw := s.Call(ctx, t, id, "tools/call", params)
	resp := decodeResponse(t, raw)
	require.Nil(t, resp.Error, "tools/call answered with an error: %s", raw)
	var res toolResult
	require.NoError(t, json.Unmarshal(resp.Result, &res), "%s", raw)
	return res
}

// gateSession starts `mcpwrap --name notes -- mcpwrap demo-server --record FILE` on config,
// performs the handshake and checks its result. It returns the session and the record file.
func gateSession(ctx context.Context, t *testing.T, config string) (*lineSession, string) {
	t.Helper()
	record := filepath.Join(t.TempDir(), "record")
	s := startLineSession(ctx, t, mcpwrapEnv(t, config), mcpwrapPath,
		wrapArgs("notes", mcpwrapPath, "demo-server", "--record", record)...)
	resp := decodeResponse(t, s.Initialize(ctx, t))
	require.Nil(t, resp.Error, "initialize failed")
	var init struct {
		ProtocolVersion string `json:"protocolVersion"`
		ServerInfo      struct {
			Name string `json:"name"`
		} `json:"serverInfo"`
	}
	require.NoError(t, json.Unmarshal(resp.Result, &init))
	require.Equal(t, protocolVersionInitialize, init.ProtocolVersion)
	require.NotEmpty(t, init.ServerInfo.Name)
	return s, record
}

// finalRecord ends the session and returns what the upstream received. Once mcpwrap has exited,
// the record is complete: on stdin EOF mcpwrap closes the upstream's stdin and waits for it to
// exit, and the go-sdk demo server exits only once every message it read has been handled (the
// recorder is the first thing that handles one).
func finalRecord(ctx context.Context, t *testing.T, s *lineSession, record string) []string {
	t.Helper()
	s.CloseAndDrain(ctx, t)
	return recordedLines(t, record)
}

// TestLockedCallAnsweredByMcpwrap: a tools/call to a tool locked by config (a tools.overrides
// entry, disabled_by_config) or on a server that is `enabled: false` (server_disabled) is
// answered by mcpwrap with an isError result carrying the status, with wording that never
// suggests the user toggle, and the upstream never receives it.
func TestLockedCallAnsweredByMcpwrap(t *testing.T) {
	t.Parallel()
	const marker = "this-call-must-not-reach-the-upstream"
	cases := []struct {
		status string
		config string
		tool   string
		// control is a request the upstream must receive, sent after the locked call: it shows
		// the record works and that the session kept relaying.
		control      func(ctx context.Context, t *testing.T, s *lineSession)
		controlTrace string // what the control leaves in the record
		wantCalls    int    // tools/call messages the upstream receives: the control's, if any
		wantText     []string
	}{
		{
			status: "disabled_by_config",
			config: `{"servers":{"notes":{"tools":{"overrides":{"write_note":false}}}}}`,
			tool:   "write_note",
			control: func(ctx context.Context, t *testing.T, s *lineSession) {
				res := callResult(ctx, t, s, 2, map[string]any{"name": "echo", "arguments": map[string]any{"text": "control"}})
				require.False(t, res.IsError, res.text())
				assert.Equal(t, "control", res.text())
			},
			controlTrace: `"text":"control"`,
			wantCalls:    1,
			wantText: []string{
				"operator policy",
				"servers.notes.tools",
				"Call discover_tools with include_disabled:true to see locked tools and remediation.",
			},
		},
		{
			status: "server_disabled",
			config: `{"servers":{"notes":{"enabled":false}}}`,
			tool:   "echo",
			control: func(ctx context.Context, t *testing.T, s *lineSession) {
				// The server is never started: mcpwrap answers everything.
				resp := decodeResponse(t, s.Call(ctx, t, 2, "resources/read", map[string]any{"uri": "demo://readme"}))
				require.NotNil(t, resp.Error)
				assert.Contains(t, resp.Error.Message, "is disabled in mcpwrap's config, so it is not started")
			},
			wantText: []string{
				"Tool is disabled and not callable.",
				"servers.notes.enabled: true",
				"Call discover_tools with include_disabled:true to see locked tools and remediation.",
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.status, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
			defer cancel()
			s, record := gateSession(ctx, t, tc.config)

			res := callResult(ctx, t, s, 1, map[string]any{"name": tc.tool, "arguments": map[string]any{"text": marker}})
			text := res.text()
			assert.True(t, res.IsError, "a locked tool's call must be an isError result: %s", text)
			assert.Equal(t, tc.status, res.Meta["status"], "_meta.status")
			for _, want := range tc.wantText {
				assert.Contains(t, text, want)
			}
			assert.NotContains(t, text, "mcpwrap tools enable", "a config lock is never given user-toggle advice")
			if tc.status == "disabled_by_config" {
				assert.NotContains(t, text, "Ask the user")
			}

			tc.control(ctx, t, s)

			lines := finalRecord(ctx, t, s, record)
			all := strings.Join(lines, "\n")
			if tc.controlTrace == "" {
				assert.Empty(t, lines, "the server was started")
			}
			require.Contains(t, all, tc.controlTrace, "the control request did not reach the upstream")
			assert.NotContains(t, all, marker, "the locked call reached the upstream")
			assert.Equal(t, tc.wantCalls, countRecorded(t, record, "tools/call"), "tools/call messages the upstream received:\n%s", all)
		})
	}
}

// TestAmbiguousCallRefused: tools/call params whose tool name an upstream could read
// differently from the gate (a "name" and a "NAME", which Go's encoding/json both match) are
// refused with a JSON-RPC error and never forwarded, whether the names are unknown or pair a
// callable tool with a config-locked one.
func TestAmbiguousCallRefused(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	s, record := gateSession(ctx, t, `{"servers":{"notes":{"tools":{"overrides":{"write_note":false}}}}}`)

	ambiguous := []struct {
		id     int
		params string // sent byte for byte
	}{
		{1, `{"name":"open","NAME":"secret"}`},
		{2, `{"name":"echo","NAME":"write_note","arguments":{"text":"smuggled"}}`},
		{3, `{"NAME":"write_note","name":"echo","arguments":{"text":"smuggled"}}`},
	}
	for _, a := range ambiguous {
		raw := s.Call(ctx, t, a.id, "tools/call", json.RawMessage(a.params))
		resp := decodeResponse(t, raw)
		require.NotNil(t, resp.Error, "ambiguous params %s must be refused with a JSON-RPC error: %s", a.params, raw)
		assert.Nil(t, resp.Result, "%s", raw)
		assert.Equal(t, -32602, resp.Error.Code, "%s", raw)
	}

	// Control: an unambiguous call is forwarded after them.
	res := callResult(ctx, t, s, 10, map[string]any{"name": "echo", "arguments": map[string]any{"text": "control"}})
	require.False(t, res.IsError, res.text())
	require.Equal(t, "control", res.text())

	lines := finalRecord(ctx, t, s, record)
	assert.Equal(t, 1, countRecorded(t, record, "tools/call"), "only the control call may reach the upstream:\n%s", strings.Join(lines, "\n"))
	for _, line := range lines {
		assert.NotContains(t, line, "secret")
		assert.NotContains(t, line, "smuggled")
	}
}
