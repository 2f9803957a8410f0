package middleware

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mcpwrap/mcpwrap/internal/framing"
	"github.com/mcpwrap/mcpwrap/resilience"
)

// This file holds the client requests that wait: for the tool catalog (a
// call to a tool not known yet), for the upstream's answer to the client's
// handshake, and for an upstream restarting after a crash. Each keeps a
// copy of what it needs, so together they are bounded in count and bytes;
// past either bound a request is answered at once with a retryable error.
// The same bounds cap the resource subscriptions and the subscriptions/listen
// requests remembered for replay.

// Defaults for the bounds on held requests.
const (
	// DefaultMaxHeldRequests bounds how many client requests wait at once.
	DefaultMaxHeldRequests = 256
	// DefaultMaxHeldBytes bounds the bytes of the client requests that
	// wait at once: as large as the largest message by default, so that
	// any message may wait on its own.
	DefaultMaxHeldBytes = DefaultMaxMessageBytes
)

// statusTooManyWaiting is the status of a request refused because too many
// wait, sent as _meta.status (or the error's data.status).
const statusTooManyWaiting = "too_many_waiting"

// DefaultMaxInFlight bounds the requests in flight at once in each
// direction: the client's waiting for the upstream's answer, and the
// upstream's waiting for the client's.
const DefaultMaxInFlight = 4096

// maxIDBytes bounds the raw id of a request the Session tracks in flight
// (in either direction): with DefaultMaxInFlight, the ids it keeps stay
// within a few MiB whatever a peer sends. MCP ids are short strings and
// numbers; a longer one is refused, not relayed. It matches the longest id
// the framing reader recovers from an oversized message.
const maxIDBytes = 1 << 10

// statusTooManyInFlight is the status of a request refused because
// MaxInFlight requests are in flight, sent as _meta.status (or the error's
// data.status).
const statusTooManyInFlight = "too_many_in_flight"

// maxInFlight returns MaxInFlight or its default.
func (s *Session) maxInFlight() int {
	if s.MaxInFlight > 0 {
		return s.MaxInFlight
	}
	return DefaultMaxInFlight
}

// heldBounds returns MaxHeldRequests and MaxHeldBytes, or their defaults.
func (s *Session) heldBounds() (count, size int) {
	count, size = s.MaxHeldRequests, s.MaxHeldBytes
	if count <= 0 {
		count = DefaultMaxHeldRequests
	}
	if size <= 0 {
		size = DefaultMaxHeldBytes
	}
	return count, size
}

// holdState is what the Session keeps of the client requests that wait:
// how many are held and their bytes, and whether the upstream is being
// restarted, which they may wait for. It is guarded by Session.mu, not a
// lock of its own: the restart is set in one step with the upstream link
// (see supervise) and read in one with it (see upstreamReady). Its methods
// are called with Session.mu held. Its zero value holds nothing, with no
// restart under way.
type holdState struct {
	held       int  // client requests held (see hold)
	heldBytes  int  // their size
	restarting bool // the upstream is being restarted after a crash, or started after an initialize answered from memory: requests wait for it
	// restartChanged is closed when restarting changes; nil until changed
	// makes one, and again once closed.
	restartChanged chan struct{}
}

// take counts a request of size bytes as held and returns "", or, when
// that would pass maxCount requests or maxBytes, counts nothing and
// returns the bound reached.
func (h *holdState) take(size, maxCount, maxBytes int) (limit string) {
	switch {
	case h.held+1 > maxCount:
		return fmt.Sprintf("%d held requests", maxCount)
	case h.heldBytes+size > maxBytes:
		return fmt.Sprintf("%d held bytes", maxBytes)
	}
	h.held++
	h.heldBytes += size
	return ""
}

// release ends what take began.
func (h *holdState) release(size int) {
	h.held--
	h.heldBytes -= size
}

// setRestarting records whether a restart is under way and wakes the
// requests waiting for it to change.
func (h *holdState) setRestarting(on bool) {
	if h.restarting == on {
		return
	}
	h.restarting = on
	if h.restartChanged != nil {
		close(h.restartChanged)
		h.restartChanged = nil
	}
}

// changed returns a channel closed when restarting next changes.
func (h *holdState) changed() <-chan struct{} {
	if h.restartChanged == nil {
		h.restartChanged = make(chan struct{})
	}
	return h.restartChanged
}

