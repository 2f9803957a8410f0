package middleware

import (
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeClock is an afterFunc whose timers run only when the test fires them.
type fakeClock struct {
	mu     sync.Mutex
	timers []*fakeClockTimer
}

type fakeClockTimer struct {
	clock *fakeClock
	d     time.Duration
	f     func()
	done  bool // stopped or fired
}

func (c *fakeClock) afterFunc(d time.Duration, f func()) interface{ Stop() bool } {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeClockTimer{clock: c, d: d, f: f}
	c.timers = append(c.timers, t)
	return t
}

func (t *fakeClockTimer) Stop() bool {
	t.clock.mu.Lock()
	defer t.clock.mu.Unlock()
	pending := !t.done
	t.done = true
	return pending
}

// fire runs every timer neither stopped nor fired yet and returns how many.
func (c *fakeClock) fire() int {
	c.mu.Lock()
	var due []*fakeClockTimer
	for _, t := range c.timers {
		if !t.done {
			t.done = true
			due = append(due, t)
		}
	}
	c.mu.Unlock()
	for _, t := range due {
		t.f()
	}
	return len(due)
}

// armed returns how many timers were ever armed, the ready timeout's too.
func (c *fakeClock) armed() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

func withCallTimeout(clock *fakeClock) func(*Session) {
	return func(s *Session) {
		s.CallTimeout = 3 * time.Second
		s.hooks.afterFunc = clock.afterFunc
	}
}

// response is a JSON-RPC response as a test reads it.
type response struct {
	ID     json.RawMessage `json:"id"`
	Result *struct {
		IsError bool           `json:"isError"`
		Meta    map[string]any `json:"_meta"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	} `json:"result"`
	Error *RPCError `json:"error"`
}

func TestCallTimeoutAnswersOnceAndCancelsUpstream(t *testing.T) {
	tests := []struct {
		name      string
		request   string
		id        string
		wantError bool // a JSON-RPC error, else an isError tool result
	}{
		{name: "tools/call", request: `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"hang"}}`, id: "7"},
		{name: "other method", request: `{"jsonrpc":"2.0","id":"r-1","method":"resources/read","params":{"uri":"x://y"}}`, id: `"r-1"`, wantError: true},
		{name: "object id", request: `{"jsonrpc":"2.0","id":{"b":1,"a":[2]},"method":"prompts/get"}`, id: `{"b":1,"a":[2]}`, wantError: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := &fakeClock{}
			h := start(t, 0, withCallTimeout(clock))
			h.client.send(tt.request + "\n")
			require.Equal(t, tt.request, string(h.up.next()))
			require.Equal(t, 1, clock.fire())

			var cancel struct {
				Method string `json:"method"`
				Params struct {
					RequestID json.RawMessage `json:"requestId"`
					Reason    string          `json:"reason"`
				} `json:"params"`
			}
			require.NoError(t, json.Unmarshal(h.up.next(), &cancel))
			assert.Equal(t, "notifications/cancelled", cancel.Method)
			assert.Equal(t, tt.id, string(cancel.Params.RequestID), "the request's own id, as sent")
			assert.Contains(t, cancel.Params.Reason, "3s")

			var resp response
			require.NoError(t, json.Unmarshal(h.client.next(), &resp))
			assert.Equal(t, tt.id, string(resp.ID))
			if tt.wantError {
				require.NotNil(t, resp.Error)
				assert.Equal(t, codeRequestTimeout, resp.Error.Code)
				assert.Contains(t, resp.Error.Message, "3s")
			} else {
				require.NotNil(t, resp.Result)
				assert.True(t, resp.Result.IsError)
				assert.Equal(t, "timeout", resp.Result.Meta["status"])
				assert.Equal(t, true, resp.Result.Meta["retryable"])
			}

			// The upstream's late answer is dropped: never a second answer.
			h.up.send(`{"jsonrpc":"2.0","id":` + tt.id + `,"result":{}}` + "\n")
			h.up.send(`{"jsonrpc":"2.0","method":"notifications/marker"}` + "\n")
			assert.Equal(t, `{"jsonrpc":"2.0","method":"notifications/marker"}`, string(h.client.next()))

			// The id is free again.
			again := `{"jsonrpc":"2.0","id":` + tt.id + `,"method":"ping"}`
			h.client.send(again + "\n")
			assert.Equal(t, again, string(h.up.next()))
			h.up.send(`{"jsonrpc":"2.0","id":` + tt.id + `,"result":{}}` + "\n")
			assert.Equal(t, `{"jsonrpc":"2.0","id":`+tt.id+`,"result":{}}`, string(h.client.next()))
		})
	}
}

func TestCallTimeoutIsNotArmed(t *testing.T) {
	tests := []struct {
		name      string
		configure func(*fakeClock) func(*Session)
		request   string
	}{
		{name: "without a call timeout", request: `{"jsonrpc":"2.0","id":1,"method":"ping"}`,
			configure: func(c *fakeClock) func(*Session) { return func(s *Session) { s.hooks.afterFunc = c.afterFunc } }},
		{name: "for subscriptions/listen, open by design", request: `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{}}`,
			configure: withCallTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := &fakeClock{}
			h := start(t, 0, tt.configure(clock))
			base := clock.armed() // the ready timeout's
			h.client.send(tt.request + "\n")
			h.up.next()
			assert.Equal(t, base, clock.armed())
		})
	}
}

func TestProgressRestartsTheCallTimer(t *testing.T) {
	clock := &fakeClock{}
	h := start(t, 0, withCallTimeout(clock))
	base := clock.armed() // the ready timeout's
	req := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"slow","_meta":{"progressToken":"tok-3"}}}`
	h.client.send(req + "\n")
	require.Equal(t, req, string(h.up.next()))
	require.Equal(t, base+1, clock.armed())

	// Progress for another token restarts nothing.
	other := `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"tok-9","progress":1}}`
	h.up.send(other + "\n")
	require.Equal(t, other, string(h.client.next()))
	require.Equal(t, base+1, clock.armed())

	progress := `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1,"progressToken":"tok\u002d3"}}`
	h.up.send(progress + "\n")
	require.Equal(t, progress, string(h.client.next()), "progress passes untouched")
	require.Equal(t, base+2, clock.armed(), "a new bound from now on")

	h.up.send(`{"jsonrpc":"2.0","id":3,"result":{"content":[]}}` + "\n")
	assert.Equal(t, `{"jsonrpc":"2.0","id":3,"result":{"content":[]}}`, string(h.client.next()))
	assert.Zero(t, clock.fire(), "every timer stopped once answered")
}

