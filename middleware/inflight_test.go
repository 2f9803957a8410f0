package middleware

import (
	"math"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpwrap/mcpwrap/internal/framing"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// req is a client request's envelope as the tracker sees it.
func req(id, method string) framing.Envelope {
	return framing.Envelope{Kind: framing.Request, ID: []byte(id), Method: method}
}

// mustTrack tracks one request with id on l, which must be accepted.
func mustTrack(t *testing.T, tr *tracker, l *link, id string) {
	t.Helper()
	refused, gone := tr.track(l, []framing.Envelope{req(id, "tools/call")}, DefaultMaxInFlight)
	require.False(t, gone)
	require.Empty(t, refused)
}

func TestTrackerTrack(t *testing.T) {
	tests := []struct {
		name        string
		inFlight    []string // tracked first
		cancelled   []string // tracked, then cancelled by the client first
		ids         []string // then tracked in one step
		limit       int
		wantRefused refusal
		wantLen     int // in flight afterwards
	}{
		{name: "one", ids: []string{"1"}, limit: 4, wantLen: 1},
		{name: "a batch", ids: []string{"1", `"1"`, "2"}, limit: 4, wantLen: 3},
		{name: "a batch of more than the stack keys", ids: []string{"1", "2", "3", "4", "5", "6"}, limit: 8, wantLen: 6},
		{name: "id in flight", inFlight: []string{"1"}, ids: []string{"1"}, limit: 4, wantRefused: refusedIDInUse, wantLen: 1},
		{name: "id in flight spelled otherwise", inFlight: []string{`"a"`}, ids: []string{`"\u0061"`}, limit: 4, wantRefused: refusedIDInUse, wantLen: 1},
		{name: "id twice in a batch", ids: []string{"1", "2", "1"}, limit: 4, wantRefused: refusedIDInUse},
		{name: "id of a request ended but not answered", cancelled: []string{"1"}, ids: []string{"1"}, limit: 4, wantRefused: refusedIDInUse},
		{name: "id too long", ids: []string{`"` + strings.Repeat("x", maxIDBytes) + `"`}, limit: 4, wantRefused: refusedIDTooLong},
		{name: "at the limit", inFlight: []string{"1"}, ids: []string{"2"}, limit: 2, wantLen: 2},
		{name: "full", inFlight: []string{"1", "2"}, ids: []string{"3"}, limit: 2, wantRefused: refusedFull, wantLen: 2},
		{name: "a batch past the limit: none tracked", inFlight: []string{"1"}, ids: []string{"2", "3"}, limit: 2, wantRefused: refusedFull, wantLen: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, l := newTracker(0, nil, nil), &link{}
			for _, id := range append(tt.inFlight, tt.cancelled...) {
				mustTrack(t, tr, l, id)
			}
			for _, id := range tt.cancelled {
				tr.cancelled([]byte(id))
			}
			envs := make([]framing.Envelope, len(tt.ids))
			for i, id := range tt.ids {
				envs[i] = req(id, "ping")
			}
			refused, gone := tr.track(l, envs, tt.limit)
			assert.False(t, gone)
			assert.Equal(t, tt.wantRefused, refused)
			assert.Equal(t, tt.wantLen, tr.len())
		})
	}
}

