package middleware

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpwrap/mcpwrap/internal/framing"
	"github.com/mcpwrap/mcpwrap/resilience"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// This file holds the reviewer's regression tests, one for each bug found
// in review; each failed before its fix.

// rawHarness drives a Session whose upstream the test plays by hand.
type rawHarness struct {
	t       *testing.T
	client  *peer
	up      *peer
	session *Session
	done    chan error
	cancel  context.CancelFunc
}

type rawOptions struct {
	policy  ToolPolicy
	upLimit int             // the upstream conn's message limit
	wrap    func(Conn) Conn // wraps the upstream conn
	// wrapClient wraps the client conn the Session uses.
	wrapClient func(Conn) Conn
	catalog    string        // the first own tools/list result; "" leaves it unanswered
	drain      time.Duration // the Session's DrainTimeout
}

// startRaw runs a Session, completes the handshake by hand and answers the
// sidecar's first catalog refresh with o.catalog (when set).
func startRaw(t *testing.T, o rawOptions) *rawHarness {
	t.Helper()
	h := &rawHarness{t: t, done: make(chan error, 1)}
	var clientConn, upConn Conn
	h.client, clientConn = newPeer(t, 0)
	h.up, upConn = newPeer(t, o.upLimit)
	if o.wrap != nil {
		upConn = o.wrap(upConn)
	}
	if o.wrapClient != nil {
		clientConn = o.wrapClient(clientConn)
	}
	h.session = &Session{Name: "fx", Client: clientConn, Dial: dialOnce(upConn), Tools: o.policy, DrainTimeout: o.drain}
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	t.Cleanup(cancel)
	go func() { h.done <- h.session.Run(ctx) }()
	handshake(t, h.client, h.up)
	if o.policy != nil && o.catalog != "" {
		h.answer(h.expect("tools/list"), o.catalog)
		require.Eventually(t, h.session.catalogLoadIdle, timeout, tick)
	}
	return h
}

// expect returns the id of the next message at the upstream, which must be
// a request of method.
func (h *rawHarness) expect(method string) []byte {
	h.t.Helper()
	env, err := framing.Peek(h.up.next())
	require.NoError(h.t, err)
	require.Equal(h.t, method, env.Method)
	return append([]byte(nil), env.ID...)
}

// answer sends the upstream's result for id.
func (h *rawHarness) answer(id []byte, result string) {
	h.t.Helper()
	h.up.send(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":` + result + "}\n")
}

// nextResponse returns the client's next message, which must be a response
// with id.
func (h *rawHarness) nextResponse(id string) []byte {
	h.t.Helper()
	msg := h.client.next()
	env, err := framing.Peek(msg)
	require.NoError(h.t, err)
	require.Equal(h.t, framing.Response, env.Kind, "got %s", msg)
	require.Equal(h.t, id, string(env.ID), "got %s", msg)
	return msg
}

var lockedSecret = &fakePolicy{status: map[string]string{"secret": "disabled_by_config"}}

const secretCatalog = `{"tools":[{"name":"open","inputSchema":{"type":"object"}},{"name":"secret","inputSchema":{"type":"object"}}]}`