// TestClientCancellationFreesTheID: a request the client cancels leaves the
// in-flight table at once, so shutdown does not wait for an answer an
// upstream that honours the cancellation never sends; its id may be used
// again once the upstream's answer to it arrived (until then an answer
// under it could be to either request).
func TestClientCancellationFreesTheID(t *testing.T) {
	h := start(t, 0, func(s *Session) { s.DrainTimeout = time.Hour })
	h.client.send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"hang"}}` + "\n")
	h.up.next()
	cancel := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5,"reason":"user"}}`
	h.client.send(cancel + "\n")
	require.Equal(t, cancel, string(h.up.next()), "the cancellation is relayed")

	h.client.send(`{"jsonrpc":"2.0","id":5.0,"method":"ping"}` + "\n")
	var refused response
	require.NoError(t, json.Unmarshal(h.client.next(), &refused))
	require.NotNil(t, refused.Error, "the upstream may still answer the cancelled request")
	h.up.send(`{"jsonrpc":"2.0","id":5,"result":{}}` + "\n")
	require.Equal(t, `{"jsonrpc":"2.0","id":5,"result":{}}`, string(h.client.next()), "a late answer to a cancelled request passes")
	h.client.send(`{"jsonrpc":"2.0","id":5.0,"method":"ping"}` + "\n")
	require.Equal(t, `{"jsonrpc":"2.0","id":5.0,"method":"ping"}`, string(h.up.next()), "the id is free again")
	h.up.send(`{"jsonrpc":"2.0","id":5.0,"result":{}}` + "\n")
	require.Equal(t, `{"jsonrpc":"2.0","id":5.0,"result":{}}`, string(h.client.next()))

	h.client.send(`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"hang"}}` + "\n")
	h.up.next()
	h.client.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":6}}` + "\n")
	h.up.next()
	h.client.closeSend()
	select {
	case err := <-h.done:
		assert.NoError(t, err)
	case <-time.After(timeout):
		t.Fatal("shutdown waits for a cancelled request")
	}
}

// TestObjectIDReencodedByTheUpstreamEndsItsRequest: ids are matched by
// JSON value, so an object id the upstream answers with its members in
// another order (as Go's encoding/json re-encodes one) still ends the
// request: the id is free again.
func TestObjectIDReencodedByTheUpstreamEndsItsRequest(t *testing.T) {
	h := start(t, 0)
	req := `{"jsonrpc":"2.0","id":{"b":1,"a":[1.0]},"method":"ping"}`
	h.client.send(req + "\n")
	require.Equal(t, req, string(h.up.next()))
	h.up.send(`{"jsonrpc":"2.0","id":{"a":[1],"b":1},"result":{}}` + "\n")
	require.Equal(t, `{"jsonrpc":"2.0","id":{"a":[1],"b":1},"result":{}}`, string(h.client.next()))

	h.client.send(req + "\n")
	assert.Equal(t, req, string(h.up.next()), "not refused as an id in flight")
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