// TestTrackerAnswersOnce ends a request each way there is, then lets the
// upstream's answer come: only the first taker may answer it, a late
// answer to a request the sidecar answered is reported late, and the id
// is free again once nothing may still answer under it.
func TestTrackerAnswersOnce(t *testing.T) {
	tests := []struct {
		name string
		end  func(tr *tracker, l *link, clock *fakeClock) (took bool)
		// The upstream's answer afterwards, as answered reports it.
		wantMethod string
		wantLate   bool
	}{
		{name: "the upstream's answer", end: func(tr *tracker, _ *link, _ *fakeClock) bool {
			method, late := tr.answered([]byte("7"))
			return method == "tools/call" && !late
		}},
		{name: "the sidecar's error (untrack)", end: func(tr *tracker, _ *link, _ *fakeClock) bool {
			return tr.untrack([]byte("7")) == "tools/call"
		}},
		{name: "its link dies", end: func(tr *tracker, l *link, _ *fakeClock) bool {
			return len(tr.fail(l)) == 1
		}},
		{name: "the session ends", end: func(tr *tracker, _ *link, _ *fakeClock) bool {
			return len(tr.fail(nil)) == 1
		}},
		{name: "the call timeout", end: func(_ *tracker, _ *link, clock *fakeClock) bool {
			return clock.fire() == 1
		}, wantMethod: "tools/call", wantLate: true},
		{name: "the client cancels: the answer passes", end: func(tr *tracker, _ *link, _ *fakeClock) bool {
			tr.cancelled([]byte("7"))
			return false // the sidecar does not answer it
		}, wantMethod: "tools/call"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := &fakeClock{}
			var expired []string
			tr := newTracker(time.Second, clock.afterFunc, func(r *inflight) { expired = append(expired, string(r.id)) })
			l := &link{}
			mustTrack(t, tr, l, "7")

			took := tt.end(tr, l, clock)
			if tt.wantLate {
				assert.Equal(t, []string{"7"}, expired, "the timeout answered it")
			} else {
				assert.Empty(t, expired)
				assert.Equal(t, tt.name != "the client cancels: the answer passes", took)
			}
			assert.Zero(t, tr.len())
			assert.Empty(t, tr.untrack([]byte("7")), "nobody else may answer it")

			method, id, late := tr.answeredBy([]byte("7"))
			assert.Equal(t, tt.wantMethod, method)
			assert.Equal(t, tt.wantLate, late)
			if method != "" {
				assert.Equal(t, "7", string(id))
			}
			method, late = tr.answered([]byte("7"))
			assert.Empty(t, method, "a second answer is to no known request")
			assert.False(t, late)
			assert.Zero(t, clock.fire(), "no timer left behind")
		})
	}
}

// TestTrackerTakersRace races every way of taking one request: exactly one
// wins, whatever the order.
func TestTrackerTakersRace(t *testing.T) {
	for i := range 200 {
		clock := &fakeClock{}
		var timedOut atomic.Int32
		tr := newTracker(time.Second, clock.afterFunc, func(*inflight) { timedOut.Add(1) })
		l := &link{}
		mustTrack(t, tr, l, strconv.Itoa(i))
		id := []byte(strconv.Itoa(i))
		var took atomic.Int32
		takers := []func(){
			func() {
				if method, late := tr.answered(id); method != "" && !late {
					took.Add(1)
				}
			},
			func() {
				if tr.untrack(id) != "" {
					took.Add(1)
				}
			},
			func() { took.Add(int32(len(tr.fail(l)))) },
			func() { clock.fire() },
		}
		// Each order in turn goes first, then all race from one start.
		first := i % len(takers)
		takers[0], takers[first] = takers[first], takers[0]
		takers[0]()
		start := make(chan struct{})
		var wg sync.WaitGroup
		for _, take := range takers[1:] {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				take()
			}()
		}
		close(start)
		wg.Wait()
		require.Equal(t, int32(1), took.Load()+timedOut.Load(), "taken exactly once (run %d)", i)
	}
}

func TestTrackerEndedIsBounded(t *testing.T) {
	tr, l := newTracker(0, nil, nil), &link{}
	for i := range maxEnded + 10 {
		id := strconv.Itoa(i)
		mustTrack(t, tr, l, id)
		tr.cancelled([]byte(id))
	}
	tr.mu.Lock()
	n := len(tr.ended)
	tr.mu.Unlock()
	assert.Equal(t, maxEnded, n)
	assert.Zero(t, tr.len())
}

