// Package httpfront serves MCP's streamable HTTP transport in front of
// mcpwrap's relay. Each HTTP session (one Mcp-Session-Id) gets its own
// [middleware.Session], and the 2026-07-28 protocol's stateless requests
// share one: the messages the client POSTs are fed to it, and the messages
// it emits go back as JSON responses or on Server-Sent Events streams.
//
// It is mcpwrap's own server rather than the go-sdk's, because the go-sdk's
// server transport rejects methods it does not know and the relay must pass
// everything.
package httpfront

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpwrap/mcpwrap/internal/era"
	"github.com/mcpwrap/mcpwrap/internal/hostcheck"
	"github.com/mcpwrap/mcpwrap/internal/jsonrpc"
	"github.com/mcpwrap/mcpwrap/middleware"
)

// Defaults for the Server's zero-valued limits.
const (
	DefaultMaxSessions  = 100
	DefaultIdleTimeout  = 10 * time.Minute
	DefaultMaxBodyBytes = middleware.DefaultMaxMessageBytes // a body holds one message, or a batch of them
	DefaultStallTimeout = 30 * time.Second
	// DefaultMaxSessionsPerClient is the most sessions one client holds
	// with the default MaxSessions: a share of them (see clientShare).
	DefaultMaxSessionsPerClient = DefaultMaxSessions / clientShare
	// DefaultMaxBufferedBytes bounds the bytes of the bodies read and held
	// at once: four bodies of the largest size, or many more small ones.
	DefaultMaxBufferedBytes = 4 * DefaultMaxBodyBytes
	// DefaultMaxBufferedBytesPerClient is the most body bytes one client
	// holds with the default limits: a share of MaxBufferedBytes (see
	// clientShare), raised to what one body of the largest size may take
	// at once (see bodyPeak): 129 MiB.
	DefaultMaxBufferedBytesPerClient = max(DefaultMaxBufferedBytes/clientShare, 2*DefaultMaxBodyBytes+chunkMax)
)

// clientShare is the part of MaxSessions, and of MaxBufferedBytes, one
// client may hold: 2, half, so that another always finds half the slots
// and half the budget for bodies.
const clientShare = 2

// maxEvictions bounds the idle sessions one initialize ends to make room
// (others may take the room first).
const maxEvictions = 4

// retryAfter is the Retry-After, in seconds, of a 503 answered because
// the Server, or the client's share of it, is busy (its body budget or its
// sessions are full): bodies
// are read and handed on in about that long.
const retryAfter = "1"

// Header names of the transport.
const (
	HeaderSessionID       = "Mcp-Session-Id"
	HeaderProtocolVersion = "Mcp-Protocol-Version"
)

// Errors a Server reports in its HTTP answers; exported so callers can
// recognise them in logs and tests.
var (
	// ErrTooManySessions: MaxSessions sessions are open, none idle (503).
	ErrTooManySessions = errors.New("too many open sessions")
	// ErrClientSessions: the client holds MaxSessionsPerClient sessions,
	// none idle (503).
	ErrClientSessions = errors.New("this client holds its share of the open sessions")
	// ErrShuttingDown: the server is draining and takes no new work (503).
	ErrShuttingDown = errors.New("server is shutting down")
	// ErrBodiesBusy: the bodies being read and held take MaxBufferedBytes
	// (503, with Retry-After).
	ErrBodiesBusy = errors.New("too many request bytes are being read at once")
	// ErrClientBodies: the client's bodies being read and held take
	// MaxBufferedBytesPerClient (503, with Retry-After).
	ErrClientBodies = errors.New("this client's request bytes being read take its share of the budget")
)