// TestReviewGateJudgesTheNameTheUpstreamReads: the gate must judge the tool
// the upstream will run. Go's encoding/json matches keys case-insensitively
// and fails open on a type error, and framing.Peek compares top-level keys
// unescaped, so each of these calls judges "open" (or nothing) while a
// case-sensitive, escape-decoding upstream (every JS and Python server)
// runs "secret", which operator policy locked.
func TestReviewGateJudgesTheNameTheUpstreamReads(t *testing.T) {
	tests := []struct {
		name string
		call string
	}{
		{name: "case-insensitive key", call: `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"secret","NAME":"open"}}`},
		{name: "type error fails open", call: `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"secret","Name":0}}`},
		{name: "escaped params key", call: `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"open"},"p\u0061rams":{"name":"secret"}}`},
		{name: "escaped method key", call: `{"jsonrpc":"2.0","id":5,"method":"ping","m\u0065thod":"tools/call","params":{"name":"secret"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := startRaw(t, rawOptions{policy: lockedSecret, catalog: secretCatalog})
			h.client.send(tt.call + "\n")
			h.client.send(`{"jsonrpc":"2.0","id":6,"method":"ping"}` + "\n")
			assert.Equal(t, `{"jsonrpc":"2.0","id":6,"method":"ping"}`, string(h.up.next()),
				"the ambiguous call must not reach the upstream")
		})
	}
}

// TestReviewOwnRequestWithOversizedResponseFails: the sidecar's own
// tools/list whose response is over the message limit is dropped by
// pumpUpstream without failing the own call, which then waits forever. The
// first tools/call refreshes the catalog from the client pump, so the whole
// client direction hangs.
func TestReviewOwnRequestWithOversizedResponseFails(t *testing.T) {
	big := `{"tools":[{"name":"open","description":"` + strings.Repeat("x", 2048) + `"}]}`
	h := startRaw(t, rawOptions{policy: lockedSecret, upLimit: 1024})
	h.answer(h.expect("tools/list"), big) // the background refresh: dropped

	h.client.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"open"}}` + "\n")
	for {
		select {
		case msg := <-h.up.recv: // the gate's own load, unless it joined the first: dropped too
			env, err := framing.Peek(msg)
			require.NoError(t, err)
			require.Equal(t, "tools/list", env.Method)
			h.answer(env.ID, big)
		case msg := <-h.client.recv:
			env, err := framing.Peek(msg)
			require.NoError(t, err)
			assert.Equal(t, framing.Response, env.Kind, "the call is answered, got %s", msg)
			return
		case <-time.After(2 * time.Second):
			t.Fatal("tools/call never answered: the client pump is stuck on an own request")
		}
	}
}

// TestReviewBatchRequestsAreAnsweredWhenTheUpstreamDies: a forwarded batch's
// requests are not tracked, so failInflight does not know them and the
// client never gets an answer after a crash (nor does drain wait for them).
func TestReviewBatchRequestsAreAnsweredWhenTheUpstreamDies(t *testing.T) {
	h := start(t, 0)
	batch := `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"resources/list"}]`
	h.client.send(batch + "\n")
	require.Equal(t, batch, string(h.up.next()))
	h.up.closeSend() // crash before answering
	// failInflight answers before the list_changed that tells of the crash.
	msg := h.client.next()
	assert.NotContains(t, string(msg), "notifications/tools/list_changed",
		"requests 1 and 2 must be answered (restart error) before anything else")
}

// TestReviewClientIDCannotReachTheOwnIDSpace: isOwnID compares raw bytes, so
// a client id "mcpwrap\u002d1" (the same JSON string as "mcpwrap-1") is not
// refused. Upstreams re-encode ids ("mcpwrap-1"), and pumpUpstream then
// takes the answer for an own response: the client's request is never
// answered, or it answers (poisons) a concurrent own request of the sidecar.
func TestReviewClientIDCannotReachTheOwnIDSpace(t *testing.T) {
	h := start(t, 0)
	escaped := strings.Replace(h.session.ownID, "-", `\u002d`, 1)
	h.client.send(`{"jsonrpc":"2.0","id":"` + escaped + `999","method":"ping"}` + "\n")
	select {
	case msg := <-h.up.recv:
		// A normalising upstream answers with the decoded id.
		h.up.send(`{"jsonrpc":"2.0","id":"` + h.session.ownID + `999","result":{}}` + "\n")
		_ = msg
		h.up.send(`{"jsonrpc":"2.0","method":"notifications/marker"}` + "\n")
		got := h.client.next()
		assert.NotContains(t, string(got), "notifications/marker", "the ping's answer was swallowed")
	case msg := <-h.client.recv:
		assert.Contains(t, string(msg), `"error"`, "refused like any reserved id")
	case <-time.After(timeout):
		t.Fatal("neither forwarded nor refused")
	}
}

// TestReviewGateRefreshDoesNotBlockTheClientPump: gateCall reloads the
// catalog (for a tool it does not know) synchronously on the client pump.
// While it waits, the client's answer to a server→client request is not
// read; an upstream that needs that answer before serving tools/list
// deadlocks the session for good (no timeout on own requests).
func TestReviewGateRefreshDoesNotBlockTheClientPump(t *testing.T) {
	h := startRaw(t, rawOptions{policy: lockedSecret, catalog: secretCatalog})
	h.client.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"open"}}` + "\n")
	h.expect("tools/call")
	h.up.send(`{"jsonrpc":"2.0","id":"e1","method":"elicitation/create","params":{}}` + "\n")
	require.Contains(t, string(h.client.next()), `"elicitation/create"`)

	// The agent calls a tool the catalog lacks (a hallucinated name).
	h.client.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ghost"}}` + "\n")
	h.expect("tools/list")                                                                          // the sequential upstream will read it after e1's answer
	go io.WriteString(h.client.in, `{"jsonrpc":"2.0","id":"e1","result":{"action":"accept"}}`+"\n") // blocks while the pump is stuck
	select {
	case msg := <-h.up.recv:
		assert.Contains(t, string(msg), `"e1"`)
	case <-time.After(2 * time.Second):
		t.Fatal("the client's answer to e1 is stuck behind the gate's refresh: deadlock")
	}
}

