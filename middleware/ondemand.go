package middleware

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/mcpwrap/mcpwrap/resilience"
)

// This file holds the start of an upstream on demand: a Dialer that waits
// for the client's first request the upstream must answer (OnDemand), and
// what the Session does meanwhile: it answers the client's initialize with
// what the upstream answered in its last load, as its UpstreamMemory
// remembers it, and tells the client, once the upstream is initialised
// with that handshake, if the upstream now says otherwise of itself. See
// docs/DESIGN.md, Resilience.

// OnDemand returns a Dialer that dials with dial, but holds a Session's
// first dial until the Session's client sends a request the upstream must
// answer: any request but its initialize, ping, logging/setLevel and
// resources/subscribe or unsubscribe (answered while no upstream is
// ready, and replayed to it once it is). Meanwhile the Session answers the
// client's initialize itself, with what its [UpstreamMemory] remembers of
// the upstream's answer to one in its last successful load, when the
// client asks for the protocol version the upstream agreed to then. When
// the dial is made, the upstream is initialised with the client's
// handshake, as after a restart, and if it says otherwise of itself than
// remembered the client is told its lists changed.
//
// The dial is not held when the Session cannot answer the client's
// handshake from memory: it has no UpstreamMemory, the upstream never
// answered an initialize, the memory withholds the version it agreed to
// (a server turned off: its dial fails, and the client is told why), or
// the client asks for another version or opens with server/discover. Nor is any later dial (a restart, a reconnect), nor
// a dial outside a Session's Run.
func OnDemand(dial Dialer) Dialer {
	return func(ctx context.Context) (Conn, error) {
		if d := demandOf(ctx); d != nil {
			if err := d.await(ctx); err != nil {
				return nil, err
			}
		}
		return dial(ctx)
	}
}

// demandKey is the context key of a Run's demand.
type demandKey struct{}

// demand is whether the client of a Session's Run has asked for its
// upstream yet, which the first dial of an OnDemand Dialer waits for, and
// what the client was told from memory meanwhile. Run keeps it in its
// context (the Session has no field for it), where the dial, the client
// pump and the load find it. Its methods are safe for concurrent use. Its
// lock is held while the Session's mu is taken to change the status with
// the state (see setIdle), never the reverse: no demand method is called
// under the Session's mu.
type demand struct {
	s     *Session
	mu    sync.Mutex
	state demandState
	asked chan struct{} // closed when state becomes demandAsked
	told  *UpstreamInfo // what the client's initialize was answered with from memory, until the load takes it
}

// The states of a demand, in the order they come.
type demandState int

const (
	demandNone    demandState = iota // the first dial has not begun
	demandWaiting                    // the first dial waits for the client's first request
	demandAsked                      // the first dial is under way or made: nothing waits any more
)

func newDemand(s *Session) *demand {
	return &demand{s: s, asked: make(chan struct{})}
}

// demandOf returns the demand in Run's context ctx, or nil.
func demandOf(ctx context.Context) *demand {
	d, _ := ctx.Value(demandKey{}).(*demand)
	return d
}

// askUpstream records that the client sent a request the upstream must
// answer: a first dial waiting for it goes on (see OnDemand).
func askUpstream(ctx context.Context) {
	if d := demandOf(ctx); d != nil {
		d.ask()
	}
}

// await holds the first dial until the client asks for the upstream or
// ctx is done, when the Session can answer the client's initialize from
// memory; otherwise, and for every later dial, it returns at once.
func (d *demand) await(ctx context.Context) error {
	_, remembered := d.s.rememberedInitialize()
	d.mu.Lock()
	if d.state != demandNone || !remembered {
		d.askLocked()
		d.mu.Unlock()
		return nil
	}
	d.state = demandWaiting
	d.s.setIdle(true) // with the state: a request that ends the wait finds the status idle
	d.mu.Unlock()
	// A handshake captured before the dial began to wait waits for the
	// upstream (clientHandshake looked before): answer it now.
	for _, w := range d.s.hs.waiting() {
		if !d.s.answerRemembered(d, w) {
			d.ask()
		}
	}
	select {
	case <-d.asked:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// waiting reports whether the first dial waits for the client.
func (d *demand) waiting() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.state == demandWaiting
}

// ask lets the first dial go on, or not wait when it has not begun.
func (d *demand) ask() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.askLocked()
}

