package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fixtureSlowCaps (argument: a delay) is a raw line server with tools, resources and prompts
// that answers initialize only after the delay: slower than mcpwrap's --ready-timeout, a
// package a launcher is still fetching.
const fixtureSlowCaps = "slow-caps"

// runSlowCaps serves fixtureSlowCaps.
func runSlowCaps(args []string) int {
	if len(args) != 1 {
		fmt.Fprintf(os.Stderr, "%s %s DELAY\n", fixtureArg, fixtureSlowCaps)
		return 2
	}
	delay, err := time.ParseDuration(args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(sc.Bytes(), &msg) != nil || msg.ID == nil {
			continue
		}
		result := `{}`
		switch msg.Method {
		case "initialize":
			time.Sleep(delay) // the slow start this fixture is for
			result = `{"protocolVersion":"` + protocolVersionInitialize + `","capabilities":{"tools":{},"resources":{},"prompts":{}},"serverInfo":{"name":"slowcaps","version":"3.1"}}`
		case "tools/list":
			result = `{"tools":[{"name":"echo","description":"Echoes.","inputSchema":{"type":"object"}}]}`
		case "resources/list":
			result = `{"resources":[{"uri":"file:///notes.txt","name":"notes"}]}`
		case "prompts/list":
			result = `{"prompts":[{"name":"greet"}]}`
		}
		fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", msg.ID, result)
	}
	return 0
}

// TestDegradedHandshakeKeepsCapabilities: a server slower than --ready-timeout gets its
// handshake answered by mcpwrap, which advertises the capabilities and serverInfo the server
// showed in its last successful load (remembered in the state dir), not only tools, so the
// client asks for resources and prompts: empty lists until the server is ready, then
// list_changed, and the server's own.
func TestDegradedHandshakeKeepsCapabilities(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	env := mcpwrapEnv(t, `{}`)
	stateDir := strings.TrimPrefix(env[1], "MCPWRAP_STATE_DIR=")

	// A first run loads it at once: what it says of itself is remembered.
	first := startLineSession(ctx, t, env, mcpwrapPath, wrapArgs("slowcaps", append(fixtureCommand(t, fixtureSlowCaps), "0s")...)...)
	requireResult(t, first.Initialize(ctx, t))
	require.Eventually(t, func() bool {
		data, err := os.ReadFile(filepath.Join(stateDir, "servers", "slowcaps.json"))
		return err == nil && strings.Contains(string(data), `"upstream"`)
	}, 10*time.Second, 50*time.Millisecond, "the load is remembered in the state dir")
	first.CloseAndDrain(ctx, t)

	// The next start is slower than the ready timeout.
	args := append([]string{"--ready-timeout", "300ms"}, wrapArgs("slowcaps", append(fixtureCommand(t, fixtureSlowCaps), "3s")...)...)
	s := startLineSession(ctx, t, env, mcpwrapPath, args...)
	var init struct {
		Result struct {
			Capabilities map[string]map[string]any `json:"capabilities"`
			ServerInfo   map[string]any            `json:"serverInfo"`
			Instructions string                    `json:"instructions"`
		} `json:"result"`
	}
	raw := s.Initialize(ctx, t)
	require.NoError(t, json.Unmarshal(raw, &init), "%s", raw)
	assert.Contains(t, init.Result.Instructions, "still starting up", "mcpwrap answered: %s", raw)
	assert.Equal(t, map[string]map[string]any{
		"tools": {"listChanged": true}, "resources": {"listChanged": true}, "prompts": {"listChanged": true},
	}, init.Result.Capabilities, "the server's capabilities, each list announced as changing")
	assert.Equal(t, map[string]any{"name": "slowcaps", "version": "3.1"}, init.Result.ServerInfo)

	// A client that follows capabilities asks; until the server is ready the lists are empty.
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":1,"result":{"resources":[]}}`, string(s.Call(ctx, t, 1, "resources/list", nil)))
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":2,"result":{"prompts":[]}}`, string(s.Call(ctx, t, 2, "prompts/list", nil)))

	// Once it is ready the client is told, and gets the server's own.
	pings := 100
	require.Eventually(t, func() bool {
		pings++
		s.Call(ctx, t, pings, "ping", nil) // reads what came before its answer
		var told int
		for _, line := range s.All() {
			if strings.Contains(string(line), `"notifications/resources/list_changed"`) || strings.Contains(string(line), `"notifications/prompts/list_changed"`) {
				told++
			}
		}
		return told == 2
	}, 15*time.Second, 50*time.Millisecond, "resources and prompts list_changed")
	assert.Contains(t, string(s.Call(ctx, t, 3, "resources/list", nil)), `"uri":"file:///notes.txt"`)
	assert.Contains(t, string(s.Call(ctx, t, 4, "prompts/list", nil)), `"name":"greet"`)
}
