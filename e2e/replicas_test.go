package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// callLedger calls fixtureLedgerTool with key and returns where it ran.
func callLedger(ctx context.Context, cs *mcp.ClientSession, key string) (fixtureWhere, error) {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: fixtureLedgerTool, Arguments: fixtureLedgerArgs{Key: key}})
	if err != nil {
		return fixtureWhere{}, err
	}
	if res.IsError {
		return fixtureWhere{}, fmt.Errorf("tool error: %v", res.Content)
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return fixtureWhere{}, err
	}
	var where fixtureWhere
	if err := json.Unmarshal(raw, &where); err != nil || where.PPID == 0 {
		return fixtureWhere{}, fmt.Errorf("structured content %s: %v", raw, err)
	}
	return where, nil
}

// replicaAbove returns the replica (by mcpwrap's pid in replicaOf) that the fixture whose parent
// is ppid runs under, -1 for none: its parent, or an ancestor (mcpwrap may start it through a
// guardian).
func replicaAbove(replicaOf map[int]int, ppid int) int {
	for pid, hops := ppid, 0; pid > 1 && hops < 4; hops++ {
		if i, ok := replicaOf[pid]; ok {
			return i
		}
		parent, ok := parentPID(pid)
		if !ok {
			return -1
		}
		pid = parent
	}
	return -1
}

