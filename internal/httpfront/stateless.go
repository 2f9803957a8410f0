package httpfront

import (
	"bytes"
	"cmp"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpwrap/mcpwrap/internal/era"
	"github.com/mcpwrap/mcpwrap/internal/framing"
	"github.com/mcpwrap/mcpwrap/internal/jsonrpc"
	"github.com/mcpwrap/mcpwrap/internal/paramheader"
	"github.com/mcpwrap/mcpwrap/middleware"
)

// The 2026-07-28 protocol has no sessions: every request stands alone,
// carrying its protocol version (and the client's capabilities) in its
// _meta and its method (and name) in headers. The Server serves such
// requests on one shared session of its own, the stateless session: one
// relay and one upstream (a single child process for a command) for every
// stateless request of the front. The ids of the requests are rewritten to
// ids unique on that relay, so that concurrent clients that use the same ids
// never collide, and mapped back on the answers.

// Header names of the 2026-07-28 transport.
const (
	HeaderMethod = "Mcp-Method"
	HeaderName   = "Mcp-Name"
)

// handshakeID is the id of the server/discover the Server sends on a new
// stateless session's relay, so that the relay sets up its upstream; no
// rewritten id (statelessIDPrefix, a random part and a number) can equal
// it.
const handshakeID = `"httpfront-discover"`

// isStateless reports whether a POST without a session id speaks the
// 2026-07-28 protocol: its Mcp-Protocol-Version header says so.
func isStateless(r *http.Request) bool {
	return r.Header.Get(HeaderProtocolVersion) >= era.StatelessVersion
}

// requestFacts are what the transport checks of a 2026-07-28 message.
type requestFacts struct {
	metaVersion   string // _meta's protocol version
	metaAmbiguous bool   // _meta, or its version, is spelled twice or in another letter case
	name          string // tool or prompt name, or resource URI, for Mcp-Name
	hasName       bool   // the method has one
	nameOK        bool   // the body spells it once, exactly, as a string
}

// parseFacts reads what the transport checks of a 2026-07-28 message as
// framing reads it for the gate, not as encoding/json would (last of
// duplicates wins, any letter case matches, and two such objects merge):
// a member that parsers read differently is ambiguous, since the upstream
// may act on another value than the one checked.
func parseFacts(env framing.Envelope) requestFacts {
	var f requestFacts
	metaRaw, _, err := framing.LookupMember(env.Params, "_meta")
	f.metaAmbiguous = err != nil
	// Read in place: the message is valid JSON (parseBody), so an object
	// here decodes, and nothing is decoded or encoded again.
	if len(metaRaw) > 0 && metaRaw[0] == '{' {
		version, _, err := framing.LookupMember(metaRaw, era.MetaProtocolVersion)
		f.metaAmbiguous = f.metaAmbiguous || err != nil
		if version != nil {
			f.metaVersion, _ = stringOf(version)
		}
	}
	switch env.Method {
	case "tools/call", "prompts/get":
		f.hasName = true
		if env.Name != nil { // nil: absent, or ambiguous
			f.name, f.nameOK = stringOf(env.Name)
		}
	case "resources/read":
		f.hasName = true
		if uri, _, err := framing.LookupMember(env.Params, "uri"); uri != nil && err == nil {
			f.name, f.nameOK = stringOf(uri)
		}
	}
	return f
}

// stringOf decodes raw, a JSON value, when it is a string.
func stringOf(raw []byte) (string, bool) {
	s, err := framing.String(raw)
	return s, err == nil
}

