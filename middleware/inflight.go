package middleware

import (
	"bytes"
	"slices"
	"sync"
	"time"
	"unsafe"

	"github.com/mcpwrap/mcpwrap/internal/framing"
)

// maxEnded bounds the requests remembered as ended before their answer.
// An upstream that honours cancellation never answers them, so without a
// bound they would pile up; past it an arbitrary one is forgotten, and its
// answer, should it still come, is dropped as one to no request.
const maxEnded = 4096

// A tracker is the one owner of where each request id in flight is: the
// client's requests sent to the upstream and not answered yet (with their
// call timers and progress tokens), those that ended before their answer
// came, the client's subscriptions/listen requests kept for replay, and
// the upstream's requests the client has yet to answer, per connection,
// with those of the last dead connection.
//
// It makes answering a client request exactly-once by construction: the
// right to answer a request tracked by track is handed out once, to
// whichever of these takes it first, and to no other: answered (the
// upstream's answer, which the caller relays), untrack (the caller could
// not deliver the request and answers it itself), a call timer running out
// (the expired callback answers it) and fail (its connection died, or the
// session ended: the caller answers each request returned). Once taken, an
// id is in none of the tracker's tables, so no second taker finds it, and
// a late answer from the upstream to a request the sidecar answered is
// reported late, to be dropped. A request the client cancelled (cancelled)
// leaves the table without an answer from the sidecar: the upstream's
// answer, should it come, passes.
//
// Create one with newTracker. Its methods are safe for concurrent use:
// each takes the tracker's own lock, which guards its tables, the mutable
// fields of the inflight values it keeps and the calls of every link.
// Under it a method only arms and stops timers (afterFunc and Stop); the
// expired callback runs without it. The Session never holds its own mu
// when it calls the tracker, so the two locks are never nested.
type tracker struct {
	// Set by newTracker, then read-only.
	timeout   time.Duration                                        // CallTimeout; zero arms no timer
	afterFunc func(time.Duration, func()) interface{ Stop() bool } // arms the call timers
	expired   func(r *inflight)                                    // answers a request whose timer ran out

	mu       sync.Mutex
	reqs     reqTable          // the client's requests in flight, by framing.IDKey
	idle     chan struct{}     // closed when reqs empties; made by idleChan, nil while nobody waits
	ended    map[string]ended  // requests ended before the upstream answered them, by framing.IDKey
	progress map[string]string // progress token's framing.IDKey -> key in reqs, with a timeout
	closed   bool              // fail(nil) ran: nothing is tracked any more

	timers        int           // call timers armed or running
	timersIdle    chan struct{} // closed while timers is zero
	timersStopped bool          // stopTimers ran: no timer is armed any more

	listens      map[string][]byte   // the client's subscriptions/listen requests in flight, by framing.IDKey
	listensBytes int                 // the size of the requests in listens
	orphans      map[string]struct{} // requests of the last dead upstream the client has not answered, by framing.IDKey

	// spare holds records answered and free to be used again (see
	// answered), up to maxSpare: a call relayed then costs no allocation.
	spare []*inflight
}

// maxSpare bounds the records a tracker keeps for reuse.
const maxSpare = 256

// newTracker returns an empty tracker. With a positive timeout, each
// request tracked (but for open-ended ones) gets a call timer from
// afterFunc; when it runs out before the request is otherwise taken, the
// request is taken and expired is called with it, in the timer's
// goroutine and without the tracker's lock.
func newTracker(timeout time.Duration, afterFunc func(time.Duration, func()) interface{ Stop() bool }, expired func(r *inflight)) *tracker {
	t := &tracker{
		timeout:   timeout,
		afterFunc: afterFunc,
		expired:   expired,
		ended:     make(map[string]ended),
		progress:  make(map[string]string),
		listens:   make(map[string][]byte),
		orphans:   make(map[string]struct{}),
	}
	t.timersIdle = make(chan struct{})
	close(t.timersIdle)
	return t
}

