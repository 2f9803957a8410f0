package middleware

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mcpwrap/mcpwrap/internal/era"
	"github.com/mcpwrap/mcpwrap/internal/framing"
	"github.com/mcpwrap/mcpwrap/resilience"
)

// This file holds the upstream's life cycle: loading it with bounded
// retries, performing and replaying the handshake, restarting it after a
// crash within the crash budget, and answering the client's handshake when
// the upstream is not ready in time.

// supervise keeps the upstream loaded until ctx is done.
func (s *Session) supervise(ctx context.Context) {
	defer s.shutdownLink()
	r := &s.retrier
	load := s.firstLoad(ctx)
	if load == nil {
		return
	}
	for {
		out := r.Load(ctx, s.Name, load)
		load = s.loadOnce
		s.mu.Lock()
		s.holds.setRestarting(false) // the requests waiting for a restart go on, or are answered
		s.mu.Unlock()
		if out.Class == resilience.Transient && ctx.Err() == nil {
			s.setStatus(out)
			out = r.Background(ctx, out, s.loadOnce)
		}
		if ctx.Err() != nil {
			return
		}
		s.setStatus(out)
		if out.Class != resilience.Available {
			s.answerWaitersDegraded()
			select { // permanent or denied: only a call reconnects ("reconnect on use")
			case <-ctx.Done():
				return
			case <-s.kick:
				s.log.Info("reconnecting on use")
				s.crashes.Reset() // a crash loop in the load (see loadOnce) is tried afresh, as in a restart's
				continue
			}
		}
		s.reconnect.Reset()

		s.mu.Lock()
		l := s.up
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-l.dead:
		}
		if ctx.Err() != nil {
			return
		}
		crash := s.linkError(l, true)
		s.log.Warn("upstream crashed", "error", crash)
		// The status changes with the link, so that no call in between is
		// told the upstream is available.
		loop := s.crashes.Crash(crash)
		restart := s.crashes.Recent()
		delay := r.RestartDelay(restart)
		// Attempt 1 of the restart is under way (its delay is part of it).
		status := resilience.Outcome{Server: s.Name, Class: resilience.Transient, Err: resilience.Classify(crash),
			Attempts: 1, RetryIn: delay, Restart: restart, MaxRestarts: s.crashes.Limit()}
		if loop != nil {
			status = resilience.Outcome{Server: s.Name, Class: resilience.Permanent, Err: resilience.Classify(loop), Attempts: out.Attempts}
		}
		tell := s.publishStatus(status) // first: a call now finds the link dead or gone, never "available"
		s.mu.Lock()
		s.up = nil
		s.ready.Store(nil)
		// With the link gone, in one step: a request finds the link, or waits for the restart.
		s.holds.setRestarting(loop == nil)
		s.mu.Unlock()
		l.conn.Close()                                                                    // its pipes, its process group, its remote session
		s.failInflight(l, "upstream restarted; request not completed", crashData(status)) // before the news, as they were asked first
		s.orphanServerRequests(l)
		if tell {
			s.notifyToolsChanged()
		}
		if loop != nil {
			select {
			case <-ctx.Done():
				return
			case <-s.kick:
				s.crashes.Reset()
				continue
			}
		}
		s.log.Info("restarting the upstream", "delay_ms", delay.Milliseconds())
		if r.Sleep(ctx, delay) != nil {
			return
		}
		s.counts.restarts.Add(1)
	}
}

// firstLoad makes the first load's dial before the load's retry budget
// starts, since an OnDemand Dialer waits in it for the client's first
// request, and returns the first load's op, whose first attempt goes on
// from that dial; nil when ctx is done first. Later dials are not held.
func (s *Session) firstLoad(ctx context.Context) resilience.Op {
	conn, err := s.Dial(ctx)
	if d := demandOf(ctx); d != nil {
		d.ask()
	}
	if ctx.Err() != nil {
		if conn != nil {
			conn.Close()
		}
		return nil
	}
	dialled := true
	return func(ctx context.Context, attempt int) error {
		if !dialled {
			return s.loadOnce(ctx, attempt)
		}
		dialled = false
		s.attemptRuns(attempt)
		return s.loadOn(ctx, attempt, conn, err)
	}
}