func TestTrackerIdle(t *testing.T) {
	tr, l := newTracker(0, nil, nil), &link{}
	assert.True(t, isClosed(tr.idleChan()), "idle when new")

	mustTrack(t, tr, l, "1")
	mustTrack(t, tr, l, "2")
	idle := tr.idleChan()
	assert.False(t, isClosed(idle))
	tr.answered([]byte("1"))
	assert.False(t, isClosed(idle), "one still in flight")
	tr.cancelled([]byte("2"))
	assert.True(t, isClosed(idle), "an ended request is not waited for")

	mustTrack(t, tr, l, "3")
	assert.True(t, isClosed(idle), "a closed channel stays closed")
	assert.False(t, isClosed(tr.idleChan()), "a new one waits for the new request")
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestTrackerFailsWhatALinkHeld: when a link dies, its requests are handed
// back to be answered, but for the listens kept for the next link; the
// other link's stay; nothing is tracked on it any more, and its ended
// requests are forgotten, as it will never answer them.
func TestTrackerFailsWhatALinkHeld(t *testing.T) {
	tr := newTracker(0, nil, nil)
	dead, next := &link{}, &link{}
	mustTrack(t, tr, dead, "1")
	mustTrack(t, tr, dead, "2")
	_, gone := tr.track(dead, []framing.Envelope{req("L", "subscriptions/listen")}, DefaultMaxInFlight)
	require.False(t, gone)
	require.True(t, tr.keepListen([]byte("L"), []byte("listen L"), 10, 100))
	mustTrack(t, tr, dead, "3")
	tr.cancelled([]byte("3"))
	mustTrack(t, tr, next, "4")

	failed := tr.fail(dead)
	assert.ElementsMatch(t, []string{"1", "2"}, toStrings(failed))
	assert.Equal(t, 2, tr.len(), "the listen and the other link's request stay")

	refused, gone := tr.track(dead, []framing.Envelope{req("5", "ping")}, DefaultMaxInFlight)
	assert.True(t, gone, "nothing is tracked on a dead link")
	assert.Empty(t, refused)
	method, _ := tr.answered([]byte("3"))
	assert.Empty(t, method, "the dead link's ended request is forgotten")
	mustTrack(t, tr, next, "3") // its id is free again

	assert.Equal(t, []string{"listen L"}, toStrings(tr.relink(next)), "the listen moves to the next link")
	assert.Empty(t, tr.relink(next), "once")

	all := tr.fail(nil)
	assert.ElementsMatch(t, []string{"L", "4", "3"}, toStrings(all))
	assert.Zero(t, tr.len())
	_, gone = tr.track(&link{}, []framing.Envelope{req("6", "ping")}, DefaultMaxInFlight)
	assert.True(t, gone, "nothing is tracked once the session ended")
}

// TestTrackerKeepsNoDeadLinkAlive: the records kept for reuse once
// answered must not keep a dead connection (and what its Conn holds)
// reachable for as long as they wait to be reused.
func TestTrackerKeepsNoDeadLinkAlive(t *testing.T) {
	tests := []struct {
		name string
		end  func(tr *tracker, l *link) // ends l
	}{
		{name: "its connection died", end: func(tr *tracker, l *link) { tr.fail(l) }},
		{name: "the session ended", end: func(tr *tracker, _ *link) { tr.fail(nil) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := newTracker(0, nil, nil)
			collected := make(chan struct{})
			func() {
				l := &link{}
				runtime.AddCleanup(l, func(ch chan struct{}) { close(ch) }, collected)
				mustTrack(t, tr, l, "1")
				method, _ := tr.answered([]byte("1"))
				require.Equal(t, "tools/call", method)
				tt.end(tr, l)
			}()
			runtime.GC()
			select {
			case <-collected:
			case <-time.After(5 * time.Second):
				t.Fatal("the dead link is still reachable from the tracker")
			}
			runtime.KeepAlive(tr)
		})
	}
}

func toStrings(bs [][]byte) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = string(b)
	}
	return out
}

func TestTrackerKeepsListensWithinBounds(t *testing.T) {
	tr, l := newTracker(0, nil, nil), &link{}
	for i := range 4 {
		_, _ = tr.track(l, []framing.Envelope{req(strconv.Itoa(i), "subscriptions/listen")}, DefaultMaxInFlight)
	}
	assert.True(t, tr.keepListen([]byte("0"), []byte("aaaa"), 2, 8))
	assert.True(t, tr.keepListen([]byte("1"), []byte("bbbb"), 2, 8))
	assert.False(t, tr.keepListen([]byte("2"), []byte("c"), 2, 100), "past the count")
	assert.False(t, tr.keepListen([]byte("3"), []byte("dddddddd"), 3, 8), "past the bytes")
	assert.True(t, tr.keepListen([]byte("9"), []byte("e"), 2, 8), "not in flight: nothing to keep")

	tr.answered([]byte("0"))
	tr.mu.Lock()
	n, size := len(tr.listens), tr.listensBytes
	tr.mu.Unlock()
	assert.Equal(t, 1, n, "an answered listen is forgotten")
	assert.Equal(t, 4, size)
}

