package httpfront

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpwrap/mcpwrap/internal/framing"
	"github.com/mcpwrap/mcpwrap/middleware"
)

// queueLimit and queueByteLimit bound the messages kept for a session
// while no stream can carry them; past either the oldest are dropped (but
// never the newest, however large).
const (
	queueLimit     = 1024
	queueByteLimit = 16 << 20
)

// A session is one HTTP session: the client side of its relay, fed by POSTs
// and routing the relay's messages to the session's HTTP streams.
//
// It implements [middleware.Conn] for the relay. Its routing state is
// guarded by mu; a stream's own mutex is never held while mu is taken,
// except in attach, which takes them in the order stream, then session.
type session struct {
	srv    *Server
	id     string
	client string // who opened it (see Server.clientOf); "" for the stateless session
	log    *slog.Logger
	relay  *middleware.Session

	in     chan []byte // messages POSTed by the client, for ReadMessage
	ctx    context.Context
	cancel context.CancelFunc

	ended   chan struct{} // closed when the session ends: no new HTTP work
	endOnce sync.Once
	done    chan struct{} // closed when the relay's Run returned
	// own queues the messages the stateless session sends its own relay
	// (see sendOwn), which the goroutine in async delivers; run waits for
	// it. nil on other sessions.
	own   chan []byte
	async sync.WaitGroup

	// The stateless session's (see serveStateless); zero for others.
	stateless bool
	seq       atomic.Uint64 // numbers the rewritten request ids
	idSalt    string        // the random part of the rewritten request ids
	// beforeWait, when set (by tests), runs in awaitReady just before it
	// waits for the handshake: a test makes the handshake end there.
	beforeWait func()
	// guarded by mu:
	ready     bool            // a server/discover succeeded: the upstream is set up
	refused   bool            // the upstream refused server/discover: it speaks the session era only
	attempt   *handshake      // the Server's own server/discover in flight, if any
	discovers map[string]bool // keys of the client server/discover requests in flight

	mu         sync.Mutex
	calls      map[string]*exchange // request key → the POST waiting for it
	live       []*exchange          // POSTs answering with SSE, oldest first
	get        *stream              // the standalone GET stream, if open
	queue      [][]byte             // messages waiting for a GET stream
	queueBytes int                  // bytes in queue
	active     int                  // HTTP requests in progress
	idleSince  time.Time
	lastUsed   time.Time // when an HTTP request last started or ended
	idle       *time.Timer
}

var _ middleware.Conn = (*session)(nil)

func newSession(srv *Server, id string) *session {
	ctx, cancel := context.WithCancel(context.Background())
	ss := &session{
		srv:       srv,
		id:        id,
		log:       srv.log.With("session", id[:8]), // enough to tell sessions apart
		in:        make(chan []byte),
		ctx:       ctx,
		cancel:    cancel,
		ended:     make(chan struct{}),
		done:      make(chan struct{}),
		calls:     make(map[string]*exchange),
		idleSince: time.Now(),
		lastUsed:  time.Now(),
	}
	return ss
}

// start starts the idle clock and the relay, once the session is known to
// the server.
func (ss *session) start() {
	if d := ss.srv.idleTimeout(); d > 0 {
		ss.mu.Lock()
		ss.idle = time.AfterFunc(d, ss.idleCheck)
		ss.mu.Unlock()
	}
	go ss.run()
}

// run runs the relay until the session ends.
func (ss *session) run() {
	defer close(ss.done)
	defer ss.cancel()
	defer ss.async.Wait() // it ends with the session
	if err := ss.relay.Run(ss.ctx); err != nil {
		ss.log.Warn("relay stopped", "error", err)
	}
	ss.end("the relay stopped")
}

// end ends the session: it is forgotten by the server, its GET stream
// closes and its relay reads EOF, drains and closes the upstream. The POSTs
// still waiting get their answers until the relay returns.
func (ss *session) end(reason string) {
	ss.endOnce.Do(func() {
		ss.srv.forget(ss.id)
		close(ss.ended)
		ss.mu.Lock()
		if ss.idle != nil {
			ss.idle.Stop()
		}
		ss.mu.Unlock()
		ss.closeGET()
		ss.log.Info("session ended", "reason", reason)
		// The relay learns of the end from its context too: its client
		// pump may be blocked writing to a client that stopped reading,
		// and would never read the EOF.
		ss.cancel()
	})
}

// enter records an HTTP request in progress; it reports false when the
// session has ended.
func (ss *session) enter() bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.isEnded() {
		return false
	}
	ss.active++
	ss.lastUsed = time.Now()
	return true
}

// lastUse returns when the session was last used, and whether it is idle:
// open, with no POST in progress. An open GET stream waits for what the
// server may send, not for an answer: it does not count.
func (ss *session) lastUse() (time.Time, bool) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	posts := ss.active
	if ss.get != nil {
		posts--
	}
	return ss.lastUsed, posts == 0 && !ss.isEnded()
}

func (ss *session) isEnded() bool {
	select {
	case <-ss.ended:
		return true
	default:
		return false
	}
}

