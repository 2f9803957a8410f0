package middleware

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpwrap/mcpwrap/internal/framing"
	"github.com/mcpwrap/mcpwrap/internal/syncbuf"
	"github.com/mcpwrap/mcpwrap/resilience"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type harness struct {
	client, up *peer
	session    *Session
	logs       *syncbuf.Buffer
	done       chan error
	cancel     context.CancelFunc
}

// start runs a Session (set up further by each of configure) between a
// client and an upstream peer, through the handshake.
func start(t *testing.T, maxLine int, configure ...func(*Session)) *harness {
	t.Helper()
	h := &harness{logs: &syncbuf.Buffer{}, done: make(chan error, 1)}
	var clientConn, upConn Conn
	h.client, clientConn = newPeer(t, maxLine)
	h.up, upConn = newPeer(t, maxLine)
	h.session = &Session{Name: "fixture", Client: clientConn, Dial: dialOnce(upConn),
		Logger: slog.New(slog.NewTextHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	for _, c := range configure {
		c(h.session)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() { h.done <- h.session.Run(ctx) }()
	t.Cleanup(cancel)
	handshake(t, h.client, h.up)
	return h
}

func TestSessionRejectsBadClientInput(t *testing.T) {
	tests := []struct {
		name        string
		line        string
		wantCode    int
		wantID      string
		wantRelayed bool
	}{
		{name: "not JSON", line: "hello there", wantCode: -32700, wantID: "null"},
		{name: "truncated object", line: `{"jsonrpc":"2.0","id":1,"method":"ping"`, wantCode: -32700, wantID: "null"},
		{name: "bad nested value", line: `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":tru}}`, wantCode: -32700, wantID: "null"},
		{name: "neither request nor response", line: `{"jsonrpc":"2.0","id":4}`, wantCode: -32600, wantID: "4"},
		{name: "reserved id prefix", line: `{"jsonrpc":"2.0","id":"OWN1","method":"ping"}`, wantCode: -32600, wantID: `"OWN1"`},
		{name: "another mcpwrap's own id passes", line: `{"jsonrpc":"2.0","id":"mcpwrap-x-1","method":"ping"}`, wantRelayed: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := start(t, 0)
			own := strings.NewReplacer("OWN", h.session.ownID) // this Session's own-id prefix
			h.client.send(own.Replace(tt.line) + "\n")
			if tt.wantRelayed {
				assert.Equal(t, tt.line, string(h.up.next()))
				h.up.send(`{"jsonrpc":"2.0","id":"mcpwrap-x-1","result":{}}` + "\n")
				assert.Equal(t, `{"jsonrpc":"2.0","id":"mcpwrap-x-1","result":{}}`, string(h.client.next()), "answered, not taken for an own reply")
				return
			}
			var resp struct {
				ID    json.RawMessage `json:"id"`
				Error RPCError        `json:"error"`
			}
			require.NoError(t, json.Unmarshal(h.client.next(), &resp))
			assert.Equal(t, tt.wantCode, resp.Error.Code)
			assert.Equal(t, own.Replace(tt.wantID), string(resp.ID))

			// The session goes on: the next good message is relayed.
			h.client.send(`{"jsonrpc":"2.0","id":2,"method":"ping"}` + "\n")
			assert.Equal(t, `{"jsonrpc":"2.0","id":2,"method":"ping"}`, string(h.up.next()))
		})
	}
}

func TestSessionOversizedMessages(t *testing.T) {
	h := start(t, 1024)
	big := strings.Repeat("a", 4096)

	h.client.send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"x":"` + big + `"}}` + "\n")
	var resp struct {
		ID    json.RawMessage `json:"id"`
		Error RPCError        `json:"error"`
	}
	require.NoError(t, json.Unmarshal(h.client.next(), &resp))
	assert.Equal(t, "5", string(resp.ID))
	assert.Equal(t, -32600, resp.Error.Code)
	assert.Contains(t, resp.Error.Message, "exceeds the 1024-byte limit")

	// An oversized response that must be held whole (its head does not
	// show what it is: see stream.go) is dropped, and its request is
	// answered with an error.
	h.client.send(`{"jsonrpc":"2.0","id":6,"method":"tools/call"}` + "\n")
	h.up.next()
	h.up.send(`{"jsonrpc":"2.0","result":{"x":"` + big + `"},"id":6}` + "\n")
	require.NoError(t, json.Unmarshal(h.client.next(), &resp))
	assert.Equal(t, "6", string(resp.ID))
	assert.Equal(t, -32603, resp.Error.Code)
	assert.Contains(t, h.logs.String(), "upstream message too large")

	h.up.send(`{"jsonrpc":"2.0","method":"notifications/ok"}` + "\n")
	assert.Equal(t, `{"jsonrpc":"2.0","method":"notifications/ok"}`, string(h.client.next()))
}

// TestOversizedMessagesAreAnsweredWithTheirIDWhereverItIs: the id of a
// message too large to relay may come after its payload, past the head the
// reader keeps; it is still found, in both directions, so that nothing
// waits forever.
func TestOversizedMessagesAreAnsweredWithTheirIDWhereverItIs(t *testing.T) {
	h := start(t, 1024)
	big := strings.Repeat("a", 8<<10)
	var resp struct {
		ID    json.RawMessage `json:"id"`
		Error RPCError        `json:"error"`
	}

	// From the client: its request is refused under its own id.
	h.client.send(`{"jsonrpc":"2.0","method":"tools/call","params":{"x":"` + big + `"},"id":"c-1"}` + "\n")
	require.NoError(t, json.Unmarshal(h.client.next(), &resp))
	assert.Equal(t, `"c-1"`, string(resp.ID))
	assert.Equal(t, codeInvalidRequest, resp.Error.Code)

	// From the upstream: the request it answers gets an error instead.
	h.client.send(`{"jsonrpc":"2.0","id":{"k":1},"method":"resources/read"}` + "\n")
	h.up.next()
	h.up.send(`{"jsonrpc":"2.0","result":{"contents":"` + big + `"},"id":{"k":1.0}}` + "\n")
	require.NoError(t, json.Unmarshal(h.client.next(), &resp))
	assert.Equal(t, `{"k":1}`, string(resp.ID), "as the client spelled it")
	assert.Equal(t, codeInternalError, resp.Error.Code)

	// An upstream request too large to relay is refused back to it.
	h.up.send(`{"jsonrpc":"2.0","params":{"x":"` + big + `"},"method":"sampling/createMessage","id":"s-1"}` + "\n")
	require.NoError(t, json.Unmarshal(h.up.next(), &resp))
	assert.Equal(t, `"s-1"`, string(resp.ID))
	assert.Equal(t, codeInternalError, resp.Error.Code)
}

func TestSessionMovesNonJSONUpstreamLinesToLogs(t *testing.T) {
	h := start(t, 0)
	h.up.send("Server listening on stdio\n")
	h.up.send(`{"jsonrpc":"2.0","method":"notifications/first"}` + "\n")
	assert.Equal(t, `{"jsonrpc":"2.0","method":"notifications/first"}`, string(h.client.next()),
		"the banner must not reach the client")
	assert.Contains(t, h.logs.String(), "Server listening on stdio")
}

func TestSessionCapturesHandshake(t *testing.T) {
	h := start(t, 0)
	require.Eventually(t, func() bool { return h.session.Handshake().Initialized }, timeout, tick)
	hs := h.session.Handshake()
	assert.Equal(t, "initialize", hs.Method)
	assert.JSONEq(t, clientInitialize, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":`+string(hs.Params)+`}`)
	assert.JSONEq(t, initializeResult, string(hs.Result))
}