// checkStateless validates a 2026-07-28 message against its headers, as the
// protocol requires of a server: a request's _meta must carry the version
// of the Mcp-Protocol-Version header, and Mcp-Method (and, for tools/call,
// prompts/get and resources/read, Mcp-Name) must match the body. A
// response, which the protocol has no use for, is refused.
func checkStateless(h http.Header, m incoming) *postError {
	if m.env.Kind == framing.Response {
		// Every stateless client shares the upstream: an answer from one
		// could only answer a request the upstream sent for another's call.
		return &postError{code: jsonrpc.CodeInvalidRequest,
			message: "Invalid Request: protocol version " + h.Get(HeaderProtocolVersion) + " has no server requests to answer"}
	}
	if m.env.Kind != framing.Request && m.env.Kind != framing.Notification {
		return nil
	}
	if m.env.Kind == framing.Request && strings.HasPrefix(m.env.Method, "notifications/") {
		// A request so named (with an id) could name another client's
		// request to cancel, which an upstream may act on.
		return &postError{id: m.env.ID, code: jsonrpc.CodeInvalidRequest,
			message: fmt.Sprintf("Invalid Request: %s is a notification, sent without an id", m.env.Method)}
	}
	f := parseFacts(m.env)
	if m.env.Kind == framing.Request {
		version := h.Get(HeaderProtocolVersion)
		switch {
		case f.metaAmbiguous:
			return &postError{id: m.env.ID, code: jsonrpc.CodeInvalidParams,
				message: fmt.Sprintf("ambiguous _meta: it, or its field %q, is spelled more than once or in another letter case", era.MetaProtocolVersion)}
		case f.metaVersion == "":
			return &postError{id: m.env.ID, code: jsonrpc.CodeInvalidParams,
				message: fmt.Sprintf("missing or invalid _meta field %q", era.MetaProtocolVersion)}
		case f.metaVersion != version:
			return &postError{id: m.env.ID, code: jsonrpc.CodeHeaderMismatch,
				message: fmt.Sprintf("%s header %q does not match request %s %q", HeaderProtocolVersion, version, era.MetaProtocolVersion, f.metaVersion)}
		}
	}
	switch method := h.Get(HeaderMethod); {
	case method == "":
		return &postError{id: m.env.ID, code: jsonrpc.CodeHeaderMismatch, message: "missing required " + HeaderMethod + " header"}
	case method != m.env.Method:
		return &postError{id: m.env.ID, code: jsonrpc.CodeHeaderMismatch,
			message: fmt.Sprintf("header mismatch: %s header value %q does not match body value %q", HeaderMethod, method, m.env.Method)}
	}
	if f.hasName {
		switch name := h.Get(HeaderName); {
		case name == "":
			return &postError{id: m.env.ID, code: jsonrpc.CodeHeaderMismatch,
				message: fmt.Sprintf("missing required %s header for method %q", HeaderName, m.env.Method)}
		case !f.nameOK:
			return &postError{id: m.env.ID, code: jsonrpc.CodeHeaderMismatch,
				message: fmt.Sprintf("header mismatch: the body's value for %s is missing, not a string, or spelled more than once (in any letter case)", HeaderName)}
		case name != f.name:
			return &postError{id: m.env.ID, code: jsonrpc.CodeHeaderMismatch,
				message: fmt.Sprintf("header mismatch: %s header value %q does not match body value %q", HeaderName, name, f.name)}
		}
	}
	return nil
}

// sessionEraOnly are the methods the 2026-07-28 protocol removed with
// sessions. Each sets state for the whole session it is sent on (its
// handshake, which the relay replays to a restarted upstream, its log
// level, its resource subscriptions), and the stateless session is every
// 2026-07-28 client's: they are refused as unknown, as the go-sdk's server
// refuses them, and never reach its relay. ping, which sets nothing, is
// left to the upstream.
var sessionEraOnly = map[string]bool{
	"initialize":                       true,
	"notifications/initialized":        true,
	"notifications/roots/list_changed": true,
	"logging/setLevel":                 true,
	"resources/subscribe":              true,
	"resources/unsubscribe":            true,
}