// loadOnce is one load attempt: connect, then handshake and first catalog.
func (s *Session) loadOnce(ctx context.Context, attempt int) error {
	s.attemptRuns(attempt)
	conn, err := s.Dial(ctx)
	return s.loadOn(ctx, attempt, conn, err)
}

// attemptRuns records in the status that load attempt runs.
func (s *Session) attemptRuns(attempt int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := &s.status; st.Class != resilience.Available {
		if st.Background == 0 && (st.MaxAttempts == 0 || attempt <= st.MaxAttempts) {
			st.Attempts = attempt // "attempt 1" while the first one runs; never past the load's budget
		}
		st.RetryIn = 0 // it runs now
	}
}

// loadOn is the rest of a load attempt once its dial returned conn or
// err: the handshake, then the first catalog.
func (s *Session) loadOn(ctx context.Context, attempt int, conn Conn, err error) error {
	if err != nil {
		return err
	}
	l := &link{conn: conn, dead: make(chan struct{})}
	s.mu.Lock()
	s.up = l
	s.ready.Store(nil)
	s.mu.Unlock()
	go s.pumpUpstream(l)
	if err := s.handshake(ctx, l, attempt); err != nil {
		s.closeLink(ctx)
		return err
	}
	err = s.firstCatalog(ctx, attempt)
	// The catalog kept completed the load and ended its wait (see
	// completeLoad); otherwise it ends here, once the status is published
	// and, when the load failed, the link gone.
	switch first := s.cat.dropFirst(); {
	case first != nil:
		defer close(first)
		if err == nil { // kept before the wait began: the load is complete all the same
			s.completeLoad()
		}
	case err != nil && s.Tools != nil && ctx.Err() == nil:
		err = nil // another load of the catalog, one a call started, kept one meanwhile
	}
	if err != nil {
		if l.gone() {
			// It died after a good handshake: a ready upstream crashed, as
			// in supervise, and counts towards the crash budget, so that one
			// dying right after every start is a crash loop whichever side
			// of its first catalog it dies on.
			if loop := s.crashes.Crash(s.linkError(l, true)); loop != nil {
				err = loop // not wrapped in err's *resilience.Error, which Classify would take instead
			}
		}
		// Published before the link goes, so that a call in between is
		// told this failure, never "available" (nor the tool unknown).
		c := s.retrier.Classifier.Classify(err)
		s.setStatus(resilience.Outcome{Class: c.Class, Err: c, Attempts: attempt})
		s.closeLink(ctx)
		return c
	}
	s.rememberUpstream()
	return nil
}

// firstCatalog waits for the catalog refresh the handshake started:
// the catalog is part of the load (docs/DESIGN.md, Resilience), so a load
// whose tools/list fails, or whose upstream goes away during it, fails as a
// whole, classified (see catalogError) and retried like any other. Until
// then the status is the load's, transient with its attempt, never
// "available": the catalog kept completes the load (see completeLoad).
// Without a ToolPolicy no catalog is loaded.
func (s *Session) firstCatalog(ctx context.Context, attempt int) error {
	if s.Tools == nil {
		return nil
	}
	end, result := s.cat.refreshEnd() // the handshake's refreshLater
	stop := s.waitProgress("tool list", attempt)
	defer stop()
	select {
	case <-end:
	case <-ctx.Done():
		return ctx.Err()
	}
	if err := result(); err != nil && ctx.Err() == nil {
		return s.catalogError(err) // cut off, it is a crash: the link was ready (see request)
	}
	return ctx.Err()
}

// completeLoad publishes the upstream available: its load's first catalog
// is kept (see catalogState.keep). The load's outcome follows from the
// Retrier (see supervise), with its time.
func (s *Session) completeLoad() {
	s.mu.Lock()
	st := s.status
	s.mu.Unlock()
	s.setStatus(resilience.Outcome{Class: resilience.Available, Attempts: st.Attempts, MaxAttempts: st.MaxAttempts, Background: st.Background})
}