func TestSessionOwnRequestsNeverReachTheClient(t *testing.T) {
	h := start(t, 0)
	type reply struct {
		res json.RawMessage
		err error
	}
	got := make(chan reply, 1)
	go func() {
		res, err := h.session.Call(context.Background(), "tools/list", nil)
		got <- reply{res, err}
	}()
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	require.NoError(t, json.Unmarshal(h.up.next(), &req))
	assert.Equal(t, "tools/list", req.Method)
	assert.True(t, bytes.HasPrefix(req.ID, []byte(`"mcpwrap-`)), "own id %s", req.ID)

	h.up.send(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":{"tools":[]}}` + "\n")
	r := <-got
	require.NoError(t, r.err)
	assert.JSONEq(t, `{"tools":[]}`, string(r.res))

	// The client sees the next upstream message, not the own response.
	h.up.send(`{"jsonrpc":"2.0","method":"notifications/after"}` + "\n")
	assert.Equal(t, `{"jsonrpc":"2.0","method":"notifications/after"}`, string(h.client.next()))
}

func TestSessionDrainsInFlightRequestsWhenTheClientLeaves(t *testing.T) {
	h := start(t, 0)
	h.client.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call"}` + "\n")
	h.up.next()
	h.client.closeSend()
	h.up.send(`{"jsonrpc":"2.0","id":1,"result":{}}` + "\n")
	assert.Equal(t, `{"jsonrpc":"2.0","id":1,"result":{}}`, string(h.client.next()))
	require.NoError(t, <-h.done)
	h.up.closed() // the upstream was closed after the drain
}

func TestSessionAnswersInFlightRequestsWhenTheUpstreamDies(t *testing.T) {
	h := start(t, 0)
	for _, id := range []string{"1", `"two"`} {
		h.client.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"x"}}` + "\n")
		h.up.next()
	}
	h.up.closeSend()
	ids := map[string]int{}
	for range 2 {
		var resp struct {
			ID    json.RawMessage `json:"id"`
			Error RPCError        `json:"error"`
		}
		require.NoError(t, json.Unmarshal(h.client.next(), &resp))
		assert.Equal(t, -32603, resp.Error.Code)
		assert.Equal(t, "upstream restarted; request not completed", resp.Error.Message)
		ids[string(resp.ID)]++
	}
	assert.Equal(t, map[string]int{"1": 1, `"two"`: 1}, ids, "each request gets exactly one error")

	// The session lives on and explains: this fixture's upstream cannot be
	// restarted, so a call is answered with the failure.
	require.Eventually(t, func() bool { return h.session.Status().Class == resilience.Permanent }, timeout, tick)
	assert.JSONEq(t, `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`, string(h.client.next()),
		"the discovery tool appeared")
	h.client.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x"}}` + "\n")
	var resp struct {
		Result struct {
			IsError bool           `json:"isError"`
			Meta    map[string]any `json:"_meta"`
			Content []struct{ Text string }
		} `json:"result"`
	}
	require.NoError(t, json.Unmarshal(h.client.next(), &resp))
	assert.True(t, resp.Result.IsError)
	assert.Equal(t, "permanent", resp.Result.Meta["status"])
	assert.Contains(t, resp.Result.Content[0].Text, "Server 'fixture' failed to load and needs attention")
}