// descPolicy locks tools whose description mentions "evil", the way
// pinning locks a tool whose definition changed.
type descPolicy struct{ fakePolicy }

func (p *descPolicy) Evaluate(tools []json.RawMessage) []Availability {
	out := make([]Availability, len(tools))
	for i, t := range tools {
		out[i].InScope = true
		if strings.Contains(defOf(t).Description, "evil") {
			out[i].Status = "pending_approval"
		}
	}
	return out
}

// TestReviewCallIsJudgedByTheDefinitionTheClientSaw: when the upstream
// changes a tool's definition without list_changed (a rug pull), the
// client's tools/list hides it (the page is evaluated), yet gateCall judges
// the call by the stale cached definition and forwards it.
func TestReviewCallIsJudgedByTheDefinitionTheClientSaw(t *testing.T) {
	h := startRaw(t, rawOptions{policy: &descPolicy{},
		catalog: `{"tools":[{"name":"a","description":"benign"}]}`})
	h.client.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}` + "\n")
	h.answer(h.expect("tools/list"), `{"tools":[{"name":"a","description":"now evil"}]}`)
	var list listResponse
	require.NoError(t, json.Unmarshal(h.nextResponse("1"), &list))
	require.NotContains(t, list.names(), "a", "the changed tool is hidden")

	h.client.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"a"}}` + "\n")
	h.client.send(`{"jsonrpc":"2.0","id":3,"method":"ping"}` + "\n")
	assert.Equal(t, `{"jsonrpc":"2.0","id":3,"method":"ping"}`, string(h.up.next()),
		"the hidden, changed tool must not be callable")
}

// closeCounter counts Close calls on a Conn.
type closeCounter struct {
	Conn
	closes atomic.Int32
}

func (c *closeCounter) Close() error { c.closes.Add(1); return c.Conn.Close() }

