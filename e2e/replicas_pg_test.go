package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/internal/pgtest"
)

// pgReplicaConfig locks every tool until the user approves it, so that an approval is visible to
// every client as a tool appearing.
// pgReplicaConfig names the fixture the replicas serve, and "toggles", a server none runs: with
// no catalog recorded for it, the writers below may disable any name (a tool the fixture's
// catalog lacks would be refused as unknown), and all of them write the one row it has.
const pgReplicaConfig = `{"servers": {"fixture": {"approval": "manual"}, "toggles": {}}}`

// fixtureTools are the fixture's tools in fixtureLedger mode.
var fixtureTools = []string{fixtureEnvTool, fixtureLedgerTool, fixturePIDTool, fixtureSleepTool}

// storeCLI runs `mcpwrap tools args...` against the shared store as a replica's container would
// (`kubectl exec` into it): the store's URL and password file from the environment.
func storeCLI(ctx context.Context, t *testing.T, env []string, configPath string, args ...string) string {
	t.Helper()
	args = append([]string{"tools", args[0], "--config", configPath, "--state-dir", t.TempDir()}, args[1:]...)
	cmd := exec.CommandContext(ctx, mcpwrapPath, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "mcpwrap %s\n%s", strings.Join(args, " "), out)
	return string(out)
}

// listChangedClient is a go-sdk client whose tools/list_changed notifications arrive, timed, on
// changed.
func listChangedClient() (*mcp.Client, <-chan time.Time) {
	changed := make(chan time.Time, 64)
	return newClient(&mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		select {
		case changed <- time.Now():
		default:
		}
	}}), changed
}

// awaitListed waits for the client's tools/list_changed after which its tools/list satisfies ok,
// and returns when that notification arrived.
func awaitListed(ctx context.Context, t *testing.T, cs *mcp.ClientSession, changed <-chan time.Time, ok func([]string) bool, what string) time.Time {
	t.Helper()
	for {
		select {
		case at := <-changed:
			if ok(listNames(ctx, t, cs)) {
				return at
			}
		case <-ctx.Done():
			require.FailNow(t, "no tools/list_changed "+what, "tools: %v", listNames(context.Background(), t, cs))
		}
	}
}