// hold counts a request of size bytes as held, or, when that would pass
// MaxHeldRequests or MaxHeldBytes, answers it at once with a retryable
// error and reports false. Each true is undone by one release(size).
func (s *Session) hold(env framing.Envelope, size int) bool {
	maxCount, maxBytes := s.heldBounds()
	s.mu.Lock()
	limit := s.holds.take(size, maxCount, maxBytes)
	s.mu.Unlock()
	if limit == "" {
		return true
	}
	s.log.Warn("too many client requests waiting; request refused", "method", env.Method, "bytes", size, "limit", limit)
	s.answerBusy(env, fmt.Sprintf("Server '%s': too many requests are waiting for the server (the limit of %s is reached); this one was not sent. Retry in a few seconds.", s.Name, limit), statusTooManyWaiting)
	return false
}

// answerBusy answers a client request the sidecar refused for a bound
// reached with text and a retryable status: an isError result for
// tools/call, a JSON-RPC error otherwise.
func (s *Session) answerBusy(env framing.Envelope, text, status string) {
	meta := map[string]any{"status": status, "retryable": true}
	if clientMethods[env.Method].is(answeredAsTool) {
		s.reply(env.ID, toolError(text, meta))
		return
	}
	data, _ := json.Marshal(meta)
	s.replyErrorData(env.ID, codeInternalError, text, data)
}

// release ends what hold began.
func (s *Session) release(size int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.holds.release(size)
}

// keep makes msg, a client request, the Session's own to hold past the
// pump's next read: unless held says it already is, it is counted by hold
// and copied (with env pointed into the copy). It reports false when hold
// refused it, which answered it.
func (s *Session) keep(msg []byte, env framing.Envelope, held bool) ([]byte, framing.Envelope, bool) {
	if held {
		return msg, env, true
	}
	if !s.hold(env, len(msg)) {
		return nil, env, false
	}
	kept := bytes.Clone(msg) // it is only valid until the pump reads again
	return kept, env.Rebase(msg, kept), true
}

// unhold releases msg when held says keep counted it.
func (s *Session) unhold(msg []byte, held bool) {
	if held {
		s.release(len(msg))
	}
}

// awaitUpstream handles a client request that found no upstream ready.
// While the upstream restarts after a crash, or starts after the client's
// initialize was answered from memory (see OnDemand), the request waits
// for it, off the client pump and up to ReadyTimeout, and is then relayed
// as if it had just arrived: a restart is not a failure the agent must
// handle. Otherwise, or past that bound, the request is answered with the
// upstream's status. A request the status cannot answer asks for the
// upstream (see askUpstream). held says msg is already kept (see keep);
// awaitUpstream releases it.
func (s *Session) awaitUpstream(ctx context.Context, msg []byte, env framing.Envelope, held bool) {
	answered := s.answeredUnready(env)
	if !answered {
		askUpstream(ctx)
	}
	ready, restarting := s.upstreamReady()
	switch {
	case ready: // it became ready since the caller looked
		s.relayRequest(ctx, msg, env, held)
		return
	case !restarting || answered:
		s.answerUnready(ctx, env)
		s.unhold(msg, held)
		return
	}
	msg, env, ok := s.keep(msg, env, held)
	if !ok {
		return
	}
	if !s.gating.start() {
		s.answerUnready(ctx, env)
		s.unhold(msg, true)
		return
	}
	go func() {
		defer s.gating.done()
		if !s.awaitRestart(ctx) {
			s.answerUnready(ctx, env)
			s.viewUnready()
			s.unhold(msg, true)
			return
		}
		s.relayRequest(ctx, msg, env, true)
	}()
}

