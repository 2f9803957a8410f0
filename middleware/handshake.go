package middleware

import (
	"bytes"
	"encoding/json"
	"slices"
	"sync"
)

// handshakeState is the client's session state as a Session keeps it, so
// that a restarted upstream is initialised the way the client initialised
// the first one: its handshake, its logging level and its resource
// subscriptions; and the client's handshake requests waiting for an
// answer. Its methods keep what is read together under one acquisition of
// mu, which is never held while taking another lock, nor taken while
// Session.mu is held.
//
// Its zero value is ready to use: no handshake yet, nothing waiting.
type handshakeState struct {
	mu        sync.Mutex
	cur       Handshake
	ver       int                 // counts the client's handshake requests
	changed   chan struct{}       // closed and replaced on each client handshake; nil until asked for
	waiters   []*hsWaiter         // client handshakes awaiting an answer
	ended     bool                // endWaiting ran: no handshake waits any more
	logLevel  json.RawMessage     // the client's last logging/setLevel params
	subs      map[string]struct{} // URIs the client subscribed to
	subsBytes int                 // the size of the URIs in subs
}

// handshake returns a copy of the client's handshake.
func (h *handshakeState) handshake() Handshake {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cur
}

// current returns the client's handshake, its version (the count of the
// client's handshake requests, 0 before the first) and a channel closed
// when the client sends another.
func (h *handshakeState) current() (hs Handshake, ver int, changed <-chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.changed == nil {
		h.changed = make(chan struct{})
	}
	return h.cur, h.ver, h.changed
}

// capture makes a client's handshake request of method, with params (the
// caller's to give), the client's handshake, whose result is not known
// yet, wakes those waiting for it to change, and adds w to the waiters. It
// returns the handshake's version (see current). Once endWaiting has run
// it does nothing and reports false: w is not to wait.
func (h *handshakeState) capture(method string, params json.RawMessage, w *hsWaiter) (ver int, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ended {
		return 0, false
	}
	h.cur = Handshake{Method: method, Params: params, Initialized: h.cur.Initialized}
	h.ver++
	if h.changed != nil {
		close(h.changed)
		h.changed = nil
	}
	h.waiters = append(h.waiters, w)
	return h.ver, true
}

// endWaiting removes and returns every waiter, and refuses the later ones
// (see capture): Run ends the handshakes waiting as it returns, and none
// may start waiting after them.
func (h *handshakeState) endWaiting() []*hsWaiter {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ended = true
	w := h.waiters
	h.waiters = nil
	return w
}

// setResult records the upstream's result to the client's handshake.
func (h *handshakeState) setResult(result json.RawMessage) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cur.Result = result
}

// setInitialized records that the client sent notifications/initialized.
func (h *handshakeState) setInitialized() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cur.Initialized = true
}

// setLogLevel keeps a copy of the params of the client's logging/setLevel.
func (h *handshakeState) setLogLevel(params json.RawMessage) {
	level := bytes.Clone(params)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.logLevel = level
}

// subscribe records uri as subscribed to, unless it would take the
// subscriptions past maxCount URIs or maxBytes bytes; it reports false,
// with how many it keeps, when it did not.
func (h *handshakeState) subscribe(uri string, maxCount, maxBytes int) (ok bool, kept int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.subs[uri]; ok {
		return true, len(h.subs)
	}
	if len(h.subs)+1 > maxCount || h.subsBytes+len(uri) > maxBytes {
		return false, len(h.subs)
	}
	if h.subs == nil {
		h.subs = make(map[string]struct{})
	}
	h.subs[uri] = struct{}{}
	h.subsBytes += len(uri)
	return true, len(h.subs)
}

// unsubscribe ends what subscribe began.
func (h *handshakeState) unsubscribe(uri string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.subs[uri]; ok {
		delete(h.subs, uri)
		h.subsBytes -= len(uri)
	}
}

// replayState returns what a newly initialised upstream is sent again:
// the client's logging level (nil when it set none) and the URIs it
// subscribed to.
func (h *handshakeState) replayState() (level json.RawMessage, subs []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	subs = make([]string, 0, len(h.subs))
	for uri := range h.subs {
		subs = append(subs, uri)
	}
	return h.logLevel, subs
}

// takeWaiters removes and returns the waiters for method, but those a
// relay claimed; "" takes all.
func (h *handshakeState) takeWaiters(method string) []*hsWaiter {
	h.mu.Lock()
	defer h.mu.Unlock()
	var taken, kept []*hsWaiter
	for _, w := range h.waiters {
		if method == "" || w.method == method && !w.relayed {
			taken = append(taken, w)
		} else {
			kept = append(kept, w)
		}
	}
	h.waiters = kept
	return taken
}

// claim marks w, a waiter, as answered by its relay to a ready upstream
// and reports true; or reports false when w is no longer waiting, taken to
// be answered otherwise. A claimed waiter still waits (the drain waits for
// it), but takeWaiters of a method leaves it to its relay.
func (h *handshakeState) claim(w *hsWaiter) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !slices.Contains(h.waiters, w) {
		return false
	}
	w.relayed = true
	return true
}

// dropWaiter removes w from the waiters, if there, and returns the params
// of the client's handshake, which answer it.
func (h *handshakeState) dropWaiter(w *hsWaiter) (params json.RawMessage) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if i := slices.Index(h.waiters, w); i >= 0 {
		h.waiters = append(h.waiters[:i:i], h.waiters[i+1:]...)
	}
	return h.cur.Params
}

// waiting returns the waiters.
func (h *handshakeState) waiting() []*hsWaiter {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.waiters)
}

// hsWaiter is a client handshake request waiting for the upstream.
type hsWaiter struct {
	id     []byte
	method string
	done   chan struct{}
	once   sync.Once
	held   int // bytes counted by hold
	// relayed is set when a relay to a ready upstream claimed it (see
	// handshakeState.claim; guarded by handshakeState.mu).
	relayed bool

	timerMu sync.Mutex
	timer   interface{ Stop() bool } // the ready timer, stopped when the waiter ends
	ended   bool
}

// arm keeps the ready timer t of w, to stop when w ends; t is stopped at
// once if w has ended already.
func (w *hsWaiter) arm(t interface{ Stop() bool }) {
	w.timerMu.Lock()
	defer w.timerMu.Unlock()
	if w.ended {
		t.Stop()
		return
	}
	w.timer = t
}

// disarm stops the ready timer of w, if armed, and any armed later.
func (w *hsWaiter) disarm() {
	w.timerMu.Lock()
	defer w.timerMu.Unlock()
	w.ended = true
	if w.timer != nil {
		w.timer.Stop()
	}
}
