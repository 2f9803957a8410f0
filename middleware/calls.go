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

// expired answers request r, which the tracker took as its call timer ran
// out, and cancels it upstream.
func (s *Session) expired(r *inflight) {
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
	if clientMethods[r.method].is(answeredAsTool) {
		text := fmt.Sprintf("Server '%s' did not answer this tool call within %s (call_timeout), so mcpwrap cancelled it. "+
			"The tool may have run in part; retry only if that is safe.", s.Name, s.CallTimeout)
		s.reply(r.id, toolError(text, meta))
		return
	}
	data, _ := json.Marshal(meta)
	s.replyErrorData(r.id, codeRequestTimeout, fmt.Sprintf("Request timed out: server '%s' did not answer %s within %s (call_timeout); cancelled", s.Name, r.method, s.CallTimeout), data)
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
	s.tracker.progressed(framing.IDKey(token))
}

// clientCancelled ends the request the client's notifications/cancelled
// params name: its id is free again and shutdown no longer waits for it,
// as the upstream need not answer it.
func (s *Session) clientCancelled(params []byte) {
	if id := member(params, "requestId"); id != nil {
		s.tracker.cancelled(id)
	}
}

// answered takes the client request the upstream's response with id
// answers (see tracker.answered).
func (s *Session) answered(id []byte) (method string, late bool) {
	return s.tracker.answered(id)
}

// answeredBy is answered that also returns the client's spelling of the
// request's id (see tracker.answeredBy).
func (s *Session) answeredBy(id []byte) (method string, clientID []byte, late bool) {
	return s.tracker.answeredBy(id)
}

// stopCallTimers stops the call timers still armed as Run returns and
// returns a channel closed once none is running.
func (s *Session) stopCallTimers() <-chan struct{} {
	return s.tracker.stopTimers()
}

// progressKey returns the framing.IDKey of token, a request's
// params._meta.progressToken as framing.Envelope holds it, or "" when it
// has none or one longer than maxIDBytes (kept for every request in
// flight, a token is bounded like an id; progress for such a request does
// not restart its bound).
func progressKey(token []byte) string {
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

// requestFailed settles a request the upstream's Conn reports will never be
// answered: an own request fails with the Conn's error, typed, so that a
// load is classified by it; a client's request is answered with an error
// saying why, and whether sending it again may help.
func (s *Session) requestFailed(e *RequestFailedError) {
	if s.isOwnID(e.ID) {
		s.deliverOwnReply(e.ID, e)
		return
	}
	method, id, late := s.answeredBy(e.ID)
	if method == "" || late {
		return
	}
	c := s.retrier.Classifier.Classify(e.Err)
	data, _ := json.Marshal(map[string]any{"class": c.Class.String(), "retryable": c.Class.Retryable()})
	s.replyErrorData(id, codeInternalError, "the upstream could not answer the request: "+c.Reason, data)
}
