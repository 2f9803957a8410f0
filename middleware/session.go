package middleware

import (
	"bytes"
	"cmp"
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
	"github.com/mcpwrap/mcpwrap/internal/rpcclient"
	"github.com/mcpwrap/mcpwrap/resilience"
)

// Defaults for the Session's timing fields.
const (
	// DefaultDrainTimeout bounds the wait for in-flight requests at shutdown.
	DefaultDrainTimeout = time.Second
	// DefaultReadyTimeout is how long a client's handshake waits for the
	// upstream before the sidecar answers it itself: below the ~60 s clients
	// wait for a server.
	DefaultReadyTimeout = 30 * time.Second
)

// A Dialer connects to the upstream: it starts the child process or opens
// the remote connection. A [Session] dials for the first load and again for
// every restart after a crash.
type Dialer func(ctx context.Context) (Conn, error)

// Handshake is the client's opening exchange, kept so that a restarted
// upstream can be initialised the way the client initialised the first one.
type Handshake struct {
	Method      string          // "initialize" or "server/discover"; "" before the client sent one
	Params      json.RawMessage // the client's params, as sent
	Result      json.RawMessage // the upstream's result; nil until one succeeded
	Initialized bool            // the client sent notifications/initialized
}

// A Session relays one client's JSON-RPC messages to one upstream and back,
// and keeps the client's session alive while the upstream starts, fails,
// crashes and restarts.
//
// Messages it does not intercept are forwarded byte for byte. It
// intercepts the handshake (performed with the sidecar's own ids, so it can
// be replayed to a restarted upstream, and answered by the sidecar itself
// when the upstream is not ready within ReadyTimeout), tools/list and
// tools/call (see Tools), and, while no upstream is ready, every request,
// which it answers with the upstream's status rather than leave it hanging.
//
// Set Client and Dial, then call Run once. Handshake, Call, Status, Stats
// and ReevaluateTools are safe to use concurrently with Run.
type Session struct {
	Name   string       // the upstream server's name, for logs and messages
	Client Conn         // the MCP client's side
	Dial   Dialer       // connects to the upstream
	Logger *slog.Logger // nil discards logs

	// Tools, when set, gates tools/list and tools/call and serves the
	// discovery tool. Nil passes both through untouched while the upstream
	// is available. When it is a [VersionedPolicy], calls are judged from
	// the verdicts the Session keeps (see ReevaluateTools).
	Tools ToolPolicy
	// DiscoveryTool names the discovery tool; "" means [DefaultDiscoveryTool].
	DiscoveryTool string
	// Discovery is [DiscoveryAuto] (the default when ""), [DiscoveryAlways]
	// or [DiscoveryNever].
	Discovery DiscoveryMode
	// MaxCatalogBytes bounds the upstream's tool catalog the sidecar
	// keeps (the definitions of every page, as sent), and the cache of
	// what it read from definitions alike. A catalog larger than that
	// fails to load (a call to a tool not known yet fails closed), and a
	// definition on a tools/list page that the catalog cannot take is not
	// shown and not callable. Zero means [DefaultMaxCatalogBytes].
	MaxCatalogBytes int
	// CatalogSeen, when set, is called with every full catalog loaded from
	// the upstream (to record it, or to set an approval baseline). It must
	// not call back into the Session.
	CatalogSeen func(tools []json.RawMessage)

	// ReadyTimeout is how long a client's handshake waits for the upstream
	// before the sidecar answers it in degraded mode. Zero means
	// [DefaultReadyTimeout].
	ReadyTimeout time.Duration
	// HandshakeTimeout bounds one attempt's handshake, after which the
	// attempt fails as transient and the connection is closed. Zero means no
	// bound while the connection lives, which suits a local child that is
	// slow to start: it is not killed for being slow.
	HandshakeTimeout time.Duration
	// Retrier loads the upstream; nil means a zero [resilience.Retrier]
	// (its default policy: see docs/DESIGN.md, Resilience). The Session
	// retries with a copy, whose OnRetry publishes the Session's status and
	// whose Logger, when nil, is the Session's; the Retrier itself is never
	// written, so Sessions may share one.
	Retrier *resilience.Retrier
	// CrashBudget bounds restarts after crashes; nil means a budget of the
	// Session's own, of [resilience.DefaultCrashRestarts] restarts in
	// [resilience.DefaultCrashWindow]. Sessions sharing one share the
	// budget.
	CrashBudget *resilience.CrashBudget
	// Reconnect paces "reconnect on use" after a permanent failure; nil
	// means a Throttle of the Session's own, allowing one attempt every
	// [resilience.DefaultThrottleInterval]. Sessions sharing one share
	// the pace.
	Reconnect *resilience.Throttle
	// DrainTimeout bounds the wait for in-flight requests when the client
	// goes away or Run's context is done. Zero means [DefaultDrainTimeout].
	DrainTimeout time.Duration
	// StreamIdleTimeout bounds how long a long upstream message relayed to
	// the client as it arrives (see stream.go) may wait for its next bytes:
	// the client's line holds up every other message to the client, so a
	// stalled one is ended and its request answered with an error. Zero
	// means [DefaultStreamIdleTimeout].
	StreamIdleTimeout time.Duration
	// MaxHeldRequests bounds the client requests held at once while they
	// wait: calls to a tool not known yet waiting for the tool catalog,
	// handshakes waiting for the upstream, requests waiting for an upstream
	// that restarts after a crash. Past it a request is answered at once
	// with a retryable error (an isError result for tools/call). Zero means
	// [DefaultMaxHeldRequests].
	MaxHeldRequests int
	// MaxHeldBytes bounds the total size of the requests held, as
	// MaxHeldRequests bounds their number. Zero means [DefaultMaxHeldBytes].
	// The same two bounds cap the resource subscriptions and the
	// subscriptions/listen requests remembered for replay to a restarted
	// upstream.
	MaxHeldBytes int
	// MaxInFlight bounds the requests in flight at once in each direction:
	// the client's requests sent to the upstream and not answered yet, and
	// the upstream's requests relayed to the client and not answered yet.
	// Past it a client request is answered at once with a retryable error
	// (an isError result for tools/call), and an upstream request with an
	// error. A request whose id is over 1 KiB is refused in either
	// direction, so the ids kept stay bounded too. Zero means
	// [DefaultMaxInFlight].
	MaxInFlight int
	// CallTimeout bounds the wait for the upstream's answer to a client
	// request. Past it the sidecar answers the request itself (an isError
	// result for tools/call, a JSON-RPC error otherwise), sends the upstream
	// notifications/cancelled for it and frees its id; a late answer is
	// dropped. A progress notification from the upstream for the request
	// (its _meta.progressToken) restarts the bound. Zero means no bound.
	CallTimeout time.Duration

	hooks hooks // where tests step in

	once  sync.Once
	log   *slog.Logger
	ownID string            // this Session's own-id prefix: ownIDPrefix, its nonce and "-"
	own   *rpcclient.Client // the sidecar's own requests to the upstream, in the ownID space
	kick  chan struct{}     // wakes the supervisor for a reconnect on use
	// life is done when Run returns: the context of the Session's writes
	// that no request's context bounds (answers and notifications to the
	// client among them, which the drain and Run's end still send).
	life    context.Context
	endLife context.CancelFunc

	// What Retrier, CrashBudget and Reconnect stand for. The Session never
	// writes its caller's values (several Sessions may share them): it
	// retries with a copy of the Retrier, which logs through the Session's
	// logger when the caller's has none.
	retrier   resilience.Retrier
	crashes   *resilience.CrashBudget
	reconnect *resilience.Throttle

	// tracker is the one owner of where each request id in flight is, in
	// either direction; it has its own lock.
	tracker *tracker
	// cat is the tool catalog; it has its own locks, never held with mu
	// (see catalogState).
	cat catalogState
	// hs is the client's handshake, logging level and subscriptions, and
	// its handshakes waiting; it has its own lock, never held with mu.
	hs        handshakeState
	versioned VersionedPolicy // Tools, when it is one; set by init
	// ready is up when its handshake is done, else nil: set with up and
	// its ready under mu, read without it by every client request.
	ready atomic.Pointer[link]

	counts counters // what Stats reports

	mu         sync.Mutex
	ctx        context.Context // Run's, for the sidecar's own background requests
	up         *link           // the current upstream connection, nil between connections
	status     resilience.Outcome
	clientView int // what the client last learned of status: availability (view*)

	gating     goroutines // requests waiting off the client pump: the drain and Run wait for them
	background goroutines // catalog loads, refreshes, relayed handshakes: Run waits for them

	holds holdState // the requests held and the restart they may wait for (see hold.go)
}

