package middleware

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// This file tests cut-through relaying of long upstream messages (see
// stream.go).

// long is a payload that makes a message long: past the read buffer.
var long = strings.Repeat("a", 200<<10)

// TestLongUpstreamResponseIsRelayedAsItArrives: a response whose head
// shows what it is reaches the client while the upstream is still writing
// it, byte for byte, and is bound by no message limit.
func TestLongUpstreamResponseIsRelayedAsItArrives(t *testing.T) {
	h := start(t, 1024)
	h.client.send(`{"jsonrpc":"2.0","id":6,"method":"resources/read","params":{"uri":"file:///big"}}` + "\n")
	h.up.next()

	before := h.client.received.Load()
	head := `{"jsonrpc":"2.0","id":6,"result":{"contents":[{"uri":"file:///big","text":"` + long
	h.up.send(head)
	require.Eventually(t, func() bool { return h.client.received.Load()-before >= int64(len(head)) }, timeout, tick,
		"the client has the message's first bytes before the upstream has written the rest")
	h.up.send(`"}]}}` + "\n")
	assert.Equal(t, head+`"}]}}`, string(h.client.next()), "byte for byte, though over the 1024-byte limit")

	// Answered once: the request is no longer in flight, and the relay goes on.
	assert.Zero(t, h.session.inflight())
	h.up.send(`{"jsonrpc":"2.0","method":"notifications/ok"}` + "\n")
	assert.Equal(t, `{"jsonrpc":"2.0","method":"notifications/ok"}`, string(h.client.next()))
}

// TestLongUpstreamRequestIsRelayedAsItArrives: the upstream's own request
// (sampling) is relayed as it arrives and tracked, so the client's answer
// reaches the upstream.
func TestLongUpstreamRequestIsRelayedAsItArrives(t *testing.T) {
	h := start(t, 1024)
	req := `{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{"x":"` + long + `"}}`
	h.up.send(req + "\n")
	assert.Equal(t, req, string(h.client.next()))

	h.client.send(`{"jsonrpc":"2.0","id":"s1","result":{"role":"assistant"}}` + "\n")
	assert.Equal(t, `{"jsonrpc":"2.0","id":"s1","result":{"role":"assistant"}}`, string(h.up.next()))
}

// TestUpstreamStoppingInsideALongResponse: the line the client has begun
// to receive is ended, so its next message starts clean, and the request
// is answered with an error: once, as the line cut off is no answer.
func TestUpstreamStoppingInsideALongResponse(t *testing.T) {
	h := start(t, 0)
	h.client.send(`{"jsonrpc":"2.0","id":6,"method":"resources/read","params":{"uri":"file:///big"}}` + "\n")
	h.up.next()

	before := h.client.received.Load()
	head := `{"jsonrpc":"2.0","id":6,"result":{"contents":[{"text":"` + long
	h.up.send(head)
	require.Eventually(t, func() bool { return h.client.received.Load()-before >= int64(len(head)) }, timeout, tick)
	h.up.closeSend()

	assert.Equal(t, head, string(h.client.next()), "the line cut off, ended")
	rpcErr := errorAnswer(t, h.client.next(), "6")
	assert.Equal(t, codeInternalError, rpcErr.Code)
	assert.Contains(t, rpcErr.Message, "stopped in the middle of its response")
}