// TestReviewCrashedLinkIsClosed: after a crash supervise drops the link
// (s.up = nil) without closing it, and closeLink at shutdown only closes
// the current one. For a stdio child that leaks its stdin pipe and leaves
// its process group (grandchildren) running; for a remote one its
// goroutines and the session DELETE.
func TestReviewCrashedLinkIsClosed(t *testing.T) {
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

func (c *holdConn) WriteMessage(msg []byte) error {
	if env, err := framing.Peek(msg); err == nil && env.Method == "tools/list" && c.n.Add(1) == c.at {
		close(c.held)
		<-c.release
	}
	return c.Conn.WriteMessage(msg)
}

// TestReviewRequestRacingACrashIsAnswered: clientRequest takes the ready
// link, then (after gateCall's refresh) tracks and writes. When the link
// dies in between, failInflight has already run, the request is tracked
// after it and written to the dead link; if that write does not fail (a
// Conn need not report a dead peer on write), it is never answered.
func TestReviewRequestRacingACrashIsAnswered(t *testing.T) {
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

// TestReviewRunReturnsWhenTheClientStopsReading: at shutdown closeLink
// closes the upstream and waits for its pump, which is blocked writing to
// a client that does not read. Run (and mcpwrap on SIGTERM) never returns.
func TestReviewRunReturnsWhenTheClientStopsReading(t *testing.T) {
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

// TestReviewToolsListRewriteSurvivesIDReencoding: reqs are keyed by the
// id's raw bytes. An upstream re-encodes ids (JSON.stringify turns
// "list\/1" into "list/1"), untrack misses, and the tools/list response
// passes unrewritten: the locked tool is listed as callable. The stale
// entry also keeps drain waiting its full timeout and gets a second,
// bogus error response if the upstream later crashes.
func TestReviewToolsListRewriteSurvivesIDReencoding(t *testing.T) {
	h := startRaw(t, rawOptions{policy: lockedSecret, catalog: secretCatalog})
	h.client.send(`{"jsonrpc":"2.0","id":"list\/1","method":"tools/list"}` + "\n")
	h.expect("tools/list")
	h.up.send(`{"jsonrpc":"2.0","id":"list/1","result":` + secretCatalog + "}\n")
	var list listResponse
	require.NoError(t, json.Unmarshal(h.client.next(), &list))
	assert.NotContains(t, list.names(), "secret", "the locked tool is not listed")
	assert.Equal(t, 0, h.session.inflight(), "the request is no longer in flight")
}

func TestParseCall(t *testing.T) {
	tests := []struct {
		name    string
		params  string
		want    string
		args    string
		wantErr bool
	}{
		{name: "plain", params: `{"name":"a","arguments":{"x":1}}`, want: "a", args: `{"x":1}`},
		{name: "escaped name value", params: `{"name":"se\u0063ret"}`, want: "secret"},
		{name: "escaped member name", params: `{"n\u0061me":"secret"}`, want: "secret"},
		{name: "unknown members ignored", params: `{"_meta":{"progressToken":1},"name":"a"}`, want: "a"},
		{name: "no name", params: `{"arguments":{}}`, wantErr: true},
		{name: "name twice", params: `{"name":"a","name":"b"}`, wantErr: true},
		{name: "name in another case", params: `{"name":"a","Name":"b"}`, wantErr: true},
		{name: "only another case", params: `{"NAME":"a"}`, wantErr: true},
		{name: "mixed case", params: `{"name":"a","nAMe":"b"}`, wantErr: true},
		{name: "unicode fold (Kelvin sign) of another key", params: `{"name":"a","Key":"b"}`, want: "a"},
		{name: "name not a string", params: `{"name":5}`, wantErr: true},
		{name: "params not an object", params: `["a"]`, wantErr: true},
		{name: "params absent", params: ``, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := parseCall([]byte(tt.params))
			if tt.wantErr {
				assert.ErrorIs(t, err, errAmbiguousCall)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, p.Name)
			if tt.args != "" {
				assert.Equal(t, tt.args, string(p.Arguments))
			}
		})
	}
}

// TestBatchResponsesEndTheirRequests: the upstream's batch answer to a
// forwarded batch reaches the client as it is and ends both requests.
func TestBatchResponsesEndTheirRequests(t *testing.T) {
	h := start(t, 0)
	batch := `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":"b","method":"resources/list"}]`
	h.client.send(batch + "\n")
	require.Equal(t, batch, string(h.up.next()))
	require.Equal(t, 2, h.session.inflight())
	answer := `[{"jsonrpc":"2.0","id":"b","result":{"resources":[]}},{"jsonrpc":"2.0","id":1,"result":{}}]`
	h.up.send(answer + "\n")
	assert.Equal(t, answer, string(h.client.next()))
	assert.Equal(t, 0, h.session.inflight())
}

// TestAmbiguousClientMessageIsRefused: a message whose routing members a
// peer could read two ways is answered with an error, never forwarded.
func TestAmbiguousClientMessageIsRefused(t *testing.T) {
	h := start(t, 0)
	h.client.send(`{"jsonrpc":"2.0","id":8,"method":"ping","Method":"tools/call"}` + "\n")
	var resp struct {
		ID    json.RawMessage `json:"id"`
		Error RPCError        `json:"error"`
	}
	require.NoError(t, json.Unmarshal(h.client.next(), &resp))
	assert.Equal(t, "8", string(resp.ID))
	assert.Equal(t, codeInvalidRequest, resp.Error.Code)
	h.client.send(`{"jsonrpc":"2.0","id":9,"method":"ping"}` + "\n")
	assert.Equal(t, `{"jsonrpc":"2.0","id":9,"method":"ping"}`, string(h.up.next()), "the ambiguous message was not forwarded")
}

// FuzzParseCall checks that a tool name the gate accepts is the one every
// kind of upstream reads: a case-sensitive parser where the last duplicate
// wins (JavaScript, Python) and Go's case-insensitive encoding/json.
func FuzzParseCall(f *testing.F) {
	for _, seed := range []string{
		`{"name":"a","arguments":{}}`, `{"name":"a","NAME":"b"}`, `{"n\u0061me":"a"}`,
		`{"name":"a","name":"b"}`, `{"Name":0,"name":"a"}`, `{"name":"\u212a"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, params []byte) {
		p, err := parseCall(params)
		if err != nil || !json.Valid(params) {
			return
		}
		var exact map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(params, &exact))
		var name string
		require.NoError(t, json.Unmarshal(exact["name"], &name))
		require.Equal(t, name, p.Name, "a case-sensitive, last-wins parser reads another name")
		var folded struct{ Name string }
		if json.Unmarshal(params, &folded) == nil {
			require.Equal(t, folded.Name, p.Name, "encoding/json reads another name")
		}
	})
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

// recordingTimer is a resilience.Timer that fires at once and records waits.
type recordingTimer struct {
	waits chan time.Duration
	c     chan time.Time
}

func (r *recordingTimer) Start(d time.Duration) { r.waits <- d; r.c <- time.Time{} }
func (r *recordingTimer) Stop()                 {}
func (r *recordingTimer) C() <-chan time.Time   { return r.c }

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

func (c *stuckWriter) WriteMessage(msg []byte) error {
	if c.stuck(msg) {
		select {
		case <-c.blocked:
		default:
			close(c.blocked)
		}
		<-c.closed
		return io.ErrClosedPipe
	}
	return c.Conn.WriteMessage(msg)
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

// TestToolsListRewriteFindsEveryToolsMember: rewriteToolsList finds the
// tools array by its raw, quoted name, so a name spelled with an escape
// (which every parser decodes to "tools"), in another letter case (which
// Go's encoding/json matches) or twice (first-wins parsers read the first)
// passes locked tools to the client unfiltered: an upstream can show the
// agent a definition that is pending approval.
func TestToolsListRewriteFindsEveryToolsMember(t *testing.T) {
	tests := []struct {
		name   string
		result string
	}{
		{name: "escaped name", result: `{"t\u006fols":[{"name":"open"},{"name":"secret"}]}`},
		{name: "case variant after", result: `{"tools":[{"name":"open"}],"Tools":[{"name":"secret"}]}`},
		{name: "case variant alone", result: `{"TOOLS":[{"name":"secret"}]}`},
		{name: "twice", result: `{"tools":[{"name":"secret"}],"tools":[{"name":"open"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := startRaw(t, rawOptions{policy: lockedSecret, catalog: secretCatalog})
			h.client.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}` + "\n")
			h.answer(h.expect("tools/list"), tt.result)
			assert.NotContains(t, string(h.nextResponse("1")), "secret", "the locked tool reaches the client")
		})
	}
}

// TestNestedBatchIsRefused: clientBatch looks into the elements of a batch
// for messages the gate must see, but an element that is itself a batch is
// forwarded unread, with a call to a locked tool inside it.
func TestNestedBatchIsRefused(t *testing.T) {
	h := startRaw(t, rawOptions{policy: lockedSecret, catalog: secretCatalog})
	h.client.send(`[[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"secret"}}],{"jsonrpc":"2.0","id":2,"method":"ping"}]` + "\n")
	h.client.send(`{"jsonrpc":"2.0","id":3,"method":"ping"}` + "\n")
	assert.Equal(t, `{"jsonrpc":"2.0","id":3,"method":"ping"}`, string(h.up.next()), "the nested batch must not reach the upstream")
	var answers []struct {
		ID    json.RawMessage `json:"id"`
		Error *RPCError       `json:"error"`
	}
	require.NoError(t, json.Unmarshal(h.client.next(), &answers))
	require.Len(t, answers, 2, "the nested batch and request 2 are each answered")
	for _, a := range answers {
		assert.NotNil(t, a.Error)
	}
}

// TestAmbiguousUpstreamResponse: pumpUpstream passes an ambiguous message
// through with its envelope cleared, so a response with "result" twice
// ends no request: a tools/list answer reaches the client unfiltered (a
// last-wins client reads the locked tool), and the request stays in
// flight, so a later crash answers it a second time.
func TestAmbiguousUpstreamResponse(t *testing.T) {
	t.Run("tools/list is not passed unfiltered", func(t *testing.T) {
		h := startRaw(t, rawOptions{policy: lockedSecret, catalog: secretCatalog})
		h.client.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}` + "\n")
		id := h.expect("tools/list")
		h.up.send(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":{"tools":[{"name":"open"}]},"result":{"tools":[{"name":"secret"}]}}` + "\n")
		assert.NotContains(t, string(h.nextResponse("1")), "secret", "the locked tool reaches the client")
		assert.Equal(t, 0, h.session.inflight(), "the request is answered")
	})
	t.Run("a request is answered once", func(t *testing.T) {
		h := startRaw(t, rawOptions{})
		h.client.send(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n")
		h.expect("ping")
		answer := `{"jsonrpc":"2.0","id":1,"result":{},"result":{"x":1}}`
		h.up.send(answer + "\n")
		require.Equal(t, answer, string(h.client.next()), "passed through as it is")
		h.up.closeSend() // crash
		assert.Contains(t, string(h.client.next()), "notifications/tools/list_changed",
			"the crash must not answer request 1 again")
	})
}

// TestToolsListAnsweredInABatchIsFiltered: an upstream may answer the
// client's tools/list inside a batch; upstreamBatch ends the request but
// does not rewrite the answer, so locked tools reach the client.
func TestToolsListAnsweredInABatchIsFiltered(t *testing.T) {
	h := startRaw(t, rawOptions{policy: lockedSecret, catalog: secretCatalog})
	h.client.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}` + "\n")
	id := h.expect("tools/list")
	h.up.send(`[{"jsonrpc":"2.0","method":"notifications/message","params":{}},{"jsonrpc":"2.0","id":` + string(id) + `,"result":` + secretCatalog + "}]\n")
	msg := h.client.next()
	assert.NotContains(t, string(msg), "secret", "the locked tool reaches the client")
	assert.Contains(t, string(msg), "notifications/message", "the rest of the batch is kept")
	assert.Equal(t, 0, h.session.inflight())
}

// TestOwnAnswerInABatchIsTakenOut: an answer to the sidecar's own request
// inside an upstream batch reached the client (an id it never sent) and
// left the own request waiting.
func TestOwnAnswerInABatchIsTakenOut(t *testing.T) {
	h := startRaw(t, rawOptions{policy: lockedSecret})
	id := h.expect("tools/list")
	h.up.send(`[{"jsonrpc":"2.0","id":` + string(id) + `,"result":` + secretCatalog + "}]\n")
	h.up.send(`{"jsonrpc":"2.0","method":"notifications/marker"}` + "\n")
	assert.Equal(t, `{"jsonrpc":"2.0","method":"notifications/marker"}`, string(h.client.next()), "the own answer is not forwarded")
	require.Eventually(t, h.session.catalogLoadIdle, timeout, tick, "the own request got its answer")
}

// TestToolsCallNotificationIsNotForwarded: a tools/call without an id is a
// notification, which clientNotification forwards unjudged. An upstream
// that dispatches on the method alone runs the locked tool.
func TestToolsCallNotificationIsNotForwarded(t *testing.T) {
	h := startRaw(t, rawOptions{policy: lockedSecret, catalog: secretCatalog})
	h.client.send(`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"secret"}}` + "\n")
	h.client.send(`{"jsonrpc":"2.0","id":2,"method":"ping"}` + "\n")
	assert.Equal(t, `{"jsonrpc":"2.0","id":2,"method":"ping"}`, string(h.up.next()), "the call must not reach the upstream")
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
	env, err := framing.Peek(up.next())
	require.NoError(t, err)
	require.Equal(t, "initialize", env.Method)
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

// TestRefreshDoesNotUndoWhatTheClientSaw: a catalog refresh that spans a
// tools/list the client made overwrites, when it ends, the definition
// notePage merged from the client's page with the older one it read
// before: the call is judged by a definition the client no longer saw.
func TestRefreshDoesNotUndoWhatTheClientSaw(t *testing.T) {
	h := startRaw(t, rawOptions{policy: &descPolicy{},
		catalog: `{"tools":[{"name":"a","description":"benign"}]}`})
	h.up.send(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}` + "\n")
	require.Contains(t, string(h.client.next()), "list_changed")
	refresh := h.expect("tools/list")
	h.answer(refresh, `{"tools":[{"name":"a","description":"benign"}],"nextCursor":"2"}`)
	refresh = h.expect("tools/list") // the refresh's second page is still to come

	// The upstream changes "a"; the client lists it and sees it hidden.
	h.client.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}` + "\n")
	h.answer(h.expect("tools/list"), `{"tools":[{"name":"a","description":"now evil"}]}`)
	var list listResponse
	require.NoError(t, json.Unmarshal(h.nextResponse("1"), &list))
	require.NotContains(t, list.names(), "a", "the changed tool is hidden")

	// The upstream answers every later tools/list with what it has now.
	others := make(chan []byte, 8)
	go func() {
		for msg := range h.up.recv {
			env, err := framing.Peek(msg)
			if err == nil && env.Method == "tools/list" {
				io.WriteString(h.up.in, `{"jsonrpc":"2.0","id":`+string(env.ID)+`,"result":{"tools":[{"name":"a","description":"now evil"},{"name":"b"}]}}`+"\n")
				continue
			}
			others <- msg
		}
	}()
	h.answer(refresh, `{"tools":[{"name":"b"}]}`) // the refresh ends with "a" as its first page had it
	require.Eventually(t, func() bool { _, ok, _ := h.session.catalogTool("b"); return ok }, timeout, tick, "the refresh ended")

	h.client.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"a"}}` + "\n")
	h.client.send(`{"jsonrpc":"2.0","id":3,"method":"ping"}` + "\n")
	select {
	case msg := <-others:
		assert.Equal(t, `{"jsonrpc":"2.0","id":3,"method":"ping"}`, string(msg), "the hidden, changed tool must not be callable")
	case <-time.After(timeout):
		t.Fatal("nothing reached the upstream")
	}
}

