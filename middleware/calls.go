package middleware

import (
	"encoding/json"
	"fmt"

	"github.com/mcpwrap/mcpwrap/internal/framing"
)

// This file holds what ends a client request other than its answer: the
// call timeout, the upstream's progress that extends it, and the client's
// own cancellation. Each frees the request's id at once; the upstream may
// still answer it, and that late answer is then recognised by its id.

// maxEnded bounds the requests remembered as ended before their answer.
// An upstream that honours cancellation never answers them, so without a
// bound they would pile up; past it an arbitrary one is forgotten, and its
// answer, should it still come, passes as one to an unknown id.
const maxEnded = 4096

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

// endLocked moves in-flight request r to the ended requests; s.mu must be
// held.
func (s *Session) endLocked(r *inflight, drop bool) {
	s.untrackLocked(r)
	if len(s.ended) >= maxEnded {
		for key := range s.ended {
			delete(s.ended, key)
			break
		}
	}
	s.ended[r.key] = ended{id: r.id, method: r.method, link: r.link, drop: drop}
}

// answered ends the client request the upstream's response with id
// answers and returns its method ("" when none is known) and its id as the
// client spelled it. late reports an answer to a request the sidecar
// already answered, which must be dropped.
func (s *Session) answered(id []byte) (method string, clientID []byte, late bool) {
	var buf [64]byte
	key := framing.AppendIDKey(buf[:0], id) // looked up without allocating
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.reqs[string(key)]; ok {
		s.untrackLocked(r)
		return r.method, r.id, false
	}
	if e, ok := s.ended[string(key)]; ok {
		delete(s.ended, string(key))
		return e.method, e.id, e.drop
	}
	return "", nil, false
}

// listPending reports whether the client waits for the answer to a
// tools/list: one in flight, or ended before the upstream answered it.
func (s *Session) listPending() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.reqs {
		if r.method == "tools/list" {
			return true
		}
	}
	for _, e := range s.ended {
		if e.method == "tools/list" {
			return true
		}
	}
	return false
}

// armLocked starts r's call timer, when there is a CallTimeout and Run is
// not returning; s.mu must be held.
func (s *Session) armLocked(r *inflight) {
	if s.CallTimeout <= 0 || s.stopping || openEnded(r.method) {
		return
	}
	if s.timers == 0 {
		s.timersIdle = make(chan struct{})
	}
	s.timers++
	r.armed++
	armed := r.armed
	r.timer = s.afterFunc(s.CallTimeout, func() {
		defer s.timerDone()
		s.expire(r, armed)
	})
}

// disarmLocked stops r's call timer, if armed; s.mu must be held.
func (s *Session) disarmLocked(r *inflight) {
	if r.timer == nil {
		return
	}
	if r.timer.Stop() {
		s.timerDoneLocked() // it will not run
	}
	r.timer = nil
}

func (s *Session) timerDone() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.timerDoneLocked()
}

func (s *Session) timerDoneLocked() {
	if s.timers--; s.timers == 0 {
		close(s.timersIdle)
	}
}

// stopCallTimers stops the call timers still armed as Run returns and
// returns a channel closed once none is running.
func (s *Session) stopCallTimers() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.reqs {
		s.disarmLocked(r)
	}
	return s.timersIdle
}

// expire answers request r, whose timer (the armed-th) ran out, unless it
// was answered or its timer restarted meanwhile, and cancels it upstream.
func (s *Session) expire(r *inflight, armed int) {
	s.mu.Lock()
	if s.reqs[r.key] != r || r.armed != armed {
		s.mu.Unlock()
		return
	}
	r.timer = nil // it is this one, running
	s.endLocked(r, true)
	s.mu.Unlock()

	s.log.Warn("request timed out; cancelled upstream", "method", r.method, "id", string(r.id), "call_timeout", s.CallTimeout)
	cancel, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"method":  "notifications/cancelled",
		"params": map[string]any{
			"requestId": json.RawMessage(r.id),
			"reason":    fmt.Sprintf("mcpwrap: no answer within %s (call_timeout)", s.CallTimeout),
		},
	})
	s.writeUpstream(r.link, cancel)

	meta := map[string]any{"status": "timeout", "class": "transient", "retryable": true}
	if r.method == "tools/call" {
		text := fmt.Sprintf("Server '%s' did not answer this tool call within %s (call_timeout), so mcpwrap cancelled it. "+
			"The tool may have run in part; retry only if that is safe.", s.Name, s.CallTimeout)
		s.reply(r.id, toolError(text, meta))
		return
	}
	data, _ := json.Marshal(meta)
	s.replyErrorData(r.id, codeRequestTimeout, fmt.Sprintf("Request timed out: server '%s' did not answer %s within %s (call_timeout); cancelled", s.Name, r.method, s.CallTimeout), data)
}

// openEnded reports whether a request of method stays unanswered by
// design for as long as the client wants it: the 2026-07-28 protocol's
// subscriptions/listen carries the server's notifications until the
// client cancels it. No call timeout applies to it.
func openEnded(method string) bool {
	return method == "subscriptions/listen"
}

// progressed restarts the call timer of the request whose progress token
// the upstream's notifications/progress params carry.
func (s *Session) progressed(params []byte) {
	if s.CallTimeout <= 0 {
		return
	}
	token := member(params, "progressToken")
	if token == nil {
		return
	}
	key := framing.IDKey(token)
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.reqs[s.progress[key]]
	if !ok || r.timer == nil {
		return
	}
	s.disarmLocked(r)
	s.armLocked(r)
}

// clientCancelled ends the request the client's notifications/cancelled
// params name: its id is free again and shutdown no longer waits for it,
// as the upstream need not answer it.
func (s *Session) clientCancelled(params []byte) {
	id := member(params, "requestId")
	if id == nil {
		return
	}
	key := framing.IDKey(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.reqs[key]; ok {
		s.endLocked(r, false)
	}
}

// progressToken returns the framing.IDKey of a request's
// params._meta.progressToken, or "" when it has none or one longer than
// maxIDBytes (kept for every request in flight, a token is bounded like an
// id; progress for such a request does not restart its bound). It costs a
// scan of the params' top level, so it is only called with a CallTimeout.
func progressToken(params []byte) string {
	if params == nil {
		return ""
	}
	token := member(member(params, "_meta"), "progressToken")
	if token == nil || len(token) > maxIDBytes {
		return ""
	}
	return framing.IDKey(token)
}

// member returns the raw value of the first member called name of the JSON
// object obj, or nil when obj is not an object or lacks it.
func member(obj []byte, name string) []byte {
	if len(obj) == 0 {
		return nil
	}
	members, err := framing.Members(obj)
	if err != nil {
		return nil
	}
	for _, m := range members {
		if key, err := m.Key(); err == nil && key == name {
			return m.Value
		}
	}
	return nil
}