func TestSessionBatches(t *testing.T) {
	tests := []struct {
		name    string
		batch   string
		relayed bool
		wantIDs []string
	}{
		{name: "plain batch is relayed", batch: `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/x"}]`, relayed: true},
		{name: "a tools/call cannot slip past the gate", batch: `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"locked"}}]`,
			wantIDs: []string{"1", `"c"`}},
		{name: "tools/list is not rewritten inside a batch", batch: `[{"jsonrpc":"2.0","id":2,"method":"tools/list"}]`, wantIDs: []string{"2"}},
		{name: "an ambiguous element is answered with the others", batch: `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping","Method":"tools/call"},{"jsonrpc":"2.0","id":3,"method":"ping"}]`,
			wantIDs: []string{"1", "2", "3"}},
		{name: "an element with an ambiguous id is answered with id null", batch: `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"id":4,"method":"ping"}]`,
			wantIDs: []string{"1", "null"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := start(t, 0)
			h.client.send(tt.batch + "\n")
			if tt.relayed {
				assert.Equal(t, tt.batch, string(h.up.next()))
				return
			}
			var resps []struct {
				ID    json.RawMessage `json:"id"`
				Error RPCError        `json:"error"`
			}
			require.NoError(t, json.Unmarshal(h.client.next(), &resps))
			var ids []string
			for _, r := range resps {
				ids = append(ids, string(r.ID))
				assert.Equal(t, codeInvalidRequest, r.Error.Code)
			}
			assert.Equal(t, tt.wantIDs, ids)
			h.client.send(`{"jsonrpc":"2.0","id":9,"method":"ping"}` + "\n")
			assert.Equal(t, `{"jsonrpc":"2.0","id":9,"method":"ping"}`, string(h.up.next()), "nothing of the batch reached the upstream")
		})
	}
}