// TestReplicasShareStateOnPostgreSQL runs three `mcpwrap --listen` replicas on one PostgreSQL
// store (Debian's, a throwaway cluster run as an unprivileged user) behind HAProxy, with clients
// of both eras attached to each replica:
//   - an approval made by `mcpwrap tools approve` in one replica's environment reaches the clients
//     of every replica (tools/list_changed, the tool listed and callable) within a second;
//   - 8 writers toggling at once, in the three replicas' environments, lose no toggle, and every
//     replica's clients see the same result;
//   - PostgreSQL stopped mid-run: each replica keeps serving by the state it read last (an
//     approved tool callable, a disabled one locked) and says so on /readyz (200, degraded), a
//     replica started during the outage loaded nothing and fails closed (503, every tool
//     locked); PostgreSQL started again: every replica resyncs, the new one included, and a
//     change made then reaches them all.
func TestReplicasShareStateOnPostgreSQL(t *testing.T) {
	binary := requireHAProxy(t)
	db := pgtest.Own(t)
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 4*testTimeout)
	defer cancel()
	dsn, err := db.CreateDB(ctx)
	require.NoError(t, err)
	env := []string{"MCPWRAP_STORE=" + dsn, "PGPASSFILE=" + db.PassFile}
	shared := t.TempDir()
	ledger := filepath.Join(shared, "ledger")
	start := func() *listenServer {
		return startListen(ctx, t, listenOptions{Name: "fixture", Config: pgReplicaConfig, Env: env},
			append(fixtureCommand(t, fixtureLedger), ledger)...)
	}
	const n = 3
	replicas := make([]*listenServer, n)
	for i := range replicas {
		replicas[i] = start()
	}
	lb := startHAProxy(ctx, t, binary, replicas)

	// Clients attached to each replica: a 2025 session and a 2026-07-28 client.
	type attached struct {
		cs      *mcp.ClientSession
		changed <-chan time.Time
		where   string // for messages
		key     string // for ledger keys
	}
	var clients []attached
	for i, r := range replicas {
		for _, era := range eras {
			client, changed := listChangedClient()
			cs, err := connectHTTP(ctx, t, client, &mcp.StreamableClientTransport{Endpoint: r.URL}, era.version)
			require.NoError(t, err)
			clients = append(clients, attached{cs, changed, fmt.Sprintf("replica %d, %s", i, era.name), fmt.Sprintf("r%d-%s", i, era.name)})
		}
	}
	for _, c := range clients {
		assert.NotContains(t, listNames(ctx, t, c.cs), fixturePIDTool, "%s: locked pending approval", c.where)
	}
	require.Eventually(t, func() bool { // a replica recorded the catalog the CLI approves from
		return strings.Contains(storeCLI(ctx, t, env, replicas[0].ConfigPath, "list", "fixture"), fixturePIDTool)
	}, 20*time.Second, 50*time.Millisecond)

	// An approval through replica 0 reaches every replica's clients within a second.
	// Timed from the CLI's start, an upper bound of the time since its commit.
	approve := append([]string{"approve", "fixture"}, fixtureTools...)
	committed := time.Now()
	storeCLI(ctx, t, env, replicas[0].ConfigPath, approve...)
	var slowest time.Duration
	for _, c := range clients {
		at := awaitListed(ctx, t, c.cs, c.changed, func(names []string) bool { return slices.Contains(names, fixturePIDTool) },
			"after the approval: "+c.where)
		latency := at.Sub(committed)
		slowest = max(slowest, latency)
		assert.Less(t, latency, time.Second, "%s: the approval took %s", c.where, latency)
		_, err := callLedger(ctx, c.cs, "approved-"+c.key)
		require.NoError(t, err, c.where)
	}
	t.Logf("approval: every replica's clients notified within %s of the CLI's start", slowest.Round(time.Millisecond))

	// 8 writers at once, 10 toggles each, in the replicas' environments in turn: none is lost.
	// Writer w disables its 10 names of server "toggles", then enables the even ones; writers 0
	// and 1 also disable a real tool of the fixture.
	const writers, toggles = 8, 10
	var want []string
	var wg sync.WaitGroup
	began := time.Now()
	for w := range writers {
		for k := 1; k < toggles; k += 2 {
			want = append(want, fmt.Sprintf("w%d-%d", w, k))
		}
		wg.Go(func() {
			config := replicas[w%n].ConfigPath
			for k := range toggles {
				storeCLI(ctx, t, env, config, "disable", "toggles", fmt.Sprintf("w%d-%d", w, k))
			}
			for k := 0; k < toggles; k += 2 {
				storeCLI(ctx, t, env, config, "enable", "toggles", fmt.Sprintf("w%d-%d", w, k))
			}
			if w < 2 {
				storeCLI(ctx, t, env, config, "disable", "fixture", []string{fixtureEnvTool, fixtureSleepTool}[w])
			}
		})
	}
	wg.Wait()
	slices.Sort(want)
	disabledOf := func(server string) []string {
		var rows []struct {
			Tool   string `json:"tool"`
			Status string `json:"status"`
		}
		require.NoError(t, json.Unmarshal([]byte(storeCLI(ctx, t, env, replicas[2].ConfigPath, "list", server, "--json")), &rows))
		var disabled []string
		for _, r := range rows {
			if r.Status == "disabled_by_user" {
				disabled = append(disabled, r.Tool)
			}
		}
		slices.Sort(disabled)
		return disabled
	}
	assert.Equal(t, want, disabledOf("toggles"), "every writer's toggles, and only them")
	assert.ElementsMatch(t, []string{fixtureEnvTool, fixtureSleepTool}, disabledOf("fixture"), "the fixture's, and only them")
	t.Logf("toggles: %d CLI writes from %d writers in %s", writers*(toggles+toggles/2)+2, writers, time.Since(began).Round(time.Millisecond))
	converged := func(names []string) bool {
		return !slices.Contains(names, fixtureEnvTool) && !slices.Contains(names, fixtureSleepTool) && slices.Contains(names, fixturePIDTool)
	}
	for _, c := range clients {
		if !converged(listNames(ctx, t, c.cs)) {
			awaitListed(ctx, t, c.cs, c.changed, converged, "after the toggles: "+c.where)
		}
	}

	// PostgreSQL stops: every replica serves by the state it read last, and says so.
	modern, err := connectHTTP(ctx, t, newClient(nil), &mcp.StreamableClientTransport{Endpoint: lb.URL}, "")
	require.NoError(t, err)
	stopped := time.Now()
	require.NoError(t, db.Stop())
	for i, r := range replicas {
		require.Eventually(t, func() bool {
			code, body := probe(ctx, t, r.URL, "/readyz")
			return code == 200 && strings.HasPrefix(body, "degraded: the state store is out of reach")
		}, 30*time.Second, 20*time.Millisecond, "replica %d says it serves by the state read last", i)
	}
	t.Logf("outage: every replica degraded within %s of pg_ctl stop's start", time.Since(stopped).Round(time.Millisecond))
	for i := range 6 {
		_, err := callLedger(ctx, modern, fmt.Sprintf("outage-%d", i))
		require.NoError(t, err, "through the balancer, during the outage")
	}
	for _, c := range clients {
		_, err := callLedger(ctx, c.cs, "outage-"+c.key)
		require.NoError(t, err, "%s: an approved tool, during the outage", c.where)
		text, res := callText(ctx, t, c.cs, fixtureEnvTool, nil)
		assert.True(t, res.IsError, "%s: a disabled tool stays locked: %s", c.where, text)
	}
	// A replica started now never read the state: it fails closed.
	late := start()
	code, body := probe(ctx, t, late.URL, "/readyz")
	assert.Equal(t, 503, code, body)
	assert.Equal(t, "not ready: the state store cannot be read (see the log)\n", body)
	lateClient, lateChanged := listChangedClient()
	lateCS, err := connectHTTP(ctx, t, lateClient, &mcp.StreamableClientTransport{Endpoint: late.URL}, protocolVersionInitialize)
	require.NoError(t, err)
	text, res := callText(ctx, t, lateCS, fixturePIDTool, nil)
	assert.True(t, res.IsError, "a replica that never read the state locks every tool: %s", text)

	// PostgreSQL is back: every replica resyncs, the late one included.
	require.NoError(t, db.Start())
	restarted := time.Now()
	for i, r := range append(slices.Clone(replicas), late) {
		require.Eventually(t, func() bool {
			code, body := probe(ctx, t, r.URL, "/readyz")
			return code == 200 && body == "ok\n"
		}, 30*time.Second, 20*time.Millisecond, "replica %d ready again", i)
	}
	t.Logf("resync: every replica ready within %s of the restart", time.Since(restarted).Round(time.Millisecond))
	if !slices.Contains(listNames(ctx, t, lateCS), fixturePIDTool) {
		awaitListed(ctx, t, lateCS, lateChanged, func(names []string) bool { return slices.Contains(names, fixturePIDTool) },
			"on the late replica after the restart")
	}
	_, err = callLedger(ctx, lateCS, "late-after")
	require.NoError(t, err, "the late replica unlocked what the store approves")
	storeCLI(ctx, t, env, replicas[1].ConfigPath, "enable", "fixture", fixtureEnvTool)
	for _, c := range clients {
		if !slices.Contains(listNames(ctx, t, c.cs), fixtureEnvTool) {
			awaitListed(ctx, t, c.cs, c.changed, func(names []string) bool { return slices.Contains(names, fixtureEnvTool) },
				"after the restart: "+c.where)
		}
	}
	counts := readLedger(t, ledger)
	for key, ppids := range counts {
		assert.Len(t, ppids, 1, "%s ran %d times", key, len(ppids))
	}
}