// inflight is a client request forwarded to the upstream and not yet
// answered. Its id, key and method do not change while it is tracked; the
// rest is guarded by the tracker's lock. Once answered (tracker.answered)
// the record may be reused for another request (see tracker.spare).
type inflight struct {
	// The fields the upstream's pump reads when it takes the request come
	// first, in the record's first cache line (see reqTable).
	num      int64 // the id, when it is a plain integer (isNum)
	method   string
	progress string // framing.IDKey of its _meta.progressToken; "" when none
	// With a timeout: the timer armed for it, and a count of the timers
	// armed, so that a superseded one that fires anyway does nothing; it
	// is never zero again once a timer was armed.
	timer interface{ Stop() bool }
	armed uint32
	isNum bool // num holds the id (set by reqTable.put)

	id   []byte // as the client sent it
	key  string // framing.IDKey(id)
	link *link  // the connection it was written to
	// buf holds id, then key, when they fit, as those of the numbers and
	// short strings clients use do: the record is then the one allocation
	// a tracked request costs. Its size makes the record three whole
	// cache lines.
	buf [80]byte
}

// newInflight returns the record of the client request env, with the key
// its id has in the tracker's tables.
func newInflight(env framing.Envelope, l *link, progress string) *inflight {
	r := new(inflight)
	r.set(env, l, progress)
	return r
}

// set makes r the record of the client request env. r is new, or one
// answered has given up (see answered): nothing holds its id or key any
// more, so its bytes may be written again.
func (r *inflight) set(env framing.Envelope, l *link, progress string) {
	// Field by field, buf but for what the id takes left as it was.
	r.num, r.isNum, r.timer, r.armed = 0, false, nil, 0
	r.method, r.progress, r.link = env.Method, progress, l
	b := framing.AppendIDKey(append(r.buf[:0], env.ID...), env.ID)
	// b is r.buf, or an array of its own when the two do not fit there;
	// either way nothing writes its bytes again while the record is in
	// use, so the key may be a string aliasing them (which keeps them
	// alive with it).
	r.id = b[:len(env.ID):len(env.ID)]
	key := b[len(env.ID):]
	r.key = unsafe.String(unsafe.SliceData(key), len(key))
}

// ended is a request that left the in-flight table before the upstream
// answered it.
type ended struct {
	id     []byte // as the client sent it
	method string
	link   *link
	// drop is set when the sidecar answered it (it timed out): the
	// upstream's late answer would be a second one and is dropped. An
	// answer to a request the client cancelled passes: the client ignores
	// it, and a tools/list page in it is still filtered.
	drop bool
}

// linkCalls is what the tracker keeps of one upstream connection; it is
// guarded by the tracker's lock, and its zero value is ready.
type linkCalls struct {
	serverReqs map[string][]byte // its requests the client has yet to answer: their ids, by framing.IDKey
	retired    bool              // fail ran for it: no request is tracked on it any more
}

// A refusal is why track tracks nothing: "" when it tracked the
// requests, else the reason a client request is answered with.
type refusal string

const (
	refusedIDInUse   refusal = "Invalid Request: the id is already in use by a request in flight, or by one the upstream may still answer; use another id"
	refusedIDTooLong refusal = "Invalid Request: the id is longer than 1024 bytes"
	refusedFull      refusal = "too many requests in flight" // answered with errFull
)