// A Server serves MCP over streamable HTTP: POST with JSON or SSE answers,
// a standalone GET stream, DELETE, and sessions named by Mcp-Session-Id. It
// is an [http.Handler] for the MCP endpoint (mcpwrap mounts it at /mcp).
//
// Requests reaching it over a loopback address must name a loopback Host,
// and an Origin, when sent, must be a loopback one or listed in
// AllowedOrigins (DNS-rebinding protection). With Token set, every request
// must carry it as a bearer token.
//
// It serves both protocol eras at once: sessions opened with initialize
// (2024-11-05 to 2025-11-25), and the 2026-07-28 protocol's stateless
// requests, which all share one relay of their own (see serveStateless).
// When that relay's upstream does not speak 2026-07-28, stateless
// requests are answered with an unsupported-version error, on which
// clients fall back to initialize. A session's relay dials through
// [middleware.OnDemand]: when it remembers the server's answer to an
// initialize, its server starts on the session's first request that needs
// it, not on initialize.
//
// Set the fields before serving; ServeHTTP, Sessions and Shutdown are safe
// for concurrent use.
type Server struct {
	// NewSession builds the relay for a new HTTP session: client is the
	// session's client side, to be set as the Session's Client; logger is
	// Logger with the session's key. It must not run the Session, which the
	// Server does, and should not block.
	NewSession func(client middleware.Conn, logger *slog.Logger) *middleware.Session

	// Token, when set, is the bearer token every request must carry.
	Token string
	// AllowedOrigins are the Origin values accepted besides loopback ones,
	// such as "https://app.example.com".
	AllowedOrigins []string
	// MaxSessions bounds the sessions opened with initialize; 0 means
	// [DefaultMaxSessions]. The 2026-07-28 requests' shared session is not
	// one of them: its slot is kept, whatever the sessions take.
	//
	// An initialize that finds every slot taken ends the idle session (no
	// POST in progress) used least recently, rather than being refused;
	// only when none is idle is it refused (503, with Retry-After).
	MaxSessions int
	// MaxSessionsPerClient bounds the sessions one client holds; 0 means
	// half of MaxSessions (at least 1), [DefaultMaxSessionsPerClient] by
	// default. A client is its bearer token when Token is set, else the
	// host of its remote address (all local clients are one). A client at
	// its bound that opens another ends its own idle session used least
	// recently, or is refused when none is idle: one client cannot take
	// every slot, even by keeping its sessions busy.
	MaxSessionsPerClient int
	// IdleTimeout ends a session that has had no HTTP request in progress
	// (a pending POST or an open GET stream counts) for this long. 0 means
	// [DefaultIdleTimeout]; negative never ends sessions for idleness.
	IdleTimeout time.Duration
	// MaxBodyBytes bounds a POST body; 0 means [DefaultMaxBodyBytes].
	MaxBodyBytes int64
	// MaxBufferedBytes bounds the bytes of POST bodies read and held at
	// once, across all requests: a body takes its size (its
	// Content-Length, or what arrived of it) before it is read, and gives
	// it back once its messages are handed to the relay; one that does not
	// fit is refused with 503 and Retry-After, unread. It bounds the
	// front's memory whatever the number of connections. 0 means
	// [DefaultMaxBufferedBytes], raised to MaxBodyBytes when that is
	// larger, so that a body of the largest size allowed fits.
	MaxBufferedBytes int64
	// MaxBufferedBytesPerClient bounds the bytes of the POST bodies one
	// client (as for MaxSessionsPerClient) reads and holds at once, within
	// MaxBufferedBytes: a body past it is refused like one past
	// MaxBufferedBytes, while other clients' bodies are still read, so
	// that one client's slow uploads cannot take the whole budget. 0 means
	// half of MaxBufferedBytes, raised to what one body of MaxBodyBytes may
	// take at once (twice its size and a piece, while a body of unknown
	// length is joined), so that a client can always send one body of the
	// largest size: [DefaultMaxBufferedBytesPerClient] by default.
	MaxBufferedBytesPerClient int64
	// StallTimeout bounds how long a write to an SSE stream may go without
	// the client reading a byte of it. A client that reads slowly is
	// waited for; one that stops reading, with its connection open, has
	// its connection closed after this long, so that it holds the relay's
	// writes no longer: a session's relay writes to one stream at a time,
	// and every 2026-07-28 client shares one relay. 0 means
	// [DefaultStallTimeout]; negative waits for as long as the stream is
	// in use. A write sees a slow client's progress in small steps only on
	// a connection from [ConnLimits.Listener]; on others, the system may
	// wake it only once a third of the socket's send buffer (up to MiBs)
	// drained, so that a slow but steady client may be cut off.
	StallTimeout time.Duration
	// Logger receives the server's logs; nil discards them.
	Logger *slog.Logger

	once   sync.Once
	log    *slog.Logger
	bodies budget // see MaxBufferedBytes

	mu        sync.Mutex
	sessions  map[string]*session // every open session, the stateless one too
	stateless *session            // serves the 2026-07-28 requests, which have no session; nil until one came
	clients   map[string]int      // the sessions opened with initialize, by client (see clientOf)

	legacyOnly atomic.Bool // the upstream refused server/discover: it speaks the session era only
	draining   bool
	calls      int           // POSTs waiting for answers to their requests
	noCalls    chan struct{} // closed while calls is zero
}

