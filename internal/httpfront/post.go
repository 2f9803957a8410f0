package httpfront

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/mcpwrap/mcpwrap/internal/framing"
	"github.com/mcpwrap/mcpwrap/internal/jsonrpc"
)

// servePOST takes one message, or a batch, from the client. Requests are
// answered on this POST (JSON, or an SSE stream that also carries what the
// session emits meanwhile); notifications and responses get 202 Accepted.
func (s *Server) servePOST(w http.ResponseWriter, r *http.Request) {
	if ct := r.Header.Get("Content-Type"); ct != "" && mediaType(ct) != "application/json" {
		writeError(w, http.StatusUnsupportedMediaType, nil, jsonrpc.CodeInvalidRequest, "Unsupported Media Type: POST a JSON-RPC message as application/json")
		return
	}
	acc := accepts(r.Header.Values("Accept"))
	if !acc.json && !acc.sse {
		writeError(w, http.StatusNotAcceptable, nil, jsonrpc.CodeInvalidRequest, "Not Acceptable: accept application/json or text/event-stream")
		return
	}
	// The session is looked up before the body is read: a body no session
	// takes is not worth its memory.
	var ss *session
	if r.Header.Get(HeaderSessionID) != "" {
		var ok bool
		if ss, ok = s.lookup(w, r); !ok {
			return
		}
	}
	body, held, err := readBody(w, r, s.maxBodyBytes(), &s.bodies, s.clientOf(r))
	if err != nil {
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			writeError(w, http.StatusRequestEntityTooLarge, nil, jsonrpc.CodeInvalidRequest,
				fmt.Sprintf("Request Entity Too Large: the body exceeds the %d-byte limit", tooBig.Limit))
		case errors.Is(err, ErrBodiesBusy):
			s.log.Warn("request refused: the bodies being read take the budget", "budget", s.maxBufferedBytes(), "remote", r.RemoteAddr)
			refuseBusy(w, r, s.maxBodyBytes(), err)
		case errors.Is(err, ErrClientBodies):
			s.log.Warn("request refused: the client's bodies being read take its share of the budget", "share", s.maxBufferedBytesPerClient(), "remote", r.RemoteAddr)
			refuseBusy(w, r, s.maxBodyBytes(), err)
		default:
			writeError(w, http.StatusBadRequest, nil, jsonrpc.CodeInvalidRequest, "Bad Request: cannot read the body: "+err.Error())
		}
		return
	}
	defer held.release() // at the latest; once handed to the relay, at once
	msgs, batch, perr := parseBody(body)
	if perr != nil {
		writeError(w, http.StatusBadRequest, perr.id, perr.code, perr.message)
		return
	}

	created := false
	if ss == nil {
		switch {
		case isStateless(r):
			s.serveStateless(w, r, msgs, batch, acc, held)
			return
		case !batch && msgs[0].env.Kind == framing.Request && msgs[0].env.Method == "initialize":
			if ss, err = s.open(s.clientOf(r)); err != nil {
				writeBusy(w, msgs[0].env.ID, err)
				return
			}
			created = true
		case !batch && msgs[0].env.Kind == framing.Request && msgs[0].env.Method == "server/discover":
			writeDiscoverUnsupported(w, http.StatusOK, jsonrpc.CodeUnsupportedProtocolVersion, msgs[0].env.ID, r.Header.Get(HeaderProtocolVersion))
			return
		default:
			writeError(w, http.StatusBadRequest, nil, jsonrpc.CodeInvalidRequest,
				"Bad Request: missing "+HeaderSessionID+" header; open a session with an initialize request first")
			return
		}
	}

	ex, dup := newExchange(msgs, batch)
	if dup != nil {
		writeError(w, http.StatusBadRequest, dup, jsonrpc.CodeInvalidRequest, fmt.Sprintf("Invalid Request: request id %s appears twice in the batch", dup))
		return
	}
	if len(ex.pending) == 0 {
		s.accept(w, r, ss, msgs, held)
		return
	}
	if !s.callStarted() {
		writeError(w, http.StatusServiceUnavailable, nil, jsonrpc.CodeServerError, "Service Unavailable: "+ErrShuttingDown.Error())
		return
	}
	defer s.callDone()
	if !ss.enter() {
		writeSessionNotFound(w)
		return
	}
	defer ss.leave()
	if created {
		w.Header().Set(HeaderSessionID, ss.id)
	}
	if acc.sse {
		ex.stream = newStream(w, s.stallTimeout(), ss.log)
	}
	if dup := ss.register(ex); dup != nil {
		writeError(w, http.StatusBadRequest, dup, jsonrpc.CodeInvalidRequest, fmt.Sprintf("Invalid Request: request id %s is already in flight in this session", dup))
		return
	}
	if !s.answer(w, r, ss, ex, msgs, held) && created {
		// No one learnt its id with an answer: it can never be used.
		ss.end("the client left before its initialize was answered")
	}
}

