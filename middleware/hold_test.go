package middleware

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpwrap/mcpwrap/internal/framing"
	"github.com/mcpwrap/mcpwrap/internal/syncbuf"
	"github.com/mcpwrap/mcpwrap/resilience"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests hold the client requests that wait (for the tool catalog,
// for the upstream's handshake, for a restart after a crash) to their
// bounds, and a request sent during a restart to waiting for it.

// manualTimers is an afterFunc whose timers fire only when the test says.
type manualTimers struct {
	mu     sync.Mutex
	funcs  []*manualTimer
	armedC chan struct{} // receives once per timer armed
}

type manualTimer struct {
	mu      sync.Mutex
	f       func()
	stopped bool
}

func (t *manualTimer) Stop() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	was := !t.stopped
	t.stopped = true
	return was
}

func newManualTimers() *manualTimers { return &manualTimers{armedC: make(chan struct{}, 64)} }

func (m *manualTimers) afterFunc(_ time.Duration, f func()) interface{ Stop() bool } {
	t := &manualTimer{f: f}
	m.mu.Lock()
	m.funcs = append(m.funcs, t)
	m.mu.Unlock()
	m.armedC <- struct{}{}
	return t
}

// armed waits until a timer is armed.
func (m *manualTimers) armed(t *testing.T) {
	t.Helper()
	select {
	case <-m.armedC:
	case <-time.After(timeout):
		t.Fatal("no timer armed")
	}
}

// forget drops the arming signals received so far.
func (m *manualTimers) forget() {
	for {
		select {
		case <-m.armedC:
		default:
			return
		}
	}
}

// fire fires every timer armed and not stopped, each once.
func (m *manualTimers) fire() {
	m.mu.Lock()
	funcs := m.funcs
	m.funcs = nil
	m.mu.Unlock()
	for _, t := range funcs {
		if t.Stop() {
			t.f()
		}
	}
}

// instantTimer is a resilience.Timer that fires at once: restarts are not
// delayed.
type instantTimer struct{ c chan time.Time }

func (t *instantTimer) Start(time.Duration) { t.c <- time.Time{} }
func (t *instantTimer) Stop()               {}
func (t *instantTimer) C() <-chan time.Time { return t.c }

func newInstantTimer() resilience.Timer { return &instantTimer{c: make(chan time.Time, 1)} }

// restartHarness runs a Session whose upstreams the test plays, one per
// dial: ups[0] first, ups[1] after the first crash.
type restartHarness struct {
	client  *peer
	ups     []*peer
	session *Session
	timers  *manualTimers
}

func startRestartable(t *testing.T, policy ToolPolicy, configure func(*Session)) *restartHarness {
	t.Helper()
	h := &restartHarness{timers: newManualTimers()}
	var clientConn Conn
	h.client, clientConn = newPeer(t, 0)
	conns := make(chan Conn, 2)
	for range 2 {
		p, c := newPeer(t, 0)
		h.ups = append(h.ups, p)
		conns <- c
	}
	h.session = &Session{Name: "fx", Client: clientConn, Tools: policy,
		Dial: func(ctx context.Context) (Conn, error) {
			select {
			case c := <-conns:
				return c, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		},
		Retrier: &resilience.Retrier{NewTimer: newInstantTimer},
		hooks:   hooks{afterFunc: h.timers.afterFunc},
	}
	logs := &syncbuf.Buffer{}
	h.session.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(logs.String())
			for {
				select {
				case m, ok := <-h.client.recv:
					if ok { // a closed recv would spin this loop forever
						t.Logf("client got %s", m)
						continue
					}
				default:
				}
				break
			}
		}
	})
	if configure != nil {
		configure(h.session)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go h.session.Run(ctx)
	handshake(t, h.client, h.ups[0])
	return h
}

// crash ends the first upstream and waits for the client's news of it.
func (h *restartHarness) crash(t *testing.T) {
	t.Helper()
	h.ups[0].closeSend()
	require.Contains(t, string(h.client.next()), "notifications/tools/list_changed")
}

