package middleware

import (
	"bytes"
	"errors"
	"io"
	"time"

	"github.com/mcpwrap/mcpwrap/internal/framing"
)

// This file holds cut-through relaying: a long upstream message (64 KiB or
// more, or over the message limit) that the sidecar does not judge is
// written to the client as it arrives, once its head has shown what it
// is, rather than held whole. Such a message is bound by no size limit
// and costs no more memory than the read buffer, and the client receives
// it while the upstream is still writing it. Relayed so: a response whose
// "id" and then "result" or "error" come first, and a request whose "id",
// "method" and then "params" come first (the order every MCP SDK writes).
// Held whole and judged as before: the results of tools/list, the answers
// to the sidecar's own requests, notifications (no head shows that a
// message has no id), and any message whose head does not settle what it
// is.
//
// Of a streamed message only the head is checked (see framing.PeekHead):
// the rest is relayed as the upstream wrote it, as a direct pipe would:
// neither validated, nor searched for a routing member after the head,
// nor bound by max_line_bytes. An upstream that stops in the middle of one,
// or stalls there for StreamIdleTimeout, has its line to the client ended
// there, so that the client's next message starts clean and the other
// writers to the client (which the line holds up) go on; the request the
// message answered is answered with an error, and the rest of a stalled
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
	var clientID []byte // the client request the message answers
	switch env.Kind {
	case framing.Response:
		if s.isOwnID(env.ID) || s.Tools != nil && s.pendingMethod(env.ID) == "tools/list" {
			return false
		}
		method, id, late := s.answered(env.ID)
		if late {
			s.log.Debug("dropping the upstream's late answer to a request that timed out", "id", string(env.ID))
			discard(heads)
			return true
		}
		if method != "" {
			clientID = id
		}
	case framing.Request:
		if !s.trackServerRequest(l, env) {
			discard(heads)
			return true
		}
	}
	serverID := bytes.Clone(env.ID) // the head's bytes are overwritten by the parts
	line := parts.beginMessage()
	var cut error // why the upstream's message ended early
	for {
		// A watchdog ends the client's line when the upstream stalls
		// inside it, for the line holds every other writer to the client.
		fired := make(chan struct{})
		watchdog := s.afterFunc(s.streamIdle(), func() {
			defer close(fired)
			if first, _ := line.End(); first {
				s.log.Warn("the upstream stalled in the middle of a message; its line to the client was ended", "kind", env.Kind.String(), "idle", s.streamIdle())
				s.endStreamEarly(l, env.Kind, clientID, serverID, "stalled")
			}
		})
		part, last, err := heads.ReadPart()
		if !watchdog.Stop() {
			<-fired
		}
		if werr := line.Write(part); werr != nil && !errors.Is(werr, framing.ErrLineEnded) {
			s.log.Debug("cannot write to the client", "error", werr)
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
		s.log.Warn("the upstream's message ended before its end", "kind", env.Kind.String(), "error", cut)
		s.endStreamEarly(l, env.Kind, clientID, nil, "stopped")
	}
	return true
}

// endStreamEarly answers what a message relayed as it arrives was part of,
// now that its line to the client has been ended before the message did:
// the client request it answered (clientID), and the upstream's request it
// was (serverID, when the upstream is still there to be answered).
func (s *Session) endStreamEarly(l *link, kind framing.Kind, clientID, serverID []byte, how string) {
	switch {
	case kind == framing.Response && clientID != nil:
		s.replyError(clientID, codeInternalError, "the upstream server "+how+" in the middle of its response; the request may or may not have been carried out")
	case kind == framing.Request && serverID != nil:
		var buf [64]byte
		key := framing.AppendIDKey(buf[:0], serverID)
		s.mu.Lock()
		delete(l.serverReqs, string(key))
		s.mu.Unlock()
		s.writeUpstream(l, errorResponse(serverID, codeInternalError, "mcpwrap: the request "+how+" in the middle of its message, which was cut off; the client never received it", nil))
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