func TestTrackerServerRequests(t *testing.T) {
	long := `"` + strings.Repeat("x", maxIDBytes) + `"`
	tests := []struct {
		name     string
		waiting  []string // the live link's requests tracked first
		orphans  []string // a dead link's requests the client has not answered
		answered []string // the client's answers, before id is tracked
		id       string
		want     serverRefusal
	}{
		{name: "tracked", id: "1", want: serverTracked},
		{name: "id too long", id: long, want: serverIDTooLong},
		{name: "full", waiting: []string{"1", "2"}, id: "3", want: serverFull},
		{name: "the same id again is not one more", waiting: []string{"1", "2"}, id: "2", want: serverTracked},
		{name: "id of an orphan", orphans: []string{"9"}, id: "9", want: serverOrphanID},
		{name: "id of an orphan answered at last", orphans: []string{"9"}, answered: []string{"9"}, id: "9", want: serverTracked},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, dead, l := newTracker(0, nil, nil), &link{}, &link{}
			for _, id := range tt.orphans {
				refused, _ := tr.trackServer(dead, []byte(id), 2)
				require.Equal(t, serverTracked, refused)
			}
			assert.ElementsMatch(t, tt.orphans, toStrings(tr.orphan(dead)))
			for _, id := range tt.waiting {
				refused, _ := tr.trackServer(l, []byte(id), 2)
				require.Equal(t, serverTracked, refused)
			}
			for _, id := range tt.answered {
				assert.False(t, tr.takeServer(l, []byte(id)), "not a request of the live link")
			}
			refused, _ := tr.trackServer(l, []byte(tt.id), 2)
			assert.Equal(t, tt.want, refused)
			if refused == serverTracked {
				assert.True(t, tr.takeServer(l, []byte(tt.id)))
				assert.False(t, tr.takeServer(l, []byte(tt.id)), "answered once")
			}
		})
	}
}

// TestTrackerTimers: progress restarts a request's timer, a superseded
// timer that fires anyway does nothing, an open-ended request gets none,
// and stopTimers leaves none armed.
func TestTrackerTimers(t *testing.T) {
	clock := &fakeClock{}
	var expired []string
	tr := newTracker(time.Second, clock.afterFunc, func(r *inflight) { expired = append(expired, string(r.id)) })
	l := &link{}
	env := req("1", "tools/call")
	env.Params = []byte(`{"_meta":{"progressToken":"p"}}`)
	env.ProgressToken = []byte(`"p"`) // as the one validating pass reads it
	_, _ = tr.track(l, []framing.Envelope{env, req("2", "subscriptions/listen")}, DefaultMaxInFlight)
	require.Equal(t, 1, clock.armed(), "no timer for the listen")

	// The first timer fires as progress comes: too late to stop, it runs
	// after the timer was re-armed.
	clock.mu.Lock()
	first := clock.timers[0]
	first.done = true
	clock.mu.Unlock()
	tr.progressed(framing.IDKey([]byte(`"p"`)))
	require.Equal(t, 2, clock.armed(), "progress re-arms")
	first.f()
	assert.Empty(t, expired)
	assert.Equal(t, 2, tr.len())

	mustTrack(t, tr, l, "3")
	idle := tr.stopTimers()
	assert.True(t, isClosed(idle), "none running")
	assert.Zero(t, clock.fire(), "none armed")
	mustTrack(t, tr, l, "4")
	assert.Zero(t, clock.fire(), "none armed after stopTimers")
	assert.Empty(t, expired)
}

// TestTrackerRoundTripAllocations guards the hot path: a request tracked
// while none is in flight and then answered costs its key and its record,
// no more (no idle channel nobody waits for, no copy of a usual id).
func TestTrackerRoundTripAllocations(t *testing.T) {
	tr, l := newTracker(0, nil, nil), &link{}
	envs := []framing.Envelope{req(`"call-0b9c2f4e-3d1a"`, "tools/call")}
	allocs := testing.AllocsPerRun(100, func() {
		if refused, gone := tr.track(l, envs, DefaultMaxInFlight); refused != "" || gone {
			t.Fatal("not tracked")
		}
		if method, _ := tr.answered(envs[0].ID); method == "" {
			t.Fatal("not answered")
		}
	})
	assert.LessOrEqual(t, allocs, 2.0)
}