func (d *demand) askLocked() {
	if d.state == demandWaiting {
		d.s.setIdle(false) // before the request that asked reads the status
	}
	if d.state != demandAsked {
		d.state = demandAsked
		close(d.asked)
	}
}

// setTold records what the client's initialize was answered with.
func (d *demand) setTold(u UpstreamInfo) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.told = &u
}

// takeTold returns what setTold recorded, once; nil when nothing was.
func (d *demand) takeTold() *UpstreamInfo {
	d.mu.Lock()
	defer d.mu.Unlock()
	told := d.told
	d.told = nil
	return told
}

// setIdle sets the status idle while the first dial waits for the client
// (idle true): the upstream is not started, no load attempt has begun, and
// nothing failed; or, once the client asked (idle false), back to the
// first load's status before its first attempt. The client is not told:
// its view is what it was answered from memory (see answerRemembered).
func (s *Session) setIdle(idle bool) {
	from, to := resilience.Transient, resilience.Idle
	if !idle {
		from, to = to, from
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.status.Class == from && s.status.Attempts == 0 {
		s.status.Class = to
	}
}

// rememberedInitialize returns what the Session's UpstreamMemory
// remembers of the upstream's answer to an initialize, and whether it
// remembers one.
func (s *Session) rememberedInitialize() (UpstreamInfo, bool) {
	m, ok := s.Tools.(UpstreamMemory)
	if !ok {
		return UpstreamInfo{}, false
	}
	u, ok := m.RememberedUpstream()
	return u, ok && u.ProtocolVersion != "" && isObject(u.Capabilities) && (u.ServerInfo == nil || isObject(u.ServerInfo))
}

// rememberedResult is an initialize result made from memory: the members
// the upstream's answer had, as it sent them.
type rememberedResult struct {
	ProtocolVersion string          `json:"protocolVersion"`
	Capabilities    json.RawMessage `json:"capabilities"`
	ServerInfo      json.RawMessage `json:"serverInfo,omitempty"`
	Instructions    string          `json:"instructions,omitempty"`
}

// answerRemembered answers the client's handshake w while the first dial
// waits for the client (see OnDemand) with what the upstream answered to
// an initialize in its last load, and reports true; or reports false when
// memory cannot answer it: it is no initialize, it asks for another
// protocol version than the upstream agreed to, or nothing is remembered.
// The client's requests then wait for the upstream as after a crash (see
// awaitUpstream), for the client was told it is there.
func (s *Session) answerRemembered(d *demand, w *hsWaiter) bool {
	u, ok := s.rememberedInitialize()
	hs := s.hs.handshake()
	if !ok || w.method != "initialize" || hs.Method != "initialize" || initializeVersion(hs.Params) != u.ProtocolVersion {
		return false
	}
	w.once.Do(func() {
		s.endWaiter(w)
		s.hs.dropWaiter(w)
		d.setTold(u)
		s.mu.Lock()
		s.clientView = viewAvailable
		s.holds.setRestarting(true)
		s.mu.Unlock()
		s.log.Info("answering the client's initialize as the server did in its last load; the server starts on the client's first request")
		res, _ := json.Marshal(rememberedResult{ProtocolVersion: u.ProtocolVersion, Capabilities: u.Capabilities, ServerInfo: u.ServerInfo, Instructions: u.Instructions})
		s.reply(w.id, res)
	})
	return true
}

// checkRemembered tells the client its lists changed when its initialize
// was answered from memory and the upstream, now initialised with it
// (the client's handshake method, whose result is result), says otherwise
// of itself: as after a restart, whose upstream may differ too.
func (s *Session) checkRemembered(ctx context.Context, method string, result json.RawMessage) {
	d := demandOf(ctx)
	if d == nil {
		return
	}
	told := d.takeTold()
	if told == nil {
		return
	}
	u, ok := upstreamInfo(method, result)
	if ok && u.same(*told) {
		return
	}
	if u.ProtocolVersion != told.ProtocolVersion {
		s.log.Warn("the server agreed to another protocol version than it did in its last load, which the client was told", "told", told.ProtocolVersion, "version", u.ProtocolVersion)
	}
	s.log.Info("the server says otherwise of itself than in its last load; telling the client its lists changed")
	s.notifyToolsChanged()
	s.notifyListsChanged()
}

// initializeVersion returns the protocolVersion of an initialize's params,
// "" when there is none.
func initializeVersion(params json.RawMessage) string {
	var p struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	_ = json.Unmarshal(params, &p)
	return p.ProtocolVersion
}