// track records the client requests envs as in flight on link l, all of
// them or none. It refuses them when an id is over maxIDBytes, when an id
// is in flight already or appears twice in envs (answers are matched to
// requests by id, so it must be unique), or when that would put more than
// limit requests in flight. The id of a request that ended before the
// upstream answered it (cancelled or timed out) stays in use until that
// answer arrives or its connection ends: an answer under it could be to
// either request, and a second request would get the first one's answer,
// then its own. gone reports, with no refusal, that l is nil or was given
// up (fail ran for it): the requests must not be sent to it. Tracking and
// that check are one step, so a request is either tracked before its
// connection is given up, and fail hands it back, or not tracked at all.
func (t *tracker) track(l *link, envs []framing.Envelope, limit int) (refused refusal, gone bool) {
	for _, env := range envs {
		if len(env.ID) > maxIDBytes {
			return refusedIDTooLong, false
		}
	}
	if l == nil {
		return "", true
	}
	// Up to a few records (one but in a batch) are listed on the stack.
	var recBuf [4]*inflight
	recs := recBuf[:0]
	if len(envs) > len(recBuf) {
		recs = make([]*inflight, 0, len(envs))
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed || l.calls.retired {
		return "", true
	}
	for _, env := range envs {
		token := ""
		if t.timeout > 0 {
			token = progressKey(env.ProgressToken)
		}
		r := t.recordLocked(env, l, token)
		if slices.ContainsFunc(recs, func(o *inflight) bool { return o.key == r.key }) {
			refused = refusedIDInUse
		}
		recs = append(recs, r)
	}
	for _, r := range recs {
		_, live := lookup(&t.reqs, r.key)
		_, ended := t.ended[r.key]
		if live || ended {
			refused = refusedIDInUse
		}
	}
	if refused == "" && t.reqs.len()+len(envs) > limit {
		refused = refusedFull
	}
	if refused != "" {
		for _, r := range recs {
			t.spareLocked(r)
		}
		return refused, false
	}
	for _, r := range recs {
		t.reqs.put(r.key, r)
		if r.progress != "" {
			t.progress[r.progress] = r.key
		}
		t.armLocked(r)
	}
	return "", false
}

// recordLocked returns the record of the client request env, a spare one
// when there is one; t.mu must be held.
func (t *tracker) recordLocked(env framing.Envelope, l *link, progress string) *inflight {
	n := len(t.spare)
	if n == 0 {
		return newInflight(env, l, progress)
	}
	r := t.spare[n-1]
	t.spare[n-1] = nil
	t.spare = t.spare[:n-1]
	r.set(env, l, progress)
	return r
}

// spareLocked keeps record r, which nothing refers to any more, for reuse,
// unless it ever had a call timer (whose callback may still hold it) or
// maxSpare are kept already; t.mu must be held.
func (t *tracker) spareLocked(r *inflight) {
	if r.armed == 0 && len(t.spare) < maxSpare {
		t.spare = append(t.spare, r)
	}
}

// answered takes the client request the upstream's response with id
// answers and returns its method ("" when none is known). late reports an
// answer to a request the sidecar already answered, which must be
// dropped. The request's record is kept for reuse: this is the relay's
// path for every answer, and it then costs no allocation.
func (t *tracker) answered(id []byte) (method string, late bool) {
	method, _, late = t.take(id, false)
	return method, late
}

// answeredBy is answered for a caller that may answer the request itself
// after all (the answer was too large, or ended early): it also returns
// the request's id as the client spelled it.
func (t *tracker) answeredBy(id []byte) (method string, clientID []byte, late bool) {
	return t.take(id, true)
}

// answeredUnlessList is answeredBy for a response relayed as it arrives,
// which cannot be filtered: it takes nothing and reports hold while the
// client waits for a tools/list (see listPending), whose answer must be held
// whole, as must any response then: a second "id" after the head, which no
// head shows, could make it pass for that answer. The look and the take are
// one step, so that a tools/list tracked between them is never taken for a
// response relayed unfiltered.
func (t *tracker) answeredUnlessList(id []byte) (method string, clientID []byte, late, hold bool) {
	var buf [64]byte
	key := framing.AppendIDKey(buf[:0], id)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.listPendingLocked() {
		return "", nil, false, true
	}
	method, clientID, late = t.takeLocked(key, true)
	return method, clientID, late, false
}

func (t *tracker) take(id []byte, wantID bool) (method string, clientID []byte, late bool) {
	var buf [64]byte
	key := framing.AppendIDKey(buf[:0], id) // looked up without allocating
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.takeLocked(key, wantID)
}

// takeLocked is take for the request with IDKey key; t.mu must be held.
func (t *tracker) takeLocked(key []byte, wantID bool) (method string, clientID []byte, late bool) {
	if r, ok := lookup(&t.reqs, key); ok {
		t.untrackLocked(r)
		if wantID {
			return r.method, r.id, false // r.id stays the caller's: r is not reused
		}
		method = r.method
		t.spareLocked(r)
		return method, nil, false
	}
	if e, ok := t.ended[string(key)]; ok {
		delete(t.ended, string(key))
		return e.method, e.id, e.drop
	}
	return "", nil, false
}

// listPending reports whether the client waits for the answer to a
// tools/list: one in flight, or ended before the upstream answered it.
func (t *tracker) listPending() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.listPendingLocked()
}

func (t *tracker) listPendingLocked() bool {
	for r := range t.reqs.all {
		if r.method == "tools/list" {
			return true
		}
	}
	for _, e := range t.ended {
		if e.method == "tools/list" {
			return true
		}
	}
	return false
}

// untrack takes the client request with id and returns its method, or ""
// when id is not in flight: only on a method may the caller answer it.
func (t *tracker) untrack(id []byte) string {
	var buf [64]byte
	key := framing.AppendIDKey(buf[:0], id)
	t.mu.Lock()
	defer t.mu.Unlock()
	r, ok := lookup(&t.reqs, key)
	if !ok {
		return ""
	}
	t.untrackLocked(r)
	return r.method
}

