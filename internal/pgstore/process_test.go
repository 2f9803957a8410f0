package pgstore

import (
	"bufio"
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/internal/pgtest"
	"github.com/mcpwrap/mcpwrap/internal/state"
)

// An approval made by another process reaches this one's Watch within a
// second of its commit (issue 25: a replica's approval counts everywhere
// within 1 s); measured from the helper reporting its commit to the call
// that sees it.
func TestApprovalReachesAnotherProcessWithinASecond(t *testing.T) {
	dsn := newDB(t)
	s := open(t, dsn, Options{})
	seen := make(chan time.Time, 1)
	calls := make(chan struct{}, 1)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Watch(ctx, "shared", func() {
			select {
			case calls <- struct{}{}:
			default:
			}
			srv, err := s.Load(ctx, "shared")
			if err == nil {
				if _, ok := srv.Approval("write"); ok {
					select {
					case seen <- time.Now():
					default:
					}
				}
			}
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	<-calls                         // the watch began
	require.NoError(t, s.Ping(ctx)) // the schema exists before the helper starts
	waitListening(t, cluster, dsn)

	cmd := helperCmd(t, "approve", dsn, 0)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(out).ReadString('\n')
	committed := time.Now()
	require.NoError(t, err)
	require.Equal(t, "committed\n", line)
	require.NoError(t, cmd.Wait())
	select {
	case at := <-seen:
		latency := at.Sub(committed)
		t.Logf("approval seen %s after the other process's commit", latency)
		assert.Less(t, latency, time.Second)
	case <-time.After(10 * time.Second):
		t.Fatal("the approval never reached the watcher")
	}
}

// waitListening waits until a session LISTENs on the database, so that a
// notification sent now is delivered.
func waitListening(t *testing.T, c *pgtest.Cluster, dsn string) {
	t.Helper()
	require.Eventually(t, func() bool {
		return c.Exec(t.Context(), dsn,
			"DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN%') THEN RAISE 'no listener'; END IF; END $$") == nil
	}, 20*time.Second, 20*time.Millisecond)
}

// Eight writer processes, each with its own pool, toggling tools of one
// server at once, lose no toggle.
func TestEightWriterProcessesLoseNoToggle(t *testing.T) {
	const writers = 8
	dsn := newDB(t)
	s := open(t, dsn, Options{})
	require.NoError(t, s.Update(t.Context(), "shared", func(srv *state.Server) error {
		for id := range writers {
			for k := 0; k < togglesPerWriter; k += 2 {
				srv.Disable(toggleTool(id, k))
			}
		}
		return nil
	}))
	cmds := make([]*execCmd, writers)
	for id := range writers {
		cmds[id] = &execCmd{helperCmd(t, "toggles", dsn, id)}
		require.NoError(t, cmds[id].Start())
	}
	for id, c := range cmds {
		require.NoError(t, c.Wait(), "writer %d", id)
	}
	srv, err := s.Load(t.Context(), "shared")
	require.NoError(t, err)
	var want []string
	for id := range writers {
		for k := 1; k < togglesPerWriter; k += 2 {
			want = append(want, toggleTool(id, k))
		}
	}
	slices.Sort(want)
	assert.Equal(t, want, srv.Disabled, "every writer's toggles, and only them")
}