// TestReplicasBehindHAProxy runs three `mcpwrap --listen` replicas behind Debian's HAProxy,
// configured as the README tells a team to (haproxyConfig), and drives them with go-sdk clients:
//   - a 2026-07-28 client's requests go round robin, each to any replica (no affinity);
//   - a 2025 session stays on the replica that answered its initialize;
//   - a replica killed (SIGKILL) under load from 8 stateless clients: no call is executed twice
//     (a ledger written by the servers counts executions); the only calls that fail are those
//     the balancer had already sent to the dying replica, and they never ran elsewhere; the calls
//     the balancer could not send there are retried on another replica (redispatched), and once
//     it marks the replica down every call is served;
//   - a session that lived on the killed replica is answered 404 by another, and its client
//     opens a new one, which is served.
func TestReplicasBehindHAProxy(t *testing.T) {
	binary := requireHAProxy(t)
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 3*testTimeout)
	defer cancel()
	shared := t.TempDir()
	ledger := filepath.Join(shared, "ledger")
	const n = 3
	replicas := make([]*listenServer, n)
	replicaOf := map[int]int{} // by mcpwrap's pid
	for i := range replicas {
		replicas[i] = startListen(ctx, t, listenOptions{Name: "ledger", StateDir: filepath.Join(shared, "state")},
			append(fixtureCommand(t, fixtureLedger), ledger)...)
		replicaOf[replicas[i].Pid()] = i
	}
	lb := startHAProxy(ctx, t, binary, replicas)
	transport := func() *mcp.StreamableClientTransport { return &mcp.StreamableClientTransport{Endpoint: lb.URL} }
	served := func(where fixtureWhere) int {
		i := replicaAbove(replicaOf, where.PPID)
		require.NotEqual(t, -1, i, "pid %d runs under no replica", where.PID)
		return i
	}

	// A 2026-07-28 client: its calls spread over every replica.
	modern, err := connectHTTP(ctx, t, newClient(nil), transport(), "")
	require.NoError(t, err)
	var spread [n]int
	for i := range 30 {
		where, err := callLedger(ctx, modern, fmt.Sprintf("rr-%d", i))
		require.NoError(t, err)
		spread[served(where)]++
	}
	t.Logf("30 calls of one 2026-07-28 client, by replica: %v", spread)
	for i, c := range spread {
		assert.GreaterOrEqual(t, c, 5, "replica %d served %d of 30 calls", i, c)
	}

	// 2025 sessions: each stays where its initialize went.
	type pinned struct {
		cs      *mcp.ClientSession
		replica int
		pid     int
	}
	sessions := make([]pinned, 6)
	holding := map[int]int{}
	for i := range sessions {
		cs, err := connectHTTP(ctx, t, newClient(nil), transport(), protocolVersionInitialize)
		require.NoError(t, err)
		sessions[i].cs = cs
		for j := range 5 {
			where, err := callLedger(ctx, cs, fmt.Sprintf("session-%d-%d", i, j))
			require.NoError(t, err)
			if j == 0 {
				sessions[i].replica, sessions[i].pid = served(where), where.PID
				holding[sessions[i].replica]++
			}
			require.Equal(t, sessions[i].pid, where.PID, "session %d's call %d: same replica, same child", i, j)
		}
	}
	t.Logf("6 sessions of 5 calls each, sessions by replica: %v", holding)
	require.GreaterOrEqual(t, len(holding), 2, "the sessions' initializes were spread")

	// Eight stateless clients under load; the replica holding session 0 is killed. Which replica
	// ran a call is known by the processes under it, taken now: the killed one's go with it.
	for i, r := range replicas {
		for _, pid := range descendants(t, r.Pid()) {
			replicaOf[pid] = i
		}
	}
	victim := sessions[0].replica
	const workers, callsPerPhase = 8, 20
	type outcome struct {
		key       string
		err       error
		afterKill bool // begun after the kill
		afterDown bool // begun after haproxy marked the killed replica down
	}
	var (
		killed, down atomic.Bool
		results      [workers][]outcome
		warm         = make(chan struct{}, workers) // a worker's callsPerPhase-th success before the kill
		settled      = make(chan struct{}, workers) // ... and after it
		stop         = make(chan struct{})
		wg           sync.WaitGroup
		clients      [workers]*mcp.ClientSession
	)
	for w := range workers {
		clients[w], err = connectHTTP(ctx, t, newClient(nil), transport(), "")
		require.NoError(t, err)
	}
	loadFrom := time.Now()
	for w := range workers {
		wg.Go(func() {
			var before, after int
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				case <-ctx.Done():
					return
				default:
				}
				o := outcome{key: fmt.Sprintf("load-%d-%d", w, i), afterKill: killed.Load(), afterDown: down.Load()}
				_, o.err = callLedger(ctx, clients[w], o.key)
				results[w] = append(results[w], o)
				switch {
				case o.err != nil:
				case !o.afterKill:
					if before++; before == callsPerPhase {
						warm <- struct{}{}
					}
				default:
					if after++; after == callsPerPhase {
						settled <- struct{}{}
					}
				}
			}
		})
	}
	await := func(ch <-chan struct{}, what string) {
		for range workers {
			select {
			case <-ch:
			case <-ctx.Done():
				close(stop)
				wg.Wait()
				require.FailNow(t, "load", "%s: %v", what, ctx.Err())
			}
		}
	}
	await(warm, "every client's calls before the kill")
	warmFor := time.Since(loadFrom)
	require.NoError(t, replicas[victim].cmd.Process.Kill())
	killedAt := time.Now()
	killed.Store(true)
	var downAfter time.Duration
	require.Eventually(t, func() bool {
		st, err := lb.stats()
		if err == nil && st[fmt.Sprintf("r%d", victim)]["status"] == "DOWN" {
			downAfter = time.Since(killedAt)
			down.Store(true)
			return true
		}
		return false
	}, 20*time.Second, 10*time.Millisecond, "haproxy marks the killed replica down")
	await(settled, "every client's calls after the kill")
	close(stop)
	wg.Wait()
	settledFor := time.Since(killedAt)

	ran := readLedger(t, ledger) // the replica's parent pid of each execution, by key
	var calls, failed, failedRan, before, after int
	for w := range workers {
		for _, o := range results[w] {
			calls++
			switch {
			case o.err != nil:
				failed++
				failedRan += len(ran[o.key])
				t.Logf("client %d: call %s failed: %v", w, o.key, o.err)
				assert.False(t, o.afterDown, "call %s, begun after the replica was marked down, failed", o.key)
				for _, ppid := range ran[o.key] {
					assert.Equal(t, victim, replicaAbove(replicaOf, ppid), "failed call %s ran on a live replica", o.key)
				}
				continue
			case o.afterKill:
				after++
			default:
				before++
			}
			assert.Len(t, ran[o.key], 1, "call %s was answered: it ran exactly once", o.key)
		}
	}
	for key, ppids := range ran {
		assert.LessOrEqual(t, len(ppids), 1, "%s ran %d times", key, len(ppids))
	}
	st, err := lb.stats()
	require.NoError(t, err)
	assert.NotEqual(t, "0", st["BACKEND"]["wredis"], "calls routed to the dead replica were sent to another")
	t.Logf("load: %d calls from %d stateless clients; %.0f calls/s before the kill, %.0f after; %d failed (sent to the dying replica; %d of them had run there); "+
		"haproxy: replica down %s after the kill, %s retries, %s redispatches, %s 5xx answers",
		calls, workers, float64(before)/warmFor.Seconds(), float64(after)/settledFor.Seconds(), failed, failedRan,
		downAfter.Round(time.Millisecond), st["BACKEND"]["wretr"], st["BACKEND"]["wredis"], st["BACKEND"]["hrsp_5xx"])

	// The sessions: those on the killed replica are unknown elsewhere (404) and open anew; the
	// others go on with the same child.
	for i, s := range sessions {
		where, err := callLedger(ctx, s.cs, fmt.Sprintf("after-%d", i))
		if s.replica != victim {
			require.NoError(t, err, "session %d on a live replica", i)
			assert.Equal(t, s.pid, where.PID, "session %d kept its replica and child", i)
			continue
		}
		require.True(t, sessionMissing(err), "session %d's replica was killed: %v", i, err)
		again, err := connectHTTP(ctx, t, newClient(nil), transport(), protocolVersionInitialize)
		require.NoError(t, err, "session %d opens anew", i)
		where, err = callLedger(ctx, again, fmt.Sprintf("again-%d", i))
		require.NoError(t, err)
		assert.NotEqual(t, victim, served(where))
	}
	_, err = callLedger(ctx, modern, "modern-after")
	require.NoError(t, err, "the first 2026-07-28 client is still served")
}

// sessionMissing reports whether err says the server answered 404 for the session. The go-sdk
// client learns it from whichever request meets it first: a call (mcp.ErrSessionMissing), or its
// standalone SSE stream reconnecting, after which it closes and a call fails with
// mcp.ErrConnectionClosed, the cause only in its text (go-sdk v1.8.0 transport.go wraps it
// with %v).
func sessionMissing(err error) bool {
	return errors.Is(err, mcp.ErrSessionMissing) ||
		errors.Is(err, mcp.ErrConnectionClosed) && strings.Contains(err.Error(), mcp.ErrSessionMissing.Error())
}
