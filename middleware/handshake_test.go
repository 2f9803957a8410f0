package middleware

import (
	"encoding/json"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// This file tests handshakeState on its own: what it keeps of the client's
// session, as the Session relies on it.

func newWaiter(method string) *hsWaiter {
	return &hsWaiter{method: method, done: make(chan struct{})}
}

func TestHandshakeStateCapture(t *testing.T) {
	var h handshakeState // the zero value is ready to use
	hs, ver, changed := h.current()
	assert.Equal(t, Handshake{}, hs)
	assert.Zero(t, ver)
	require.NotNil(t, changed)
	assert.False(t, isClosed(changed))

	h.setInitialized()
	h.capture("initialize", json.RawMessage(`{"a":1}`), newWaiter("initialize"))
	assert.True(t, isClosed(changed), "a handshake wakes those waiting for one")
	hs, ver, next := h.current()
	assert.Equal(t, Handshake{Method: "initialize", Params: json.RawMessage(`{"a":1}`), Initialized: true}, hs, "Initialized outlives a new handshake")
	assert.Equal(t, 1, ver)
	assert.False(t, isClosed(next), "a new channel for the next change")

	h.setResult(json.RawMessage(`{"r":1}`))
	assert.Equal(t, json.RawMessage(`{"r":1}`), h.handshake().Result)

	h.capture("initialize", json.RawMessage(`{"a":2}`), newWaiter("initialize"))
	h.capture("server/discover", json.RawMessage(`{"a":3}`), newWaiter("server/discover"))
	assert.True(t, isClosed(next))
	hs, ver, _ = h.current()
	assert.Equal(t, 3, ver, "counts every handshake")
	assert.Equal(t, Handshake{Method: "server/discover", Params: json.RawMessage(`{"a":3}`), Initialized: true}, hs, "a new handshake has no result yet")
}

func TestHandshakeStateWaiters(t *testing.T) {
	tests := []struct {
		name      string
		waiting   []string // the methods of the waiters, in order
		take      string
		wantTaken []int // indexes into waiting
		wantKept  []int
	}{
		{name: "none", take: "initialize"},
		{name: "all", waiting: []string{"initialize", "server/discover"}, take: "", wantTaken: []int{0, 1}},
		{name: "by method", waiting: []string{"initialize", "server/discover", "initialize"}, take: "initialize", wantTaken: []int{0, 2}, wantKept: []int{1}},
		{name: "no match", waiting: []string{"server/discover"}, take: "initialize", wantKept: []int{0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h handshakeState
			var ws []*hsWaiter
			for _, m := range tt.waiting {
				w := newWaiter(m)
				ws = append(ws, w)
				h.capture(m, nil, w)
			}
			pick := func(idx []int) []*hsWaiter {
				var out []*hsWaiter
				for _, i := range idx {
					out = append(out, ws[i])
				}
				return out
			}
			assert.Equal(t, pick(tt.wantTaken), h.takeWaiters(tt.take))
			assert.Equal(t, pick(tt.wantKept), h.waiting())
			assert.Empty(t, h.takeWaiters(tt.take), "taken once")
		})
	}
}

func TestHandshakeStateDropWaiter(t *testing.T) {
	var h handshakeState
	a, b, c := newWaiter("initialize"), newWaiter("initialize"), newWaiter("initialize")
	h.capture("initialize", json.RawMessage(`{"a":1}`), a)
	h.capture("initialize", json.RawMessage(`{"b":1}`), b)
	h.capture("initialize", json.RawMessage(`{"c":1}`), c)
	assert.Equal(t, json.RawMessage(`{"c":1}`), h.dropWaiter(b), "answered with the client's handshake")
	assert.Equal(t, []*hsWaiter{a, c}, h.waiting())
	h.dropWaiter(b) // gone already: nothing changes
	assert.Equal(t, []*hsWaiter{a, c}, h.waiting())

	waiting := h.waiting()
	waiting[0] = nil
	assert.Equal(t, []*hsWaiter{a, c}, h.waiting(), "waiting returns a copy")
}

func TestHandshakeStateClaim(t *testing.T) {
	var h handshakeState
	a, b, c := newWaiter("initialize"), newWaiter("initialize"), newWaiter("initialize")
	h.capture("initialize", nil, a)
	h.capture("initialize", nil, b)
	h.capture("initialize", nil, c)
	assert.True(t, h.claim(b), "waiting: claimed")
	assert.Equal(t, []*hsWaiter{a, b, c}, h.waiting(), "a claimed waiter still waits")
	assert.Equal(t, []*hsWaiter{a, c}, h.takeWaiters("initialize"), "its relay answers it")
	assert.False(t, h.claim(a), "taken: not claimed")
	assert.Equal(t, []*hsWaiter{b}, h.takeWaiters(""), "all: claimed ones too")
	assert.False(t, h.claim(b), "taken: not claimed")
}

func TestHandshakeStateSubscriptions(t *testing.T) {
	type op struct {
		uri         string
		unsubscribe bool
		wantOK      bool
		wantKept    int
	}
	tests := []struct {
		name      string
		maxCount  int
		maxBytes  int
		ops       []op
		wantSubs  []string
		wantBytes int
	}{
		{
			name: "kept", maxCount: 10, maxBytes: 100,
			ops:      []op{{uri: "x://a", wantOK: true, wantKept: 1}, {uri: "x://b", wantOK: true, wantKept: 2}},
			wantSubs: []string{"x://a", "x://b"}, wantBytes: 10,
		},
		{
			name: "past the count", maxCount: 1, maxBytes: 100,
			ops:      []op{{uri: "x://a", wantOK: true, wantKept: 1}, {uri: "x://b", wantOK: false, wantKept: 1}, {uri: "x://a", wantOK: true, wantKept: 1}},
			wantSubs: []string{"x://a"}, wantBytes: 5,
		},
		{
			name: "past the bytes", maxCount: 10, maxBytes: 9,
			ops:      []op{{uri: "x://a", wantOK: true, wantKept: 1}, {uri: "x://b", wantOK: false, wantKept: 1}},
			wantSubs: []string{"x://a"}, wantBytes: 5,
		},
		{
			name: "unsubscribing frees room", maxCount: 1, maxBytes: 100,
			ops: []op{
				{uri: "x://a", wantOK: true, wantKept: 1},
				{uri: "x://a", unsubscribe: true},
				{uri: "x://never", unsubscribe: true},
				{uri: "x://bb", wantOK: true, wantKept: 1},
			},
			wantSubs: []string{"x://bb"}, wantBytes: 6,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h handshakeState
			for _, o := range tt.ops {
				if o.unsubscribe {
					h.unsubscribe(o.uri)
					continue
				}
				ok, kept := h.subscribe(o.uri, tt.maxCount, tt.maxBytes)
				assert.Equal(t, o.wantOK, ok, o.uri)
				assert.Equal(t, o.wantKept, kept, o.uri)
			}
			_, subs := h.replayState()
			assert.ElementsMatch(t, tt.wantSubs, subs)
			assert.Equal(t, tt.wantBytes, h.subsBytes)
		})
	}
}