// accept feeds notifications and responses to the session, then releases
// their body's hold.
func (s *Server) accept(w http.ResponseWriter, r *http.Request, ss *session, msgs []incoming, held *hold) {
	if !ss.enter() {
		writeSessionNotFound(w)
		return
	}
	defer ss.leave()
	for _, m := range msgs {
		if isCancellation(m.env) {
			ss.cancelled(m.env.Params)
		}
		if !ss.deliver(r.Context(), m.msg) {
			writeSessionNotFound(w) // or the client left, and reads nothing
			return
		}
	}
	held.release()
	w.WriteHeader(http.StatusAccepted)
}

// isCancellation reports whether env is the client's notifications/cancelled.
// A request of that name (with an id) cancels nothing: it is relayed, and
// answered, like any other.
func isCancellation(env framing.Envelope) bool {
	return env.Kind == framing.Notification && env.Method == "notifications/cancelled"
}

// answer feeds the POST's messages to the session, releasing their body's
// hold once the relay took them all, and answers its requests. It reports
// false when the client left before its answers.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, ss *session, ex *exchange, msgs []incoming, held *hold) bool {
	switch {
	case ex.listen != nil:
		// A subscriptions/listen stream is open at once: it may carry
		// nothing for a long time.
		if err := ex.stream.start(); err != nil {
			ss.unregister(ex)
			return false
		}
	case ex.stream != nil && !ss.stateless:
		// A request's stream opens with its first event, or after
		// lazyStart: an answer that comes sooner goes with its headers
		// and the end of the response in one write. (A stateless
		// request's stream starts with its first event: an error answered
		// at once is sent with its HTTP status instead.)
		ex.stream.startAfter(lazyStart)
	}
	delivered := 0
	for _, m := range msgs {
		if isCancellation(m.env) {
			ss.cancelled(m.env.Params)
		}
		if !ss.deliver(r.Context(), m.msg) {
			break
		}
		delivered++
	}
	// The relay has the messages (or they are dropped): the POST holds
	// none of their bytes while it waits (its exchange keeps copies of the
	// ids), so they no longer count against the budget.
	held.release()
	gone := false
	var broken <-chan struct{} // the stream failed, on the stateless session: nil elsewhere
	if ex.wake != nil {
		broken = ex.stream.ended
	}
wait:
	for {
		select {
		case <-ex.wake: // nil but on the stateless session
			ss.writeNotes(ex)
		case <-ex.done:
			break wait
		case <-ss.done:
			break wait
		case <-broken: // its client stopped reading, or left
			gone = true
			break wait
		case <-r.Context().Done():
			gone = true
			break wait
		}
	}
	unanswered, responses := ss.unregister(ex)
	if gone {
		if len(unanswered) > 0 {
			ss.log.Debug("the client left before its requests were answered", "requests", len(unanswered))
		}
		if ss.stateless && delivered > 0 { // its one request reached the relay
			ss.cancelAbandoned(unanswered)
		}
		if ex.stream != nil {
			ex.stream.close()
		}
		return false
	}
	failed := make([][]byte, 0, len(unanswered))
	for _, id := range unanswered {
		if orig := ex.orig[idKey(id)]; orig != nil {
			id = orig
		}
		failed = append(failed, jsonrpc.ErrorResponse(id, jsonrpc.CodeInternalError, "the session ended before the request was answered", nil))
	}
	if ex.stream != nil {
		// The notifications and answers collected are the stateless
		// session's, whose relay leaves them to the handler (see
		// routeResponse and noteLocked); the notifications came first.
		ss.writeNotes(ex)
		all := append(responses, failed...)
		for i, msg := range all {
			if err := ss.respond(ex.stream, msg, i == len(all)-1); err != nil {
				ss.log.Debug("cannot deliver a response; the client left")
				break
			}
		}
		ex.stream.close()
		return true
	}
	responses = append(responses, failed...)
	if len(responses) == 0 { // every request was cancelled by the client
		w.WriteHeader(http.StatusNoContent)
		return true
	}
	w.Header().Set("Content-Type", "application/json")
	status := http.StatusOK
	if code := errorStatus(responses[0]); ss.stateless && code != 0 {
		status = code
	}
	w.WriteHeader(status)
	if ex.batch {
		_, _ = w.Write(append(append([]byte{'['}, bytes.Join(responses, []byte{','})...), ']'))
		return true
	}
	_, _ = w.Write(responses[0])
	return true
}

// respond writes msg, a response, to st. On the stateless session an error
// that the protocol gives an HTTP status goes with it, as the whole
// response, when nothing was streamed yet. The last response is left for
// the handler's return to flush (see [stream.sendLast]).
func (ss *session) respond(st *stream, msg []byte, last bool) error {
	if status := errorStatus(msg); ss.stateless && status != 0 {
		return st.sendStatus(msg, status)
	}
	if last {
		return st.sendLast(msg)
	}
	return st.send(msg)
}

// incoming is one message from the client, owned, with its envelope.
type incoming struct {
	msg []byte
	env framing.Envelope // aliases msg
}