// TestRequestIDInFlightIsRefused: reqs is keyed by the id, so a second
// request reusing an id in flight (1 and 1.0 are one id) replaces the
// first: the answer to one is taken for the other's (a tools/list answer
// is not filtered, and any answer with a "tools" member is merged into the
// catalog as tool definitions), and a crash answers only one of them.
func TestRequestIDInFlightIsRefused(t *testing.T) {
	h := startRaw(t, rawOptions{policy: lockedSecret, catalog: secretCatalog})
	h.client.send(`{"jsonrpc":"2.0","id":1,"method":"x/echo","params":{"tools":[{"name":"secret"}]}}` + "\n")
	h.expect("x/echo")
	h.client.send(`{"jsonrpc":"2.0","id":1.0,"method":"tools/list"}` + "\n")
	var resp struct {
		ID    json.RawMessage `json:"id"`
		Error *RPCError       `json:"error"`
	}
	require.NoError(t, json.Unmarshal(h.client.next(), &resp))
	assert.Equal(t, "1.0", string(resp.ID))
	require.NotNil(t, resp.Error, "the second request is refused")
	assert.Equal(t, codeInvalidRequest, resp.Error.Code)
	h.client.send(`{"jsonrpc":"2.0","id":2,"method":"ping"}` + "\n")
	assert.Equal(t, `{"jsonrpc":"2.0","id":2,"method":"ping"}`, string(h.up.next()), "the second request was not forwarded")
}

