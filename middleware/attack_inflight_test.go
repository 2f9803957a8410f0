package middleware

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mcpwrap/mcpwrap/internal/framing"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestClientRequestsInFlightAreBounded is an attack on "memory stays
// bounded": a client sends request after request to an upstream that does
// not answer. Each was remembered in the in-flight table (its id twice),
// without bound. Past MaxInFlight a request is now answered at once with a
// retryable error and not sent; an answer frees a place.
func TestClientRequestsInFlightAreBounded(t *testing.T) {
	h := start(t, 0, func(s *Session) { s.MaxInFlight = 2 })
	h.client.send(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"a://1"}}` + "\n")
	h.client.send(`{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"a://2"}}` + "\n")
	h.client.send(`{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"a://3"}}` + "\n")
	h.client.send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"x"}}` + "\n")
	h.client.send(`[{"jsonrpc":"2.0","id":5,"method":"ping"}]` + "\n")

	var refused response
	require.NoError(t, json.Unmarshal(h.client.next(), &refused))
	assert.Equal(t, "3", string(refused.ID))
	require.NotNil(t, refused.Error)
	assert.Contains(t, refused.Error.Message, "2 requests in flight")
	var call response
	require.NoError(t, json.Unmarshal(h.client.next(), &call))
	assert.Equal(t, "4", string(call.ID))
	require.NotNil(t, call.Result, "a tool call is refused with an isError result")
	assert.True(t, call.Result.IsError)
	assert.Equal(t, statusTooManyInFlight, call.Result.Meta["status"])
	assert.Equal(t, true, call.Result.Meta["retryable"])
	var batch []response
	require.NoError(t, json.Unmarshal(h.client.next(), &batch))
	require.Len(t, batch, 1)
	assert.Equal(t, "5", string(batch[0].ID))
	require.NotNil(t, batch[0].Error)

	h.up.send(`{"jsonrpc":"2.0","id":1,"result":{}}` + "\n")
	assert.Equal(t, `{"jsonrpc":"2.0","id":1,"result":{}}`, string(h.client.next()))
	h.up.send(`{"jsonrpc":"2.0","id":2,"result":{}}` + "\n")
	assert.Equal(t, `{"jsonrpc":"2.0","id":2,"result":{}}`, string(h.client.next()))
	h.client.send(`{"jsonrpc":"2.0","id":6,"method":"ping"}` + "\n")
	h.client.send(`{"jsonrpc":"2.0","id":"marker","method":"ping"}` + "\n")
	var reached []string
	for _, msg := range upstreamReceived(t, h, `"marker"`) {
		env, err := framing.Peek(msg)
		require.NoError(t, err)
		reached = append(reached, string(env.ID))
	}
	assert.Equal(t, []string{"1", "2", "6"}, reached, "only what fits was sent; answers free places")
}

// TestClientIDsAreBounded is an attack on "memory stays bounded": ids of
// any size were kept for every request in flight (and every request that
// ended unanswered), so a few requests with ids of megabytes pinned
// gigabytes. An id longer than maxIDBytes is refused, and never sent.
func TestClientIDsAreBounded(t *testing.T) {
	h := start(t, 0)
	long := `"` + strings.Repeat("i", maxIDBytes) + `"`
	h.client.send(`{"jsonrpc":"2.0","id":` + long + `,"method":"ping"}` + "\n")
	var refused response
	require.NoError(t, json.Unmarshal(h.client.next(), &refused))
	assert.Equal(t, long, string(refused.ID), "answered with its id")
	require.NotNil(t, refused.Error)
	assert.Equal(t, codeInvalidRequest, refused.Error.Code)
	assert.Contains(t, refused.Error.Message, fmt.Sprint(maxIDBytes))

	h.client.send(`{"jsonrpc":"2.0","id":"marker","method":"ping"}` + "\n")
	assert.Empty(t, upstreamReceived(t, h, `"marker"`), "never sent")
}

