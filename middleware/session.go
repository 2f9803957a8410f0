package middleware

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpwrap/mcpwrap/internal/framing"
)

// DefaultDrainTimeout is how long a Session waits for in-flight requests
// when the client goes away or Run's context is done, unless
// [Session.DrainTimeout] says otherwise.
const DefaultDrainTimeout = time.Second

// ownIDPrefix starts the id of every request the sidecar sends itself. Its
// ids are JSON strings with this prefix; a client request using the prefix
// is refused, so the two id spaces never collide.
const ownIDPrefix = "mcpwrap-"

// ErrUpstreamClosed is wrapped by the error Run returns when the upstream
// ended the session.
var ErrUpstreamClosed = errors.New("upstream closed the connection")

// Handshake is the opening exchange captured from a session, kept so that a
// restarted upstream can be initialised the way the client initialised the
// first one.
type Handshake struct {
	Method      string          // "initialize" or "server/discover"; "" before the client sent one
	Params      json.RawMessage // the client's params, as sent
	Result      json.RawMessage // the upstream's result, as received; nil until answered
	Initialized bool            // the client sent notifications/initialized
}

// A Session relays one client's JSON-RPC messages to one upstream and back.
//
// Messages it does not intercept are forwarded byte for byte. Its zero value
// is not usable: set Client and Upstream, then call Run once. Handshake and
// Call are safe to use concurrently with Run.
type Session struct {
	Name     string       // the upstream server's name, for logs and messages
	Client   Conn         // the MCP client's side
	Upstream Conn         // the upstream server's side
	Logger   *slog.Logger // nil discards logs

	// Tools, when set, gates tools/list and tools/call and serves the
	// discovery tool. Nil passes both through untouched.
	Tools ToolPolicy
	// DiscoveryTool names the discovery tool; "" means [DefaultDiscoveryTool].
	DiscoveryTool string
	// Discovery is [DiscoveryAuto] (the default when ""), [DiscoveryAlways]
	// or [DiscoveryNever].
	Discovery string
	// UpstreamStatus reports the upstream's load status for the agent; nil
	// means always available.
	UpstreamStatus func() UpstreamState
	// CatalogSeen, when set, is called with every full catalog loaded from
	// the upstream (to record it, or to set an approval baseline). It must
	// not call back into the Session.
	CatalogSeen func(tools []json.RawMessage)

	// DrainTimeout bounds the wait for in-flight requests when the client
	// goes away or Run's context is done. Zero means [DefaultDrainTimeout].
	DrainTimeout time.Duration

	once sync.Once
	log  *slog.Logger
	seq  atomic.Uint64
	mu   sync.Mutex
	hs   Handshake
	reqs map[string]string // in-flight client requests: raw id → method
	idle chan struct{}     // closed while reqs is empty
	own  map[string]chan ownReply
	ctx  context.Context // Run's, for the sidecar's own background requests

	// Tool catalog state, guarded by mu.
	catalog      []json.RawMessage
	catalogNames []string
	catalogIndex map[string]int
	catalogKnown bool
	visible      string // the visible tool set the client last learned
	visibleKnown bool
	locked       int // locked tools in the catalog
	walkLocked   int // locked tools on the pages of the client's current tools/list walk
	refreshing   bool
	stale        bool // a refresh was asked for while one was running
	stats        Stats
}

type ownReply struct {
	result json.RawMessage
	err    error
}

// Handshake returns a copy of the handshake captured so far.
func (s *Session) Handshake() Handshake {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hs
}

// Run relays messages until the client or the upstream goes away or ctx is
// done. When the client goes away or ctx is done, it waits up to
// DrainTimeout for in-flight requests to be answered, then closes the
// upstream and returns nil. When the upstream goes away first, every
// in-flight request is answered with an error and Run returns an error
// wrapping [ErrUpstreamClosed].
func (s *Session) Run(ctx context.Context) error {
	s.once.Do(s.init)
	s.mu.Lock()
	s.ctx = ctx
	s.mu.Unlock()
	upDone := make(chan error, 1)
	clientDone := make(chan error, 1)
	go func() { upDone <- s.pumpUpstream() }()
	go func() { clientDone <- s.pumpClient() }()

	var err error
	select {
	case err = <-upDone:
		if errors.Is(err, errClientGone) {
			s.Upstream.Close()
			return nil
		}
		s.failInflight("the upstream server closed the connection; request not completed")
		return fmt.Errorf("%w: %w", ErrUpstreamClosed, err)
	case err = <-clientDone:
		if errors.Is(err, io.EOF) {
			err = nil
			s.log.Debug("client closed its side; draining")
		}
	case <-ctx.Done():
		s.log.Debug("shutting down; draining")
	}
	s.drain(upDone)
	s.Upstream.Close()
	return err
}

