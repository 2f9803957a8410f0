package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/internal/audit"
)

// TestAuditLogSharedBySidecars runs 8 sidecars making 200 calls each, every one appending to
// one audit log: every line parses, none is lost or interleaved, each call has its verdict
// and status, and no secret of the test (an env value, the arguments) is in the file.
func TestAuditLogSharedBySidecars(t *testing.T) {
	const sidecars, calls = 8, 200
	const envSecret, argSecret = "sk-env-SECRET-8d1f", "arg-SECRET-77aa"
	logPath := filepath.Join(t.TempDir(), "audit", "audit.jsonl")
	config := fmt.Sprintf(`{"defaults": {"approval": "off", "env": {"API_TOKEN": %q},
		"tools": {"overrides": {%q: false}}}}`, envSecret, fixtureEnvTool)

	ctx, cancel := context.WithTimeout(t.Context(), 2*testTimeout)
	defer cancel()
	var wg sync.WaitGroup
	var sessions []*mcp.ClientSession
	for i := range sidecars {
		client := mcp.NewClient(&mcp.Implementation{Name: "audit-e2e", Version: "1"}, nil)
		session := connectWrapped(ctx, t, client, wrapOptions{
			Name: fmt.Sprintf("srv%d", i), Config: config, Flags: []string{"--audit-log", logPath},
		}, fixtureCommand(t, fixtureBanner)...)
		sessions = append(sessions, session)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range calls {
				// The fixture's tools take no more arguments than they declare: the secret goes
				// in the locked tool's, which mcpwrap judges (and hashes) without relaying.
				name, args := fixtureSleepTool, map[string]any{"ms": 0}
				if j%4 == 3 {
					name, args = fixtureEnvTool, map[string]any{"token": argSecret, "n": j}
				}
				res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
				if !assert.NoError(t, err) {
					return
				}
				assert.Equal(t, name == fixtureEnvTool, res.IsError)
			}
		}()
	}
	wg.Wait()
	// A call's line is written once its answer is (the sidecar times the
	// answer written): read the file once the sidecars have ended, not as
	// the last answers arrive.
	for _, session := range sessions {
		require.NoError(t, session.Close())
	}

	raw, err := os.ReadFile(logPath)
	require.NoError(t, err)
	for _, secret := range []string{envSecret, argSecret} {
		assert.NotContains(t, string(raw), secret)
	}
	type key struct {
		server, tool, verdict, status string
	}
	counts := map[key]int{}
	pids := map[int]bool{}
	sc := bufio.NewScanner(strings.NewReader(string(raw)))
	lines := 0
	for sc.Scan() {
		lines++
		var r audit.Record
		require.NoError(t, json.Unmarshal(sc.Bytes(), &r), "line %d: %q", lines, sc.Text())
		require.Equal(t, audit.Version, r.V)
		require.Equal(t, audit.EventCall, r.Event)
		assert.NotEmpty(t, r.ArgsSHA256)
		assert.NotEmpty(t, r.By.User)
		pids[r.By.PID] = true
		counts[key{r.Server, r.Tool, r.Verdict, r.Status}]++
	}
	require.Equal(t, sidecars*calls, lines, "every call has its line")
	assert.Len(t, pids, sidecars)
	for i := range sidecars {
		srv := fmt.Sprintf("srv%d", i)
		assert.Equal(t, calls*3/4, counts[key{srv, fixtureSleepTool, audit.VerdictAllowed, ""}], srv)
		assert.Equal(t, calls/4, counts[key{srv, fixtureEnvTool, audit.VerdictRejected, "disabled_by_config"}], srv)
	}
}