// TestLongMessagesTheSidecarJudgesAreHeldWhole: what the sidecar must
// judge is held whole and judged as before, however long: a late answer
// to a call that timed out is dropped, and a message whose head does not
// show what it is (its id last) is bound by the limit. (A long tools/list
// result is filtered: see TestReusedIDOfACancelledListDoesNotUnfilterIt
// and TestAmbiguousIDNeverUnfiltersAList.)
func TestLongMessagesTheSidecarJudgesAreHeldWhole(t *testing.T) {
	t.Run("a late answer to a call that timed out is dropped", func(t *testing.T) {
		clock := &fakeClock{}
		h := start(t, 0, withCallTimeout(clock))
		h.client.send(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"hang"}}` + "\n")
		h.up.next()
		require.NotZero(t, clock.fire())
		h.up.next() // notifications/cancelled
		require.Contains(t, string(h.client.next()), `"timeout"`)

		h.up.send(`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"` + long + `"}]}}` + "\n")
		got := untilMarker(t, h)
		assert.Empty(t, withID(got, "7"), "answered once, by the timeout")
	})
	t.Run("a head that does not show what it is", func(t *testing.T) {
		h := start(t, 1024)
		h.client.send(`{"jsonrpc":"2.0","id":6,"method":"resources/read"}` + "\n")
		h.up.next()
		h.up.send(`{"jsonrpc":"2.0","result":{"x":"` + long + `"},"id":6}` + "\n")
		rpcErr := errorAnswer(t, h.client.next(), "6")
		assert.Contains(t, rpcErr.Message, "exceeds the 1024-byte message limit")
	})
}

// TestStalledLongResponseIsEndedAndAnswered: an upstream that stalls in
// the middle of a long response would hold every other message to the
// client behind its line; after StreamIdleTimeout the line is ended, the
// request answered with an error, the other writers go on, and the rest of
// the message, when it comes, is dropped.
func TestStalledLongResponseIsEndedAndAnswered(t *testing.T) {
	clock := &fakeClock{}
	h := start(t, 0, func(s *Session) { s.hooks.afterFunc = clock.afterFunc })
	h.client.send(`{"jsonrpc":"2.0","id":6,"method":"resources/read","params":{"uri":"file:///big"}}` + "\n")
	h.up.next()

	before := h.client.received.Load()
	head := `{"jsonrpc":"2.0","id":6,"result":{"contents":[{"text":"` + long
	h.up.send(head)
	require.Eventually(t, func() bool { return h.client.received.Load()-before >= int64(len(head)) }, timeout, tick)
	// The watchdog is armed each time the relay waits for the upstream's
	// next bytes: fired once it waits for those that never come.
	require.Eventually(t, func() bool { return clock.fire() > 0 }, timeout, tick, "the watchdog is armed while the upstream is silent")

	assert.Equal(t, head, string(h.client.next()), "the line, ended where the upstream stalled")
	rpcErr := errorAnswer(t, h.client.next(), "6")
	assert.Contains(t, rpcErr.Message, "stalled in the middle of its response")

	// The sidecar's own answers reach the client again.
	h.client.send("{\n")
	assert.Equal(t, codeParseError, errorAnswer(t, h.client.next(), "null").Code)

	// The rest of the stalled message is dropped; what follows it is relayed.
	h.client.send(`{"jsonrpc":"2.0","id":7,"method":"ping"}` + "\n")
	h.up.next()
	h.up.send(`"}]}}` + "\n" + `{"jsonrpc":"2.0","id":7,"result":{}}` + "\n")
	assert.Equal(t, `{"jsonrpc":"2.0","id":7,"result":{}}`, string(h.client.next()))
}

// TestLongClientMessagesAreRelayedAsTheyArrive: a request the sidecar does
// not intercept and the client's answer to the upstream's request reach
// the upstream while the client is still writing them, byte for byte,
// bound by no limit; the request is tracked, so its answer comes back.
func TestLongClientMessagesAreRelayedAsTheyArrive(t *testing.T) {
	tests := []struct {
		name   string
		before func(h *harness) // what comes before the message
		head   string           // the message, less its end
		after  func(h *harness) // what its arrival leads to
	}{
		{
			name: "a request",
			head: `{"jsonrpc":"2.0","id":6,"method":"resources/write","params":{"text":"` + long,
			after: func(h *harness) {
				h.up.send(`{"jsonrpc":"2.0","id":6,"result":{}}` + "\n")
				assert.Equal(t, `{"jsonrpc":"2.0","id":6,"result":{}}`, string(h.client.next()))
			},
		},
		{
			name: "an answer to the upstream's request",
			before: func(h *harness) {
				h.up.send(`{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{}}` + "\n")
				h.client.next()
			},
			head: `{"jsonrpc":"2.0","id":"s1","result":{"content":{"text":"` + long,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := start(t, 1024)
			if tt.before != nil {
				tt.before(h)
			}
			before := h.up.received.Load()
			h.client.send(tt.head)
			require.Eventually(t, func() bool { return h.up.received.Load()-before >= int64(len(tt.head)) }, timeout, tick,
				"the upstream has the message's first bytes before the client has written the rest")
			h.client.send(`"}}` + "\n")
			assert.Equal(t, tt.head+`"}}`, string(h.up.next()), "byte for byte, though over the 1024-byte limit")
			if tt.after != nil {
				tt.after(h)
			}
		})
	}
}

// TestLongClientMessagesTheSidecarJudgesAreHeldWhole: a long tools/call is
// judged whole (bound by the limit), never streamed past the gate.
func TestLongClientMessagesTheSidecarJudgesAreHeldWhole(t *testing.T) {
	h := start(t, 1024, func(s *Session) { s.Tools = lockedSecret })
	h.client.send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"secret","arguments":{"x":"` + long + `"}}}` + "\n")
	rpcErr := errorAnswer(t, h.client.next(), "5")
	assert.Contains(t, rpcErr.Message, "exceeds the 1024-byte limit")
}

// TestLongClientRequestNeverCarriesACallPastTheGate is an attack on "a
// locked tool is never run": a long request of a method the sidecar
// relays as it arrives (ping) spells "method" again after its head, as
// tools/call, with params naming a locked tool. Its head showed a ping, so
// it was relayed whole, unjudged; an upstream whose parser keeps the last
// spelling of a member (JavaScript's JSON.parse, Python's json, Go's
// encoding/json, which also matches "Method") ran the locked tool. The
// line is cut off before the second spelling reaches the upstream (which
// gets a line that is not JSON) and the client's request refused.
func TestLongClientRequestNeverCarriesACallPastTheGate(t *testing.T) {
	tests := []struct {
		name   string
		method string // the second "method" member's name, as the client spells it
	}{
		{name: "spelled again", method: `"method"`},
		{name: "in another letter case", method: `"Method"`},
		{name: "escaped", method: `"meth\u006fd"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := start(t, 0, func(s *Session) { s.Tools = lockedSecret })
			h.client.send(`{"jsonrpc":"2.0","id":5,"method":"ping","params":{"pad":"` + long + `"},` +
				tt.method + `:"tools/call","params":{"name":"secret","arguments":{}}}` + "\n")
			h.client.send(`{"jsonrpc":"2.0","id":"marker","method":"ping"}` + "\n")
			for {
				msg := h.up.next()
				var req struct {
					ID     json.RawMessage
					Method string
					Params struct{ Name string }
				}
				if json.Unmarshal(msg, &req) != nil {
					continue // not JSON: no upstream runs it
				}
				assert.False(t, req.Method == "tools/call" && req.Params.Name == "secret", "the upstream was sent a call to the locked tool: %.100s", msg)
				if string(req.ID) == `"marker"` {
					break
				}
			}
			rpcErr := errorAnswer(t, h.client.next(), "5")
			assert.Equal(t, codeInvalidRequest, rpcErr.Code, rpcErr.Message)
		})
	}
}