// hooks are where tests step into a Session. Each is set before Run and
// never written after; the zero value steps in nowhere.
type hooks struct {
	// afterFunc arms the ready timeout and the call timeouts; nil means
	// time.AfterFunc (set by init).
	afterFunc func(time.Duration, func()) interface{ Stop() bool }
	// verdictRead, when set, is called by gateCall right after it reads
	// the verdict on a call to the named tool.
	verdictRead func(name string)
	// handshakeCaptured, when set, is called by clientHandshake between
	// capturing the client's handshake and looking at the upstream.
	handshakeCaptured func()
	// handshakeReady, when set, is called by the upstream's handshake
	// between marking the upstream ready and answering the client's
	// handshakes waiting.
	handshakeReady func()
	// streamHead, when set, is called by streamUpstream with the head of a
	// response it may relay as it arrives, before it takes the request the
	// response answers.
	streamHead func()
}

// link is one connection to the upstream, from dial to death.
type link struct {
	conn  Conn
	dead  chan struct{} // closed when its reader ended
	err   error         // why it ended; set before dead is closed
	ready bool          // a handshake succeeded on it (guarded by Session.mu)
	hsVer int           // the version of the client's handshake it succeeded with (see handshakeState.current; guarded by Session.mu)
	calls linkCalls     // what the Session's tracker keeps of it (guarded by the tracker's lock)
}