func (s *Server) init() {
	s.log = s.Logger
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.sessions = make(map[string]*session)
	s.clients = make(map[string]int)
	s.bodies.limit = s.maxBufferedBytes()
	s.bodies.perClient = s.maxBufferedBytesPerClient()
	s.noCalls = make(chan struct{})
	close(s.noCalls)
}

func (s *Server) maxSessions() int {
	if s.MaxSessions > 0 {
		return s.MaxSessions
	}
	return DefaultMaxSessions
}

func (s *Server) maxSessionsPerClient() int {
	if s.MaxSessionsPerClient > 0 {
		return s.MaxSessionsPerClient
	}
	return max(1, s.maxSessions()/clientShare)
}

func (s *Server) idleTimeout() time.Duration {
	if s.IdleTimeout == 0 {
		return DefaultIdleTimeout
	}
	return s.IdleTimeout
}

func (s *Server) stallTimeout() time.Duration {
	if s.StallTimeout == 0 {
		return DefaultStallTimeout
	}
	return s.StallTimeout
}

func (s *Server) maxBodyBytes() int64 {
	if s.MaxBodyBytes > 0 {
		return s.MaxBodyBytes
	}
	return DefaultMaxBodyBytes
}

func (s *Server) maxBufferedBytes() int64 {
	if s.MaxBufferedBytes > 0 {
		return s.MaxBufferedBytes
	}
	return max(DefaultMaxBufferedBytes, s.maxBodyBytes())
}

func (s *Server) maxBufferedBytesPerClient() int64 {
	if s.MaxBufferedBytesPerClient > 0 {
		return s.MaxBufferedBytesPerClient
	}
	return max(s.maxBufferedBytes()/clientShare, bodyPeak(s.maxBodyBytes()))
}

// Sessions returns the relays of the open sessions, for callers that must
// reach every one (for example to re-evaluate tools after a policy change).
func (s *Server) Sessions() []*middleware.Session {
	s.once.Do(s.init)
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*middleware.Session, 0, len(s.sessions))
	for _, ss := range s.sessions {
		out = append(out, ss.relay)
	}
	return out
}