// cancelled ends the client request with id, which the client cancelled:
// its id is free again once the upstream's answer, should it come, has
// passed, and shutdown no longer waits for it.
func (t *tracker) cancelled(id []byte) {
	key := framing.IDKey(id)
	t.mu.Lock()
	defer t.mu.Unlock()
	if r, ok := lookup(&t.reqs, key); ok {
		t.endLocked(r, false)
	}
}

// fail takes every client request in flight on link l and returns their
// ids, for the caller to answer, but for subscriptions/listen requests
// kept by keepListen, which stay for relink to move to the next
// connection. The ended requests on l are forgotten (l will never answer
// them), and nothing is tracked on l any more. With l nil it takes every
// request, listens included, and the tracker tracks nothing any more.
func (t *tracker) fail(l *link) [][]byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	if l == nil {
		t.closed = true
	} else {
		l.calls.retired = true
	}
	for _, r := range t.spare {
		// Off the answering path, which leaves a record's link as it was:
		// a record waiting for reuse must not keep l reachable.
		if l == nil || r.link == l {
			r.link = nil
		}
	}
	var ids [][]byte
	for r := range t.reqs.all {
		if _, listen := t.listens[r.key]; l == nil || (r.link == l && !listen) {
			ids = append(ids, r.id)
			t.untrackLocked(r)
		}
	}
	for key, e := range t.ended {
		if l == nil || e.link == l {
			delete(t.ended, key)
		}
	}
	return ids
}

// untrackLocked forgets in-flight request r and stops its timer; t.mu
// must be held.
func (t *tracker) untrackLocked(r *inflight) {
	t.reqs.remove(r)
	if len(t.listens) > 0 { // else r.key, past the record's first cache line, is not read
		if msg, ok := t.listens[r.key]; ok {
			delete(t.listens, r.key)
			t.listensBytes -= len(msg)
		}
	}
	if r.progress != "" && t.progress[r.progress] == r.key {
		delete(t.progress, r.progress)
	}
	t.disarmLocked(r)
	if t.reqs.len() == 0 && t.idle != nil {
		close(t.idle)
		t.idle = nil
	}
}

// endLocked moves in-flight request r to the ended requests; t.mu must be
// held.
func (t *tracker) endLocked(r *inflight, drop bool) {
	t.untrackLocked(r)
	if len(t.ended) >= maxEnded {
		for key := range t.ended {
			delete(t.ended, key)
			break
		}
	}
	t.ended[r.key] = ended{id: r.id, method: r.method, link: r.link, drop: drop}
}

// len returns how many client requests are in flight.
func (t *tracker) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.reqs.len()
}

// idleChan returns a channel closed once no client request is in flight
// (at once when none is now); a request tracked later needs a new one. The
// channel is made only for a caller that waits, so that a request going
// out while none is in flight, as most do, costs no allocation for it.
func (t *tracker) idleChan() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.reqs.len() == 0 {
		return closedChan
	}
	if t.idle == nil {
		t.idle = make(chan struct{})
	}
	return t.idle
}

// closedChan is a channel closed for good.
var closedChan = func() chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}()

// armLocked starts r's call timer, when there is a timeout, r is not
// open-ended and stopTimers has not run; t.mu must be held.
func (t *tracker) armLocked(r *inflight) {
	if t.timeout <= 0 || t.timersStopped || openEnded(r.method) {
		return
	}
	if t.timers == 0 {
		t.timersIdle = make(chan struct{})
	}
	t.timers++
	if r.armed++; r.armed == 0 {
		// Wrapped (a hostile upstream's progress can restart the timer
		// 2^32 times): zero would say no timer ever held r (see
		// spareLocked), and r could be reused under a stale callback.
		r.armed = 1
	}
	armed := r.armed
	r.timer = t.afterFunc(t.timeout, func() {
		defer t.timerDone()
		if t.expire(r, armed) {
			t.expired(r)
		}
	})
}

// disarmLocked stops r's call timer, if armed; t.mu must be held.
func (t *tracker) disarmLocked(r *inflight) {
	if r.timer == nil {
		return
	}
	if r.timer.Stop() {
		t.timerDoneLocked() // it will not run
	}
	r.timer = nil
}

func (t *tracker) timerDone() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.timerDoneLocked()
}

func (t *tracker) timerDoneLocked() {
	if t.timers--; t.timers == 0 {
		close(t.timersIdle)
	}
}