// toolResult is a tools/call result as the tests read it.
type toolResult struct {
	ID     json.RawMessage `json:"id"`
	Result struct {
		IsError bool `json:"isError"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		Meta map[string]any `json:"_meta"`
	} `json:"result"`
	Error *struct {
		Code    int            `json:"code"`
		Message string         `json:"message"`
		Data    map[string]any `json:"data"`
	} `json:"error"`
}

func readResult(t *testing.T, msg []byte) toolResult {
	t.Helper()
	var r toolResult
	require.NoError(t, json.Unmarshal(msg, &r), "%s", msg)
	return r
}

// TestRequestDuringRestartWaitsForIt: a request sent right after the
// crash's tools/list_changed is not answered "still starting up": it waits
// for the restarted upstream and is forwarded to it once it is ready, as
// it was sent and tracked under its own id even when the client's later
// messages have been read over the buffer it arrived in.
func TestRequestDuringRestartWaitsForIt(t *testing.T) {
	// filler is more than twice the client Conn's read buffer of messages
	// that the restart drops, read while the request waits.
	filler := strings.Repeat(`{"jsonrpc":"2.0","method":"notifications/x","params":{"pad":"`+strings.Repeat("z", 1000)+`"}}`+"\n", 160)
	tests := []struct {
		name    string
		policy  ToolPolicy
		request string
		method  string
		after   string // what the client sends while the request waits
	}{
		{name: "gated tool call", policy: lockedSecret, method: "tools/call",
			request: `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"open"}}`},
		{name: "gated tool call, its buffer read over", policy: lockedSecret, method: "tools/call", after: filler,
			request: `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"open","arguments":{"q":"x"},"_meta":{"progressToken":3}}}`},
		{name: "ungated tool call", method: "tools/call",
			request: `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"open"}}`},
		{name: "other request", policy: lockedSecret, method: "resources/read",
			request: `{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{"uri":"x://y"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := startRestartable(t, tt.policy, nil)
			if tt.policy != nil {
				env, err := framing.Peek(h.ups[0].next())
				require.NoError(t, err)
				require.Equal(t, "tools/list", env.Method)
				h.ups[0].send(`{"jsonrpc":"2.0","id":` + string(env.ID) + `,"result":` + secretCatalog + "}\n")
				require.Eventually(t, h.session.catalogLoadIdle, timeout, tick)
			}
			h.crash(t)
			h.client.send(tt.request + "\n")
			if tt.after != "" {
				h.client.send(tt.after)
			}

			second := h.ups[1]
			env, err := framing.Peek(second.next())
			require.NoError(t, err)
			require.Equal(t, "initialize", env.Method)
			select {
			case msg := <-h.client.recv:
				t.Fatalf("the request was answered before the restarted upstream was ready: %s", msg)
			default:
			}
			second.send(`{"jsonrpc":"2.0","id":` + string(env.ID) + `,"result":` + initializeResult + "}\n")
			require.Equal(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, string(second.next()))
			for {
				msg := second.next()
				env, err := framing.Peek(msg)
				require.NoError(t, err)
				if env.Method == "tools/list" { // the catalog refresh after the restart
					second.send(`{"jsonrpc":"2.0","id":` + string(env.ID) + `,"result":` + secretCatalog + "}\n")
					continue
				}
				if env.Method == "notifications/x" {
					continue // filler read but not yet handled when the upstream became ready
				}
				require.Equal(t, tt.request, string(msg), "forwarded as sent")
				break
			}
			second.send(`{"jsonrpc":"2.0","id":7,"result":{"content":[]}}` + "\n")
			for {
				msg := h.client.next()
				if strings.Contains(string(msg), "list_changed") {
					continue // the restart's news
				}
				assert.Equal(t, `{"jsonrpc":"2.0","id":7,"result":{"content":[]}}`, string(msg))
				break
			}
			require.Eventually(t, func() bool { return h.session.heldCount() == 0 }, timeout, tick, "its hold was released")
		})
	}
}