// catalogError classifies err, why a load of the catalog failed, with a
// reason that says it was the catalog: an upstream's JSON-RPC error as the
// handshake's is, anything else as any load failure.
func (s *Session) catalogError(err error) *resilience.Error {
	var rpcErr *RPCError
	if errors.As(err, &rpcErr) {
		err = &resilience.RPCError{Code: rpcErr.Code, Message: rpcErr.Message}
	}
	c := *s.retrier.Classifier.Classify(err)
	c.Reason = "cannot list its tools: " + c.Reason
	return &c
}

// dropLink forgets the current upstream connection, closes it and returns
// it, or returns nil when there is none.
func (s *Session) dropLink() *link {
	s.mu.Lock()
	l := s.up
	s.up = nil
	s.ready.Store(nil)
	s.mu.Unlock()
	if l != nil {
		l.conn.Close()
	}
	return l
}

// closeLink closes the current upstream connection and waits for its
// reader to end; once ctx is done, it waits as shutdownLink does.
func (s *Session) closeLink(ctx context.Context) {
	l := s.dropLink()
	if l == nil {
		return
	}
	select {
	case <-l.dead:
	case <-ctx.Done():
		s.awaitReader(l)
	}
}

// shutdownLink closes the current upstream connection at the end of Run.
func (s *Session) shutdownLink() {
	if l := s.dropLink(); l != nil {
		s.awaitReader(l)
	}
}

// awaitReader waits for the reader of the closed link l to end. At the end
// of Run it may be stuck writing to a client that stopped reading; after
// the drain timeout the client's side is closed to free it, so that Run
// returns.
func (s *Session) awaitReader(l *link) {
	t := time.NewTimer(s.drainTimeout())
	defer t.Stop()
	select {
	case <-l.dead:
	case <-t.C:
		s.log.Warn("the client is not reading the upstream's messages; closing its side")
		s.Client.Close()
	}
}

// linkError describes why link l ended, for classification.
func (s *Session) linkError(l *link, ready bool) error {
	err := l.err
	if err == nil {
		err = errors.New("the upstream closed the connection")
	}
	var exit *resilience.ExitError
	if errors.As(err, &exit) {
		e := *exit
		e.Ready = ready
		return &e
	}
	return err
}

// handshake initialises the upstream on link l with the client's handshake
// (waiting for the client to send one), answers the client requests waiting
// for it, and replays the client's logging level and subscriptions.
func (s *Session) handshake(ctx context.Context, l *link, attempt int) error {
	if s.HandshakeTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.HandshakeTimeout)
		defer cancel()
	}
	sent := 0 // version of the client's handshake last sent on l
	for {
		hs, ver, changed := s.hs.current()
		if ver == sent || hs.Method == "" {
			select {
			case <-changed:
				continue
			case <-l.dead:
				return s.linkError(l, false)
			case <-ctx.Done():
				return handshakeCtxErr(ctx)
			}
		}
		sent = ver
		stop := s.waitProgress("handshake", attempt)
		r := s.request(ctx, l, hs.Method, hs.Params)
		stop()
		var rpcErr *RPCError
		switch {
		case errors.As(r.Err, &rpcErr):
			if hs.Method == "server/discover" {
				s.resolveWaiters(hs.Method, r.Msg)
				continue // the client falls back to initialize; wait for it
			}
			err := &resilience.RPCError{Code: rpcErr.Code, Message: rpcErr.Message}
			if c := s.retrier.Classifier.Classify(err); !c.Class.Retryable() {
				// Published before the client learns of the failure, so that
				// a call it sends next is told this class, not "starting up".
				s.setStatus(resilience.Outcome{Class: c.Class, Err: c, Attempts: attempt})
			}
			s.resolveWaiters(hs.Method, r.Msg)
			return err
		case r.Err != nil:
			select {
			case <-l.dead:
				return s.linkError(l, false)
			default:
			}
			if ctx.Err() != nil {
				return handshakeCtxErr(ctx)
			}
			return r.Err
		}
		if hs.Method == "initialize" {
			if err := l.conn.WriteMessage(ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); err != nil {
				if ctx.Err() != nil {
					return handshakeCtxErr(ctx)
				}
				return err
			}
		}
		s.hs.setResult(r.Result) // before the upstream is ready, so that whoever finds it ready finds the result
		if s.Tools != nil {
			// Before it is ready: whoever finds it ready finds the load
			// waiting for its first catalog (see firstCatalog).
			s.cat.awaitFirst()
		}
		s.mu.Lock()
		l.ready, l.hsVer = true, ver
		if s.up == l {
			s.ready.Store(l)
		}
		s.mu.Unlock()
		if s.hooks.handshakeReady != nil {
			s.hooks.handshakeReady()
		}
		// Read once the upstream is ready: what the client sets from now on
		// is relayed, and what it set before is replayed.
		level, subs := s.hs.replayState()
		if s.Tools == nil {
			// No catalog to load: the handshake completes the load. Else
			// the status stays the load's until its first catalog is kept
			// (see completeLoad). Published before the client learns the
			// upstream's answer, so that a call it sends next is not told
			// "starting up".
			s.setStatus(resilience.Outcome{Class: resilience.Available, Attempts: attempt})
		}
		s.resolveWaiters(hs.Method, r.Msg)
		s.checkRemembered(ctx, hs.Method, r.Result)
		if level != nil {
			s.replay(ctx, l, "logging/setLevel", level)
		}
		for _, uri := range subs {
			s.replay(ctx, l, "resources/subscribe", map[string]string{"uri": uri})
		}
		s.reopenListens(l)
		s.refreshLater()
		return nil
	}
}

