package middleware

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/mcpwrap/mcpwrap/internal/framing"
	"github.com/mcpwrap/mcpwrap/resilience"
)

// TestShutdownDrains: whichever way Run is told to stop — the client
// closing its side (stdin EOF) or Run's context ending (SIGTERM, SIGINT) —
// the upstream keeps running through the drain, a request in flight gets
// the upstream's real answer when it comes within the drain time and one
// error when it does not, and only then is the upstream closed.
func TestShutdownDrains(t *testing.T) {
	const (
		drain    = 2 * time.Second
		answer   = `{"jsonrpc":"2.0","id":7,"result":{"done":true}}`
		shutDown = `{"jsonrpc":"2.0","id":7,"error":{"code":-32603,"message":"the session ended before the request was answered"}}`
	)
	tests := []struct {
		name     string
		cancel   bool // stop by cancelling Run's context, else by closing the client's side
		answered bool // the upstream answers during the drain
		want     string
	}{
		{name: "context done, answered in time", cancel: true, answered: true, want: answer},
		{name: "client gone, answered in time", answered: true, want: answer},
		{name: "context done, not answered in time", cancel: true, want: shutDown},
		{name: "client gone, not answered in time", want: shutDown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				client, clientConn := newPeer(t, 0)
				up, upConn := newPeer(t, 0)
				s := &Session{Name: "fx", Client: clientConn, Dial: dialOnce(upConn), DrainTimeout: drain}
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				done := make(chan error, 1)
				go func() { done <- s.Run(ctx) }()
				handshake(t, client, up)
				client.send(`{"jsonrpc":"2.0","id":7,"method":"slow/op"}` + "\n")
				assert.Equal(t, `{"jsonrpc":"2.0","id":7,"method":"slow/op"}`, string(up.next()))

				if tt.cancel {
					cancel()
				} else {
					client.closeSend()
				}
				synctest.Wait()
				select {
				case err := <-done:
					require.FailNow(t, "Run returned with a request in flight", "error: %v", err)
				case msg, ok := <-up.recv:
					require.True(t, ok, "the upstream was closed with a request in flight")
					require.FailNow(t, "unexpected message to the upstream", "%s", msg)
				default:
				}

				start := time.Now()
				if tt.answered {
					up.send(answer + "\n")
				}
				assert.Equal(t, tt.want, string(client.next()))
				if !tt.answered {
					assert.Equal(t, drain, time.Since(start), "answered when the drain time is up")
				}
				require.NoError(t, <-done)
				up.closed()
				synctest.Wait()
				select {
				case msg, ok := <-client.recv:
					assert.False(t, ok, "answered more than once: %s", msg)
				default:
				}
			})
		})
	}
}

// TestRunLeavesNoGoroutineBehind: every goroutine Run starts (pumps,
// supervisor, catalog loads, calls judged off the client pump, timers) has
// ended when Run returns, however the session ends. Each case ends it with
// a call waiting for a catalog load and one in flight at the upstream.
func TestRunLeavesNoGoroutineBehind(t *testing.T) {
	tests := []struct {
		name string
		end  func(t *testing.T, h *rawHarness)
	}{
		{name: "client closes its side", end: func(t *testing.T, h *rawHarness) { h.client.closeSend() }},
		{name: "context cancelled", end: func(t *testing.T, h *rawHarness) { h.cancel() }},
		{name: "upstream crashes", end: func(t *testing.T, h *rawHarness) {
			h.up.closeSend()
			require.Eventually(t, func() bool { return h.session.Status().Class == resilience.Permanent }, timeout, tick)
			h.cancel()
		}},
		{name: "client stops reading", end: func(t *testing.T, h *rawHarness) {
			go func() { // ends when the upstream's side is closed
				for i := 0; ; i++ {
					if _, err := io.WriteString(h.up.in, fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/n%d"}`+"\n", i)); err != nil {
						return
					}
				}
			}()
			require.Eventually(t, func() bool { return len(h.client.recv) == cap(h.client.recv) }, timeout, tick)
			h.cancel()
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := goleak.IgnoreCurrent()
			h := startRaw(t, rawOptions{policy: lockedSecret, catalog: secretCatalog, drain: 50 * time.Millisecond})
			h.client.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"open"}}` + "\n")
			h.expect("tools/call")
			h.client.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ghost"}}` + "\n")
			h.expect("tools/list")

			tt.end(t, h)
			select {
			case <-h.done:
			case <-time.After(timeout):
				t.Fatal("Run did not return")
			}
			// Checked before the test's peers hang up, which would free a
			// goroutine of Run's still blocked on a Conn; their readers
			// (peer.read) are the test's.
			goleak.VerifyNone(t, before, goleak.IgnoreAnyFunction("github.com/mcpwrap/mcpwrap/middleware.(*peer).read"))
			h.client.hangUp()
			h.up.hangUp()
			goleak.VerifyNone(t, before)
		})
	}
}