// TestRequestPastReadyTimeoutDuringRestart: a request that waits for a
// restart longer than ReadyTimeout is answered with the status message,
// which says the server is restarting (restart k of the crash budget) and
// never reports zero attempts.
func TestRequestPastReadyTimeoutDuringRestart(t *testing.T) {
	tests := []struct {
		name    string
		request string
		check   func(t *testing.T, r toolResult)
	}{
		{name: "tool call", request: `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"open"}}`,
			check: func(t *testing.T, r toolResult) {
				require.True(t, r.Result.IsError)
				require.Len(t, r.Result.Content, 1)
				assert.Contains(t, r.Result.Content[0].Text, "Server 'fx' is restarting after a crash (restart 1 of 5, attempt 1)")
				assert.Equal(t, "transient", r.Result.Meta["status"])
				assert.EqualValues(t, 1, r.Result.Meta["attempts"])
				assert.EqualValues(t, 1, r.Result.Meta["restart"])
				assert.Equal(t, true, r.Result.Meta["retryable"])
			}},
		{name: "other request", request: `{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{"uri":"x://y"}}`,
			check: func(t *testing.T, r toolResult) {
				require.NotNil(t, r.Error)
				assert.Contains(t, r.Error.Message, "is restarting after a crash (restart 1 of 5, attempt 1)")
				assert.EqualValues(t, 1, r.Error.Data["attempts"])
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := startRestartable(t, nil, nil)
			h.crash(t)
			h.timers.forget()
			h.client.send(tt.request + "\n")
			h.ups[1].next() // the restarted upstream never answers its initialize
			h.timers.armed(t)
			h.timers.fire() // ReadyTimeout passes
			r := readResult(t, h.client.next())
			assert.Equal(t, "7", string(r.ID))
			tt.check(t, r)
		})
	}
}

// heldCount returns the number of requests held.
func (s *Session) heldCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.holds.held
}

// TestHeldCallsAreBounded: calls to a tool not known yet wait for the
// catalog, each with a copy of its message; past MaxHeldRequests or
// MaxHeldBytes a call is answered at once with a retryable error, and the
// calls held are relayed once the catalog loads.
func TestHeldCallsAreBounded(t *testing.T) {
	call := func(id string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"open","arguments":{"pad":"` + strings.Repeat("x", 100) + `"}}}`
	}
	size := len(call("1"))
	tests := []struct {
		name      string
		configure func(*Session)
		says      string
	}{
		{name: "count", configure: func(s *Session) { s.MaxHeldRequests = 2 }, says: "the limit of 2 held requests"},
		{name: "bytes", configure: func(s *Session) { s.MaxHeldBytes = 2*size + size/2 }, says: "held bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := startRestartable(t, lockedSecret, tt.configure)
			up := h.ups[0]
			load, err := framing.Peek(up.next()) // the first catalog load, unanswered for now
			require.NoError(t, err)
			require.Equal(t, "tools/list", load.Method)
			loadID := string(load.ID)

			h.client.send(call("1") + "\n")
			h.client.send(call("2") + "\n")
			h.client.send(call("3") + "\n")
			r := readResult(t, h.client.next())
			assert.Equal(t, "3", string(r.ID), "the third call is answered at once")
			require.True(t, r.Result.IsError)
			assert.Contains(t, r.Result.Content[0].Text, tt.says)
			assert.Contains(t, r.Result.Content[0].Text, "Retry in a few seconds")
			assert.Equal(t, true, r.Result.Meta["retryable"])
			assert.Equal(t, "too_many_waiting", r.Result.Meta["status"])

			up.send(`{"jsonrpc":"2.0","id":` + loadID + `,"result":` + secretCatalog + "}\n")
			got := []string{string(up.next()), string(up.next())}
			assert.ElementsMatch(t, []string{call("1"), call("2")}, got, "the held calls are relayed")
			require.Eventually(t, func() bool { return h.session.heldCount() == 0 }, timeout, tick, "their holds were released")
		})
	}
}

// TestHandshakeWaitersAreBounded: each client handshake waiting for the
// upstream is held; past the bound one is answered at once.
func TestHandshakeWaitersAreBounded(t *testing.T) {
	client, clientConn := newPeer(t, 0)
	up, upConn := newPeer(t, 0)
	timers := newManualTimers()
	s := &Session{Name: "slow", Client: clientConn, Dial: dialOnce(upConn), MaxHeldRequests: 2, hooks: hooks{afterFunc: timers.afterFunc}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.Run(ctx)

	for id := range 3 {
		client.send(`{"jsonrpc":"2.0","id":` + string(rune('1'+id)) + `,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}` + "\n")
	}
	up.next() // the upstream got the handshake, and does not answer yet
	r := readResult(t, client.next())
	assert.Equal(t, "3", string(r.ID), "the third handshake is answered at once")
	require.NotNil(t, r.Error)
	assert.Contains(t, r.Error.Message, "the limit of 2 held requests")
	assert.Equal(t, true, r.Error.Data["retryable"])
	assert.Equal(t, 2, s.heldCount())

	timers.fire() // the ready timeout: both waiting handshakes are answered degraded
	ids := []string{string(readResult(t, client.next()).ID), string(readResult(t, client.next()).ID)}
	assert.ElementsMatch(t, []string{"1", "2"}, ids)
	require.Eventually(t, func() bool { return s.heldCount() == 0 }, timeout, tick)
}

// TestRestartWaitersCountAgainstTheBounds: requests waiting for a restart
// are held like any other: past the bound one is answered at once.
func TestRestartWaitersCountAgainstTheBounds(t *testing.T) {
	h := startRestartable(t, nil, func(s *Session) { s.MaxHeldRequests = 1 })
	h.crash(t)
	h.client.send(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{}}` + "\n")
	h.client.send(`{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{}}` + "\n")
	r := readResult(t, h.client.next())
	assert.Equal(t, "2", string(r.ID))
	require.NotNil(t, r.Error)
	assert.Equal(t, "too_many_waiting", r.Error.Data["status"])
}