// TestCatalogLoadsAreShared: calls that need the catalog while a load is
// under way wait for that load instead of each walking the whole catalog
// again (an agent guessing tool names must not multiply the upstream's
// work, and two walks finishing out of order could keep the older one).
func TestCatalogLoadsAreShared(t *testing.T) {
	h := startRaw(t, rawOptions{policy: lockedSecret}) // the first load waits for its answer
	first := h.expect("tools/list")
	h.client.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"open"}}` + "\n")
	h.client.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"open"}}` + "\n")
	h.client.send(`{"jsonrpc":"2.0","id":3,"method":"ping"}` + "\n")
	h.expect("ping") // both calls are waiting for the catalog by now
	h.answer(first, secretCatalog)
	assert.Equal(t, "tools/call", h.expectAny())
	assert.Equal(t, "tools/call", h.expectAny(), "no second walk of the catalog")
}

// expectAny returns the method of the next message at the upstream.
func (h *rawHarness) expectAny() string {
	h.t.Helper()
	env, err := framing.Peek(h.up.next())
	require.NoError(h.t, err)
	return env.Method
}

// TestOversizedServerRequestExchangeIsAnswered: a request of the upstream's
// (sampling, elicitation) is a request too: when it, or the client's answer
// to it, is over the message limit, the upstream is answered with an error
// rather than left waiting forever.
func TestOversizedServerRequestExchangeIsAnswered(t *testing.T) {
	big := strings.Repeat("a", 4096)
	tests := []struct {
		name string
		run  func(h *harness)
	}{
		{name: "the upstream's request is too large", run: func(h *harness) {
			h.up.send(`{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{"x":"` + big + `"}}` + "\n")
		}},
		{name: "the client's answer is too large", run: func(h *harness) {
			h.up.send(`{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{}}` + "\n")
			require.Contains(t, string(h.client.next()), `"sampling/createMessage"`)
			h.client.send(`{"jsonrpc":"2.0","id":"s1","result":{"x":"` + big + `"}}` + "\n")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := start(t, 1024)
			tt.run(h)
			var resp struct {
				ID    json.RawMessage `json:"id"`
				Error *RPCError       `json:"error"`
			}
			require.NoError(t, json.Unmarshal(h.up.next(), &resp))
			assert.Equal(t, `"s1"`, string(resp.ID))
			require.NotNil(t, resp.Error)
			assert.Contains(t, resp.Error.Message, "exceeds the 1024-byte")
		})
	}
}