// gone reports whether the link's reader has ended: the upstream is gone.
func (l *link) gone() bool {
	select {
	case <-l.dead:
		return true
	default:
		return false
	}
}

// Handshake returns a copy of the handshake captured so far.
func (s *Session) Handshake() Handshake {
	return s.hs.handshake()
}

// Status returns the upstream's current load status: transient until the
// first load ends, available once a load's handshake and first catalog are
// done; idle, before that, while an [OnDemand] Dialer waits for the
// client's first request (the upstream not started, nothing failed).
func (s *Session) Status() resilience.Outcome {
	s.once.Do(s.init)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status
}

func (s *Session) init() {
	s.log = s.Logger
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.ownID = newOwnIDPrefix()
	s.own = rpcclient.New(s.ownID, decodeRPCError)
	s.versioned, _ = s.Tools.(VersionedPolicy)
	s.cat.identities.limit = s.maxCatalogBytes()
	s.kick = make(chan struct{}, 1)
	s.life, s.endLife = context.WithCancel(context.Background())
	s.ctx = context.Background()
	s.status = resilience.Outcome{Server: s.Name, Class: resilience.Transient}
	if s.Retrier != nil {
		s.retrier = *s.Retrier
	}
	if s.retrier.Logger == nil {
		s.retrier.Logger = s.log
	}
	s.retrier.OnRetry = s.setStatus
	s.crashes = cmp.Or(s.CrashBudget, &resilience.CrashBudget{})
	s.reconnect = cmp.Or(s.Reconnect, &resilience.Throttle{})
	if s.hooks.afterFunc == nil {
		s.hooks.afterFunc = func(d time.Duration, f func()) interface{ Stop() bool } { return time.AfterFunc(d, f) }
	}
	s.tracker = newTracker(s.CallTimeout, s.hooks.afterFunc, s.expired)
}

// Run relays messages until the client goes away or ctx is done, then waits
// up to DrainTimeout for in-flight requests, closes the upstream and
// returns. Either way it shuts down alike: while the drain lasts the upstream
// keeps running and its answers still reach the client, and a request the
// drain leaves unanswered is answered with an error. It returns nil when
// the client closed its side or ctx is done; an upstream that fails never
// ends the session. Every goroutine Run starts has ended when it returns:
// it closes Client to end a read still blocked on it (a Conn whose Close
// does not end a blocked read is waited for up to DrainTimeout, then left).
func (s *Session) Run(ctx context.Context) error {
	s.once.Do(s.init)
	defer s.endLife()
	done := ctx.Done()
	// The relay's own context outlives ctx by the drain: cancelling ctx
	// (SIGTERM, SIGINT) must not stop the upstream before its in-flight
	// answers are relayed, exactly as when the client closes its side.
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	// What the client asked of the upstream, for an OnDemand Dialer: Run's
	// own, kept where the dial and the client pump find it.
	ctx = context.WithValue(ctx, demandKey{}, newDemand(s))
	s.mu.Lock()
	s.ctx = ctx
	s.mu.Unlock()

	supervised := make(chan struct{})
	go func() {
		defer close(supervised)
		s.supervise(ctx)
	}()
	clientDone := make(chan error, 1)
	pumped := make(chan struct{})
	go func() {
		defer close(pumped)
		clientDone <- s.pumpClient(ctx)
	}()

	var err error
	select {
	case err = <-clientDone:
		if errors.Is(err, io.EOF) || errors.Is(err, errClientGone) {
			err = nil
		}
		s.log.Debug("client closed its side; draining")
	case <-done:
		s.log.Debug("shutting down; draining")
	}
	s.drain()
	cancel()
	s.awaitWriters(supervised)
	// The upstream is closed and its reader gone: what is still in flight
	// will never be answered by it.
	s.failInflight(nil, "the session ended before the request was answered", nil)
	s.awaitWriters(s.gating.stop())
	s.awaitWriters(s.stopCallTimers())
	s.endHandshakes()
	s.awaitWriters(s.background.stop())
	// The client pump may still be reading a client that has not closed its
	// side: closing the Conn ends the read, so the pump does not outlive Run.
	// A pump that has ended already (the client closed its side) needs no
	// Close, which could cut off the answers just written (a Conn such as
	// the HTTP front's aborts the streams still delivering them).
	select {
	case <-pumped:
	default:
		s.Client.Close()
		s.awaitClientPump(pumped)
	}
	return err
}