// TestTrackerListPending: the streaming path holds every response while
// the client waits for a tools/list, in flight or ended unanswered; asking
// takes nothing.
func TestTrackerListPending(t *testing.T) {
	tr, l := newTracker(0, nil, nil), &link{}
	assert.False(t, tr.listPending())
	_, _ = tr.track(l, []framing.Envelope{req("1", "tools/list"), req("2", "ping")}, DefaultMaxInFlight)
	assert.True(t, tr.listPending(), "in flight")
	assert.Equal(t, 2, tr.len(), "nothing taken")

	tr.cancelled([]byte("1"))
	assert.True(t, tr.listPending(), "ended, its answer still to come")
	method, _ := tr.answered([]byte("1"))
	assert.Equal(t, "tools/list", method)
	assert.False(t, tr.listPending(), "answered")
}

// TestTrackerTimerLosesToAnAnswer: a call timer that fires as the answer
// comes (too late to stop, it runs after the answer was taken) answers
// nothing.
func TestTrackerTimerLosesToAnAnswer(t *testing.T) {
	clock := &fakeClock{}
	var expired []string
	tr := newTracker(time.Second, clock.afterFunc, func(r *inflight) { expired = append(expired, string(r.id)) })
	mustTrack(t, tr, &link{}, "1")
	clock.mu.Lock()
	timer := clock.timers[0]
	timer.done = true // firing: Stop can no longer stop it
	clock.mu.Unlock()

	method, late := tr.answered([]byte("1"))
	assert.Equal(t, "tools/call", method)
	assert.False(t, late)
	timer.f()
	assert.Empty(t, expired, "answered once, by the upstream")
	method, _ = tr.answered([]byte("1"))
	assert.Empty(t, method, "the timer ended nothing")
	assert.True(t, isClosed(tr.stopTimers()), "its run is counted done")
}

// TestTrackerTimerOfAWrappedCountTakesNoOtherRequest: a call timer
// restarted by the upstream's progress so often that its count of timers
// armed wraps still marks its record as one a timer callback may hold, so
// that a timer firing as the answer comes finds the record not reused: it
// must not take the next request, here a subscriptions/listen that has no
// timer at all.
func TestTrackerTimerOfAWrappedCountTakesNoOtherRequest(t *testing.T) {
	clock := &fakeClock{}
	var expired []string
	tr := newTracker(time.Second, clock.afterFunc, func(r *inflight) { expired = append(expired, string(r.id)) })
	l := &link{}
	call := req("1", "tools/call")
	call.ProgressToken = []byte(`"p"`)
	refused, gone := tr.track(l, []framing.Envelope{call}, DefaultMaxInFlight)
	require.False(t, gone)
	require.Empty(t, refused)
	r, ok := lookup(&tr.reqs, "n1")
	require.True(t, ok)
	r.armed = math.MaxUint32 // as after 2^32-1 restarts: no test can wait for them
	tr.progressed(framing.IDKey(call.ProgressToken))
	clock.mu.Lock()
	timer := clock.timers[len(clock.timers)-1]
	timer.done = true // firing: Stop can no longer stop it
	clock.mu.Unlock()

	method, late := tr.answered([]byte("1"))
	require.Equal(t, "tools/call", method)
	require.False(t, late)
	mustTrackMethod(t, tr, l, "2", "subscriptions/listen")
	timer.f()
	assert.Empty(t, expired, "the stale timer answers nothing")
	assert.Equal(t, 1, tr.len(), "the listen request is still in flight")
	method, late = tr.answered([]byte("2"))
	assert.Equal(t, "subscriptions/listen", method, "its answer is relayed")
	assert.False(t, late)
}

// mustTrackMethod tracks one request of method with id on l, which must
// be accepted.
func mustTrackMethod(t *testing.T, tr *tracker, l *link, id, method string) {
	t.Helper()
	refused, gone := tr.track(l, []framing.Envelope{req(id, method)}, DefaultMaxInFlight)
	require.False(t, gone)
	require.Empty(t, refused)
}