func handshakeCtxErr(ctx context.Context) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%w: no answer to the handshake in time", resilience.ErrHandshakeTimeout)
	}
	return ctx.Err()
}

// replay re-sends a request of the client's session state to a restarted
// upstream.
func (s *Session) replay(ctx context.Context, l *link, method string, params any) {
	if r := s.request(ctx, l, method, params); r.Err != nil {
		s.log.Warn("cannot replay the client's session state", "method", method, "error", r.Err)
	}
}

// clientHandshake takes the client's initialize or server/discover: the
// upstream is initialised with it (now, or when it becomes ready), and the
// client gets the upstream's answer, or the sidecar's own when the upstream
// is not ready within ReadyTimeout; or, while an OnDemand dial waits, the
// upstream's answer in its last load.
func (s *Session) clientHandshake(ctx context.Context, env framing.Envelope) {
	// A waiter keeps its id, and its params until it is answered (the
	// session's handshake is replaced by the next one).
	size := len(env.ID) + len(env.Params)
	if !s.hold(env, size) {
		return
	}
	params := bytes.Clone(env.Params)
	w := &hsWaiter{id: bytes.Clone(env.ID), method: env.Method, done: make(chan struct{}), held: size}
	// Waiting before the upstream is looked at: one that becomes ready
	// after the look answers w (see resolveWaiters).
	ver, ok := s.hs.capture(env.Method, params, w)
	if !ok { // Run is returning: it has ended the handshakes waiting
		w.once.Do(func() { s.endWaiter(w) })
		return
	}
	if s.hooks.handshakeCaptured != nil {
		s.hooks.handshakeCaptured()
	}
	// Looked at after w waits: a dial that begins to wait after the look
	// answers w (see demand.await).
	if d := demandOf(ctx); d != nil && d.waiting() {
		if s.answerRemembered(d, w) {
			return
		}
		d.ask() // memory cannot answer it: the upstream must
	}
	s.mu.Lock()
	l, status, degraded := s.up, s.status, s.clientView == viewUnavailable
	ready := l != nil && l.ready
	taken := ready && l.hsVer >= ver
	s.mu.Unlock()

	switch {
	case taken:
		// The upstream's handshake took this one (or a later one) between
		// the capture and the look: its end answers w, and the ready timer
		// one of another method it did not answer. Relaying it as well
		// would initialise the upstream twice.
		w.arm(s.hooks.afterFunc(s.readyTimeout(), func() { s.answerDegraded(w) }))
	case ready && !s.hs.claim(w):
		// The ready upstream's handshake answered w (or is answering it)
		// between the capture and the look, with what it answered the
		// client's earlier one: relaying it as well would initialise the
		// upstream again for a request already answered.
	case ready:
		// A handshake on a ready upstream (a client starting over): relay
		// it. Claimed, w is answered by the relay alone (and still waited for
		// by the drain).
		started := s.background.Go(func() {
			r := s.request(s.runCtx(), l, w.method, json.RawMessage(params)) // env's bytes are the pump's
			if r.Msg != nil {
				s.resolveWaiter(w, r.Msg)
			} else {
				s.answerDegraded(w)
			}
		})
		if !started { // Run is returning
			s.answerDegraded(w)
		}
	case degraded || (status.Class != resilience.Transient && status.Attempts > 0):
		s.answerDegraded(w) // known not to come soon: do not make the client wait
	default:
		w.arm(s.hooks.afterFunc(s.readyTimeout(), func() { s.answerDegraded(w) }))
	}
}