// awaitClientPump waits for the client pump to end once the client's Conn
// is closed, up to the drain timeout: a Conn whose Close does not end a
// blocked read breaks the Conn contract, and Run returns without it.
func (s *Session) awaitClientPump(pumped <-chan struct{}) {
	t := time.NewTimer(s.drainTimeout())
	defer t.Stop()
	select {
	case <-pumped:
	case <-t.C:
		s.log.Warn("closing the client's connection did not end its read; returning without it")
	}
}

// awaitWriters waits for done: for the supervisor to return, or for the
// calls still being judged off the client pump. They end at once, as Run's
// context is done, unless they are blocked writing to a client that
// stopped reading: after the drain timeout the client's side is closed to
// free them, and after another Run returns without them.
func (s *Session) awaitWriters(done <-chan struct{}) {
	t := time.NewTimer(s.drainTimeout())
	defer t.Stop()
	select {
	case <-done:
		return
	case <-t.C:
	}
	s.log.Warn("the client is not reading what it is sent; closing its side")
	s.Client.Close()
	t.Reset(s.drainTimeout())
	select {
	case <-done:
	case <-t.C:
		s.log.Warn("a write to the client is still blocked; returning without it")
	}
}

// drain waits until no client request is in flight, the upstream ends or
// the drain timeout passes, whichever comes first. A handshake waiting for
// the upstream counts, and so does a call still being judged: it ends
// answered or forwarded, and then in flight.
func (s *Session) drain() {
	t := time.NewTimer(s.drainTimeout())
	defer t.Stop()
	waiters := s.hs.waiting()
	gating := s.gating.idleChan()
	s.mu.Lock()
	l := s.up
	s.mu.Unlock()
	var dead <-chan struct{}
	if l != nil {
		dead = l.dead
	}
	for _, w := range waiters {
		if !s.awaitDrain(w.done, dead, t.C) {
			return
		}
	}
	if !s.awaitDrain(gating, dead, t.C) {
		return
	}
	idle := s.tracker.idleChan() // read now: the gated calls may have added to it
	s.awaitDrain(idle, dead, t.C)
}

// awaitDrain waits for done and reports whether it came before the
// upstream's end or the drain timeout.
func (s *Session) awaitDrain(done, dead <-chan struct{}, timeout <-chan time.Time) bool {
	select {
	case <-done:
		return true
	case <-dead:
	case <-timeout:
		s.log.Warn("in-flight requests not answered before shutdown", "count", s.inflight())
	}
	return false
}

func (s *Session) drainTimeout() time.Duration {
	if s.DrainTimeout > 0 {
		return s.DrainTimeout
	}
	return DefaultDrainTimeout
}

var errClientGone = errors.New("client is gone")

// pumpClient handles the client's messages.
func (s *Session) pumpClient(ctx context.Context) error {
	more, _ := s.Client.(bufferedReader)
	turn := &pumpTurn{}
	if more != nil {
		ctx = context.WithValue(ctx, turnKey{}, turn)
		defer s.endTurn(turn)
	}
	heads, _ := s.Client.(headReader)
	for {
		if more != nil && !more.Buffered() {
			s.endTurn(turn)
		}
		var msg []byte
		var err error
		if heads != nil {
			var whole bool
			if msg, whole, err = heads.ReadHead(); err == nil && !whole {
				if s.streamClient(heads, msg) {
					continue
				}
				msg, err = s.Client.ReadMessage() // held whole after all
			}
		} else {
			msg, err = s.Client.ReadMessage()
		}
		if err != nil {
			if e, ok := oversize(err); ok {
				env := framing.Envelope{ID: e.ID, Method: e.Method} // found wherever they are in it
				s.log.Error("client message too large; dropped", "bytes", e.Size, "limit", e.Limit)
				reason := fmt.Sprintf("message of %d bytes exceeds the %d-byte limit", e.Size, e.Limit)
				if l := s.takeServerRequest(env); l != nil {
					// The client's answer to the upstream's request: the
					// upstream is told, so that it does not wait forever.
					s.writeUpstream(l, errorResponse(env.ID, codeInternalError, "the client's "+reason+"; dropped", nil))
					continue
				}
				s.replyError(env.ID, codeInvalidRequest, reason)
				continue
			}
			return err
		}
		env, err := framing.PeekValid(msg) // one pass: the envelope, and whether msg is JSON at all
		if errors.Is(err, framing.ErrAmbiguous) {
			// Peers would read it differently; the gate cannot judge it.
			s.log.Warn("ambiguous message from client refused", "error", err)
			s.replyError(env.ID, codeInvalidRequest, "Invalid Request: "+err.Error())
			continue
		}
		if err != nil {
			s.log.Warn("malformed message from client", "error", err)
			s.replyError(nil, codeParseError, "Parse error: "+err.Error())
			continue
		}
		if more != nil {
			turn.set(more.Buffered())
		}
		switch env.Kind {
		case framing.Invalid:
			s.replyError(env.ID, codeInvalidRequest, "Invalid Request: neither a request, a notification nor a response")
		case framing.Request:
			s.clientRequest(ctx, msg, env)
		case framing.Notification:
			s.clientNotification(msg, env)
		case framing.Response:
			s.clientResponse(msg, env)
		case framing.Batch:
			s.clientBatch(ctx, msg)
		}
	}
}