// postError is why a POST body was refused.
type postError struct {
	id      []byte
	code    int
	message string
}

// parseBody splits a POST body into messages. Each message is checked to be
// a request, a notification or a response. A message spread over several
// lines is compacted, in place, because the relay frames messages by lines.
func parseBody(body []byte) ([]incoming, bool, *postError) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, false, &postError{code: jsonrpc.CodeInvalidRequest, message: "Invalid Request: the body is empty"}
	}
	// One pass validates the body and reads its envelope, which a single
	// message on one line keeps; json.Valid only tells the errors apart.
	env, err := framing.PeekValid(body)
	if err != nil && !errors.Is(err, framing.ErrAmbiguous) && !json.Valid(body) {
		return nil, false, &postError{code: jsonrpc.CodeParseError, message: "Parse error: the body is not valid JSON"}
	}
	if err != nil {
		return nil, false, &postError{code: jsonrpc.CodeInvalidRequest, message: "Invalid Request: " + err.Error()}
	}
	raws := [][]byte{body}
	batch := env.Kind == framing.Batch
	if batch {
		if raws, err = framing.Elements(body); err != nil || len(raws) == 0 {
			return nil, true, &postError{code: jsonrpc.CodeInvalidRequest, message: "Invalid Request: an empty or malformed batch"}
		}
	}
	msgs := make([]incoming, 0, len(raws))
	for _, raw := range raws {
		env, err := env, error(nil) // the body's: a single message
		if compact := bytes.ContainsAny(raw, "\r\n"); compact || batch {
			if compact {
				raw = compactInPlace(raw) // valid: checked above
			}
			env, err = framing.Peek(raw)
		}
		switch {
		case err != nil:
			return nil, batch, &postError{id: env.ID, code: jsonrpc.CodeInvalidRequest, message: "Invalid Request: " + err.Error()}
		case env.Kind == framing.Invalid, env.Kind == framing.Batch:
			return nil, batch, &postError{id: env.ID, code: jsonrpc.CodeInvalidRequest,
				message: "Invalid Request: a message must be a JSON-RPC request, notification or response"}
		}
		msgs = append(msgs, incoming{msg: raw, env: env})
	}
	return msgs, batch, nil
}

// compactInPlace compacts raw, valid JSON, as [json.Compact] would (the
// whitespace between tokens removed), in place, and returns what is left:
// no copy of a large message is made.
func compactInPlace(raw []byte) []byte {
	out := raw[:0]
	inString, escaped := false, false
	for _, c := range raw { // out never passes the byte read
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == ' ', c == '\t', c == '\r', c == '\n':
			continue
		}
		out = append(out, c)
	}
	return out
}

// An exchange is a POST carrying requests, waiting for their responses.
// Its maps and responses are guarded by the session's mutex.
type exchange struct {
	stream *stream // nil: the answer is JSON
	batch  bool

	pending   map[string][]byte // request key → raw id, for requests not answered yet
	progress  map[string]bool   // progress tokens of its requests
	responses [][]byte          // the answers, when JSON
	complete  bool              // every request is answered
	sending   int               // responses taken but not yet written to stream

	// On the stateless session, the notifications for stream that its
	// handler has not written yet, and a signal (not blocking) that some
	// were added.
	notes     [][]byte
	noteBytes int
	wake      chan struct{}

	// On the stateless session: the client's own ids, by the key of the
	// ids its requests were rewritten to; its own progress token, which
	// was rewritten to its request's id; and, for a subscriptions/listen
	// request, what it subscribes to.
	orig      map[string][]byte
	origToken []byte
	listen    *subscriptions

	done     chan struct{}
	doneOnce sync.Once
}

// newExchange returns the exchange for the requests among msgs, or the id
// of a request that appears twice.
func newExchange(msgs []incoming, batch bool) (ex *exchange, duplicate []byte) {
	ex = &exchange{batch: batch, pending: map[string][]byte{}, progress: map[string]bool{}, done: make(chan struct{})}
	for _, m := range msgs {
		if m.env.Kind != framing.Request {
			continue
		}
		key := idKey(m.env.ID)
		if _, dup := ex.pending[key]; dup {
			return nil, m.env.ID
		}
		ex.pending[key] = bytes.Clone(m.env.ID) // not m's bytes, which the exchange would keep alive while it waits
		var p struct {
			Meta struct {
				ProgressToken json.RawMessage `json:"progressToken"`
			} `json:"_meta"`
		}
		if json.Unmarshal(m.env.Params, &p) == nil && p.Meta.ProgressToken != nil {
			ex.progress[idKey(p.Meta.ProgressToken)] = true
		}
	}
	return ex, nil
}

// finish releases the POST waiting for the exchange.
func (ex *exchange) finish() { ex.doneOnce.Do(func() { close(ex.done) }) }

// idKey canonicalises a JSON-RPC id (or progress token), so that the
// spellings a peer may re-encode it to ("a" and "\u0061", 1 and 1.0) route
// alike.
func idKey(raw []byte) string { return framing.IDKey(raw) }