// resolveWaiters answers the client's waiting handshakes of method with the
// upstream's response msg, given each its own id.
func (s *Session) resolveWaiters(method string, msg []byte) {
	env, err := framing.Peek(msg)
	if err != nil {
		return
	}
	for _, w := range s.hs.takeWaiters(method) {
		s.answerWaiter(w, msg, env)
	}
}

// resolveWaiter answers the client's handshake w, which its relay
// claimed, with the upstream's response msg.
func (s *Session) resolveWaiter(w *hsWaiter, msg []byte) {
	s.hs.dropWaiter(w)
	if env, err := framing.Peek(msg); err == nil {
		s.answerWaiter(w, msg, env)
	} else {
		s.answerDegraded(w)
	}
}

// answerWaiter answers w, unless answered already, with msg, the
// upstream's response whose envelope is env, given w's id.
func (s *Session) answerWaiter(w *hsWaiter, msg []byte, env framing.Envelope) {
	w.once.Do(func() {
		s.endWaiter(w)
		if env.Result != nil {
			s.mu.Lock()
			s.clientView = viewAvailable
			s.mu.Unlock()
		}
		if err := s.Client.WriteMessage(s.life, framing.Splice(msg, env.ID, w.id)); err != nil {
			s.log.Debug("cannot answer the client", "error", err)
		}
	})
}

// endHandshakes ends the client's handshakes still waiting as Run ends,
// stopping their ready timers, and answers each with an error, as every
// request the session leaves unanswered is: a client that sent initialize
// and closed its side at once still reads the answer. A handshake the
// client pump reads after it does not wait (see handshakeState.capture), so
// that no ready timer is armed once Run has stopped them.
func (s *Session) endHandshakes() {
	for _, w := range s.hs.endWaiting() {
		w.once.Do(func() {
			s.endWaiter(w)
			s.replyError(w.id, codeInternalError, "the session ended before the request was answered")
		})
	}
}

// endWaiter marks the handshake waiter w answered, stops its ready timer
// and releases its hold; call it once, under w.once.
func (s *Session) endWaiter(w *hsWaiter) {
	w.disarm()
	close(w.done)
	s.release(w.held)
}

func (s *Session) answerWaitersDegraded() {
	for _, w := range s.hs.takeWaiters("") {
		s.answerDegraded(w)
	}
}

// answerDegraded answers a client handshake on the upstream's behalf: the
// session goes on with the discovery tool only, until the upstream is ready.
func (s *Session) answerDegraded(w *hsWaiter) {
	w.once.Do(func() {
		s.endWaiter(w)
		params := s.hs.dropWaiter(w)
		// Also after a refused server/discover: the client's fallback
		// initialize must not wait a second ready timeout.
		s.mu.Lock()
		s.clientView = viewUnavailable
		s.mu.Unlock()
		st := s.Status()
		s.log.Warn("answering the client's handshake without the upstream", "method", w.method, "status", st.Class.String())
		if w.method == "server/discover" {
			s.reply(w.id, s.degradedDiscover(params, st.Message()))
			return
		}
		caps, info := s.degradedSelf()
		res, _ := json.Marshal(map[string]any{
			"protocolVersion": cmp.Or(initializeVersion(params), era.SessionVersion),
			"capabilities":    caps,
			"serverInfo":      info,
			"instructions":    st.Message(),
		})
		s.reply(w.id, res)
	})
}