// leave records the end of an HTTP request, starting the idle clock when
// it was the last.
func (ss *session) leave() {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.active--
	ss.lastUsed = time.Now()
	if ss.active == 0 && ss.idle != nil && !ss.isEnded() {
		ss.idleSince = time.Now()
		ss.idle.Reset(ss.srv.idleTimeout())
	}
}

// idleCheck ends the session if it has been idle for the whole timeout. A
// request in progress re-arms the timer when it leaves.
func (ss *session) idleCheck() {
	timeout := ss.srv.idleTimeout()
	ss.mu.Lock()
	if ss.active > 0 {
		ss.mu.Unlock()
		return
	}
	if left := timeout - time.Since(ss.idleSince); left > 0 {
		ss.idle.Reset(left)
		ss.mu.Unlock()
		return
	}
	ss.mu.Unlock()
	ss.end(fmt.Sprintf("idle for %s", timeout))
}

// deliver hands a client message to the relay; false means the session
// ended, or ctx (the POST's) was done, first. The relay takes no message
// while its upstream is not reading, so the POST of a client that left
// must not wait for it.
func (ss *session) deliver(ctx context.Context, msg []byte) bool {
	select {
	case ss.in <- msg:
		return true
	case <-ss.ended:
		return false
	case <-ctx.Done():
		return false
	}
}

// ReadMessage implements [middleware.Conn]: the client's next message, or
// io.EOF once the session has ended.
// SessionID is the session's Mcp-Session-Id, for telemetry's
// mcp.session.id; "" for the stateless session, whose 2026-07-28 traffic
// has no session. It is fixed before the relay is built.
func (ss *session) SessionID() string {
	if ss.stateless {
		return ""
	}
	return ss.id
}

func (ss *session) ReadMessage() ([]byte, error) {
	select {
	case msg := <-ss.in:
		return msg, nil
	case <-ss.ended:
		return nil, io.EOF
	}
}

// WriteMessage implements [middleware.Conn]: it routes one message of the
// relay to the client. A response goes to the POST waiting for it; anything
// else to a POST stream still open (the one whose request a progress
// notification names, else the oldest), else the GET stream, else a
// bounded queue that the next GET stream receives first. It blocks while
// the chosen stream's client is not reading, until Close aborts the
// streams; ctx is checked before anything is routed.
func (ss *session) WriteMessage(ctx context.Context, msg []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	env, err := framing.Peek(msg)
	if err != nil && !errors.Is(err, framing.ErrAmbiguous) { // an ambiguous one is routed as far as it reads
		ss.log.Warn("dropping an unreadable message from the relay", "error", err)
		return nil
	}
	if env.Kind != framing.Batch {
		ss.route(msg, env)
		return nil
	}
	elems, err := framing.Elements(msg)
	if err != nil {
		ss.log.Warn("dropping an unreadable batch from the relay", "error", err)
		return nil
	}
	for _, e := range elems {
		if env, err := framing.Peek(e); err == nil {
			ss.route(e, env)
		}
	}
	return nil
}

// Close implements [middleware.Conn]: it ends the session and aborts its
// streams, so that a WriteMessage blocked on a client that stopped reading
// returns (the relay closes its client side when it gives up on one).
func (ss *session) Close() error {
	ss.end("the relay closed the client side")
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.get != nil {
		ss.get.abort()
	}
	for _, ex := range ss.live {
		ex.stream.abort()
	}
	return nil
}

func (ss *session) route(msg []byte, env framing.Envelope) {
	if ss.stateless && env.Kind == framing.Response {
		if isHandshake(env) {
			ss.discoverAnswered(msg, env, true)
			return
		}
		key := idKey(env.ID)
		ss.mu.Lock()
		discover := ss.discovers[key]
		delete(ss.discovers, key)
		ss.mu.Unlock()
		ss.routeResponse(msg, env)
		if discover {
			ss.discoverAnswered(msg, env, false)
		}
		return
	}
	if env.Kind == framing.Response {
		ss.routeResponse(msg, env)
		return
	}
	if ss.stateless {
		ss.routeStateless(msg, env)
		return
	}
	var token string
	if env.Method == "notifications/progress" {
		var p struct {
			ProgressToken json.RawMessage `json:"progressToken"`
		}
		if json.Unmarshal(env.Params, &p) == nil && p.ProgressToken != nil {
			token = idKey(p.ProgressToken)
		}
	}
	for {
		ss.mu.Lock()
		st := ss.pickLocked(token)
		if st == nil {
			ss.enqueueLocked(msg)
			ss.mu.Unlock()
			return
		}
		ss.mu.Unlock()
		if st.send(msg) == nil {
			return
		}
		// The stream is gone, and marked so: pick again.
	}
}

