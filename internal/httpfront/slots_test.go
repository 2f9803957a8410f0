package httpfront

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Clients, told apart by the loopback address they come from.
const (
	clientA = "127.0.0.1"
	clientB = "127.0.0.2"
	clientC = "127.0.0.3"
)

// use is what a session of TestSessionSlots is doing when a new one is
// asked for.
type use int

const (
	idle use = iota // nothing in progress
	busy            // a POST waits for its answer
	get             // only its GET stream is open
)

// slot is an open session of a test and its upstream.
type slot struct {
	id string
	fc *fakeConn
}

// openAs opens a session from client and puts it to use.
func (ts *testServer) openAs(t *testing.T, client string, u use) slot {
	t.Helper()
	s := slot{id: ts.initializeFrom(t, client), fc: ts.up.next(t)}
	switch u {
	case busy:
		ts.keepBusy(t, s)
	case get:
		resp := ts.do(t, request{Method: http.MethodGet, Session: s.id, Accept: "text/event-stream", From: client})
		require.Equal(t, http.StatusOK, resp.StatusCode)
	}
	return s
}

// keepBusy sends s a call of the slow tool, which is answered when the
// test ends (or its upstream is closed), and waits until the upstream has
// it.
func (ts *testServer) keepBusy(t *testing.T, s slot) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, ts.URL, strings.NewReader(call(99, "slow", `{}`)))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", acceptJSON)
	req.Header.Set(HeaderSessionID, s.id)
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		if resp, err := ts.Client().Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	t.Cleanup(func() { <-returned })
	require.Eventually(t, func() bool {
		for _, l := range s.fc.Lines() {
			if strings.Contains(l, `"slow"`) {
				return true
			}
		}
		return false
	}, 10*time.Second, time.Millisecond, "the upstream never got the slow call")
}

// alive reports whether the session s still answers.
func (ts *testServer) alive(t *testing.T, s slot) bool {
	t.Helper()
	resp := ts.do(t, request{Session: s.id, Body: `{"jsonrpc":"2.0","id":"alive","method":"ping"}`})
	return resp.StatusCode == http.StatusOK
}

// TestSessionSlots opens sessions from clients, in order and put to a use,
// then asks for one more: a free slot is taken; when the client holds its
// share, or every slot is taken, the idle session used least recently (the
// client's own, at its share) is ended to make room; only when none is
// idle is the new one refused, with 503 and Retry-After. Before, a client
// could open every slot (100 initialize POSTs), and everyone was refused
// until they were idle for 10 minutes.
func TestSessionSlots(t *testing.T) {
	t.Parallel()
	type open struct {
		client string
		use    use
	}
	tests := []struct {
		name        string
		max, share  int
		open        []open
		newFrom     string
		wantErr     error // the refusal; nil: opened
		wantEvicted int   // the index of the session ended to make room; -1: none
	}{
		{name: "a free slot", max: 3, share: 3, open: []open{{clientA, idle}, {clientA, idle}},
			newFrom: clientA, wantEvicted: -1},
		{name: "every slot taken: the idle one used least recently makes room", max: 3, share: 3,
			open: []open{{clientA, busy}, {clientA, idle}, {clientA, idle}}, newFrom: clientB, wantEvicted: 1},
		{name: "an open GET stream is not a request in progress", max: 2, share: 2,
			open: []open{{clientA, get}, {clientA, busy}}, newFrom: clientB, wantEvicted: 0},
		{name: "every slot busy", max: 2, share: 2, open: []open{{clientA, busy}, {clientB, busy}},
			newFrom: clientC, wantErr: ErrTooManySessions, wantEvicted: -1},
		{name: "a client at its share makes room with its own idle session, not another's", max: 4, share: 2,
			open: []open{{clientB, idle}, {clientA, idle}, {clientA, idle}}, newFrom: clientA, wantEvicted: 1},
		{name: "a client at its share, all busy, is refused", max: 4, share: 2,
			open: []open{{clientA, busy}, {clientA, busy}}, newFrom: clientA, wantErr: ErrClientSessions, wantEvicted: -1},
		{name: "another client is not", max: 4, share: 2,
			open: []open{{clientA, busy}, {clientA, busy}}, newFrom: clientB, wantEvicted: -1},
		{name: "the default share is half the slots", max: 4,
			open: []open{{clientA, busy}, {clientA, busy}}, newFrom: clientA, wantErr: ErrClientSessions, wantEvicted: -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ts := newTestServer(t, func(s *Server) { s.MaxSessions, s.MaxSessionsPerClient = tt.max, tt.share })
			t.Cleanup(func() { close(ts.up.release) }) // before the server's cleanup: the slow calls are answered
			var slots []slot
			for _, o := range tt.open {
				slots = append(slots, ts.openAs(t, o.client, o.use))
			}
			resp := ts.do(t, request{Body: initializeBody, From: tt.newFrom})
			body := readAll(t, resp)
			if tt.wantErr != nil {
				assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, body)
				assert.Contains(t, body, tt.wantErr.Error())
				assert.Equal(t, retryAfter, resp.Header.Get("Retry-After"))
			} else {
				assert.Equal(t, http.StatusOK, resp.StatusCode, body)
			}
			for i, s := range slots {
				assert.Equal(t, i != tt.wantEvicted, ts.alive(t, s), "session %d alive", i)
			}
		})
	}
}

// TestStatelessSlotIsKept takes every slot with busy sessions: a
// 2026-07-28 request, whose shared session was not open yet, is still
// served. Before, it was refused with 503 like a new session.
func TestStatelessSlotIsKept(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, func(s *Server) { s.MaxSessions = 1 })
	ts.up.modern.Store(true)
	t.Cleanup(func() { close(ts.up.release) })
	ts.openAs(t, clientA, busy)
	resp := ts.do(t, request{Body: initializeBody, From: clientB})
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "every slot is busy")

	resp = ts.do(t, modernCall(1, "echo", `{"text":"served"}`))
	body := readAll(t, resp)
	assert.Equal(t, http.StatusOK, resp.StatusCode, body)
	assert.Contains(t, body, "served")
	assert.Len(t, ts.front.Sessions(), 2, fmt.Sprintf("the busy session and the stateless one: %s", body))
}
