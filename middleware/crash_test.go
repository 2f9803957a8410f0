package middleware

import (
	"context"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpwrap/mcpwrap/internal/framing"
	"github.com/mcpwrap/mcpwrap/resilience"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// This file holds the tests of an upstream that crashes: its connection
// closed, requests racing the crash answered, restarts spaced.

// closeCounter counts Close calls on a Conn.
type closeCounter struct {
	Conn
	closes atomic.Int32
}

func (c *closeCounter) Close() error { c.closes.Add(1); return c.Conn.Close() }

// TestCrashedLinkIsClosed: the connection of an upstream that crashed is
// closed once, not only the current one at shutdown: a stdio child would
// keep its stdin pipe and its process group (grandchildren) running, a
// remote one its goroutines and the session DELETE.
func TestCrashedLinkIsClosed(t *testing.T) {
	var cc *closeCounter
	h := startRaw(t, rawOptions{wrap: func(c Conn) Conn { cc = &closeCounter{Conn: c}; return cc }})
	h.up.closeSend()
	require.Eventually(t, func() bool { return h.session.Status().Class == resilience.Permanent }, timeout, tick)
	h.cancel()
	require.NoError(t, <-h.done)
	assert.Equal(t, int32(1), cc.closes.Load(), "the dead upstream's Conn is closed once")
}

// holdConn blocks the nth write of a tools/list until released.
type holdConn struct {
	Conn
	n       atomic.Int32
	at      int32
	held    chan struct{}
	release chan struct{}
}

func (c *holdConn) WriteMessage(ctx context.Context, msg []byte) error {
	if env, err := framing.Peek(msg); err == nil && env.Method == "tools/list" && c.n.Add(1) == c.at {
		close(c.held)
		<-c.release
	}
	return c.Conn.WriteMessage(ctx, msg)
}

// TestRequestRacingACrashIsAnswered: a request written to a link that died
// after the request took it (here while the gate's refresh was written) is
// still answered: a Conn need not report a dead peer on write, and the
// crash's answers may have gone out before the request was tracked.
func TestRequestRacingACrashIsAnswered(t *testing.T) {
	hc := &holdConn{at: 2, held: make(chan struct{}), release: make(chan struct{})}
	h := startRaw(t, rawOptions{policy: lockedSecret, catalog: secretCatalog,
		wrap: func(c Conn) Conn { hc.Conn = c; return hc }})
	h.client.send(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"ghost"}}` + "\n")
	<-hc.held // the gate's refresh is being written
	h.up.closeSend()
	require.Contains(t, string(h.client.next()), "notifications/tools/list_changed", "the crash was handled")
	close(hc.release) // the refresh goes to the dead link, closed since
	msg := h.client.next()
	assert.Contains(t, string(msg), `"id":7`, "the call is answered")
}

// recordingTimer is a resilience.Timer that fires at once and records waits.
type recordingTimer struct {
	waits chan time.Duration
	c     chan time.Time
}

func (r *recordingTimer) Start(d time.Duration) { r.waits <- d; r.c <- time.Time{} }

func (r *recordingTimer) Stop() {}

func (r *recordingTimer) C() <-chan time.Time { return r.c }

// TestCrashRestartIsSpaced: after a crash the upstream is restarted after
// the retry policy's delay, not at once, so that a fault outliving one
// crash does not spend the whole crash budget in a second.
func TestCrashRestartIsSpaced(t *testing.T) {
	waits := make(chan time.Duration, 8)
	client, clientConn := newPeer(t, 0)
	first, firstConn := newPeer(t, 0)
	second, secondConn := newPeer(t, 0)
	conns := make(chan Conn, 2)
	conns <- firstConn
	conns <- secondConn
	s := &Session{Name: "fx", Client: clientConn,
		Dial: func(context.Context) (Conn, error) { return <-conns, nil },
		Retrier: &resilience.Retrier{
			Policy:   resilience.Policy{Initial: 40 * time.Millisecond, Jitter: -1},
			NewTimer: func() resilience.Timer { return &recordingTimer{waits: waits, c: make(chan time.Time, 1)} },
		}}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go s.Run(ctx)
	handshake(t, client, first)

	first.closeSend() // crash
	require.Contains(t, string(client.next()), "notifications/tools/list_changed")
	select {
	case d := <-waits:
		assert.Equal(t, 40*time.Millisecond, d, "the first restart waits the initial delay")
	case <-time.After(timeout):
		t.Fatal("the restart did not wait")
	}
	env, err := framing.Peek(second.next())
	require.NoError(t, err)
	assert.Equal(t, "initialize", env.Method, "then the new upstream is initialised")
}

// TestCrashDuringTheFirstCatalogIsACrash: an upstream that crashes after a
// good handshake, while its first catalog loads, crashed after it was ready:
// each such crash counts towards the crash budget, as one after the catalog
// does, so that a server dying right after every start is a crash loop
// (permanent), whichever side of its first tools/list it dies on. Before,
// such crashes counted as load attempts only, so a server dying on either
// side by turns never reached either bound and was retried forever.
func TestCrashDuringTheFirstCatalogIsACrash(t *testing.T) {
	client, clientConn := newPeer(t, 0)
	dials := make(chan *peer, 16)
	s := &Session{Name: "fx", Client: clientConn, Tools: lockedSecret,
		Dial: func(context.Context) (Conn, error) {
			up, conn := newPeer(t, 0)
			dials <- up
			return conn, nil
		},
		CrashBudget: &resilience.CrashBudget{Restarts: 2, Window: time.Hour},
		Retrier: &resilience.Retrier{
			Policy:   resilience.Policy{Initial: time.Millisecond, MaxAttempts: 100, Jitter: -1},
			NewTimer: newInstantTimer,
		}}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	client.send(clientInitialize + "\n")
	go func() { // the client reads what it is sent
		for range client.recv {
		}
	}()
	permanent := func() bool { return s.Status().Class == resilience.Permanent }
	for crashes := 0; !permanent(); crashes++ {
		var up *peer
		select {
		case up = <-dials:
		case <-time.After(timeout):
			require.FailNow(t, "no crash loop after crashes during the first catalog", "crashes: %d, status: %+v", crashes, s.Status())
		}
		require.Less(t, crashes, 3, "the budget of 2 restarts is spent by the third crash")
		env, err := framing.Peek(up.next())
		require.NoError(t, err)
		require.Equal(t, "initialize", env.Method)
		up.send(`{"jsonrpc":"2.0","id":` + string(env.ID) + `,"result":` + initializeResult + "}\n")
		for {
			env, err = framing.Peek(up.next())
			require.NoError(t, err)
			if env.Method == "tools/list" {
				break
			}
		}
		up.closeSend() // dies during its first catalog
		require.Eventually(t, func() bool { return permanent() || len(dials) > 0 }, timeout, tick, "neither restarted nor given up")
	}
	st := s.Status()
	require.Equal(t, resilience.Permanent, st.Class)
	assert.ErrorIs(t, st.Err, resilience.ErrCrashLoop)
	cancel()
	<-done
}

// exitingConn is an upstream that has exited: a write finds its stdin gone
// (EPIPE), and its reader reports the exit only once released, as the
// child's reaping comes after the write that found the pipe broken.
type exitingConn struct {
	wrote  chan struct{}
	exited chan struct{}
	once   sync.Once
}

func (c *exitingConn) ReadMessage() ([]byte, error) {
	<-c.exited
	return nil, &resilience.ExitError{Code: 3}
}

func (c *exitingConn) WriteMessage(context.Context, []byte) error {
	c.once.Do(func() { close(c.wrote) })
	return &os.PathError{Op: "write", Path: "|1", Err: syscall.EPIPE}
}

func (c *exitingConn) Close() error { return nil }

// TestHandshakeWriteToAnExitedServerIsItsExit: an upstream that exits
// before its handshake is a permanent load failure with its exit status,
// even when the handshake's write finds the pipe broken before the reader
// has seen the exit: the write's EPIPE ("connection reset or closed
// mid-stream", transient) is not the cause. Before, the load was retried as
// transient when the write lost that race (doctor then started a server
// that exits at once twice).
func TestHandshakeWriteToAnExitedServerIsItsExit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client, clientConn := newPeer(t, 0)
		up := &exitingConn{wrote: make(chan struct{}), exited: make(chan struct{})}
		s := &Session{Name: "fx", Client: clientConn, Dial: dialOnce(up), ReadyTimeout: time.Hour,
			Retrier: &resilience.Retrier{NewTimer: newInstantTimer}}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- s.Run(ctx) }()
		client.send(clientInitialize + "\n")
		<-up.wrote
		synctest.Wait() // the session has judged the write's failure, or waits for the reader
		close(up.exited)
		synctest.Wait()
		st := s.Status()
		var exit *resilience.ExitError
		require.ErrorAs(t, st.Err, &exit, "the cause is the exit: %+v", st)
		assert.Equal(t, 3, exit.Code)
		assert.Equal(t, resilience.Permanent, st.Class)
		assert.Equal(t, 1, st.Attempts)
		cancel()
		<-done
	})
}