// ServeHTTP implements [http.Handler].
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.once.Do(s.init)
	if err := hostcheck.Check(r, s.AllowedOrigins); err != nil {
		s.log.Warn("request refused", "reason", err.Error(), "remote", r.RemoteAddr)
		writeError(w, http.StatusForbidden, nil, jsonrpc.CodeServerError, "Forbidden: "+err.Error())
		return
	}
	if !s.authorized(r) {
		// The header names no token, so a missing and a wrong one look alike.
		w.Header().Set("WWW-Authenticate", `Bearer realm="mcpwrap"`)
		writeError(w, http.StatusUnauthorized, nil, jsonrpc.CodeServerError, "Unauthorized: a valid bearer token is required")
		return
	}
	// An unknown version that sorts after the sessions' ones is answered
	// as the 2026-07-28 protocol requires, on the request's own id (see
	// serveStateless).
	if v := r.Header.Get(HeaderProtocolVersion); v != "" && !slices.Contains(protocolVersions, v) &&
		(r.Method != http.MethodPost || r.Header.Get(HeaderSessionID) != "" || v < era.StatelessVersion) {
		writeError(w, http.StatusBadRequest, nil, jsonrpc.CodeInvalidRequest,
			fmt.Sprintf("Bad Request: unsupported %s %q (supported: %s)", HeaderProtocolVersion, v, strings.Join(protocolVersions, ", ")))
		return
	}
	switch r.Method {
	case http.MethodPost:
		s.servePOST(w, r)
	case http.MethodGet:
		s.serveGET(w, r)
	case http.MethodDelete:
		s.serveDELETE(w, r)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		writeError(w, http.StatusMethodNotAllowed, nil, jsonrpc.CodeInvalidRequest, "Method Not Allowed: use POST, GET or DELETE")
	}
}

// protocolVersions are the values accepted in Mcp-Protocol-Version: those
// of the go-sdk release mcpwrap is built with.
var protocolVersions = mcp.SupportedProtocolVersions()

// authorized reports whether r carries the bearer token, if one is needed.
func (s *Server) authorized(r *http.Request) bool {
	if s.Token == "" {
		return true
	}
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	// Digests of equal length, so that the comparison's time does not tell
	// the token's length either.
	got, want := sha256.Sum256([]byte(strings.TrimSpace(token))), sha256.Sum256([]byte(s.Token))
	return ok && strings.EqualFold(scheme, "Bearer") && subtle.ConstantTimeCompare(got[:], want[:]) == 1
}

// IsLoopbackAddr reports whether a listen address (host:port) binds
// loopback only. An empty host binds every interface, so it does not.
func IsLoopbackAddr(addr string) bool { return hostcheck.IsLoopbackAddr(addr) }

// serveGET opens the session's standalone SSE stream.
func (s *Server) serveGET(w http.ResponseWriter, r *http.Request) {
	if a := accepts(r.Header.Values("Accept")); !a.sse && !a.wildcard {
		writeError(w, http.StatusNotAcceptable, nil, jsonrpc.CodeInvalidRequest, "Not Acceptable: a GET stream needs Accept: text/event-stream")
		return
	}
	ss, ok := s.lookup(w, r)
	if !ok {
		return
	}
	if s.isDraining() {
		writeError(w, http.StatusServiceUnavailable, nil, jsonrpc.CodeServerError, ErrShuttingDown.Error())
		return
	}
	if !ss.enter() {
		writeSessionNotFound(w)
		return
	}
	defer ss.leave()
	st := newStream(w, s.stallTimeout(), ss.log)
	if err := st.comment("stream open"); err != nil { // headers and a first DATA frame, which proxies pass on
		return
	}
	if old := ss.attach(st); old != nil {
		ss.log.Debug("a new GET stream replaces the previous one")
		old.finish()
	}
	if s.isDraining() {
		// Shutdown began after the check above, and closed the GET
		// streams before this one was attached: it ends at once too.
		st.finish()
	}
	select {
	case <-st.ended:
	case <-r.Context().Done():
	case <-ss.ended:
	}
	st.close()
	ss.detach(st)
}

// serveDELETE ends a session.
func (s *Server) serveDELETE(w http.ResponseWriter, r *http.Request) {
	ss, ok := s.lookup(w, r)
	if !ok {
		return
	}
	ss.end("the client ended it")
	w.WriteHeader(http.StatusNoContent)
}

