package middleware

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/mcpwrap/mcpwrap/internal/framing"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOwnIDPrefixIsPerSession: two Sessions (two mcpwraps in a chain) use
// different own-id prefixes, so the inner one does not refuse the outer
// one's requests as its own.
func TestOwnIDPrefixIsPerSession(t *testing.T) {
	a, b := &Session{}, &Session{}
	a.once.Do(a.init)
	b.once.Do(b.init)
	assert.NotEqual(t, a.ownID, b.ownID)
	id := []byte(`"` + a.ownID + `1"`)
	assert.True(t, a.isOwnID(id))
	assert.False(t, b.isOwnID(id), "another Session's own id is a client id like any other")
}

// slowCloseConn is a Conn whose Close waits for release, holding the
// supervisor between a failed handshake and the end of the load.
type slowCloseConn struct {
	Conn
	release chan struct{}
}

func (c *slowCloseConn) Close() error {
	<-c.release
	return c.Conn.Close()
}

// TestHandshakeErrorIsReportedInOneClass: when the upstream refuses the
// handshake with an error that will not be retried, a call the client sends
// right after learning of it is told the same class the log reports
// (permanent), never "still starting up; retry in a few seconds".
func TestHandshakeErrorIsReportedInOneClass(t *testing.T) {
	client, clientConn := newPeer(t, 0)
	up, upConn := newPeer(t, 0)
	slow := &slowCloseConn{Conn: upConn, release: make(chan struct{})}
	t.Cleanup(func() { close(slow.release) })
	s := &Session{Name: "inner", Client: clientConn, Dial: dialOnce(slow)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.Run(ctx)

	client.send(clientInitialize + "\n")
	env, err := framing.Peek(up.next())
	require.NoError(t, err)
	up.send(`{"jsonrpc":"2.0","id":` + string(env.ID) + `,"error":{"code":-32600,"message":"Invalid Request: ids starting with \"mcpwrap-\" are reserved"}}` + "\n")
	assert.Contains(t, string(client.next()), `"error"`, "the client gets the upstream's refusal")

	client.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}` + "\n")
	var resp struct {
		Result struct {
			Meta    map[string]any `json:"_meta"`
			IsError bool           `json:"isError"`
		} `json:"result"`
	}
	require.NoError(t, json.Unmarshal(client.next(), &resp))
	assert.True(t, resp.Result.IsError)
	assert.Equal(t, "permanent", resp.Result.Meta["class"])
	assert.Equal(t, false, resp.Result.Meta["retryable"])
}

// TestOwnRequestWithOversizedResponseFails: when the response to one of
// the sidecar's own requests (here its tools/list) is over the message
// limit, the own call fails rather than wait forever; otherwise the first
// tools/call, which refreshes the catalog, would hang the client direction.
func TestOwnRequestWithOversizedResponseFails(t *testing.T) {
	big := `{"tools":[{"name":"open","description":"` + strings.Repeat("x", 2048) + `"}]}`
	h := startRaw(t, rawOptions{policy: lockedSecret, upLimit: 1024})
	h.answer(h.expect("tools/list"), big) // the background refresh: dropped

	h.client.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"open"}}` + "\n")
	for {
		select {
		case msg, ok := <-h.up.recv: // the gate's own load, unless it joined the first: dropped too
			if !ok { // the failed catalog failed the load: the upstream is gone
				h.up.recv = nil
				continue
			}
			env, err := framing.Peek(msg)
			require.NoError(t, err)
			require.Equal(t, "tools/list", env.Method)
			// The failed first catalog may close the link meanwhile.
			_, _ = io.WriteString(h.up.in, `{"jsonrpc":"2.0","id":`+string(env.ID)+`,"result":`+big+"}\n")
		case msg := <-h.client.recv:
			env, err := framing.Peek(msg)
			require.NoError(t, err)
			if env.Method == "notifications/tools/list_changed" { // the load failed: the tools changed
				continue
			}
			assert.Equal(t, framing.Response, env.Kind, "the call is answered, got %s", msg)
			return
		case <-time.After(2 * time.Second):
			t.Fatal("tools/call never answered: the client pump is stuck on an own request")
		}
	}
}

// TestClientIDCannotReachTheOwnIDSpace: a client id is refused when it is
// an own id under any spelling, such as "mcpwrap\u002d1" for "mcpwrap-1":
// upstreams re-encode ids, and the answer would be taken for an own
// response (the client's request never answered, or an own request of the
// sidecar poisoned).
func TestClientIDCannotReachTheOwnIDSpace(t *testing.T) {
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