// TestRunReturnsWhenTheClientStopsReading: shutdown does not wait forever
// for the upstream's pump when it is blocked writing to a client that does
// not read: Run (and mcpwrap on SIGTERM) returns.
func TestRunReturnsWhenTheClientStopsReading(t *testing.T) {
	h := start(t, 0)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 200; i++ {
			if _, err := io.WriteString(h.up.in, fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/n%d"}`+"\n", i)); err != nil {
				return
			}
		}
	}()
	require.Eventually(t, func() bool { return len(h.client.recv) == cap(h.client.recv) }, timeout, tick)
	h.cancel()
	select {
	case <-h.done:
	case <-time.After(3 * time.Second):
		t.Fatal("Run did not return after its context was cancelled")
	}
	h.up.in.Close()
	wg.Wait()
}

// TestDrainWaitsForGatedCalls: a client that sends a call and closes its
// side at once (a piped, scripted client) still gets the upstream's answer
// when the call had to wait for the catalog: the drain counts it.
func TestDrainWaitsForGatedCalls(t *testing.T) {
	h := startRaw(t, rawOptions{policy: lockedSecret}) // the catalog is not loaded yet
	h.client.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"open"}}` + "\n")
	h.client.closeSend()
	for {
		env, err := framing.Peek(h.up.next())
		require.NoError(t, err)
		if env.Method == "tools/call" {
			h.answer(env.ID, `{"content":[]}`)
			break
		}
		require.Equal(t, "tools/list", env.Method)
		h.answer(env.ID, secretCatalog)
	}
	h.nextResponse("1")
	require.NoError(t, <-h.done)
}

// stuckWriter blocks the client's side on writing a message that stuck
// matches, as a client that stopped reading does, until it is closed.
type stuckWriter struct {
	Conn
	stuck   func(msg []byte) bool
	blocked chan struct{} // closed when a write is stuck
	closed  chan struct{}
	once    sync.Once
}

func newStuckWriter(stuck func([]byte) bool) *stuckWriter {
	return &stuckWriter{stuck: stuck, blocked: make(chan struct{}), closed: make(chan struct{})}
}

func (c *stuckWriter) WriteMessage(ctx context.Context, msg []byte) error {
	if c.stuck(msg) {
		select {
		case <-c.blocked:
		default:
			close(c.blocked)
		}
		<-c.closed
		return io.ErrClosedPipe
	}
	return c.Conn.WriteMessage(ctx, msg)
}

func (c *stuckWriter) Close() error {
	c.once.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

// TestRunReturnsWhenAGatedAnswerIsStuck: at shutdown Run waits for the
// calls being judged off the client pump, which end at once only when
// their answer can be written. A client that stopped reading blocks that
// write forever, and shutdownLink does not close the client's side when
// the upstream's pump is not the one blocked: Run never returns.
func TestRunReturnsWhenAGatedAnswerIsStuck(t *testing.T) {
	sw := newStuckWriter(func(msg []byte) bool { return strings.Contains(string(msg), `"id":1,`) })
	h := startRaw(t, rawOptions{policy: lockedSecret, // no catalog yet: calls are judged off the pump
		wrapClient: func(c Conn) Conn { sw.Conn = c; return sw }})
	background := h.expect("tools/list")
	h.client.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"secret"}}` + "\n")
	h.client.send(`{"jsonrpc":"2.0","id":9,"method":"ping"}` + "\n")
	h.answer(h.expect("ping"), `{}`) // the call waits for the load under way by now
	h.answer(background, secretCatalog)
	<-sw.blocked // the rejection is being written to a client that does not read

	h.cancel()
	select {
	case <-h.done:
	case <-time.After(timeout):
		t.Fatal("Run did not return: it waits for a gated call blocked writing to the client")
	}
}

