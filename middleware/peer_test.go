package middleware

import (
	"context"
	"io"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpwrap/mcpwrap/internal/framing"
	"github.com/mcpwrap/mcpwrap/resilience"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// peer is the far end of a Conn given to a Session: a test plays the client
// or the upstream through it.
type peer struct {
	t    *testing.T
	in   *io.PipeWriter  // what the peer sends
	out  *framing.Reader // what the peer receives
	outR *io.PipeReader
	recv chan []byte
	// received counts the bytes the peer has received, whole messages or
	// not.
	received atomic.Int64
}

// newPeer returns a peer and the Conn the Session uses to talk to it.
func newPeer(t *testing.T, maxLine int) (*peer, Conn) {
	t.Helper()
	toSession, fromPeer := io.Pipe()
	toPeer, fromSession := io.Pipe()
	conn := NewStreamConn(toSession, fromSession, closerFunc(func() error {
		toSession.Close()
		fromSession.Close()
		return nil
	}), maxLine)
	p := &peer{t: t, in: fromPeer, outR: toPeer, recv: make(chan []byte, 64)}
	p.out = framing.NewReader(countingReader{toPeer, &p.received}, 0)
	go p.read()
	t.Cleanup(func() { fromPeer.Close(); toPeer.Close() })
	return p, conn
}

// read delivers what the peer receives to recv, until its stream ends.
func (p *peer) read() {
	defer close(p.recv)
	for {
		line, err := p.out.Read()
		if err != nil {
			return
		}
		p.recv <- append([]byte(nil), line...)
	}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

// send writes raw bytes (the caller adds the newline).
func (p *peer) send(raw string) {
	p.t.Helper()
	_, err := io.WriteString(p.in, raw)
	require.NoError(p.t, err)
}

// next returns the next message the peer receives, failing after 5 s.
func (p *peer) next() []byte {
	p.t.Helper()
	select {
	case msg, ok := <-p.recv:
		require.True(p.t, ok, "stream closed before a message arrived")
		return msg
	case <-time.After(5 * time.Second):
		p.t.Fatal("no message within 5s")
		return nil
	}
}

// closed waits until the peer's receiving side has ended.
func (p *peer) closed() {
	p.t.Helper()
	for {
		select {
		case _, ok := <-p.recv:
			if !ok {
				return
			}
		case <-time.After(5 * time.Second):
			p.t.Fatal("stream not closed within 5s")
		}
	}
}

// hangUp closes both of the peer's ends and waits for its reader to end.
func (p *peer) hangUp() {
	p.in.Close()
	p.outR.Close()
	for range p.recv {
	}
}

// closeSend ends what the peer sends (EOF for the Session).
func (p *peer) closeSend() { p.in.Close() }

// timeout and tick bound the rare waits for background work.
const (
	timeout = 5 * time.Second
	tick    = 5 * time.Millisecond
)

// dialOnce returns a Dialer that hands out conn once; later dials fail
// permanently, so a test's upstream that dies stays dead.
func dialOnce(conn Conn) Dialer {
	var used atomic.Bool
	return func(context.Context) (Conn, error) {
		if used.Swap(true) {
			return nil, &resilience.SpawnError{Command: "fixture", Err: exec.ErrNotFound}
		}
		return conn, nil
	}
}

const (
	clientInitialize = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"sampling":{}},"clientInfo":{"name":"golden","version":"1"}}}`
	initializeResult = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true},"logging":{}},"serverInfo":{"name":"fixture","version":"1"}}`
)

// handshake plays the intercepted handshake: the client's initialize goes
// to the upstream with the sidecar's own id and the same params; the
// upstream's result comes back to the client under the client's id, byte
// for byte; the sidecar sends notifications/initialized itself and
// swallows the client's.
func handshake(t *testing.T, client, up *peer) {
	t.Helper()
	client.send(clientInitialize + "\n")
	got := up.next()
	env, err := framing.Peek(got)
	require.NoError(t, err)
	require.Equal(t, "initialize", env.Method)
	require.True(t, strings.HasPrefix(framing.IDKey(env.ID), "s"+ownIDPrefix), "initialize goes out with an own id, got %s", env.ID)
	require.Equal(t, clientInitialize, string(framing.Splice(got, env.ID, []byte("0"))), "same bytes but the id")
	up.send(`{"jsonrpc":"2.0","id":` + string(env.ID) + `,"result":` + initializeResult + "}\n")
	require.Equal(t, `{"jsonrpc":"2.0","id":0,"result":`+initializeResult+`}`, string(client.next()))
	require.Equal(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, string(up.next()))
	client.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
}

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

// expectAny returns the method of the next message at the upstream.
func (h *rawHarness) expectAny() string {
	h.t.Helper()
	env, err := framing.Peek(h.up.next())
	require.NoError(h.t, err)
	return env.Method
}

// nextInitialize returns the id of the next message the upstream peer was
// sent, which must be an initialize.
func nextInitialize(t *testing.T, up *peer) []byte {
	t.Helper()
	env, err := framing.Peek(up.next())
	require.NoError(t, err)
	require.Equal(t, "initialize", env.Method)
	return env.ID
}

// assertSentNothingMore asserts that p was sent nothing it has not read;
// in a synctest bubble, call it after synctest.Wait.
func assertSentNothingMore(t *testing.T, p *peer, who string) {
	t.Helper()
	select {
	case msg := <-p.recv:
		assert.Fail(t, "sent more than expected: "+who, "%s", msg)
	default:
	}
}