func (s *Session) clientRequest(ctx context.Context, msg []byte, env framing.Envelope) {
	if s.isOwnID(env.ID) {
		s.replyError(env.ID, codeInvalidRequest, s.errOwnID())
		return
	}
	info := clientMethods[env.Method]
	if info.handle != nil {
		info.handle(s, ctx, env)
		return
	}
	if info.note != nil {
		info.note(s, env)
	}
	if s.readyLink() == nil {
		s.awaitUpstream(ctx, msg, env, false)
		return
	}
	s.relayRequest(ctx, msg, env, false)
}

// relayRequest gates a client's tools/call, or sends any other request to
// the ready upstream. held says msg is kept (see keep); relayRequest
// releases it.
func (s *Session) relayRequest(ctx context.Context, msg []byte, env framing.Envelope, held bool) {
	if s.Tools != nil && clientMethods[env.Method].is(gated) {
		s.gateCall(ctx, msg, env, held)
		return
	}
	s.send(ctx, msg, env)
	s.unhold(msg, held)
}

// send writes a client request to the ready upstream and tracks it until
// it is answered; with no upstream ready, the sidecar answers it.
func (s *Session) send(ctx context.Context, msg []byte, env framing.Envelope) {
	l, refused := s.trackReady(env)
	switch {
	case refused == refusedFull:
		s.log.Warn("too many client requests in flight; request refused", "method", env.Method, "limit", s.maxInFlight())
		s.answerBusy(env, s.errFull(), statusTooManyInFlight)
		return
	case refused != "":
		s.replyError(env.ID, codeInvalidRequest, string(refused))
		return
	case l == nil:
		s.answerUnready(ctx, env)
		return
	}
	if clientMethods[env.Method].is(reopened) {
		s.rememberListen(env.ID, msg)
	}
	if err := s.writeRequest(ctx, l, msg); err != nil {
		s.log.Warn("cannot write to upstream", "error", err)
		if s.untrack(env.ID) != "" {
			s.replyError(env.ID, codeInternalError, "the upstream server is not reachable; request not delivered")
		}
	}
}

// clientNotification forwards the client's notification to the ready
// upstream, once its method's notify handler, if any, has taken it and
// said it goes on.
func (s *Session) clientNotification(msg []byte, env framing.Envelope) {
	if notify := clientMethods[env.Method].notify; notify != nil && !notify(s, env) {
		return
	}
	s.forward(msg)
}

// takeServerRequest reports whether env, a message of the client's that is
// not a request (or the head of one too large to read), answers a request
// the current upstream is waiting on; if so the request is forgotten and
// its link returned, else nil.
func (s *Session) takeServerRequest(env framing.Envelope) *link {
	if env.Method != "" || env.ID == nil {
		return nil
	}
	s.mu.Lock()
	l := s.up
	s.mu.Unlock()
	if l == nil || !s.tracker.takeServer(l, env.ID) {
		return nil
	}
	return l
}

// writeUpstream writes msg to link l, logging a failure: l may have died.
func (s *Session) writeUpstream(l *link, msg []byte) {
	if err := l.conn.WriteMessage(s.life, msg); err != nil {
		s.log.Debug("cannot write to upstream", "error", err)
	}
}

// clientResponse routes the client's answer to a request of the upstream,
// unless that upstream has died since it asked.
func (s *Session) clientResponse(msg []byte, env framing.Envelope) {
	l := s.takeServerRequest(env)
	if l == nil {
		s.log.Debug("dropping the client's answer to a request of a previous upstream", "id", string(env.ID))
		return
	}
	s.writeUpstream(l, msg)
}

