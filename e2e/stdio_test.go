package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestUpstreamBannerMovesToStderr wraps an upstream that prints a non-JSON banner on stdout
// before its first message: the session still works, the banner shows on mcpwrap's stderr, and
// the client's stdout carries JSON-RPC only.
func TestUpstreamBannerMovesToStderr(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()

	s := startLineSession(ctx, t, mcpwrapEnv(t, `{}`), mcpwrapPath, wrapArgs("banner", fixtureCommand(t, fixtureBanner)...)...)
	requireResult(t, s.Initialize(ctx, t))
	requireResult(t, s.Call(ctx, t, 1, "tools/call", map[string]any{"name": fixturePIDTool, "arguments": map[string]any{}}))
	lines := s.CloseAndDrain(ctx, t)

	for _, line := range lines {
		_, err := jsonrpc.DecodeMessage(line)
		assert.NoError(t, err, "stdout line is not JSON-RPC: %s", line)
		assert.NotContains(t, string(line), fixtureBannerLine)
	}
	assert.Contains(t, s.proc.Stderr(), fixtureBannerLine, "the banner belongs on mcpwrap's stderr")
}

// TestStdoutCarriesOnlyProtocol runs a session at --log-level debug, in each log format, and
// requires every stdout line to be a JSON-RPC message the upstream itself printed for the same
// script (compared byte for byte with a direct run) or mcpwrap's answer to the handshake; the
// logs all go to stderr.
func TestStdoutCarriesOnlyProtocol(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	direct := startLineSession(ctx, t, nil, everythingServerPath)
	runProtocolScript(ctx, t, direct)
	upstreamLines := map[string]bool{}
	for _, line := range direct.CloseAndDrain(ctx, t) {
		upstreamLines[string(line)] = true
	}

	tests := []struct {
		name      string
		logFormat string
		// isLogLine recognises one of mcpwrap's log lines in that format.
		isLogLine func(line string) bool
	}{
		{
			name:      "text",
			logFormat: "text",
			isLogLine: func(line string) bool { return strings.TrimSpace(line) != "" },
		},
		{
			name:      "json",
			logFormat: "json",
			isLogLine: func(line string) bool {
				var record map[string]any
				return json.Unmarshal([]byte(line), &record) == nil && record["msg"] != nil
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
			defer cancel()
			args := append([]string{"--log-level", "debug", "--log-format", tt.logFormat}, wrapArgs("everything", everythingServerPath)...)
			s := startLineSession(ctx, t, mcpwrapEnv(t, transparentConfig), mcpwrapPath, args...)
			initialize := runProtocolScript(ctx, t, s)
			lines := s.CloseAndDrain(ctx, t)

			require.NotEmpty(t, lines)
			for _, line := range lines {
				if bytes.Equal(line, initialize) {
					continue // mcpwrap answers the handshake from the upstream's, possibly rewritten
				}
				assert.True(t, upstreamLines[string(line)], "stdout line the upstream never printed: %s", line)
			}

			var logLines int
			for line := range strings.SplitSeq(s.proc.Stderr(), "\n") {
				if tt.isLogLine(line) {
					logLines++
				}
			}
			assert.Positive(t, logLines, "no %s log line on stderr at --log-level debug:\n%s", tt.logFormat, s.proc.Stderr())
		})
	}
}

// runProtocolScript drives a session through the initialize handshake and a spread of
// non-intercepted traffic: tools, logging notifications, progress, prompts, resources,
// completion, ping, an unknown method and a notification. It returns the raw initialize
// response.
func runProtocolScript(ctx context.Context, t *testing.T, s *lineSession) json.RawMessage {
	t.Helper()
	initialize := s.Initialize(ctx, t)
	requireResult(t, initialize)

	requireResult(t, s.Call(ctx, t, 1, "logging/setLevel", map[string]any{"level": "debug"}))
	requireResult(t, s.Call(ctx, t, "two", "tools/list", map[string]any{}))
	requireResult(t, s.Call(ctx, t, 3, "tools/call", map[string]any{"name": "test_simple_text", "arguments": map[string]any{}}))
	requireResult(t, s.Call(ctx, t, 4, "tools/call", map[string]any{"name": "test_tool_with_logging", "arguments": map[string]any{}}))
	requireResult(t, s.Call(ctx, t, 5, "tools/call", map[string]any{
		"name": "test_tool_with_progress", "arguments": map[string]any{}, "_meta": map[string]any{"progressToken": "p-5"},
	}))
	requireResult(t, s.Call(ctx, t, 6, "prompts/get", map[string]any{"name": "test_simple_prompt"}))
	requireResult(t, s.Call(ctx, t, 7, "resources/read", map[string]any{"uri": "test://static-text"}))
	requireResult(t, s.Call(ctx, t, 8, "completion/complete", map[string]any{
		"ref":      map[string]any{"type": "ref/prompt", "name": "test_prompt_with_arguments"},
		"argument": map[string]any{"name": "arg1", "value": "x"},
	}))
	requireResult(t, s.Call(ctx, t, 9, "ping", map[string]any{}))
	s.Send(t, map[string]any{"jsonrpc": "2.0", "method": "notifications/roots/list_changed"})
	unknown := s.Call(ctx, t, 10, "e2e/no-such-method", map[string]any{})
	require.Contains(t, string(unknown), `"error"`, "an unknown method is the upstream's to refuse")
	return initialize
}

// requireResult fails unless raw is a JSON-RPC response carrying a result.
func requireResult(t testing.TB, raw json.RawMessage) {
	t.Helper()
	msg, err := jsonrpc.DecodeMessage(raw)
	require.NoError(t, err, "not JSON-RPC: %s", raw)
	resp, ok := msg.(*jsonrpc.Response)
	require.True(t, ok, "not a response: %s", raw)
	require.NoError(t, resp.Error, "error response: %s", raw)
}