// stuckTimer is a resilience.Timer that never fires: a restart stays in its
// delay.
type stuckTimer struct{}

func (stuckTimer) Start(time.Duration) {}
func (stuckTimer) Stop()               {}
func (stuckTimer) C() <-chan time.Time { return nil }
func newStuckTimer() resilience.Timer  { return stuckTimer{} }

// TestCrashStatusNamesTheRestart: from the crash on, before the restart's
// first attempt begins, the status says which restart is under way and
// counts the attempt it is waiting to make, never zero.
func TestCrashStatusNamesTheRestart(t *testing.T) {
	h := startRestartable(t, nil, func(s *Session) { s.Retrier.NewTimer = newStuckTimer })
	h.crash(t)
	st := h.session.Status()
	assert.Equal(t, resilience.Transient, st.Class)
	assert.Equal(t, 1, st.Restart)
	assert.Equal(t, 5, st.MaxRestarts)
	assert.Positive(t, st.Attempts)
	assert.Contains(t, st.Message(), "is restarting after a crash (restart 1 of 5, attempt 1, retrying in ")
}

// TestRememberedSubscriptionsAreBounded: the URIs the client subscribes to
// are kept for replay to a restarted upstream, within the held bounds;
// past them a subscription is still relayed, but not remembered.
func TestRememberedSubscriptionsAreBounded(t *testing.T) {
	h := startRestartable(t, nil, func(s *Session) { s.MaxHeldRequests = 2 })
	for i, uri := range []string{"x://a", "x://b", "x://c", "x://a"} {
		req := `{"jsonrpc":"2.0","id":` + string(rune('1'+i)) + `,"method":"resources/subscribe","params":{"uri":"` + uri + `"}}`
		h.client.send(req + "\n")
		assert.Equal(t, req, string(h.ups[0].next()), "relayed")
	}
	h.client.send(`{"jsonrpc":"2.0","id":9,"method":"resources/unsubscribe","params":{"uri":"x://b"}}` + "\n")
	h.ups[0].next()
	h.session.hs.mu.Lock()
	defer h.session.hs.mu.Unlock()
	assert.Equal(t, map[string]struct{}{"x://a": {}}, h.session.hs.subs)
	assert.Equal(t, len("x://a"), h.session.hs.subsBytes)
}

// TestRelayedHandshakeOwnsItsParams: a second handshake relayed
// to a ready upstream is sent off the client pump, so it must send its own
// copy of the params, not the pump's buffer, which the next message
// overwrites.
func TestRelayedHandshakeOwnsItsParams(t *testing.T) {
	h := startRestartable(t, nil, nil)
	up := h.ups[0]
	// Both longer than the reader's 64 KiB buffer, so that each is assembled in
	// one buffer the next read reuses.
	params := `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"` + strings.Repeat("a", 100<<10) + `","version":"2"}}`
	h.client.send(`{"jsonrpc":"2.0","id":5,"method":"initialize","params":` + params + "}\n" +
		`{"jsonrpc":"2.0","id":6,"method":"x/other","params":{"pad":"` + strings.Repeat("b", 200<<10) + `"}}` + "\n")
	for range 2 {
		msg := up.next()
		env, err := framing.Peek(msg)
		require.NoError(t, err)
		if env.Method == "initialize" {
			assert.JSONEq(t, params, string(env.Params), "the params the client sent")
		}
	}
}