// clientBatch forwards a JSON-RPC batch as it is (MCP 2025-03-26 allowed
// them; later versions dropped them) unless it holds a message the sidecar
// must intercept, such as a tools/call that may be locked, or no upstream is
// ready: then every request in it is answered with an error, so nothing is
// silently lost and nothing bypasses the gate.
func (s *Session) clientBatch(ctx context.Context, msg []byte) {
	elems, err := framing.Elements(msg)
	if err != nil || len(elems) == 0 {
		s.replyError(nil, codeInvalidRequest, "Invalid Request: empty or malformed batch")
		return
	}
	reason := ""
	var reqs, others []framing.Envelope // others: the notifications and responses
	for _, e := range elems {
		env, err := framing.Peek(e)
		if err != nil {
			if errors.Is(err, framing.ErrAmbiguous) {
				if reason == "" {
					reason = "Invalid Request: " + err.Error()
				}
				if env.Kind == framing.Request {
					reqs = append(reqs, env) // answered too; with id null when "id" is what is ambiguous
				}
			}
			continue
		}
		if env.Kind == framing.Batch {
			// Its messages would pass unread; answered with an id of null.
			if reason == "" {
				reason = "Invalid Request: a batch inside a batch"
			}
			reqs = append(reqs, framing.Envelope{})
			continue
		}
		if clientMethods[env.Method].is(intercepted) && reason == "" {
			reason = "mcpwrap does not relay " + env.Method + " inside a batch; send it on its own"
		}
		if env.Kind == framing.Request {
			if s.isOwnID(env.ID) && reason == "" {
				reason = s.errOwnID()
			}
			reqs = append(reqs, env)
		} else {
			others = append(others, env)
		}
	}
	if reason == "" {
		switch l, refused := s.trackReady(reqs...); {
		case refused == refusedFull:
			reason = s.errFull()
		case refused != "":
			reason = string(refused)
		case l == nil:
			askUpstream(ctx) // refused, as while the upstream restarts, but it starts
			reason = s.Status().Message()
		default:
			// What a cancellation or an answer ends, it ends inside a batch
			// too, as on its own.
			for _, env := range others {
				switch notify := clientMethods[env.Method].notify; {
				case notify != nil:
					notify(s, env) // a cancellation: the intercepted ones refused the batch
				case env.Kind == framing.Response:
					s.takeServerRequest(env)
				}
			}
			if err := l.conn.WriteMessage(s.life, msg); err != nil {
				s.log.Warn("cannot write to upstream", "error", err)
				for _, env := range reqs {
					if s.untrack(env.ID) != "" {
						s.replyError(env.ID, codeInternalError, "the upstream server is not reachable; request not delivered")
					}
				}
			}
			return
		}
	}
	s.log.Warn("batch refused", "reason", reason)
	var b bytes.Buffer
	b.WriteByte('[')
	for i, env := range reqs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(errorResponse(env.ID, codeInvalidRequest, reason, nil))
	}
	b.WriteByte(']')
	if len(reqs) > 0 {
		if err := s.Client.WriteMessage(s.life, b.Bytes()); err != nil {
			s.log.Debug("cannot answer the client", "error", err)
		}
	}
}

// forward writes msg to the ready upstream, if there is one.
func (s *Session) forward(msg []byte) {
	if l := s.readyLink(); l != nil {
		s.writeUpstream(l, msg)
	}
}

// readyLink returns the current upstream connection when its handshake is
// done, else nil.
func (s *Session) readyLink() *link {
	return s.ready.Load()
}