// TestLongResponseNeverPassesForAnotherRequestsAnswer is an attack on
// "one request's answer never goes to another": a long answer to one
// request spells "id" again after its head, as another request's id. It
// was relayed whole, and a client whose parser keeps the last spelling
// (JavaScript's JSON.parse) took it for the other request's answer. The
// line is cut off before the second "id", and the first request answered
// with an error.
func TestLongResponseNeverPassesForAnotherRequestsAnswer(t *testing.T) {
	h := start(t, 0)
	h.client.send(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"a"}}` + "\n")
	h.client.send(`{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"b"}}` + "\n")
	h.up.next()
	h.up.next()
	h.up.send(`{"jsonrpc":"2.0","id":1,"result":{"contents":[{"text":"` + long + `"}]},"id":2}` + "\n")
	h.up.send(`{"jsonrpc":"2.0","id":2,"result":{"contents":[{"text":"b"}]}}` + "\n")
	var answers []string // the ids a last-wins parser reads, in order
	for len(answers) < 2 {
		var resp struct{ ID json.RawMessage }
		if msg := h.client.next(); json.Unmarshal(msg, &resp) == nil {
			answers = append(answers, string(resp.ID))
		}
	}
	assert.Equal(t, []string{"1", "2"}, answers, "request 1 answered (with an error), then request 2 with its own answer")
}

// TestStalledLongClientRequestIsEndedAndAnswered: a client that stalls in
// the middle of a long request would hold up every other message to the
// upstream; after StreamIdleTimeout the upstream's line is ended and the
// client told to send the request again.
func TestStalledLongClientRequestIsEndedAndAnswered(t *testing.T) {
	clock := &fakeClock{}
	h := start(t, 0, func(s *Session) { s.hooks.afterFunc = clock.afterFunc })
	before := h.up.received.Load()
	head := `{"jsonrpc":"2.0","id":6,"method":"resources/write","params":{"text":"` + long
	h.client.send(head)
	require.Eventually(t, func() bool { return h.up.received.Load()-before >= int64(len(head)) }, timeout, tick)
	require.Eventually(t, func() bool { return clock.fire() > 0 }, timeout, tick, "the watchdog is armed while the client is silent")

	assert.Equal(t, head, string(h.up.next()), "the line, ended where the client stalled")
	rpcErr := errorAnswer(t, h.client.next(), "6")
	assert.Contains(t, rpcErr.Message, "stalled in the middle of its message")
	assert.Zero(t, h.session.inflight(), "no longer in flight")

	h.client.send(`"}}` + "\n" + `{"jsonrpc":"2.0","id":7,"method":"ping"}` + "\n")
	assert.Equal(t, `{"jsonrpc":"2.0","id":7,"method":"ping"}`, string(h.up.next()), "the rest is dropped; what follows is relayed")
}

// errorAnswer returns the error msg carries, which must be an error
// response with id.
func errorAnswer(t *testing.T, msg []byte, id string) *RPCError {
	t.Helper()
	var resp struct {
		ID    json.RawMessage `json:"id"`
		Error *RPCError       `json:"error"`
	}
	require.NoError(t, json.Unmarshal(msg, &resp), "%.200s", msg)
	require.Equal(t, id, string(resp.ID), "%.200s", msg)
	require.NotNil(t, resp.Error, "an error response: %.200s", msg)
	return resp.Error
}