// expire takes request r, whose timer (the armed-th) ran out, unless it
// was taken or its timer restarted meanwhile, and reports whether it did.
// r then stays among the ended requests, so that the upstream's late
// answer is dropped.
func (t *tracker) expire(r *inflight, armed uint32) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if cur, _ := lookup(&t.reqs, r.key); cur != r || r.armed != armed {
		return false
	}
	r.timer = nil // it is this one, running
	t.endLocked(r, true)
	return true
}

// progressed restarts the call timer of the request whose progress token
// has IDKey key, if it has one armed.
func (t *tracker) progressed(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	r, ok := lookup(&t.reqs, t.progress[key])
	if !ok || r.timer == nil {
		return
	}
	t.disarmLocked(r)
	t.armLocked(r)
}

// stopTimers stops the call timers still armed, arms none from now on,
// and returns a channel closed once none is running.
func (t *tracker) stopTimers() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.timersStopped = true
	for r := range t.reqs.all {
		t.disarmLocked(r)
	}
	return t.timersIdle
}

// keepListen keeps msg, the client's subscriptions/listen request with id
// in flight, for relink to send a restarted upstream, within maxCount
// requests and maxBytes bytes kept; it reports false, keeping nothing,
// past them or when the request is no longer in flight. Taking the
// request forgets it.
func (t *tracker) keepListen(id, msg []byte, maxCount, maxBytes int) bool {
	key := framing.IDKey(id)
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := lookup(&t.reqs, key); !ok {
		return true // answered already: nothing to keep, and no bound passed
	}
	if len(t.listens)+1 > maxCount || t.listensBytes+len(msg) > maxBytes {
		return false
	}
	t.listens[key] = bytes.Clone(msg)
	t.listensBytes += len(msg)
	return true
}

// relink moves the kept subscriptions/listen requests in flight to link
// l, a restarted upstream, and returns them, to be sent to it as the
// client sent them.
func (t *tracker) relink(l *link) [][]byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	var msgs [][]byte
	for key, msg := range t.listens {
		if r, ok := lookup(&t.reqs, key); ok && r.link != l {
			r.link = l
			msgs = append(msgs, msg)
		}
	}
	return msgs
}

// A serverRefusal is why trackServer does not track an upstream request.
type serverRefusal int

const (
	serverTracked   serverRefusal = iota // tracked: relay it
	serverIDTooLong                      // its id is over maxIDBytes
	serverOrphanID                       // its id is that of a dead upstream's request the client may still answer
	serverFull                           // limit requests of l are waiting already
)

// trackServer records the upstream's request with id, read on link l, as
// waiting for the client's answer, unless it refuses it; n is how many of
// l's requests wait.
func (t *tracker) trackServer(l *link, id []byte, limit int) (refused serverRefusal, n int) {
	if len(id) > maxIDBytes {
		return serverIDTooLong, 0
	}
	key := framing.IDKey(id)
	t.mu.Lock()
	defer t.mu.Unlock()
	reqs := l.calls.serverReqs
	_, known := reqs[key]
	_, orphan := t.orphans[key]
	switch {
	case orphan:
		// The client may still answer the dead upstream's request; its
		// answer would be taken for this one's.
		return serverOrphanID, len(reqs)
	case !known && len(reqs) >= limit:
		return serverFull, len(reqs)
	}
	if reqs == nil {
		reqs = make(map[string][]byte)
		l.calls.serverReqs = reqs
	}
	reqs[key] = bytes.Clone(id)
	return serverTracked, len(reqs)
}

// takeServer reports whether the client's answer with id answers a request
// of link l that waits for it, and forgets that request. An answer to none
// frees id from the orphans: the client answered the dead upstream's
// request at last.
func (t *tracker) takeServer(l *link, id []byte) bool {
	var buf [64]byte
	key := framing.AppendIDKey(buf[:0], id)
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := l.calls.serverReqs[string(key)]; !ok {
		delete(t.orphans, string(key))
		return false
	}
	delete(l.calls.serverReqs, string(key))
	return true
}

// orphan makes the requests of dead link l that the client has yet to
// answer the orphans, replacing those of an earlier dead link, and returns
// their ids: until the client answers one, an upstream request under its
// id is refused, so that the late answer is not taken for it.
func (t *tracker) orphan(l *link) [][]byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.orphans = make(map[string]struct{}, len(l.calls.serverReqs))
	ids := make([][]byte, 0, len(l.calls.serverReqs))
	for key, id := range l.calls.serverReqs {
		t.orphans[key] = struct{}{}
		ids = append(ids, id)
	}
	return ids
}
