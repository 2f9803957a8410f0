package middleware

import (
	"bytes"
	"errors"
	"io"
	"time"

	"github.com/mcpwrap/mcpwrap/internal/framing"
)

// This file holds cut-through relaying: a long message (64 KiB or more,
// or over the message limit) that the sidecar does not judge is written to
// the other side as it arrives, once its head has shown what it is, rather
// than held whole. Such a message is bound by no size limit and costs no
// more memory than the read buffer, and the receiver has its first bytes
// while the sender is still writing it.
//
// Relayed so, when their "id" comes first (the order every MCP SDK
// writes): from the upstream, its responses and its own requests; from the
// client, the requests the sidecar does not intercept and the answers to
// the upstream's requests, once an upstream is ready. Held whole and
// judged as before: tools/call, tools/list and its results, handshakes and
// the other intercepted methods, the answers to the sidecar's own
// requests, notifications (no head shows that a message has no id),
// batches, and any message whose head does not settle what it is.
//
// A relayed message is routed on its head alone (see framing.PeekHead):
// the rest is relayed as it was written, as a direct pipe would, neither
// validated nor bound by max_line_bytes, but watched for a routing member
// spelled again (see relayParts). A sender that stops in the middle of one, or stalls
// there for StreamIdleTimeout, has its line ended there, so that the
// receiver's next message starts clean and the other writers to the
// receiver (which the line holds up) go on; the request the message was
// or answered is answered with an error, and the rest of a stalled
// message, should it come, is dropped.

// DefaultStreamIdleTimeout is how long a message relayed as it arrives may
// wait for its next bytes from the upstream, when Session.StreamIdleTimeout
// is zero.
const DefaultStreamIdleTimeout = 30 * time.Second

// streamUpstream relays the message whose head heads.ReadHead returned
// from upstream link l to the client as it arrives, and reports true; or,
// when the message must be held whole, reports false having consumed
// nothing.
func (s *Session) streamUpstream(l *link, heads headReader, parts partsWriter, head []byte) bool {
	env, ok := framing.PeekHead(head)
	if !ok {
		return false
	}
	var early func(how string) // answers what the message was part of, should it end early
	switch env.Kind {
	case framing.Response:
		if s.isOwnID(env.ID) {
			return false
		}
		if s.hooks.streamHead != nil {
			s.hooks.streamHead()
		}
		var method string
		var clientID []byte
		var late, hold bool
		if s.Tools != nil {
			// A tools/list result is filtered whole, so it is held, and so
			// is any response while the client waits for one (see
			// answeredUnlessList).
			method, clientID, late, hold = s.tracker.answeredUnlessList(env.ID)
		} else {
			method, clientID, late = s.answeredBy(env.ID)
		}
		if hold {
			return false
		}
		if late {
			s.log.Debug("dropping the upstream's late answer to a request that timed out", "id", string(env.ID))
			discard(heads)
			return true
		}
		if s.answersNothing(method, env.ID) {
			discard(heads)
			return true
		}
		early = func(how string) {
			if method != "" {
				s.replyError(clientID, codeInternalError, "the upstream server "+how+" in the middle of its response; the request may or may not have been carried out")
			}
		}
	case framing.Request:
		if !s.trackServerRequest(l, env) {
			discard(heads)
			return true
		}
		serverID := bytes.Clone(env.ID) // the head's bytes are overwritten by the parts
		early = func(how string) {
			if how != stopped { // else it is gone, and with it its requests
				s.takeServerRequest(framing.Envelope{ID: serverID})
				s.writeUpstream(l, errorResponse(serverID, codeInternalError, "mcpwrap: the request stalled in the middle of its message, which was cut off; the client never received it", nil))
			}
		}
	}
	s.relayParts(heads, parts.BeginMessage(), "the upstream", env.Kind, false, early)
	return true
}