// pumpUpstream handles one upstream connection's messages until it ends.
//
// When the upstream has sent several messages at once and both Conns
// allow it, the ones relayed to the client go out together: each is held
// back while the next is already buffered, and whatever is held is written
// before the pump waits for the upstream again.
func (s *Session) pumpUpstream(l *link) {
	defer close(l.dead)
	more, _ := l.conn.(bufferedReader)
	hold, _ := s.Client.(holdingWriter)
	if more == nil || hold == nil {
		more, hold = nil, nil
	}
	flush := func() {
		if hold == nil {
			return
		}
		if err := hold.Flush(); err != nil {
			s.log.Debug("cannot write to the client", "error", err)
		}
	}
	defer flush()
	heads, _ := l.conn.(headReader)
	parts, _ := s.Client.(partsWriter)
	if heads == nil || parts == nil {
		heads, parts = nil, nil
	}
	for {
		if more != nil && !more.Buffered() {
			flush()
		}
		var msg []byte
		var err error
		if heads != nil {
			var whole bool
			if msg, whole, err = heads.ReadHead(); err == nil && !whole {
				if s.streamUpstream(l, heads, parts, msg) {
					continue
				}
				msg, err = l.conn.ReadMessage() // held whole after all
			}
		} else {
			msg, err = l.conn.ReadMessage()
		}
		if err != nil {
			if e, ok := oversize(err); ok {
				env := framing.Envelope{ID: e.ID, Method: e.Method} // found wherever they are in it
				s.log.Error("upstream message too large; dropped", "bytes", e.Size, "limit", e.Limit)
				reason := fmt.Sprintf("the upstream's response of %d bytes exceeds the %d-byte message limit (max_line_bytes); dropped", e.Size, e.Limit)
				switch {
				case env.ID == nil:
				case env.Method != "": // the upstream's own request: it must not wait forever
					s.writeUpstream(l, errorResponse(env.ID, codeInternalError, fmt.Sprintf("the request of %d bytes exceeds the %d-byte message limit of mcpwrap (max_line_bytes); dropped", e.Size, e.Limit), nil))
				case s.isOwnID(env.ID):
					s.deliverOwnReply(env.ID, errors.New(reason))
				default:
					if method, id, late := s.answeredBy(env.ID); method != "" && !late {
						s.replyError(id, codeInternalError, reason)
					}
				}
				continue
			}
			if failed, ok := errors.AsType[*RequestFailedError](err); ok {
				s.requestFailed(failed)
				continue
			}
			l.err = err
			return
		}
		env, err := framing.Peek(msg)
		ambiguous := errors.Is(err, framing.ErrAmbiguous)
		switch {
		case ambiguous:
			// Passed through: the client reads it its own way. Its envelope
			// holds the first spellings, and its id unless "id" is ambiguous.
			s.log.Warn("ambiguous message from upstream passed through", "error", err)
		case err != nil:
			s.log.Warn("upstream wrote a non-JSON line to stdout; moved to stderr", "line", printable(msg))
			continue
		}
		switch env.Kind {
		case framing.Response:
			if ambiguous && env.ID == nil {
				// Its "id" is spelled twice: which request it answers is the
				// client parser's guess (JavaScript's takes the last), and a
				// guess at a tools/list would show it unfiltered.
				s.log.Warn("upstream response with an ambiguous id dropped", "error", err)
				continue
			}
			if s.isOwnID(env.ID) {
				s.deliverOwn(msg, env, err)
				continue
			}
			method, late := s.answered(env.ID)
			if late {
				s.log.Debug("dropping the upstream's late answer to a request that timed out", "id", string(env.ID))
				continue
			}
			if s.answersNothing(method, env.ID) {
				continue
			}
			switch {
			case s.Tools == nil || !clientMethods[method].is(filtered):
			case ambiguous:
				// Which result the client reads is unknown: it cannot be filtered.
				msg = errorResponse(env.ID, codeInternalError, "the upstream's tools/list response is ambiguous; refused: "+err.Error(), nil)
			case s.answerAfterFirstCatalog(msg, method):
				continue
			case env.Result != nil:
				msg = s.rewriteToolsList(msg, env)
			}
		case framing.Request:
			if !s.trackServerRequest(l, env) {
				continue
			}
		case framing.Batch:
			if msg = s.upstreamBatch(l, msg); msg == nil {
				continue
			}
		case framing.Notification:
			switch env.Method {
			case "notifications/tools/list_changed":
				s.refreshLater()
			case "notifications/progress":
				s.progressed(env.Params)
			}
		}
		var werr error
		if more != nil && more.Buffered() {
			werr = hold.HoldMessage(msg)
		} else {
			werr = s.Client.WriteMessage(s.life, msg)
		}
		if werr != nil {
			s.log.Debug("cannot write to the client", "error", werr)
		}
	}
}

// runCtx returns Run's context.
func (s *Session) runCtx() context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ctx
}

// refreshLater reloads the tool catalog in the background, coalescing
// requests that arrive while a reload runs. It does nothing without a
// ToolPolicy. Until the reload ends, calls are judged by its catalog, not
// by the one the upstream just said is out of date (see gateCall); a load
// under way, which may have read pages from before the change, is not kept
// but done again (see loadAndKeepCatalog), and one that had kept such pages
// before the change, and that the refresh joined, is followed by another.
func (s *Session) refreshLater() {
	if s.Tools == nil {
		return
	}
	if !s.cat.startRefresh() {
		return
	}
	started := s.background.Go(func() {
		for {
			err := s.refreshCatalog(s.runCtx())
			if s.cat.refreshed(err) {
				return
			}
		}
	})
	if !started { // Run is returning
		s.cat.abandonRefresh()
	}
}

// upstreamBatch notes what a batch from the upstream holds: answers to the
// client's requests, which end them (an answer to tools/list is filtered as
// on its own), answers to the sidecar's own requests, which it takes out,
// and requests the client must answer. It returns the batch to pass on:
// msg itself when nothing changed, nil when nothing is left.
func (s *Session) upstreamBatch(l *link, msg []byte) []byte {
	elems, err := framing.Elements(msg)
	if err != nil {
		return msg
	}
	kept, changed := elems[:0:0], false
	for _, e := range elems {
		env, err := framing.Peek(e)
		ambiguous := errors.Is(err, framing.ErrAmbiguous)
		if err != nil && !ambiguous {
			kept = append(kept, e)
			continue
		}
		switch env.Kind {
		case framing.Response:
			if s.isOwnID(env.ID) {
				s.deliverOwn(e, env, err)
				changed = true
				continue
			}
			method, late := s.answered(env.ID)
			if late || s.answersNothing(method, env.ID) {
				changed = true
				continue
			}
			switch {
			case s.Tools == nil || !clientMethods[method].is(filtered):
			case ambiguous:
				e, changed = errorResponse(env.ID, codeInternalError, "the upstream's tools/list response is ambiguous; refused: "+err.Error(), nil), true
			case env.Result != nil:
				out := s.rewriteToolsList(e, env)
				e, changed = out, changed || !bytes.Equal(out, e)
			}
		case framing.Request:
			if env.ID != nil && !s.trackServerRequest(l, env) {
				changed = true
				continue
			}
		}
		kept = append(kept, e)
	}
	switch {
	case !changed:
		return msg
	case len(kept) == 0:
		return nil
	}
	return append(append([]byte{'['}, bytes.Join(kept, []byte{','})...), ']')
}