// TestDegradedHandshakeWaitsOnce: a client that opens with server/discover
// gets the sidecar's own discover result, explaining the upstream's status;
// one that then falls back to initialize anyway waits for the upstream
// once, not once per handshake, so it stays under its own timeout.
func TestDegradedHandshakeWaitsOnce(t *testing.T) {
	client, clientConn := newPeer(t, 0)
	up, upConn := newPeer(t, 0)
	var armed atomic.Int32
	s := &Session{Name: "slow", Client: clientConn, Dial: dialOnce(upConn),
		hooks: hooks{afterFunc: func(d time.Duration, f func()) interface{ Stop() bool } {
			armed.Add(1)
			go f() // the ready timeout expires at once
			return fakeTimer{}
		}}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.Run(ctx)

	client.send(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}` + "\n")
	up.next() // the upstream got it, and never answers
	var resp struct {
		ID     json.RawMessage `json:"id"`
		Error  *RPCError       `json:"error"`
		Result json.RawMessage `json:"result"`
	}
	require.NoError(t, json.Unmarshal(client.next(), &resp))
	require.Nil(t, resp.Error, "a degraded server/discover is answered by the sidecar")
	var res struct {
		SupportedVersions []string `json:"supportedVersions"`
		Instructions      string   `json:"instructions"`
		TTLMs             *int     `json:"ttlMs"`
		Capabilities      struct {
			Tools struct {
				ListChanged bool `json:"listChanged"`
			} `json:"tools"`
		} `json:"capabilities"`
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	require.NoError(t, json.Unmarshal(resp.Result, &res))
	assert.Equal(t, []string{"2026-07-28"}, res.SupportedVersions)
	assert.Contains(t, res.Instructions, "slow", "the upstream's status, naming it")
	assert.True(t, res.Capabilities.Tools.ListChanged)
	require.NotNil(t, res.TTLMs)
	assert.Zero(t, *res.TTLMs, "nothing of a degraded answer may be cached")
	assert.Contains(t, string(res.Meta["io.modelcontextprotocol/serverInfo"]), "mcpwrap-degraded")
	resp.Result = nil

	client.send(clientInitialize + "\n")
	resp.Error = nil
	require.NoError(t, json.Unmarshal(client.next(), &resp))
	assert.Equal(t, "0", string(resp.ID))
	assert.Contains(t, string(resp.Result), `"mcpwrap-degraded"`)
	assert.Equal(t, int32(1), armed.Load(), "the fallback initialize is answered without a second wait")
}

type fakeTimer struct{}

func (fakeTimer) Stop() bool { return false }

func TestStatusBeforeRunIsTransient(t *testing.T) {
	s := &Session{Name: "x"}
	assert.Equal(t, resilience.Transient, s.Status().Class)
	assert.Equal(t, Stats{}, s.Stats())
}

// erasConn is an upstream Conn that reports the protocol versions of its
// sides, as the era bridge does.
type erasConn struct {
	Conn
	client, server string
}

func (c erasConn) Eras() (client, server string) { return c.client, c.server }

// TestStatsReportTheConnsEras: Stats carry the protocol versions the ready
// upstream connection reports (an EraReporter), and none from a Conn that
// reports none.
func TestStatsReportTheConnsEras(t *testing.T) {
	tests := []struct {
		name string
		wrap func(Conn) Conn
		want [2]string
	}{
		{name: "a bridge", wrap: func(c Conn) Conn { return erasConn{Conn: c, client: "2025-11-25", server: "2026-07-28"} }, want: [2]string{"2025-11-25", "2026-07-28"}},
		{name: "a plain conn", want: [2]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := startRaw(t, rawOptions{wrap: tt.wrap})
			st := h.session.Stats()
			assert.Equal(t, tt.want, [2]string{st.ClientProtocol, st.ServerProtocol})
		})
	}
}

// TestHandshakeOnAReadyUpstreamKeepsItsParams: a client that opens again
// (a second initialize, or another stateless client's server/discover on a
// shared session) has its params relayed as JSON, not re-encoded.
func TestHandshakeOnAReadyUpstreamKeepsItsParams(t *testing.T) {
	h := start(t, 0)
	h.client.send(`{"jsonrpc":"2.0","id":5,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}` + "\n")
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	for req.Method != "server/discover" {
		require.NoError(t, json.Unmarshal(h.up.next(), &req))
	}
	assert.JSONEq(t, `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`, string(req.Params))
	h.up.send(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":{"supportedVersions":["2026-07-28"]}}` + "\n")
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":5,"result":{"supportedVersions":["2026-07-28"]}}`, string(h.client.next()))
}