// serveStateless serves a 2026-07-28 POST on the stateless session.
// held is the hold of the body's bytes, which answer releases.
func (s *Server) serveStateless(w http.ResponseWriter, r *http.Request, msgs []incoming, batch bool, acc acceptance, held *hold) {
	if batch {
		writeError(w, http.StatusBadRequest, nil, jsonrpc.CodeInvalidRequest,
			"Bad Request: protocol version "+r.Header.Get(HeaderProtocolVersion)+" has no JSON-RPC batches")
		return
	}
	m := msgs[0]
	if v := r.Header.Get(HeaderProtocolVersion); !slices.Contains(protocolVersions, v) {
		data, _ := json.Marshal(mcp.UnsupportedProtocolVersionData{Supported: protocolVersions, Requested: v})
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write(jsonrpc.ErrorResponse(m.env.ID, jsonrpc.CodeUnsupportedProtocolVersion,
			fmt.Sprintf("protocol version %q is not supported (supported: %s)", v, strings.Join(protocolVersions, ", ")), data))
		return
	}
	if perr := checkStateless(r.Header, m); perr != nil {
		writeError(w, http.StatusBadRequest, perr.id, perr.code, perr.message)
		return
	}
	if sessionEraOnly[m.env.Method] {
		writeError(w, http.StatusNotFound, m.env.ID, jsonrpc.CodeMethodNotFound,
			fmt.Sprintf("%s is not supported in protocol version %s, which has no sessions", m.env.Method, r.Header.Get(HeaderProtocolVersion)))
		return
	}
	if s.legacyOnly.Load() {
		writeDiscoverUnsupported(w, http.StatusOK, jsonrpc.CodeUnsupportedProtocolVersion, m.env.ID, r.Header.Get(HeaderProtocolVersion))
		return
	}
	ss, err := s.enterStateless(r, m)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, m.env.ID, jsonrpc.CodeServerError, "Service Unavailable: "+err.Error())
		return
	}
	defer ss.leave()
	discover := m.env.Kind == framing.Request && m.env.Method == "server/discover"
	// A client's server/discover sets the upstream up itself; a
	// notification needs no answer (the relay drops it while no upstream
	// is ready).
	if !discover && m.env.Kind == framing.Request {
		failed, err := ss.awaitReady(r, m)
		switch {
		case err != nil:
			if r.Context().Err() == nil {
				writeError(w, http.StatusServiceUnavailable, m.env.ID, jsonrpc.CodeServerError, "Service Unavailable: "+err.Error())
			}
			return
		case failed != nil:
			// The upstream refused a server/discover made of this request's
			// own _meta: the request gets the same answer.
			answer := framing.Splice(failed, peekID(failed), m.env.ID)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(cmp.Or(errorStatus(answer), http.StatusOK))
			_, _ = w.Write(answer)
			return
		}
	}
	if ss.isRefused() {
		// An upstream of the session era only: the client falls back to
		// initialize on this answer.
		writeDiscoverUnsupported(w, http.StatusOK, jsonrpc.CodeUnsupportedProtocolVersion, m.env.ID, r.Header.Get(HeaderProtocolVersion))
		return
	}

	if perr := checkParamHeaders(r.Header, ss.relay, m); perr != nil {
		writeError(w, http.StatusBadRequest, perr.id, perr.code, perr.message)
		return
	}

	if m.env.Kind != framing.Request {
		if m.env.Method == "notifications/cancelled" {
			// Its request id is the client's own, which the relay never
			// saw; a 2026-07-28 client cancels by closing the request's
			// stream, which the Server turns into a cancellation.
			w.WriteHeader(http.StatusAccepted)
			return
		}
		if !ss.deliver(r.Context(), m.msg) {
			writeError(w, http.StatusServiceUnavailable, nil, jsonrpc.CodeServerError, "Service Unavailable: the server is shutting down")
			return
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if !s.callStarted() {
		writeError(w, http.StatusServiceUnavailable, m.env.ID, jsonrpc.CodeServerError, "Service Unavailable: "+ErrShuttingDown.Error())
		return
	}
	defer s.callDone()

	id := ss.nextID()
	// The rewritten message is a copy, held with the body (whose bytes
	// are garbage once it is made) until the relay takes it.
	if err := held.grow(int64(len(m.msg) + 2*len(id))); err != nil { // at most the id and the token grow
		writeBusy(w, m.env.ID, err)
		return
	}
	clientID := bytes.Clone(m.env.ID)
	// Progress tokens are the clients' own too, and often equal (a client
	// may use its request's id): the request's unique id is its token on
	// the relay. Both are rewritten in one copy.
	var token []byte // the client's own progress token
	if m.env.ProgressToken != nil {
		token = bytes.Clone(m.env.ProgressToken)
	}
	msg := spliceAll(m.msg, id, m.env.ID, m.env.ProgressToken)
	env, err := framing.Peek(msg)
	if err != nil {
		writeError(w, http.StatusBadRequest, clientID, jsonrpc.CodeInvalidRequest, "Invalid Request: "+err.Error())
		return
	}
	rewritten := []incoming{{msg: msg, env: env}}
	ex, _ := newExchange(rewritten, false)
	ex.orig = map[string][]byte{idKey(id): clientID} // not m's bytes, which it would keep alive
	// Only the token rewritten is the request's: another in its params
	// (which an upstream may read instead) names no request.
	ex.progress = map[string]bool{}
	if token != nil {
		ex.progress[idKey(id)] = true
		ex.origToken = token
	}
	if discover {
		ss.mu.Lock()
		ss.discovers[idKey(id)] = true
		ss.mu.Unlock()
	}
	if env.Method == "subscriptions/listen" {
		// A listen request has no prompt answer: its stream carries the
		// notifications it subscribes to until the client closes it.
		ex.listen = parseSubscriptions(env.Params)
	}
	if acc.sse || ex.listen != nil {
		ex.stream = newStream(w, s.stallTimeout(), ss.log)
		ex.wake = make(chan struct{}, 1)
	}
	ss.register(ex)
	s.answer(w, r, ss, ex, rewritten, held)
}

// spliceAll returns a copy of msg, made at once, in which each of parts
// (subslices of msg, such as [framing.Envelope] fields, that do not
// overlap; nil ones are skipped) is replaced by repl.
func spliceAll(msg, repl []byte, parts ...[]byte) []byte {
	type span struct{ start, end int }
	spans := make([]span, 0, len(parts))
	for _, p := range parts {
		if p == nil {
			continue
		}
		start := cap(msg) - cap(p) // p aliases msg, so the capacities tell its offset
		if start < 0 || start+len(p) > len(msg) {
			panic("httpfront: spliceAll: a part is not a subslice of msg")
		}
		spans = append(spans, span{start, start + len(p)})
	}
	slices.SortFunc(spans, func(a, b span) int { return a.start - b.start })
	out := make([]byte, 0, len(msg)+len(spans)*len(repl))
	at := 0
	for _, sp := range spans {
		if sp.start < at {
			panic("httpfront: spliceAll: parts overlap")
		}
		out = append(append(out, msg[at:sp.start]...), repl...)
		at = sp.end
	}
	return append(out, msg[at:]...)
}

// enterStateless returns the stateless session, opening it for the first
// request, with the request counted in progress on it.
func (s *Server) enterStateless(r *http.Request, first incoming) (*session, error) {
	for range 2 { // a session ending between lookup and entry is replaced once
		s.mu.Lock()
		ss := s.stateless
		s.mu.Unlock()
		if ss == nil {
			var err error
			if ss, err = s.openStateless(r, first); err != nil {
				return nil, err
			}
		}
		if ss.enter() {
			return ss, nil
		}
	}
	return nil, errors.New("the stateless session ended; retry")
}

// openStateless opens the stateless session (or returns the one another
// request opened meanwhile) and sends its relay the server/discover that
// sets up the upstream, with the _meta of the client's first request: its
// version, identity and capabilities.
func (s *Server) openStateless(r *http.Request, first incoming) (*session, error) {
	s.mu.Lock()
	switch {
	case s.draining:
		s.mu.Unlock()
		return nil, ErrShuttingDown
	case s.stateless != nil:
		ss := s.stateless
		s.mu.Unlock()
		return ss, nil
	}
	// No bound on sessions: its slot is kept (see MaxSessions).
	id := rand.Text()
	ss := newSession(s, id)
	ss.stateless = true
	ss.idSalt = rand.Text()
	ss.discovers = make(map[string]bool)
	ss.log = s.log.With("session", "stateless")
	ss.relay = s.NewSession(ss, ss.log)
	ss.own = make(chan []byte, ownLimit)
	ss.async.Go(ss.deliverOwn)
	s.sessions[id] = ss
	s.stateless = ss
	n := len(s.sessions)
	s.mu.Unlock()
	ss.log.Info("stateless session opened", "sessions", n)
	ss.start()
	return ss, nil
}

// A handshake is one server/discover the Server sends the stateless
// session's relay to set its upstream up, for requests that arrive before
// any succeeded.
type handshake struct {
	done   chan struct{} // closed when it was answered, or the session ended
	failed []byte        // its answer, when an error
}

// awaitReady waits until the stateless session's upstream is set up,
// sending the relay a server/discover made of the request's _meta (its
// version, identity and capabilities) when none is under way. It returns
// the discover's error answer when the upstream refused it, and an error
// when the session ended or the client left first.
func (ss *session) awaitReady(r *http.Request, m incoming) (failed []byte, err error) {
	for {
		ss.mu.Lock()
		if ss.ready || ss.refused {
			ss.mu.Unlock()
			return nil, nil
		}
		hs, send := ss.attempt, false
		if hs == nil {
			hs, send = &handshake{done: make(chan struct{})}, true
			ss.attempt = hs
		}
		ss.mu.Unlock()
		if send && !ss.deliver(ss.ctx, discoverFor(r, m)) {
			return nil, ErrShuttingDown
		}
		if ss.beforeWait != nil {
			ss.beforeWait()
		}
		select {
		case <-hs.done:
		case <-ss.ended:
			// A refusal answers hs and then ends the session: when both
			// are done, the refusal is the answer.
			select {
			case <-hs.done:
			default:
				return nil, ErrShuttingDown
			}
		case <-r.Context().Done():
			return nil, r.Context().Err()
		}
		if hs.failed != nil {
			return hs.failed, nil
		}
	}
}

// discoverFor builds the Server's server/discover from the _meta of a
// client request.
func discoverFor(r *http.Request, m incoming) []byte {
	meta := map[string]json.RawMessage{}
	var full map[string]json.RawMessage
	if raw, _, _ := framing.LookupMember(m.env.Params, "_meta"); json.Unmarshal(raw, &full) == nil {
		for _, k := range []string{era.MetaProtocolVersion, era.MetaClientInfo, era.MetaClientCapabilities} {
			if v, ok := full[k]; ok {
				meta[k] = v
			}
		}
	}
	if _, ok := meta[era.MetaProtocolVersion]; !ok {
		meta[era.MetaProtocolVersion], _ = json.Marshal(r.Header.Get(HeaderProtocolVersion))
	}
	params, _ := json.Marshal(map[string]any{"_meta": meta})
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"method":"server/discover","params":%s}`, handshakeID, params)
}

func (ss *session) isRefused() bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.refused
}

// peekID returns the id of msg, a response the relay sent (so it parses).
func peekID(msg []byte) []byte {
	env, _ := framing.Peek(msg)
	return env.ID
}

// statelessIDPrefix starts the ids the stateless session's requests are
// rewritten to.
const statelessIDPrefix = "httpfront-"

// nextID returns a fresh request id for the stateless session's relay:
// the prefix, the session's random part (see openStateless) and a number.
// The random part keeps the ids of one client's requests from being
// guessed by another, who could otherwise name them.
func (ss *session) nextID() []byte {
	return strconv.AppendQuote(nil, statelessIDPrefix+ss.idSalt+"-"+strconv.FormatUint(ss.seq.Add(1), 10))
}

// subscriptions are the notifications a subscriptions/listen request asks
// for.
type subscriptions struct {
	ToolsListChanged      bool     `json:"toolsListChanged"`
	PromptsListChanged    bool     `json:"promptsListChanged"`
	ResourcesListChanged  bool     `json:"resourcesListChanged"`
	ResourceSubscriptions []string `json:"resourceSubscriptions"`
}

func parseSubscriptions(params []byte) *subscriptions {
	var p struct {
		Notifications subscriptions `json:"notifications"`
	}
	_ = json.Unmarshal(params, &p)
	return &p.Notifications
}

// wants reports whether the subscriptions take a notification of method
// with params.
func (sub *subscriptions) wants(method string, params []byte) bool {
	switch method {
	case "notifications/tools/list_changed":
		return sub.ToolsListChanged
	case "notifications/prompts/list_changed":
		return sub.PromptsListChanged
	case "notifications/resources/list_changed":
		return sub.ResourcesListChanged
	case "notifications/resources/updated":
		var p struct {
			URI string `json:"uri"`
		}
		return json.Unmarshal(params, &p) == nil && p.URI != "" && slices.Contains(sub.ResourceSubscriptions, p.URI)
	}
	return false
}

// notificationRouting is what the stateless session routes a notification
// on.
type notificationRouting struct {
	subscriptionID []byte // _meta's subscription id: the listen request it belongs to
	progressToken  []byte
}

func parseNotification(params []byte) notificationRouting {
	var p struct {
		ProgressToken json.RawMessage            `json:"progressToken"`
		Meta          map[string]json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil {
		return notificationRouting{}
	}
	return notificationRouting{subscriptionID: p.Meta[era.MetaSubscriptionID], progressToken: p.ProgressToken}
}

// withSubscriptionID returns the notification msg with its _meta's
// subscription id set to id (params and _meta made when absent or null),
// every other byte as the upstream sent it; msg itself when that cannot be
// set for sure (params not an object, a member spelled twice).
func withSubscriptionID(msg, id []byte) []byte {
	out, err := framing.SetMemberPath(msg, []string{"params", "_meta", era.MetaSubscriptionID}, id)
	if err != nil {
		return msg
	}
	return out
}

// withProgressToken returns the progress notification msg with its
// progress token set to token, the client's own, every other byte as the
// upstream sent it; msg itself when token is nil or the token cannot be
// set for sure (params not an object, a member spelled twice).
func withProgressToken(msg []byte, env framing.Envelope, token []byte) []byte {
	if token == nil || env.Params == nil {
		return msg
	}
	out, err := framing.SetMemberPath(msg, []string{"params", "progressToken"}, token)
	if err != nil {
		return msg
	}
	return out
}

// routeStateless routes a notification or request of the stateless
// session's relay: one that names its listen request goes to that
// request's stream, with the client's id; a list change the relay (or an
// upstream speaking to no listen request in particular) announces goes to
// every listen stream subscribed to it; a progress notification goes to
// the stream of the request it reports on. Anything else has no stream to
// go to in this protocol, and is dropped.
func (ss *session) routeStateless(msg []byte, env framing.Envelope) {
	if env.Kind == framing.Request {
		ss.refuseServerRequest(env)
		return
	}
	nr := parseNotification(env.Params)
	type target struct {
		ex  *exchange
		msg []byte
	}
	var targets []target
	ss.mu.Lock()
	defer ss.mu.Unlock()
	switch {
	case nr.subscriptionID != nil:
		key := idKey(nr.subscriptionID)
		if ex := ss.calls[key]; ex != nil && ex.listen != nil && ex.stream != nil {
			targets = append(targets, target{ex, withSubscriptionID(msg, ex.orig[key])})
		}
	case nr.progressToken != nil:
		// The relay sees each request's progress token rewritten to its
		// unique id (see serveStateless); the client gets its own back. A
		// token two requests in flight share (two of the relay's own, or
		// a duplicate the upstream read) names neither for sure, and one
		// client's progress must not reach another.
		token := idKey(nr.progressToken)
		holders := 0
		for _, ex := range ss.live {
			if ex.progress[token] && !ex.complete {
				holders++
				if ex.stream != nil {
					targets = append(targets, target{ex, withProgressToken(msg, env, ex.origToken)})
				}
			}
		}
		if holders > 1 {
			targets = nil
		}
	default:
		for _, ex := range ss.live {
			if ex.listen != nil && !ex.complete && ex.listen.wants(env.Method, env.Params) {
				for _, orig := range ex.orig {
					targets = append(targets, target{ex, withSubscriptionID(msg, orig)})
				}
			}
		}
	}
	if len(targets) == 0 {
		ss.log.Debug("dropping a notification no stream takes", "method", env.Method)
		return
	}
	for _, t := range targets {
		ss.noteLocked(t.ex, t.msg)
	}
}

// refuseServerRequest answers env, a request of the upstream's on the
// stateless session, with an error: the 2026-07-28 protocol has no server
// requests, so no client can answer it, and the call it was sent for would
// otherwise wait for an answer forever. The answer goes to the relay as a
// client's would, off the relay's write path, which must not wait on its
// own client pump.
func (ss *session) refuseServerRequest(env framing.Envelope) {
	ss.log.Warn("refusing a server request on the stateless session: the 2026-07-28 protocol has none", "method", env.Method)
	ss.sendOwn(jsonrpc.ErrorResponse(env.ID, jsonrpc.CodeMethodNotFound, "no client can answer a server request in the 2026-07-28 protocol", nil))
}

// ownLimit bounds the messages the stateless session has queued for its
// own relay (see sendOwn).
const ownLimit = 256

// sendOwn queues msg, a message of the stateless session's own (a refusal
// of a server request, a cancellation of a request its client abandoned,
// its own server/discover), for its relay, without waiting: its callers
// are the relay's write path, which must not wait on the relay's own
// client pump, and handlers whose clients left, which must not wait on an
// upstream that stopped reading. While ownLimit wait (the upstream is not
// reading, or floods the session with requests), msg is dropped and
// sendOwn reports false: a cancellation or a refusal lost then leaves only
// the upstream's own request, or work, unfinished.
func (ss *session) sendOwn(msg []byte) bool {
	select {
	case ss.own <- msg:
		return true
	default:
		ss.log.Warn("the upstream is not taking the front's own messages; one is dropped", "limit", ownLimit)
		return false
	}
}

// deliverOwn delivers the messages sendOwn queued, until the session ends.
func (ss *session) deliverOwn() {
	for {
		select {
		case msg := <-ss.own:
			if !ss.deliver(ss.ctx, msg) {
				return
			}
		case <-ss.ended:
			return
		}
	}
}

// noteLimit and noteByteLimit bound the notifications waiting for a
// stateless request's handler to write them; past either, its client is
// taken for one that stopped reading, and its stream is aborted.
const (
	noteLimit     = 256
	noteByteLimit = 4 << 20
)

// noteLocked hands msg, a notification, to the handler of ex, which writes
// it to its stream (see writeNotes): the stateless session's relay, which
// every 2026-07-28 client shares, never waits on one client's stream.
func (ss *session) noteLocked(ex *exchange, msg []byte) {
	if ex.stream.gone.Load() {
		return
	}
	if len(ex.notes) > 0 && (len(ex.notes) >= noteLimit || ex.noteBytes+len(msg) > noteByteLimit) {
		ss.log.Warn("a client reads its event stream too slowly for the notifications it is sent; its connection is closed",
			"limit", noteLimit, "byteLimit", noteByteLimit)
		ex.stream.abort()
		ex.notes, ex.noteBytes = nil, 0
		return
	}
	ex.notes = append(ex.notes, bytes.Clone(msg))
	ex.noteBytes += len(msg)
	select {
	case ex.wake <- struct{}{}:
	default: // the handler is told already
	}
}

// writeNotes writes the notifications waiting for ex's stream, in order.
func (ss *session) writeNotes(ex *exchange) {
	ss.mu.Lock()
	notes := ex.notes
	ex.notes, ex.noteBytes = nil, 0
	ss.mu.Unlock()
	for _, msg := range notes {
		if err := ex.stream.send(msg); err != nil {
			ss.log.Debug("cannot deliver a notification; the client left")
			return
		}
	}
}

// cancelAbandoned tells the relay that the requests of a client that left
// will not be read, so that the upstream can stop working on them (and a
// listen request's subscription ends). It does not wait for the relay.
func (ss *session) cancelAbandoned(ids [][]byte) {
	for _, id := range ids {
		ss.sendOwn(fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%s,"reason":"the client closed the request"}}`, id))
	}
}