func TestHandshakeStateLogLevel(t *testing.T) {
	var h handshakeState
	level, subs := h.replayState()
	assert.Nil(t, level, "none set")
	assert.Empty(t, subs)

	params := []byte(`{"level":"debug"}`)
	h.setLogLevel(params)
	copy(params, `{"level":"error"}`) // the caller's buffer is reused
	level, _ = h.replayState()
	assert.JSONEq(t, `{"level":"debug"}`, string(level), "a copy is kept")
}

// TestHandshakeStateConcurrentUse: the upstream's handshake, waiting for
// the client's, and the client's requests use it from their own
// goroutines at once (under -race): after each client handshake the two
// go on side by side.
func TestHandshakeStateConcurrentUse(t *testing.T) {
	var h handshakeState
	const n = 50
	step := make(chan struct{}) // each client handshake seen: both go on
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // the upstream's handshake
		defer wg.Done()
		for sent := 0; sent < n; {
			hs, ver, changed := h.current()
			if ver == sent {
				<-changed
				continue
			}
			sent = ver
			step <- struct{}{}
			h.setResult(json.RawMessage(`{}`))
			h.replayState()
			h.takeWaiters(hs.Method)
		}
	}()
	go func() { // the client
		defer wg.Done()
		for i := range n {
			w := newWaiter("initialize")
			h.capture("initialize", json.RawMessage(`{}`), w)
			<-step
			h.setLogLevel(json.RawMessage(`{"level":"info"}`))
			h.subscribe("x://a", 10, 100)
			if i%2 == 0 {
				h.dropWaiter(w)
			}
			h.handshake()
		}
	}()
	wg.Wait()
	_, ver, _ := h.current()
	assert.Equal(t, n, ver)
}

func TestHandshakeStateEndWaiting(t *testing.T) {
	var h handshakeState
	a := newWaiter("initialize")
	_, ok := h.capture("initialize", nil, a)
	require.True(t, ok)
	assert.Equal(t, []*hsWaiter{a}, h.endWaiting())
	ver, ok := h.capture("initialize", json.RawMessage(`{"late":1}`), newWaiter("initialize"))
	assert.False(t, ok, "no handshake waits once the waiting has ended")
	assert.Zero(t, ver)
	assert.Empty(t, h.takeWaiters(""))
	assert.Nil(t, h.handshake().Params, "nor is it captured")
}