func (ss *session) routeResponse(msg []byte, env framing.Envelope) {
	key := idKey(env.ID)
	ss.mu.Lock()
	ex := ss.calls[key]
	if ex == nil {
		ss.mu.Unlock()
		ss.log.Debug("dropping a response no POST waits for", "id", string(env.ID))
		return
	}
	delete(ss.calls, key)
	delete(ex.pending, key)
	ex.complete = len(ex.pending) == 0
	if orig := ex.orig[key]; orig != nil {
		msg = framing.Splice(msg, env.ID, orig) // the client's own id
	}
	// The POST's handler writes the answer itself when it is JSON, and on
	// the stateless session: a relay that every 2026-07-28 client shares
	// must not wait on one that stopped reading, even for StallTimeout,
	// since it would wait so for each such client in turn.
	handoff := ex.stream == nil || ss.stateless
	last := ex.complete
	if handoff {
		ex.responses = append(ex.responses, bytes.Clone(msg))
	} else {
		ex.sending++ // it may wait for the stream behind another write
	}
	ss.mu.Unlock()
	if !handoff {
		send := ex.stream.send
		if last {
			send = ex.stream.sendLast // its POST returns now, which flushes it
		}
		if err := send(msg); err != nil {
			ss.log.Debug("cannot deliver a response; the client left", "id", string(env.ID))
		}
		ss.mu.Lock()
		ex.sending--
		ss.mu.Unlock()
	}
	ss.release(ex)
}

// release lets the POST of ex return once all its requests are answered
// (or cancelled) and no response is still being written to its stream,
// which closes when the POST returns.
func (ss *session) release(ex *exchange) {
	ss.mu.Lock()
	done := ex.complete && ex.sending == 0
	ss.mu.Unlock()
	if done {
		ex.finish()
	}
}

// pickLocked chooses the stream for a message that is not a response.
func (ss *session) pickLocked(progressToken string) *stream {
	if progressToken != "" {
		for _, ex := range ss.live {
			if ex.progress[progressToken] && !ex.complete && !ex.stream.gone.Load() {
				return ex.stream
			}
		}
	}
	for _, ex := range ss.live {
		if !ex.complete && !ex.stream.gone.Load() {
			return ex.stream
		}
	}
	if ss.get != nil && !ss.get.gone.Load() {
		return ss.get
	}
	return nil
}

func (ss *session) enqueueLocked(msg []byte) {
	ss.queue = append(ss.queue, bytes.Clone(msg))
	ss.queueBytes += len(msg)
	for len(ss.queue) > queueLimit || ss.queueBytes > queueByteLimit && len(ss.queue) > 1 {
		ss.queueBytes -= len(ss.queue[0])
		ss.queue[0] = nil // not kept alive by the backing array
		ss.queue = ss.queue[1:]
		ss.log.Warn("no stream open for a while; dropping the oldest queued message", "limit", queueLimit, "byteLimit", queueByteLimit)
	}
}

// register makes the POST's requests routable. It returns the id of a
// request already in flight in the session, if any, and then registers
// nothing.
func (ss *session) register(ex *exchange) (duplicate []byte) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for key, id := range ex.pending {
		if ss.calls[key] != nil {
			return id
		}
	}
	for key := range ex.pending {
		ss.calls[key] = ex
	}
	if ex.stream != nil {
		ss.live = append(ss.live, ex)
	}
	return nil
}

// unregister forgets the POST's requests and returns the ids of those not
// answered, and the answers collected for a JSON reply.
func (ss *session) unregister(ex *exchange) (unanswered, responses [][]byte) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for key, id := range ex.pending {
		if ss.calls[key] == ex {
			delete(ss.calls, key)
		}
		unanswered = append(unanswered, id)
	}
	ex.pending, ex.complete = nil, true
	for i, x := range ss.live {
		if x == ex {
			ss.live = append(ss.live[:i:i], ss.live[i+1:]...)
			break
		}
	}
	return unanswered, ex.responses
}

// cancelled takes the client's notifications/cancelled: the request it
// names will get no response, so its POST stops waiting for one.
func (ss *session) cancelled(params []byte) {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(params, &p) != nil || p.RequestID == nil {
		return
	}
	key := idKey(p.RequestID)
	ss.mu.Lock()
	ex := ss.calls[key]
	if ex == nil {
		ss.mu.Unlock()
		return
	}
	delete(ss.calls, key)
	delete(ex.pending, key)
	ex.complete = len(ex.pending) == 0
	ss.mu.Unlock()
	ss.release(ex)
}

// attach makes st the session's GET stream, first sending it the queued
// messages, and returns the stream it replaces.
func (ss *session) attach(st *stream) (old *stream) {
	st.mu.Lock()
	defer st.mu.Unlock()
	ss.mu.Lock()
	old, ss.get = ss.get, st
	queued := ss.queue
	ss.queue, ss.queueBytes = nil, 0
	ss.mu.Unlock()
	for i, msg := range queued {
		if err := st.writeLocked(encodeEvent(msg)); err != nil {
			ss.log.Debug("GET stream gone while sending queued messages", "lost", len(queued)-i)
			break
		}
	}
	return old
}

// detach forgets st as the GET stream, if it still is.
func (ss *session) detach(st *stream) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.get == st {
		ss.get = nil
	}
}

// closeGET ends the GET stream, if one is open.
func (ss *session) closeGET() {
	ss.mu.Lock()
	st := ss.get
	ss.mu.Unlock()
	if st != nil {
		st.finish()
	}
}