// lookup finds the session named by the request, or answers 400 or 404.
func (s *Server) lookup(w http.ResponseWriter, r *http.Request) (*session, bool) {
	id := r.Header.Get(HeaderSessionID)
	if id == "" {
		writeError(w, http.StatusBadRequest, nil, jsonrpc.CodeInvalidRequest,
			"Bad Request: missing "+HeaderSessionID+" header; open a session with an initialize request first")
		return nil, false
	}
	s.mu.Lock()
	ss := s.sessions[id]
	s.mu.Unlock()
	if ss == nil {
		writeSessionNotFound(w)
		return nil, false
	}
	return ss, true
}

func (s *Server) isDraining() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.draining
}

// open creates and starts a session for client (see clientOf). When the
// client holds its share of the slots, or every slot is taken, the idle
// session used least recently (the client's own, or any) is ended to make
// room; when none is idle, the open is refused.
func (s *Server) open(client string) (*session, error) {
	if s.isDraining() {
		return nil, ErrShuttingDown
	}
	ss := newSession(s, rand.Text())
	ss.client = client
	ss.relay = s.NewSession(ss, ss.log)
	// An initialize alone starts no server when the relay can answer it
	// from the server's last load: a flood of them costs no processes.
	ss.relay.Dial = middleware.OnDemand(ss.relay.Dial)
	for range maxEvictions {
		s.mu.Lock()
		var pool []*session // the sessions one of which may make room
		var full error
		switch {
		case s.draining:
			s.mu.Unlock()
			return nil, ErrShuttingDown
		case s.clients[client] >= s.maxSessionsPerClient():
			pool, full = s.openedLocked(client), ErrClientSessions
		case s.openedCountLocked() >= s.maxSessions():
			pool, full = s.openedLocked(""), ErrTooManySessions
		default:
			s.sessions[ss.id] = ss
			s.clients[client]++
			n := s.openedCountLocked()
			s.mu.Unlock()
			ss.log.Info("session opened", "sessions", n)
			ss.start()
			return ss, nil
		}
		s.mu.Unlock()
		victim := leastRecentlyUsed(pool)
		if victim == nil {
			return nil, full
		}
		victim.end("evicted: idle the longest when a new session needed its slot (" + full.Error() + ")")
	}
	return nil, ErrTooManySessions
}

// openedLocked returns the sessions opened with initialize, those of
// client only unless it is "".
func (s *Server) openedLocked(client string) []*session {
	var out []*session
	for _, ss := range s.sessions {
		if ss != s.stateless && (client == "" || ss.client == client) {
			out = append(out, ss)
		}
	}
	return out
}

// openedCountLocked returns the number of sessions opened with initialize.
func (s *Server) openedCountLocked() int {
	if s.stateless != nil {
		return len(s.sessions) - 1
	}
	return len(s.sessions)
}

// leastRecentlyUsed returns the idle session of pool used least recently,
// nil when none is idle.
func leastRecentlyUsed(pool []*session) *session {
	var victim *session
	var oldest time.Time
	for _, ss := range pool {
		if used, idle := ss.lastUse(); idle && (victim == nil || used.Before(oldest)) {
			victim, oldest = ss, used
		}
	}
	return victim
}

// clientOf names the client of r for MaxSessionsPerClient and
// MaxBufferedBytesPerClient: its bearer
// token when the Server checks one (as a digest: it is never kept), else
// the host of its remote address. An unchecked token names no one: any
// client could send a new one with each request.
func (s *Server) clientOf(r *http.Request) string {
	if s.Token != "" {
		sum := sha256.Sum256([]byte(s.Token)) // authorized: the token is Token
		return "token:" + hex.EncodeToString(sum[:8])
	}
	return "addr:" + hostcheck.HostOf(r.RemoteAddr)
}

// forget removes an ending session, so that it is no longer found.
func (s *Server) forget(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.sessions[id]
	if ss == nil {
		return
	}
	delete(s.sessions, id)
	switch {
	case ss == s.stateless:
		s.stateless = nil
	case s.clients[ss.client] <= 1:
		delete(s.clients, ss.client)
	default:
		s.clients[ss.client]--
	}
}