// TestTrackedRequestCostsItsRecordAtMost holds the hot path to its
// budget. A request answered by the upstream (answered) gives its record
// back to the tracker, and the next request tracked takes it, so that a
// call relayed costs no allocation. A request answered through answeredBy,
// which hands the record's id out, costs the record and nothing else,
// whether its id is short (the key kept in the record) or long.
func TestTrackedRequestCostsItsRecordAtMost(t *testing.T) {
	tests := []struct {
		name       string
		id         string
		byID       bool // answeredBy, not answered
		wantAllocs float64
	}{
		{name: "answered: an integer", id: "123456789", wantAllocs: 0},
		{name: "answered: a short string", id: `"call-123456789"`, wantAllocs: 0},
		{name: "answeredBy: an integer", id: "123456789", byID: true, wantAllocs: 1},
		{name: "answeredBy: a short string", id: `"call-123456789"`, byID: true, wantAllocs: 1},
		{name: "answeredBy: a long string, and an array for the id and its key", id: `"` + strings.Repeat("x", 40) + `"`, byID: true, wantAllocs: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, l := newTracker(0, nil, nil), &link{}
			envs, id := []framing.Envelope{req(tt.id, "tools/call")}, []byte(tt.id)
			var refused refusal
			var gone, late bool
			var method string
			var clientID []byte
			allocs := testing.AllocsPerRun(100, func() {
				refused, gone = tr.track(l, envs, DefaultMaxInFlight)
				if tt.byID {
					method, clientID, late = tr.answeredBy(id)
				} else {
					method, late = tr.answered(id)
				}
			})
			assert.Equal(t, tt.wantAllocs, allocs)
			assert.Empty(t, refused)
			assert.False(t, gone)
			assert.Equal(t, "tools/call", method)
			if tt.byID {
				assert.Equal(t, tt.id, string(clientID))
			}
			assert.False(t, late)
		})
	}
}

// TestAnsweredByKeepsItsRecord holds the one path that hands a record's
// id out (answeredBy) to leaving the record alone: the requests tracked
// after it must not reuse the bytes the caller holds.
func TestAnsweredByKeepsItsRecord(t *testing.T) {
	tr, l := newTracker(0, nil, nil), &link{}
	_, gone := tr.track(l, []framing.Envelope{req(`"first"`, "tools/call")}, DefaultMaxInFlight)
	require.False(t, gone)
	_, clientID, _ := tr.answeredBy([]byte(`"first"`))
	for i := range 2 * maxSpare {
		id := strconv.Itoa(i)
		tr.track(l, []framing.Envelope{req(id, "tools/call")}, DefaultMaxInFlight)
		tr.answered([]byte(id))
	}
	assert.Equal(t, `"first"`, string(clientID))
}

// BenchmarkTrackAnswered is the tracker's share of a call relayed with 64
// in flight: tracked when it goes out, taken when its answer comes.
func BenchmarkTrackAnswered(b *testing.B) {
	tr, l := newTracker(0, nil, nil), &link{}
	ids := make([][]byte, 1<<16)
	for i := range ids {
		ids[i] = []byte(strconv.Itoa(i + 1))
	}
	envs := make([]framing.Envelope, 1)
	for i := range 64 {
		envs[0] = req(string(ids[i]), "tools/call")
		tr.track(l, envs, DefaultMaxInFlight)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		envs[0] = framing.Envelope{Kind: framing.Request, ID: ids[(i+64)&(len(ids)-1)], Method: "tools/call"}
		tr.track(l, envs, DefaultMaxInFlight)
		tr.answered(ids[i&(len(ids)-1)])
		i++
	}
}

// BenchmarkTrackAnsweredAcrossPumps is BenchmarkTrackAnswered as the
// relay runs it: the client pump tracks each request on one goroutine and
// the upstream pump takes its answer on another, up to 64 in flight, so
// that the tracker's memory moves between cores as it does in the relay.
func BenchmarkTrackAnsweredAcrossPumps(b *testing.B) {
	b.Run("tracker", func(b *testing.B) { benchAcrossPumps(b, true) })
	b.Run("handoff-only", func(b *testing.B) { benchAcrossPumps(b, false) })
}

func benchAcrossPumps(b *testing.B, track bool) {
	tr, l := newTracker(0, nil, nil), &link{}
	ids := make([][]byte, 1<<16)
	for i := range ids {
		ids[i] = []byte(strconv.Itoa(i + 1))
	}
	var sent, taken atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range int64(b.N) {
			for sent.Load() <= i {
				runtime.Gosched()
			}
			if track {
				tr.answered(ids[i&(1<<16-1)])
			}
			taken.Store(i + 1)
		}
	}()
	envs := make([]framing.Envelope, 1)
	for i := range int64(b.N) {
		for i-taken.Load() >= 64 {
			runtime.Gosched()
		}
		envs[0] = framing.Envelope{Kind: framing.Request, ID: ids[i&(1<<16-1)], Method: "tools/call"}
		if track {
			tr.track(l, envs, DefaultMaxInFlight)
		}
		sent.Store(i + 1)
	}
	<-done
}