// TestServerRequestsInFlightAreBounded is an attack on "memory stays
// bounded": an upstream sends request after request that the client does
// not answer (each remembered in the link's table of server requests, with
// no bound). Past MaxInFlight the upstream's request is answered with an
// error and not relayed; so is one whose id is longer than maxIDBytes.
func TestServerRequestsInFlightAreBounded(t *testing.T) {
	h := start(t, 0, func(s *Session) { s.MaxInFlight = 2 })
	for i := 1; i <= 3; i++ {
		h.up.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":"s%d","method":"sampling/createMessage","params":{}}`+"\n", i))
	}
	long := `"` + strings.Repeat("s", maxIDBytes) + `"`
	h.up.send(`{"jsonrpc":"2.0","id":` + long + `,"method":"roots/list"}` + "\n")
	h.up.send(`[{"jsonrpc":"2.0","id":"s5","method":"roots/list"}]` + "\n")

	assert.Contains(t, string(h.client.next()), `"s1"`)
	assert.Contains(t, string(h.client.next()), `"s2"`)
	for _, id := range []string{`"s3"`, long, `"s5"`} {
		var refused response
		msg := h.up.next()
		if strings.HasPrefix(string(msg), "[") {
			var batch []response
			require.NoError(t, json.Unmarshal(msg, &batch))
			require.Len(t, batch, 1)
			refused = batch[0]
		} else {
			require.NoError(t, json.Unmarshal(msg, &refused))
		}
		assert.Equal(t, id, string(refused.ID))
		require.NotNil(t, refused.Error, "the upstream is told")
	}
	// The client's answer frees a place.
	h.client.send(`{"jsonrpc":"2.0","id":"s1","result":{}}` + "\n")
	assert.Equal(t, `{"jsonrpc":"2.0","id":"s1","result":{}}`, string(h.up.next()))
	h.up.send(`{"jsonrpc":"2.0","id":"s6","method":"roots/list"}` + "\n")
	assert.Equal(t, `{"jsonrpc":"2.0","id":"s6","method":"roots/list"}`, string(h.client.next()))
}

// TestRememberedListensAreBounded is an attack on "memory stays bounded":
// each subscriptions/listen request in flight was kept whole, for replay
// to a restarted upstream, with no bound in bytes (MaxInFlight of them of
// up to the line limit each). Past the held bounds one is still relayed
// but not remembered (after a crash it is answered with an error, as any
// other request in flight).
func TestRememberedListensAreBounded(t *testing.T) {
	const maxBytes = 4096
	h := start(t, 0, func(s *Session) { s.MaxHeldBytes = maxBytes })
	pad := strings.Repeat("p", 1000)
	for i := range 10 {
		listen := fmt.Sprintf(`{"jsonrpc":"2.0","id":"L%d","method":"subscriptions/listen","params":{"pad":%q}}`, i, pad)
		h.client.send(listen + "\n")
		require.Equal(t, listen, string(h.up.next()), "relayed all the same")
	}
	h.session.tracker.mu.Lock()
	kept, size := len(h.session.tracker.listens), 0
	for _, msg := range h.session.tracker.listens {
		size += len(msg)
	}
	h.session.tracker.mu.Unlock()
	assert.LessOrEqual(t, size, maxBytes)
	assert.Positive(t, kept)
	assert.Contains(t, h.logs.String(), "will not be re-opened after a restart")
}

// TestProgressTokensAreBounded is an attack on "memory stays bounded":
// with a call timeout, the progress token of every request in flight was
// kept (as a key) whatever its size, so MaxInFlight requests with tokens
// of megabytes pinned gigabytes. A token over maxIDBytes is not tracked:
// the request is relayed, and its progress does not restart its bound.
func TestProgressTokensAreBounded(t *testing.T) {
	clock := &fakeClock{}
	h := start(t, 0, withCallTimeout(clock))
	token := `"` + strings.Repeat("t", maxIDBytes) + `"`
	req := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","_meta":{"progressToken":` + token + `}}}`
	h.client.send(req + "\n")
	require.Equal(t, req, string(h.up.next()), "relayed all the same")
	h.session.tracker.mu.Lock()
	tracked := len(h.session.tracker.progress)
	h.session.tracker.mu.Unlock()
	assert.Zero(t, tracked)
}
