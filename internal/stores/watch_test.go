package stores

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/internal/auth"
	"github.com/mcpwrap/mcpwrap/internal/pgstore"
	"github.com/mcpwrap/mcpwrap/internal/pgtest"
	"github.com/mcpwrap/mcpwrap/internal/syncbuf"
	"github.com/mcpwrap/mcpwrap/resilience"
)

// noPoll is the poll interval the watch tests give Client.Watch: were the
// PostgreSQL sign-ins polled, nothing would be seen before the tests end.
const noPoll = 24 * time.Hour

// watchSignIn runs c.Watch until the test ends (before the stores close:
// register their cleanup first); each call of fn is sent on the channel.
func watchSignIn(t *testing.T, c *auth.Client) <-chan struct{} {
	t.Helper()
	called := make(chan struct{}, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Watch(ctx, noPoll, func() {
			select {
			case called <- struct{}{}:
			default:
			}
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	return called
}

// sent returns the Authorization header c's transport sends now: the
// token it holds in memory.
func sent(t *testing.T, c *auth.Client) string {
	t.Helper()
	var got string
	rt := c.WrapTransport(roundTripFunc(func(req *http.Request) (*http.Response, error) {
		got = req.Header.Get("Authorization")
		return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: req}, nil
	}))
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, signedIn.ServerURL, http.NoBody)
	require.NoError(t, err)
	resp, err := rt.RoundTrip(req)
	require.NoError(t, err)
	resp.Body.Close()
	return got
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// waitSent waits until c's Watch has been called and c sends want.
func waitSent(t *testing.T, c *auth.Client, called <-chan struct{}, want, why string) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case <-called:
			if sent(t, c) == want {
				return
			}
		case <-timeout:
			t.Fatalf("%s: the watch never brought %q", why, want)
		}
	}
}

// waitListening waits until a process LISTENs on dsn's database.
func waitListening(t *testing.T, c *pgtest.Cluster, dsn string) {
	t.Helper()
	require.Eventually(t, func() bool {
		return c.Exec(t.Context(), dsn,
			"DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN%') THEN RAISE 'no listener'; END IF; END $$") == nil
	}, 20*time.Second, 20*time.Millisecond)
}

// TestSignInReachesAWatchingReplicaAtOnce: with $MCPWRAP_STORE_KEY, a
// sign-in made by another process (replica 1's mcpwrap login) reaches
// this replica's running sidecar through the database's notification, not
// a poll (the poll interval is a day here), and the sidecar sends it.
func TestSignInReachesAWatchingReplicaAtOnce(t *testing.T) {
	dsn := newDB(t)
	here, closeStore, err := signInsOf(dsn, t.TempDir(), testKey)
	require.NoError(t, err)
	t.Cleanup(closeStore)
	c := &auth.Client{Name: "linear", ServerURL: signedIn.ServerURL, Store: here}
	called := watchSignIn(t, c)
	waitListening(t, cluster, dsn)

	signInElsewhere(t, dsn, testKey)
	waitSent(t, c, called, "Bearer access-SECRET-1", "replica 1's sign-in")
}

// heldTimer is a reconnect timer that fires only when the test sends on
// fire; started receives once per Start.
type heldTimer struct {
	fire    chan time.Time
	started chan struct{}
}

func (h *heldTimer) Start(time.Duration) {
	select {
	case h.started <- struct{}{}:
	default:
	}
}
func (h *heldTimer) Stop()               {}
func (h *heldTimer) C() <-chan time.Time { return h.fire }

// TestWatchingReplicaKeepsItsSignInThroughAnOutage: when the database goes
// away, a running sidecar keeps sending the token it holds and logs why it
// cannot read the sign-ins (no secret in the log); a sign-in made while
// its notification connection was down is found once it reconnects (held
// here until the test lets the backoff timer fire), with no poll.
func TestWatchingReplicaKeepsItsSignInThroughAnOutage(t *testing.T) {
	db := pgtest.Own(t)
	t.Setenv("PGPASSFILE", db.PassFile)
	dsn, err := db.CreateDB(t.Context())
	require.NoError(t, err)
	signInElsewhere(t, dsn, testKey)

	timer := &heldTimer{fire: make(chan time.Time), started: make(chan struct{}, 1)}
	pg, err := pgstore.Open(dsn, pgstore.Options{NewTimer: func() resilience.Timer { return timer }})
	require.NoError(t, err)
	t.Cleanup(pg.Close)
	local, err := auth.OpenStore(t.TempDir(), func(k string) string { return map[string]string{"MCPWRAP_TOKEN_STORE": "file"}[k] }, nil)
	require.NoError(t, err)
	here, err := SignIns(pg, local, testKey)
	require.NoError(t, err)
	var logs syncbuf.Buffer
	c := &auth.Client{Name: "linear", ServerURL: signedIn.ServerURL, Store: here, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	called := watchSignIn(t, c)
	waitSent(t, c, called, "Bearer access-SECRET-1", "the stored sign-in")
	waitListening(t, db, dsn)

	require.NoError(t, db.Stop())
	require.Eventually(t, func() bool { return containsLine(logs.String()) }, 20*time.Second, 10*time.Millisecond,
		"the lost connection makes the sidecar read again, and say it cannot")
	assert.Equal(t, "Bearer access-SECRET-1", sent(t, c), "the sidecar keeps its token")
	assert.NotContains(t, logs.String(), "SECRET")
	<-timer.started // the listener waits to reconnect

	require.NoError(t, db.Start())
	replica1, closeReplica1, err := signInsOf(dsn, t.TempDir(), testKey)
	require.NoError(t, err)
	t.Cleanup(closeReplica1)
	renewed := signedIn
	renewed.AccessToken = "access-SECRET-2"
	require.NoError(t, replica1.SaveToken(t.Context(), renewed, nil), "signed in again while nobody listens")
	timer.fire <- time.Now()
	waitSent(t, c, called, "Bearer access-SECRET-2", "the reconnect reads the sign-ins again")
}

func containsLine(logs string) bool {
	return strings.Contains(logs, "cannot read the sign-in; keeping the one in memory") &&
		strings.Contains(logs, "unavailable")
}