func (s *Session) init() {
	s.log = s.Logger
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.reqs = make(map[string]string)
	s.own = make(map[string]chan ownReply)
	s.idle = make(chan struct{})
	close(s.idle)
	s.ctx = context.Background()
}

// drain waits until no client request is in flight, the upstream ends or
// the drain timeout passes, whichever comes first.
func (s *Session) drain(upDone <-chan error) {
	timeout := s.DrainTimeout
	if timeout <= 0 {
		timeout = DefaultDrainTimeout
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	s.mu.Lock()
	idle := s.idle
	s.mu.Unlock()
	select {
	case <-idle:
	case <-upDone:
	case <-t.C:
		s.log.Warn("in-flight requests not answered before shutdown", "count", s.inflight())
	}
}

var errClientGone = errors.New("client is gone")

// pumpClient forwards the client's messages to the upstream.
func (s *Session) pumpClient() error {
	for {
		msg, err := s.Client.ReadMessage()
		if err != nil {
			if e, ok := oversize(err); ok {
				env, _ := framing.Peek(e.Head)
				s.log.Error("client message too large; dropped", "bytes", e.Size, "limit", e.Limit)
				s.replyError(env.ID, codeInvalidRequest, fmt.Sprintf("message of %d bytes exceeds the %d-byte limit", e.Size, e.Limit))
				continue
			}
			return err
		}
		env, err := framing.Peek(msg)
		if err == nil && !json.Valid(msg) {
			err = errors.New("invalid JSON")
		}
		if err != nil {
			s.log.Warn("malformed message from client", "error", err)
			s.replyError(nil, codeParseError, "Parse error: "+err.Error())
			continue
		}
		switch env.Kind {
		case framing.Invalid:
			s.replyError(env.ID, codeInvalidRequest, "Invalid Request: neither a request, a notification nor a response")
			continue
		case framing.Request:
			if isOwnID(env.ID) {
				s.replyError(env.ID, codeInvalidRequest, "Invalid Request: ids starting with "+strconv.Quote(ownIDPrefix)+" are reserved by mcpwrap")
				continue
			}
			if s.Tools != nil && env.Method == "tools/call" && s.gateCall(s.runCtx(), env) {
				continue
			}
			s.track(env)
		case framing.Notification:
			if env.Method == "notifications/initialized" {
				s.mu.Lock()
				s.hs.Initialized = true
				s.mu.Unlock()
			}
		}
		if err := s.Upstream.WriteMessage(msg); err != nil {
			s.log.Warn("cannot write to upstream", "error", err)
			if env.Kind == framing.Request {
				s.untrack(env.ID)
				s.replyError(env.ID, codeInternalError, "the upstream server is not reachable; request not delivered")
			}
			continue
		}
		if env.Method == "notifications/initialized" {
			s.refreshLater() // the handshake is complete: load the catalog
		}
	}
}

// pumpUpstream forwards the upstream's messages to the client.
func (s *Session) pumpUpstream() error {
	for {
		msg, err := s.Upstream.ReadMessage()
		if err != nil {
			if e, ok := oversize(err); ok {
				env, _ := framing.Peek(e.Head)
				s.log.Error("upstream message too large; dropped", "bytes", e.Size, "limit", e.Limit)
				if env.ID != nil && s.untrack(env.ID) != "" {
					s.replyError(env.ID, codeInternalError, fmt.Sprintf("the upstream's response of %d bytes exceeds the %d-byte message limit (max_line_bytes); dropped", e.Size, e.Limit))
				}
				continue
			}
			return err
		}
		env, err := framing.Peek(msg)
		if err != nil {
			s.log.Warn("upstream wrote a non-JSON line to stdout; moved to stderr", "line", printable(msg))
			continue
		}
		if env.Kind == framing.Response {
			if isOwnID(env.ID) {
				s.deliverOwn(env)
				continue
			}
			switch method := s.untrack(env.ID); {
			case isHandshake(method) && env.Result != nil:
				s.mu.Lock()
				s.hs.Result = bytes.Clone(env.Result)
				s.mu.Unlock()
				if method == "server/discover" {
					s.refreshLater() // a stateless handshake has no initialized notification
				}
			case method == "tools/list" && env.Result != nil && s.Tools != nil:
				msg = s.rewriteToolsList(msg, env)
			}
		} else if env.Kind == framing.Notification && env.Method == "notifications/tools/list_changed" {
			s.refreshLater()
		}
		if err := s.Client.WriteMessage(msg); err != nil {
			return fmt.Errorf("%w: %w", errClientGone, err)
		}
	}
}

// runCtx returns Run's context.
func (s *Session) runCtx() context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ctx
}