// answersNothing reports whether an upstream response with id, which the
// tracker matched to no request (method is ""), answers none of the
// client's, and logs that it is dropped: the upstream answered a request
// twice, or one it was never sent, perhaps under an id the client is about
// to use, which the client would take for that request's answer. A
// response whose id is null or missing (an error the upstream could not tie
// to a request) answers nothing the client waits for, and passes.
func (s *Session) answersNothing(method string, id []byte) bool {
	if method != "" || id == nil || string(id) == "null" {
		return false
	}
	s.log.Warn("dropping the upstream's response to no request in flight", "id", printable(id))
	return true
}

// orphanServerRequests ends the requests of dead link l that the client
// has yet to answer: the client is sent notifications/cancelled for each,
// and their ids are remembered (replacing those of an earlier dead link)
// until the client answers them, so that a late answer is dropped rather
// than taken for a request of the next upstream under the same id.
func (s *Session) orphanServerRequests(l *link) {
	for _, id := range s.tracker.orphan(l) {
		msg, _ := json.Marshal(map[string]any{
			"jsonrpc": "2.0",
			"method":  "notifications/cancelled",
			"params":  map[string]any{"requestId": json.RawMessage(id), "reason": "the server restarted; its request will not be completed"},
		})
		if err := s.Client.WriteMessage(s.life, msg); err != nil {
			s.log.Debug("cannot write to the client", "error", err)
		}
	}
}

// trackServerRequest records the upstream's request env, read on link l,
// as waiting for the client's answer. Past MaxInFlight such requests, or
// when its id is over maxIDBytes, it answers the upstream with an error
// instead and reports false: the request is not relayed.
func (s *Session) trackServerRequest(l *link, env framing.Envelope) bool {
	reason := ""
	switch refused, n := s.tracker.trackServer(l, env.ID, s.maxInFlight()); refused {
	case serverTracked:
		return true
	case serverIDTooLong:
		reason = string(refusedIDTooLong)
	case serverOrphanID:
		reason = "mcpwrap: the id is in use by a request of this server's previous process (before it restarted) that the client has not answered; this one was not relayed. Retry with another id."
	case serverFull:
		reason = fmt.Sprintf("mcpwrap: the client has %d of this server's requests to answer already (the limit of requests in flight); this one was not relayed. Retry when it has answered.", n)
	}
	s.log.Warn("upstream request refused", "method", env.Method, "reason", reason)
	data, _ := json.Marshal(map[string]any{"retryable": len(env.ID) <= maxIDBytes})
	s.writeUpstream(l, errorResponse(env.ID, codeInternalError, reason, data))
	return false
}

// trackReady records client requests as in flight on the ready upstream
// connection and returns it, or returns nil, tracking nothing, when no
// upstream is ready (see tracker.track, which also says why it may refuse
// them). The connection is read without s.mu; the tracker refuses one
// given up since, so a request is either tracked before its connection is
// given up (and failInflight answers it) or not sent to it at all.
func (s *Session) trackReady(envs ...framing.Envelope) (l *link, refused refusal) {
	l = s.readyLink()
	refused, gone := s.tracker.track(l, envs, s.maxInFlight())
	if gone {
		return nil, ""
	}
	return l, refused
}

// errFull is why a request is refused past MaxInFlight.
func (s *Session) errFull() string {
	return fmt.Sprintf("Server '%s': too many requests are in flight (the limit of %d requests in flight is reached); this one was not sent. Retry when an answer has arrived.", s.Name, s.maxInFlight())
}

// untrack forgets an in-flight client request and returns its method, or ""
// when id is not in flight: only on a method may the caller answer it.
func (s *Session) untrack(id []byte) string {
	return s.tracker.untrack(id)
}

func (s *Session) inflight() int {
	return s.tracker.len()
}

// failInflight answers every client request in flight on link l (on any
// link when l is nil) with an error, but for subscriptions/listen requests
// on l, which the next upstream is sent again. No request is tracked on l
// afterwards (on any link when l is nil).
func (s *Session) failInflight(l *link, reason string, data json.RawMessage) {
	for _, id := range s.tracker.fail(l) {
		s.replyErrorData(id, codeInternalError, reason, data)
	}
}

// printable shortens a stray line for a log record.
func printable(b []byte) string {
	const max = 512
	if len(b) > max {
		return string(b[:max]) + "…"
	}
	return string(b)
}