// isHandshake reports whether a response of the stateless session's relay
// answers the Server's own server/discover.
func isHandshake(env framing.Envelope) bool {
	return bytes.Equal(env.ID, []byte(handshakeID))
}

// errorStatus returns the HTTP status the 2026-07-28 protocol gives a
// JSON-RPC error response: 404 for an unknown method, 400 for invalid
// params, an unsupported protocol version or a missing client capability;
// 0 for anything else, which is sent as usual.
func errorStatus(msg []byte) int {
	env, err := framing.Peek(msg)
	if err != nil || env.Kind != framing.Response || env.Error == nil {
		return 0
	}
	var e struct {
		Code int `json:"code"`
	}
	if json.Unmarshal(env.Error, &e) != nil {
		return 0
	}
	switch e.Code {
	case jsonrpc.CodeMethodNotFound:
		return http.StatusNotFound
	case jsonrpc.CodeInvalidParams, jsonrpc.CodeUnsupportedProtocolVersion, jsonrpc.CodeMissingClientCapabilities:
		return http.StatusBadRequest
	}
	return 0
}

// discoverAnswered takes the relay's answer msg to a server/discover on
// the stateless session: the Server's own (synthetic) or a client's. A
// result sets the session up. An error saying the upstream does not know
// server/discover, or knows no version of the 2026-07-28 era, means the
// upstream speaks the session era only: the session ends, and stateless
// requests are sent to initialize from now on. Only the Server's own
// discover, which it builds itself, is trusted to say so: a client's,
// which every 2026-07-28 client's fate would hang on, may be made to be
// refused (a _meta its upstream reads otherwise than the front), so its
// refusal is that client's answer, and, while the session is not set up,
// has the Server send its own to find out. Any other error (a version to
// retry with, invalid params) is the asker's: a client reads it, and the
// requests waiting for the Server's own discover get it.
func (ss *session) discoverAnswered(msg []byte, env framing.Envelope, synthetic bool) {
	refusal := env.Error != nil && refusesModernProtocol(env.Error)
	legacy := refusal && synthetic
	ss.mu.Lock()
	switch {
	case env.Result != nil:
		ss.ready = true
	case legacy:
		ss.refused = true
	}
	hs := ss.attempt
	if synthetic || env.Result != nil {
		ss.attempt = nil
	} else {
		hs = nil // a client's error is its own
	}
	var check *handshake // the Server's own discover, to tell whether a client's refusal holds for all
	if refusal && !synthetic && !ss.ready && !ss.refused && ss.attempt == nil {
		check = &handshake{done: make(chan struct{})}
		ss.attempt = check
	}
	ss.mu.Unlock()
	if hs != nil {
		if env.Error != nil && !legacy {
			hs.failed = bytes.Clone(msg)
		}
		close(hs.done)
	}
	if check != nil && !ss.sendOwn(ownDiscover()) {
		ss.mu.Lock()
		if ss.attempt == check {
			ss.attempt = nil // the next request waiting sends one
		}
		ss.mu.Unlock()
		close(check.done)
	}
	if legacy {
		ss.log.Info("the upstream refused server/discover", "error", string(env.Error))
		ss.srv.legacyOnly.Store(true)
		// Its upstream is of no use to stateless requests.
		ss.end("the upstream refused server/discover; 2026-07-28 requests are answered with the session versions")
	}
}