// callStarted and callDone count POSTs waiting for answers, which a
// shutdown lets finish.
func (s *Server) callStarted() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.draining {
		return false
	}
	if s.calls == 0 {
		s.noCalls = make(chan struct{})
	}
	s.calls++
	return true
}

func (s *Server) callDone() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls--
	if s.calls == 0 {
		close(s.noCalls)
	}
}

// Shutdown stops taking new sessions, streams and requests, lets the POSTs
// already waiting for answers finish, then ends every session (which closes
// its upstream) and waits for them. When ctx ends first, it cancels the
// sessions' relays and returns ctx's error without waiting further.
// Messages that answer the upstream (responses, notifications) are still
// accepted while draining, so that in-flight requests needing the client
// (sampling, elicitation) can complete.
func (s *Server) Shutdown(ctx context.Context) error {
	s.once.Do(s.init)
	all, noCalls := s.stopTaking()
	var err error
	select {
	case <-noCalls:
	case <-ctx.Done():
		err = ctx.Err()
	}
	for _, ss := range all {
		ss.end("shutdown")
	}
	for _, ss := range all {
		if err != nil {
			break
		}
		select {
		case <-ss.done:
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	if err != nil {
		s.log.Warn("shutdown deadline passed; cancelling the remaining sessions", "error", err)
		for _, ss := range all {
			ss.cancel()
		}
	}
	return err
}

// stopTaking begins a shutdown: no new sessions, streams and requests are
// taken, and the GET streams end. It returns the sessions, and a channel
// closed once no POST waits for answers.
func (s *Server) stopTaking() (all []*session, noCalls <-chan struct{}) {
	s.mu.Lock()
	s.draining = true
	noCalls = s.noCalls
	all = make([]*session, 0, len(s.sessions))
	for _, ss := range s.sessions {
		all = append(all, ss)
	}
	s.mu.Unlock()
	s.log.Info("shutting down", "sessions", len(all))
	for _, ss := range all {
		ss.closeGET()
	}
	return all, noCalls
}

// acceptance is what a request's Accept header admits.
type acceptance struct {
	json     bool // application/json
	sse      bool // text/event-stream, named
	wildcard bool // */*, with SSE not refused by name
}

// accepts reads the Accept header values. No Accept header at all admits
// anything. A type or range with q=0 is refused, and a type named exactly
// outweighs a range that covers it; */* admits JSON, or SSE when JSON is
// refused.
func accepts(values []string) acceptance {
	if len(values) == 0 {
		return acceptance{json: true, wildcard: true}
	}
	var jsonOK, jsonNo, sseOK, sseNo, jsonRange, sseRange, any bool
	for _, v := range values {
		for _, part := range strings.Split(v, ",") {
			media, params, _ := strings.Cut(part, ";")
			ok := !refusedQuality(params)
			switch strings.ToLower(strings.TrimSpace(media)) {
			case "application/json":
				jsonOK, jsonNo = jsonOK || ok, jsonNo || !ok
			case "text/event-stream":
				sseOK, sseNo = sseOK || ok, sseNo || !ok
			case "application/*":
				jsonRange = jsonRange || ok
			case "text/*":
				sseRange = sseRange || ok
			case "*/*":
				any = any || ok
			}
		}
	}
	var a acceptance
	a.json = jsonOK || !jsonNo && (jsonRange || any)
	a.sse = sseOK || !sseNo && (sseRange || any && !a.json)
	a.wildcard = any && !sseNo
	return a
}

// refusedQuality reports whether params, the parameters of one Accept
// element, give it the quality 0: not acceptable.
func refusedQuality(params string) bool {
	for _, p := range strings.Split(params, ";") {
		name, value, _ := strings.Cut(p, "=")
		if !strings.EqualFold(strings.TrimSpace(name), "q") {
			continue
		}
		q, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		return err == nil && q == 0
	}
	return false
}

// mediaType returns the media type of a Content-Type value, "" when absent
// or malformed.
func mediaType(contentType string) string {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return ""
	}
	return mt
}