// answerUnready answers a client request while no upstream is ready, so
// that nothing hangs: the discovery tool works, other tools and requests
// are told the upstream's status.
func (s *Session) answerUnready(ctx context.Context, env framing.Envelope) {
	st := s.Status()
	s.reconnectOnUse(st)
	switch info := clientMethods[env.Method]; {
	case info.is(answeredEmpty):
		s.reply(env.ID, json.RawMessage(`{}`)) // the state is replayed once the upstream is ready
	case info.unready != nil:
		info.unready(s, ctx, env, st)
	default:
		b, _ := json.Marshal(statusMeta(st))
		s.replyErrorData(env.ID, codeInternalError, st.Message(), b)
	}
}

// answerWith returns an unready handler that answers result.
func answerWith(result string) func(*Session, context.Context, framing.Envelope, resilience.Outcome) {
	return func(s *Session, _ context.Context, env framing.Envelope, _ resilience.Outcome) {
		s.reply(env.ID, json.RawMessage(result))
	}
}

// unreadyToolsList answers tools/list while no upstream is ready: the
// discovery tool alone, when it is shown.
func (s *Session) unreadyToolsList(_ context.Context, env framing.Envelope, _ resilience.Outcome) {
	tools := []json.RawMessage{}
	if locked := s.cat.lockedTools(); s.showDiscovery(locked) {
		tools = append(tools, s.discoveryDefinition(locked))
	}
	res, _ := json.Marshal(map[string]any{"tools": tools})
	s.reply(env.ID, res)
}

// unreadyToolsCall answers tools/call while no upstream is ready, st being
// its status: the discovery tool works, other tools are told the status.
func (s *Session) unreadyToolsCall(ctx context.Context, env framing.Envelope, st resilience.Outcome) {
	p, err := s.parseCall(env)
	switch {
	case err == nil && p.Name == s.discoveryName():
		s.reply(env.ID, s.discover(ctx, p.Arguments))
	case err == nil && st.Err != nil && st.Err.Code == resilience.CodeServerDisabled:
		s.reject(env.ID, p.Name, statusServerDisabled) // not started: every tool is locked so
	default:
		s.reply(env.ID, toolError(st.Message(), statusMeta(st)))
	}
}

// isDiscoveryCall reports whether env, a tools/call, calls the discovery
// tool, which unreadyToolsCall answers whatever the status.
func (s *Session) isDiscoveryCall(env framing.Envelope) bool {
	p, err := s.parseCall(env)
	return err == nil && p.Name == s.discoveryName()
}

// crashData is the error data of a request the crash that status
// describes left unanswered: the status as every status answer carries it
// (see statusMeta), and its cause, which the fixed message does not say.
func crashData(status resilience.Outcome) json.RawMessage {
	meta := statusMeta(status)
	if status.Err != nil {
		meta["error"] = status.Err.Error()
	}
	b, _ := json.Marshal(meta)
	return b
}

// statusMeta is the machine-readable status of the upstream sent as _meta.
func statusMeta(o resilience.Outcome) map[string]any {
	m := o.Meta()
	meta := map[string]any{"status": m.Status, "class": m.Class.String(), "attempts": m.Attempts, "retryable": m.Retryable}
	if m.Restart > 0 {
		meta["restart"] = m.Restart
	}
	if m.Background > 0 {
		meta["background"] = m.Background
	}
	if m.Reason != "" {
		meta["reason"] = m.Reason
	}
	return meta
}