// TestOwnRequestsCarryTheClientMeta: in the 2026-07-28 protocol every
// request describes its client in _meta; the sidecar's own requests (a
// catalog load, a ping) describe the client that opened with
// server/discover, so that the upstream takes them.
func TestOwnRequestsCarryTheClientMeta(t *testing.T) {
	client, clientConn := newPeer(t, 0)
	up, upConn := newPeer(t, 0)
	s := &Session{Name: "modern", Client: clientConn, Dial: dialOnce(upConn)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.Run(ctx)

	const meta = `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"},"io.modelcontextprotocol/clientCapabilities":{"roots":{}}}`
	client.send(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":` + meta + `}}` + "\n")
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	require.NoError(t, json.Unmarshal(up.next(), &req))
	require.Equal(t, "server/discover", req.Method)
	up.send(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":{"supportedVersions":["2026-07-28"],"capabilities":{}}}` + "\n")
	client.next()

	done := make(chan error, 1)
	go func() {
		_, err := s.Call(ctx, "tools/list", map[string]any{"cursor": "c1"})
		done <- err
	}()
	require.NoError(t, json.Unmarshal(up.next(), &req))
	assert.Equal(t, "tools/list", req.Method)
	assert.JSONEq(t, `{"cursor":"c1","_meta":`+meta+`}`, string(req.Params))
	up.send(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":{"tools":[]}}` + "\n")
	require.NoError(t, <-done)

	// The client's own requests, replayed to a restarted upstream, go as the client sent
	// them: logging/setLevel with _meta would be a 2026-07-28 request, which has no such method.
	go func() {
		_, err := s.Call(ctx, "logging/setLevel", json.RawMessage(`{"level":"debug"}`))
		done <- err
	}()
	require.NoError(t, json.Unmarshal(up.next(), &req))
	assert.JSONEq(t, `{"level":"debug"}`, string(req.Params))
	up.send(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":{}}` + "\n")
	require.NoError(t, <-done)
}

// TestWithClientMeta: the client's _meta description goes into the
// params of the sidecar's own requests as one member more, every other
// byte of the params as given (their order, spelling and numbers: a
// decoder's map re-sorted them and escaped '<'); a key the params' _meta
// has already is kept, and what cannot be set for sure is not set.
func TestWithClientMeta(t *testing.T) {
	const (
		version = `"io.modelcontextprotocol/protocolVersion":"2026-07-28"`
		info    = `"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"}`
		caps    = `"io.modelcontextprotocol/clientCapabilities":{"roots":{}}`
		meta    = `{` + version + `,` + info + `,` + caps + `}`
	)
	tests := []struct {
		name      string
		method    string // the client's handshake
		handshake string // its params
		params    string
		want      string
	}{
		{name: "added, the rest as given", method: "server/discover", handshake: `{"_meta":` + meta + `}`,
			params: `{"z":1,"cursor":"a<b","big":12345678901234567890123}`,
			want:   `{"z":1,"cursor":"a<b","big":12345678901234567890123,"_meta":` + meta + `}`},
		{name: "no params", method: "server/discover", handshake: `{"_meta":` + meta + `}`, want: `{"_meta":` + meta + `}`},
		{name: "null params", method: "server/discover", handshake: `{"_meta":` + meta + `}`, params: `null`, want: `{"_meta":` + meta + `}`},
		{name: "a key of the params' kept", method: "server/discover", handshake: `{"_meta":` + meta + `}`,
			params: `{"_meta":{"progressToken":7,"io.modelcontextprotocol/protocolVersion":"mine"}}`,
			want:   `{"_meta":{"progressToken":7,"io.modelcontextprotocol/protocolVersion":"mine",` + info + `,` + caps + `}}`},
		{name: "only the client keys", method: "server/discover", handshake: `{"_meta":{` + version + `,"x":1}}`, params: `{}`,
			want: `{"_meta":{` + version + `}}`},
		{name: "none of them", method: "server/discover", handshake: `{"_meta":{"x":1}}`, params: `{"a":1}`, want: `{"a":1}`},
		{name: "a key the client spelled twice not guessed", method: "server/discover",
			handshake: `{"_meta":{` + version + `,` + version + `,` + info + `}}`, params: `{}`, want: `{"_meta":{` + info + `}}`},
		{name: "params _meta ambiguous", method: "server/discover", handshake: `{"_meta":` + meta + `}`,
			params: `{"_meta":{},"_META":{}}`, want: `{"_meta":{},"_META":{}}`},
		{name: "params not an object", method: "server/discover", handshake: `{"_meta":` + meta + `}`, params: `[1]`, want: `[1]`},
		{name: "a session-era client", method: "initialize", handshake: `{"protocolVersion":"2025-11-25"}`, params: `{"a":1}`, want: `{"a":1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &Session{}
			s.hs.capture(tt.method, json.RawMessage(tt.handshake), nil)
			var params json.RawMessage
			if tt.params != "" {
				params = json.RawMessage(tt.params)
			}
			assert.Equal(t, tt.want, string(s.withClientMeta(params)))
		})
	}
}

// TestCrashRecoveryReopensListens: in the 2026-07-28 protocol a client's
// subscriptions are its subscriptions/listen requests; when the upstream
// crashes they are not failed like other requests but sent to the
// restarted upstream, so the client's listen stream goes on.
func TestCrashRecoveryReopensListens(t *testing.T) {
	client, clientConn := newPeer(t, 0)
	up1, upConn1 := newPeer(t, 0)
	up2, upConn2 := newPeer(t, 0)
	var dials atomic.Int32
	s := &Session{Name: "modern", Client: clientConn, Dial: func(context.Context) (Conn, error) {
		if dials.Add(1) == 1 {
			return upConn1, nil
		}
		return upConn2, nil
	}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.Run(ctx)

	answerDiscover := func(up *peer) {
		t.Helper()
		env, err := framing.Peek(up.next())
		require.NoError(t, err)
		require.Equal(t, "server/discover", env.Method)
		up.send(`{"jsonrpc":"2.0","id":` + string(env.ID) + `,"result":{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{"listChanged":true}}}}` + "\n")
	}
	// next returns the client's next message that is not a list change.
	next := func() string {
		t.Helper()
		for {
			msg := string(client.next())
			if !strings.Contains(msg, "notifications/tools/list_changed") {
				return msg
			}
		}
	}
	client.send(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}` + "\n")
	answerDiscover(up1)
	assert.Contains(t, next(), `"id":1,"result"`)

	const listen = `{"jsonrpc":"2.0","id":"L","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true}}}`
	client.send(listen + "\n")
	assert.Equal(t, listen, string(up1.next()))
	client.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x"}}` + "\n")
	up1.next()

	up1.closeSend() // the upstream crashes
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"upstream restarted; request not completed",`+
		`"data":{"status":"transient","class":"transient","attempts":1,"retryable":true,"restart":1,"error":"connection reset or closed mid-stream"}}}`, next(),
		"the call is answered; the listen request is not")

	answerDiscover(up2)
	assert.Equal(t, listen, string(up2.next()), "the listen request is sent to the restarted upstream as the client sent it")
	up2.send(`{"jsonrpc":"2.0","method":"notifications/prompts/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"L"}}}` + "\n")
	assert.Contains(t, next(), `"io.modelcontextprotocol/subscriptionId":"L"`)
}

// TestBatchRequestsAreAnsweredWhenTheUpstreamDies: the requests of a
// forwarded batch are tracked like any other, so a crash answers each of
// them (and the drain waits for them).
func TestBatchRequestsAreAnsweredWhenTheUpstreamDies(t *testing.T) {
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

// TestOversizedServerRequestExchangeIsAnswered: a request of the upstream's
// (sampling, elicitation) is a request too: when it, or the client's answer
// to it, is over the message limit and must be held whole, the upstream is
// answered with an error rather than left waiting forever. (One whose head
// shows what it is, id and method first, is relayed as it arrives: see
// TestLongUpstreamRequestIsRelayedAsItArrives.)
func TestOversizedServerRequestExchangeIsAnswered(t *testing.T) {
	big := strings.Repeat("a", 4096)
	tests := []struct {
		name string
		run  func(h *harness)
	}{
		{name: "the upstream's request is too large", run: func(h *harness) {
			h.up.send(`{"jsonrpc":"2.0","method":"sampling/createMessage","params":{"x":"` + big + `"},"id":"s1"}` + "\n")
		}},
		{name: "the client's answer is too large", run: func(h *harness) {
			h.up.send(`{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{}}` + "\n")
			require.Contains(t, string(h.client.next()), `"sampling/createMessage"`)
			h.client.send(`{"jsonrpc":"2.0","result":{"x":"` + big + `"},"id":"s1"}` + "\n")
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

// TestClientHandshakeTheUpstreamTookIsNotRelayedAgain: when the upstream's
// handshake takes the client's and marks the upstream ready between its
// capture and the client pump's look at the upstream, but has not answered
// it yet (so the pump could still claim its waiter), the upstream is
// initialised once and the client answered once.
func TestClientHandshakeTheUpstreamTookIsNotRelayedAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client, clientConn := newPeer(t, 0)
		up, upConn := newPeer(t, 0)
		ready := make(chan struct{})
		s := &Session{Name: "fx", Client: clientConn, Dial: dialOnce(upConn)}
		s.hooks.handshakeCaptured = func() { <-ready } // the client pump looks once the upstream is ready
		s.hooks.handshakeReady = func() {
			close(ready)
			synctest.Wait() // the pump has looked, before the waiters are answered
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- s.Run(ctx) }()

		client.send(clientInitialize + "\n")
		id := nextInitialize(t, up)
		up.send(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":` + initializeResult + "}\n")
		assert.Equal(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, string(up.next()))
		assert.Equal(t, `{"jsonrpc":"2.0","id":0,"result":`+initializeResult+`}`, string(client.next()))

		synctest.Wait()
		assertSentNothingMore(t, up, "the upstream after its handshake")
		assertSentNothingMore(t, client, "the client, answered once")
		cancel()
		require.NoError(t, <-done)
	})
}

// TestClientHandshakeTheUpstreamAnsweredIsNotRelayed: a second client
// handshake captured while the upstream's handshake of the first is under
// way is answered by that handshake when it ends; when it ends between the
// second one's capture and the client pump's look at the upstream, the
// second is not relayed as well (the upstream would be initialised again
// for a request already answered).
func TestClientHandshakeTheUpstreamAnsweredIsNotRelayed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client, clientConn := newPeer(t, 0)
		up, upConn := newPeer(t, 0)
		look := make(chan struct{})
		var captures atomic.Int32
		s := &Session{Name: "fx", Client: clientConn, Dial: dialOnce(upConn)}
		s.hooks.handshakeCaptured = func() {
			if captures.Add(1) == 2 {
				<-look // the client pump looks at the upstream once its handshake ended
			}
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- s.Run(ctx) }()

		client.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}` + "\n")
		id := nextInitialize(t, up)
		client.send(`{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}` + "\n")
		synctest.Wait() // the second is captured, and waits
		up.send(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":` + initializeResult + "}\n")
		assert.Equal(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, string(up.next()))
		assert.Equal(t, `{"jsonrpc":"2.0","id":1,"result":`+initializeResult+`}`, string(client.next()))
		assert.Equal(t, `{"jsonrpc":"2.0","id":2,"result":`+initializeResult+`}`, string(client.next()))
		close(look)

		synctest.Wait()
		assertSentNothingMore(t, up, "the upstream, whose handshake answered both")
		assertSentNothingMore(t, client, "the client, answered once each")
		cancel()
		require.NoError(t, <-done)
	})
}