// ownDiscover is the Server's own server/discover when no client request
// gives it a _meta: the first 2026-07-28 version, and no capabilities.
func ownDiscover() []byte {
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"method":"server/discover","params":{"_meta":{%q:%q,%q:{}}}}`,
		handshakeID, era.MetaProtocolVersion, era.StatelessVersion, era.MetaClientCapabilities)
}

// refusesModernProtocol reports whether a JSON-RPC error answering
// server/discover says the server does not speak the 2026-07-28 protocol:
// the method is unknown, or the versions it lists are all of the session
// era.
func refusesModernProtocol(rpcErr []byte) bool {
	var e struct {
		Code int `json:"code"`
	}
	if json.Unmarshal(rpcErr, &e) != nil {
		return false
	}
	switch e.Code {
	case jsonrpc.CodeMethodNotFound:
		return true
	case jsonrpc.CodeUnsupportedProtocolVersion:
		return !offersModernVersion(rpcErr)
	}
	return false
}

// offersModernVersion reports whether a JSON-RPC error is an unsupported
// protocol version error listing a version of the 2026-07-28 era, with
// which a client retries server/discover.
func offersModernVersion(rpcErr []byte) bool {
	var e struct {
		Code int `json:"code"`
		Data struct {
			Supported []string `json:"supported"`
		} `json:"data"`
	}
	if json.Unmarshal(rpcErr, &e) != nil || e.Code != jsonrpc.CodeUnsupportedProtocolVersion {
		return false
	}
	for _, v := range e.Data.Supported {
		if v >= era.StatelessVersion && slices.Contains(protocolVersions, v) {
			return true
		}
	}
	return false
}

// checkParamHeaders checks the tool-designated headers of a tools/call
// against the tool's definition, as the protocol requires of a server
// (see package paramheader). A tool the relay's catalog does not know yet
// is not checked: its upstream judges the call.
func checkParamHeaders(h http.Header, relay *middleware.Session, m incoming) *postError {
	if m.env.Kind != framing.Request || m.env.Method != "tools/call" || m.env.Name == nil {
		return nil
	}
	name, _ := stringOf(m.env.Name) // as checkStateless read it
	def, ok := relay.ToolDefinition(name)
	if !ok {
		return nil
	}
	var tool struct {
		InputSchema json.RawMessage `json:"inputSchema"`
	}
	if json.Unmarshal(def, &tool) != nil {
		return nil
	}
	bindings, err := paramheader.Bindings(tool.InputSchema)
	if err != nil || len(bindings) == 0 {
		return nil
	}
	if err := paramheader.Validate(h, bindings, m.env.Params); err != nil {
		return &postError{id: m.env.ID, code: jsonrpc.CodeHeaderMismatch, message: err.Error()}
	}
	return nil
}
