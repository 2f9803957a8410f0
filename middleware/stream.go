package middleware

import (
	"errors"
	"io"

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
// nor bound by max_line_bytes. An upstream that stops in the middle of one
// has its line ended there, so that the client's next message starts
// clean, and the request it answered is answered with an error.

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
	var cut error // why the upstream's message ended early
	err := parts.WriteParts(func() ([]byte, bool, error) {
		part, last, err := heads.ReadPart()
		cut = err
		return part, last, err
	})
	switch {
	case cut != nil:
		if errors.Is(cut, io.EOF) {
			cut = io.ErrUnexpectedEOF
		}
		s.log.Warn("the upstream's message ended before its end", "kind", env.Kind.String(), "error", cut)
		if clientID != nil {
			s.replyError(clientID, codeInternalError, "the upstream server stopped in the middle of its response; the request may or may not have been carried out")
		}
	case err != nil:
		s.log.Debug("cannot write to the client", "error", err)
	}
	return true
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