// reconnectOnUse wakes the supervisor of an upstream that failed
// permanently, at most once per Reconnect interval. A denied upstream is
// not reloaded on use: sending the credentials it refused again cannot
// help, and only a change that can fix them reloads it (a sign-in: see
// [Session.Retry]).
func (s *Session) reconnectOnUse(st resilience.Outcome) {
	if st.Class != resilience.Permanent || !s.reconnect.Allow() {
		return
	}
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// What the client was last told about the upstream's availability.
const (
	viewNone        = iota // no handshake answered yet
	viewAvailable          // the upstream answered the client's handshake, or list_changed followed
	viewUnavailable        // the sidecar answered it (degraded), or the upstream went away since
)

// setStatus publishes the upstream's load status. When availability changes
// from what the client last saw, the client's tool list changed (the real
// tools and the discovery tool swap places), so it is told; when the
// upstream became available, so did its lists of resources and prompts
// (empty while it was not).
func (s *Session) setStatus(o resilience.Outcome) {
	if s.publishStatus(o) {
		s.notifyToolsChanged()
		if o.Class == resilience.Available {
			s.notifyListsChanged()
		}
	}
}

// publishStatus records the load status and reports whether the client
// must be told its tools changed.
func (s *Session) publishStatus(o resilience.Outcome) (tell bool) {
	if o.Server == "" {
		o.Server = s.Name
	}
	view := viewUnavailable
	if o.Class == resilience.Available {
		view = viewAvailable
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.holds.restarting && o.Class == resilience.Transient && o.Restart == 0 {
		// A retry of the restart's load: it is still that restart.
		o.Restart, o.MaxRestarts = s.status.Restart, s.status.MaxRestarts
	}
	s.status = o
	tell = s.clientView != viewNone && s.clientView != view
	if tell {
		s.clientView = view
	}
	return tell
}

// notifyToolsChanged tells the client its tool list changed.
func (s *Session) notifyToolsChanged() {
	s.log.Info("tools changed; notifying the client")
	if err := s.Client.WriteMessage(s.life, []byte(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`)); err != nil {
		s.log.Debug("cannot notify the client", "error", err)
	}
}

// degradedDiscover is the sidecar's own server/discover result (the
// 2026-07-28 protocol's handshake) while the upstream is not ready: the
// version the client asked for, the tools capability (the discovery tool,
// and the real tools announced by list_changed once the upstream is up), the
// upstream's status as instructions, and a cache lifetime of zero, since
// all of it changes when the upstream comes.
func (s *Session) degradedDiscover(params json.RawMessage, instructions string) json.RawMessage {
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	_ = json.Unmarshal(params, &p)
	var version string
	_ = json.Unmarshal(p.Meta[era.MetaProtocolVersion], &version)
	if version == "" {
		version = era.StatelessVersion
	}
	caps, info := s.degradedSelf()
	res, _ := json.Marshal(map[string]any{
		"resultType":        "complete",
		"supportedVersions": []string{version},
		"capabilities":      caps,
		"instructions":      instructions,
		"ttlMs":             0,
		"cacheScope":        "private",
		"_meta":             map[string]any{era.MetaServerInfo: info},
	})
	return res
}

// withClientMeta returns the params of one of the sidecar's own requests
// with the client's _meta description added when the client speaks the
// 2026-07-28 protocol (it opened with server/discover): an upstream of that
// protocol refuses a request without it, and must see the sidecar's
// requests as the client's. Each key is set in the params' _meta (made
// when absent) unless it is there already, the rest of params kept as
// given ([framing.SetMemberPath]); a key the client spelled ambiguously is
// not copied, and params that cannot be set in for sure are returned as
// they are, as are the params of the session era.
func (s *Session) withClientMeta(params json.RawMessage) json.RawMessage {
	hs := s.hs.handshake()
	if hs.Method != "server/discover" {
		return params
	}
	from, found, err := framing.LookupMember(hs.Params, "_meta")
	if err != nil || !found {
		return params
	}
	out := []byte(params)
	if t := bytes.TrimSpace(out); len(t) == 0 || string(t) == "null" {
		out = []byte("{}")
	}
	set := false
	for _, k := range era.ClientMetaKeys {
		v, ok, err := framing.LookupMember(from, k)
		if err != nil || !ok {
			continue
		}
		meta, _, err := framing.LookupMember(out, "_meta")
		if err != nil {
			return params
		}
		if _, has, err := framing.LookupMember(meta, k); err != nil {
			return params
		} else if has {
			continue
		}
		if out, err = framing.SetMemberPath(out, []string{"_meta", k}, v); err != nil {
			return params
		}
		set = true
	}
	if !set {
		return params
	}
	return out
}

// reopenListens sends the client's subscriptions/listen requests still in
// flight to link l, a restarted upstream, as the client sent them: its
// listen streams go on with the new upstream's notifications.
func (s *Session) reopenListens(l *link) {
	msgs := s.tracker.relink(l)
	for _, msg := range msgs {
		s.writeUpstream(l, msg)
	}
	if len(msgs) > 0 {
		s.log.Info("subscriptions re-opened on the restarted upstream", "listens", len(msgs))
	}
}