// answerAfterFirstCatalog takes the upstream's answer to a client's
// tools/list (msg, of method) that comes while its load waits for its
// first catalog (see firstCatalog), and reports whether it did. The
// request went to the upstream at once, so no round trip is added on the
// way to available; what the agent is shown follows the status, so the
// answer waits, off the upstream pump, until that load has ended (due
// closed once its status is published). Then it is filtered and written,
// the load available; or, the load failed (its link gone by then), the
// request is answered as unready, with the status. It takes nothing, and
// the caller writes the answer now, when no load waits or the Session is
// ending.
func (s *Session) answerAfterFirstCatalog(msg []byte, method string) bool {
	due := s.cat.firstDue()
	if due == nil || !s.gating.start() {
		return false
	}
	msg = bytes.Clone(msg) // the reader's buffer is its own again once the pump reads on
	go func() {
		defer s.gating.done()
		select {
		case <-due:
		case <-s.life.Done(): // Run is ending: written now, as any answer
		}
		env, err := framing.Peek(msg)
		if err != nil { // peeked before it came here: cannot fail
			s.log.Warn("cannot read the upstream's tools/list answer again", "error", err)
			return
		}
		if s.readyLink() == nil && s.life.Err() == nil {
			s.answerUnready(s.life, framing.Envelope{Kind: framing.Request, ID: env.ID, Method: method})
			return
		}
		if env.Result != nil {
			msg = s.rewriteToolsList(msg, env)
		}
		if err := s.Client.WriteMessage(s.life, msg); err != nil {
			s.log.Debug("cannot write to the client", "error", err)
		}
	}()
	return true
}

// answeredUnready reports whether answerUnready answers env's request
// itself, with nothing the upstream's status changes: such a request need
// not wait for a restart.
func (s *Session) answeredUnready(env framing.Envelope) bool {
	info := clientMethods[env.Method]
	return info.is(answeredEmpty) || info.alone != nil && info.alone(s, env)
}

// upstreamReady reports, as of one instant, whether an upstream is ready
// and whether one is being restarted after a crash. An upstream becomes
// ready before its restart is marked done, so a request never finds
// neither in between.
func (s *Session) upstreamReady() (ready, restarting bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.up != nil && s.up.ready, s.holds.restarting
}

// awaitRestart waits until an upstream is ready, the restart under way
// ends without one, ReadyTimeout passes or ctx is done, and reports
// whether an upstream is ready.
func (s *Session) awaitRestart(ctx context.Context) bool {
	expired := make(chan struct{})
	t := s.hooks.afterFunc(s.readyTimeout(), func() { close(expired) })
	defer t.Stop()
	for {
		s.mu.Lock()
		changed := s.holds.changed()
		s.mu.Unlock()
		ready, restarting := s.upstreamReady()
		switch {
		case ready:
			return true
		case !restarting:
			return false
		}
		select {
		case <-changed:
		case <-expired:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// viewUnready records that a request that waited for the upstream was
// answered with its status: the client, told the upstream was there (its
// initialize answered from memory), learnt otherwise, so it is told its
// tools changed when the upstream is ready; or now, when it became ready
// meanwhile. After a crash the client knew already.
func (s *Session) viewUnready() {
	s.mu.Lock()
	if s.clientView != viewAvailable {
		s.mu.Unlock()
		return
	}
	ready := s.status.Class == resilience.Available
	if !ready {
		s.clientView = viewUnavailable
	}
	s.mu.Unlock()
	if ready {
		s.notifyToolsChanged()
		s.notifyListsChanged()
	}
}

// readyTimeout is ReadyTimeout or its default.
func (s *Session) readyTimeout() time.Duration {
	if s.ReadyTimeout > 0 {
		return s.ReadyTimeout
	}
	return DefaultReadyTimeout
}

// rememberSubscription records a URI the client subscribed to, for
// replay to a restarted upstream, within the held bounds: past them the
// subscription is still relayed but not remembered, so the client cannot
// make the session keep an unbounded number of URIs.
func (s *Session) rememberSubscription(uri string) {
	maxCount, maxBytes := s.heldBounds()
	if ok, n := s.hs.subscribe(uri, maxCount, maxBytes); !ok {
		s.log.Warn("too many resource subscriptions to remember; this one will not be replayed after a restart", "subscriptions", n)
	}
}

// rememberListen records msg, the client's subscriptions/listen request
// with id, in flight, for replay to a restarted upstream, within the held
// bounds: past them it is still relayed but not remembered, and a crash
// answers it with an error like any other request in flight. The tracker
// forgets it when the request ends.
func (s *Session) rememberListen(id, msg []byte) {
	maxCount, maxBytes := s.heldBounds()
	if !s.tracker.keepListen(id, msg, maxCount, maxBytes) {
		s.log.Warn("too many subscriptions/listen requests to remember; this one will not be re-opened after a restart")
	}
}