// refreshLater reloads the tool catalog in the background, coalescing
// requests that arrive while a reload runs. It does nothing without a
// ToolPolicy.
func (s *Session) refreshLater() {
	if s.Tools == nil {
		return
	}
	s.mu.Lock()
	if s.refreshing {
		s.stale = true
		s.mu.Unlock()
		return
	}
	s.refreshing = true
	s.mu.Unlock()
	go func() {
		for {
			s.refreshCatalog(s.runCtx())
			s.mu.Lock()
			if !s.stale {
				s.refreshing = false
				s.mu.Unlock()
				return
			}
			s.stale = false
			s.mu.Unlock()
		}
	}()
}

func isHandshake(method string) bool { return method == "initialize" || method == "server/discover" }

func (s *Session) track(env framing.Envelope) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.reqs) == 0 {
		s.idle = make(chan struct{})
	}
	s.reqs[string(env.ID)] = env.Method
	if isHandshake(env.Method) {
		s.hs = Handshake{Method: env.Method, Params: bytes.Clone(env.Params)}
	}
}

// untrack forgets an in-flight client request and returns its method, or ""
// when id is not in flight.
func (s *Session) untrack(id []byte) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	method, ok := s.reqs[string(id)]
	if !ok {
		return ""
	}
	delete(s.reqs, string(id))
	if len(s.reqs) == 0 {
		close(s.idle)
	}
	return method
}

func (s *Session) inflight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.reqs)
}

// failInflight answers every in-flight client request with an error.
func (s *Session) failInflight(reason string) {
	s.mu.Lock()
	ids := make([]string, 0, len(s.reqs))
	for id := range s.reqs {
		ids = append(ids, id)
	}
	s.mu.Unlock()
	for _, id := range ids {
		if s.untrack([]byte(id)) != "" {
			s.replyError([]byte(id), codeInternalError, reason)
		}
	}
}

// Call sends a request of the sidecar's own to the upstream and waits for
// its result. The response never reaches the client.
func (s *Session) Call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	id := strconv.Quote(ownIDPrefix + strconv.FormatUint(s.seq.Add(1), 10))
	msg, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  string          `json:"method"`
		Params  any             `json:"params,omitempty"`
	}{"2.0", json.RawMessage(id), method, params})
	if err != nil {
		return nil, err
	}
	s.once.Do(s.init)
	ch := make(chan ownReply, 1)
	s.mu.Lock()
	s.own[id] = ch
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.own, id)
		s.mu.Unlock()
	}()
	if err := s.Upstream.WriteMessage(msg); err != nil {
		return nil, err
	}
	select {
	case r := <-ch:
		return r.result, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (s *Session) deliverOwn(env framing.Envelope) {
	s.mu.Lock()
	ch, ok := s.own[string(env.ID)]
	s.mu.Unlock()
	if !ok {
		s.log.Debug("dropping a late response to an own request", "id", string(env.ID))
		return
	}
	r := ownReply{result: bytes.Clone(env.Result)}
	if env.Error != nil {
		rpcErr := &RPCError{}
		if err := json.Unmarshal(env.Error, rpcErr); err != nil {
			r.err = fmt.Errorf("malformed error response: %w", err)
		} else {
			r.err = rpcErr
		}
	}
	ch <- r
}

func isOwnID(id []byte) bool {
	return bytes.HasPrefix(id, []byte(`"`+ownIDPrefix))
}

// printable shortens a stray line for a log record.
func printable(b []byte) string {
	const max = 512
	if len(b) > max {
		return string(b[:max]) + "…"
	}
	return string(b)
}