// streamClient relays the message whose head heads.ReadHead returned from
// the client to the ready upstream as it arrives, and reports true; or,
// when the message must be held whole, reports false having consumed
// nothing. It relays requests the sidecar does not intercept and the
// client's answers to the upstream's requests.
func (s *Session) streamClient(heads headReader, head []byte) bool {
	env, ok := framing.PeekHead(head)
	if !ok || s.isOwnID(env.ID) {
		return false
	}
	l := s.readyLink()
	if l == nil {
		return false
	}
	parts, ok := l.conn.(partsWriter)
	if !ok {
		return false
	}
	var early func(how string)
	switch env.Kind {
	case framing.Response:
		if s.takeServerRequest(env) != l {
			s.log.Debug("dropping the client's answer to a request of a previous upstream", "id", string(env.ID))
			discard(heads)
			return true
		}
		serverID := bytes.Clone(env.ID)
		early = func(string) {
			s.writeUpstream(l, errorResponse(serverID, codeInternalError, "mcpwrap: the client's answer ended in the middle of its message, which was cut off", nil))
		}
	case framing.Request:
		if !clientMethods[env.Method].streamable() {
			return false
		}
		tracked, refused := s.trackReady(env)
		if tracked == nil || refused != "" {
			return false // not ready, or refused: the held path answers it
		}
		if tracked != l { // the upstream was replaced since readyLink
			s.untrack(env.ID)
			return false
		}
		clientID := bytes.Clone(env.ID)
		early = func(how string) {
			if s.untrack(clientID) == "" {
				return
			}
			if how == spelledTwice {
				s.replyError(clientID, codeInvalidRequest, `Invalid Request: "id" or "method" appears again after the start of the message (twice, or in another letter case or spelling); it was cut off there, before the server could read it whole`)
				return
			}
			s.replyError(clientID, codeInvalidRequest, "mcpwrap: the request "+how+" in the middle of its message, which was cut off before the server could read it whole; send it again")
		}
	}
	s.relayParts(heads, parts.BeginMessage(), "the client", env.Kind, true, early)
	return true
}

// The ways a message relayed as it arrives may end early.
const (
	stalled      = "stalled"                        // its sender was silent for StreamIdleTimeout
	stopped      = "stopped"                        // its sender's stream ended
	spelledTwice = "spelled a routing member twice" // see relayParts
)

// relayParts writes the rest of the message whose head heads.ReadHead
// returned to line as it arrives, and ends line. When the message ends
// early (its sender, who, stopped or stalled inside it), the line is ended
// there and early is called with how; for a stall, from the watchdog's
// goroutine, as soon as the line is ended. relayParts returns once the
// sender has reached the message's end, or its stream has ended.
//
// The message was routed on its head, where "id" and "method" are each
// spelled once and exactly; a parser that keeps the last spelling of a
// member would route it on a second one after the head instead (a ping
// the gate let through could reach the upstream as a tools/call). So the
// line is also ended, and the rest of the message dropped, before a
// second "id" (or, when method is set, a second "method") would be
// written; the receiver gets a line that is not JSON, as the message's
// object is not closed, and early is called with spelledTwice.
func (s *Session) relayParts(heads headReader, line MessageWriter, who string, kind framing.Kind, method bool, early func(how string)) {
	var cut error // why the message ended early
	var watch framing.MemberWatch
	refused := false // a routing member was spelled twice: the rest is dropped
	for {
		// A watchdog ends the line when the sender stalls inside it, for
		// the line holds every other writer to the receiver; it is armed
		// only while the sender is silent, never while the receiver is slow.
		fired := make(chan struct{})
		watchdog := s.hooks.afterFunc(s.streamIdle(), func() {
			defer close(fired)
			if first, _ := line.End(); first {
				s.log.Warn(who+" stalled in the middle of a message relayed as it arrived; the line was ended", "kind", kind.String(), "idle", s.streamIdle())
				early(stalled)
			}
		})
		part, last, err := heads.ReadPart()
		if !watchdog.Stop() {
			<-fired
		}
		if !refused {
			watch.Write(part)
			if id, m := watch.Twice(); id || method && m {
				refused = true
				if first, _ := line.End(); first {
					s.log.Warn(who+" spelled a routing member again after the head of a message relayed as it arrived; the line was ended", "kind", kind.String())
					early(spelledTwice)
				}
			}
		}
		if refused {
			// Dropped.
		} else if werr := line.Write(part); werr != nil && !errors.Is(werr, framing.ErrLineEnded) {
			s.log.Debug("cannot write a message relayed as it arrives", "error", werr)
		}
		if err != nil {
			cut = err
		}
		if last {
			break
		}
	}
	if first, _ := line.End(); first && cut != nil {
		if errors.Is(cut, io.EOF) {
			cut = io.ErrUnexpectedEOF
		}
		s.log.Warn(who+"'s message ended before its end", "kind", kind.String(), "error", cut)
		early(stopped)
	}
}

// streamIdle returns how long a streamed message may wait for its next
// bytes.
func (s *Session) streamIdle() time.Duration {
	if s.StreamIdleTimeout > 0 {
		return s.StreamIdleTimeout
	}
	return DefaultStreamIdleTimeout
}

// discard skips the rest of the message whose head heads.ReadHead
// returned.
func discard(heads headReader) {
	for {
		if _, last, _ := heads.ReadPart(); last {
			return
		}
	}
}