// TestRunReturnsWhenALoadIsAbandonedOnAStuckClient: a load abandoned at
// shutdown closes its link and waits for the link's reader without bound;
// a reader blocked forwarding a message to a client that stopped reading
// never ends, so neither does the supervisor, nor Run.
func TestRunReturnsWhenALoadIsAbandonedOnAStuckClient(t *testing.T) {
	sw := newStuckWriter(func(msg []byte) bool { return strings.Contains(string(msg), "notifications/stuck") })
	client, clientConn := newPeer(t, 0)
	up, upConn := newPeer(t, 0)
	sw.Conn = clientConn
	s := &Session{Name: "fx", Client: sw, Dial: dialOnce(upConn), DrainTimeout: 100 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()

	client.send(clientInitialize + "\n")
	nextInitialize(t, up)
	up.send(`{"jsonrpc":"2.0","method":"notifications/stuck"}` + "\n") // before answering the handshake
	<-sw.blocked

	cancel()
	select {
	case <-done:
	case <-time.After(timeout):
		t.Fatal("Run did not return: the abandoned load waits for a reader blocked on the client")
	}
}

// TestRunReturnsWhenTheSupervisorIsStuckOnTheClient: the supervisor writes
// to the client itself (answers to requests a crash interrupted, list
// changes, degraded handshakes); blocked on a client that stopped reading,
// it never returns, and Run waits for it without bound.
func TestRunReturnsWhenTheSupervisorIsStuckOnTheClient(t *testing.T) {
	sw := newStuckWriter(func(msg []byte) bool { return strings.Contains(string(msg), "upstream restarted") })
	h := startRaw(t, rawOptions{wrapClient: func(c Conn) Conn { sw.Conn = c; return sw }})
	h.client.send(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n")
	h.expect("ping")
	h.up.closeSend() // crash: the supervisor answers request 1
	<-sw.blocked

	h.cancel()
	select {
	case <-h.done:
	case <-time.After(timeout):
		t.Fatal("Run did not return: it waits for a supervisor blocked writing to the client")
	}
}

// TestDrainWaitsForTheHandshake: a piped client that sends initialize and
// closes its side at once gets no answer: the drain waits for the requests
// in flight, but the handshake is not one of them, so Run abandons it.
func TestDrainWaitsForTheHandshake(t *testing.T) {
	client, clientConn := newPeer(t, 0)
	up, upConn := newPeer(t, 0)
	s := &Session{Name: "fx", Client: clientConn, Dial: dialOnce(upConn), DrainTimeout: timeout}
	done := make(chan error, 1)
	go func() { done <- s.Run(context.Background()) }()
	client.send(clientInitialize + "\n")
	client.closeSend()
	env, err := framing.Peek(up.next())
	require.NoError(t, err)
	require.Equal(t, "initialize", env.Method)
	up.send(`{"jsonrpc":"2.0","id":` + string(env.ID) + `,"result":` + initializeResult + "}\n")
	assert.Equal(t, `{"jsonrpc":"2.0","id":0,"result":`+initializeResult+`}`, string(client.next()))
	require.NoError(t, <-done)
}

// TestDrainWaitsForARelayedHandshake: a client handshake relayed to the
// ready upstream counts as in flight: a client that closes its side right
// after it still gets the upstream's answer, not the sidecar's own.
func TestDrainWaitsForARelayedHandshake(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client, clientConn := newPeer(t, 0)
		up, upConn := newPeer(t, 0)
		s := &Session{Name: "fx", Client: clientConn, Dial: dialOnce(upConn), DrainTimeout: timeout}
		done := make(chan error, 1)
		go func() { done <- s.Run(context.Background()) }()
		handshake(t, client, up)

		client.send(`{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}` + "\n")
		client.closeSend()
		env, err := framing.Peek(up.next())
		require.NoError(t, err)
		require.Equal(t, "initialize", env.Method, "relayed to the ready upstream")
		synctest.Wait() // the drain has begun
		up.send(`{"jsonrpc":"2.0","id":` + string(env.ID) + `,"result":` + initializeResult + "}\n")
		assert.Equal(t, `{"jsonrpc":"2.0","id":7,"result":`+initializeResult+`}`, string(client.next()))
		require.NoError(t, <-done)
	})
}

// TestHandshakeAfterRunEndedTheWaitingArmsNoTimer holds Run's end to
// leaving nothing behind: Run ends the client's handshakes waiting, and
// stops their ready timers, before it closes the client, so the client
// pump may still read a handshake in between. That one must not arm a
// ready timer, which would fire after Run has returned.
func TestHandshakeAfterRunEndedTheWaitingArmsNoTimer(t *testing.T) {
	clock := &fakeClock{}
	s := &Session{Name: "fixture", hooks: hooks{afterFunc: clock.afterFunc}}
	s.once.Do(s.init)
	s.endHandshakes()
	s.clientHandshake(context.Background(), framing.Envelope{Kind: framing.Request, ID: []byte("1"), Method: "initialize", Params: []byte(`{}`)})
	clock.mu.Lock()
	pending := slices.IndexFunc(clock.timers, func(t *fakeClockTimer) bool { return !t.done }) >= 0
	clock.mu.Unlock()
	assert.False(t, pending, "no ready timer left armed, to fire after Run returned")
	assert.Empty(t, s.hs.takeWaiters(""), "no handshake left waiting")
	s.mu.Lock()
	defer s.mu.Unlock()
	assert.Zero(t, s.holds.held, "its hold released")
}

// TestHandshakeThenEOFIsAnswered: a client that sends initialize and closes its side at once
// (echo '{...initialize...}' | mcpwrap -- server) is answered, as every request the session
// leaves unanswered is: with an error once the drain is up, when the upstream is slower.
func TestHandshakeThenEOFIsAnswered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const drain = time.Second
		client, clientConn := newPeer(t, 0)
		up, upConn := newPeer(t, 0)
		s := &Session{Name: "fx", Client: clientConn, Dial: dialOnce(upConn), DrainTimeout: drain, ReadyTimeout: time.Hour}
		done := make(chan error, 1)
		go func() { done <- s.Run(t.Context()) }()
		client.send(clientInitialize + "\n")
		client.closeSend()
		env, err := framing.Peek(up.next())
		require.NoError(t, err)
		require.Equal(t, "initialize", env.Method, "the upstream is slow: it never answers")
		assert.Equal(t, `{"jsonrpc":"2.0","id":0,"error":{"code":-32603,"message":"the session ended before the request was answered"}}`, string(client.next()))
		require.NoError(t, <-done)
		up.closed()
	})
}
