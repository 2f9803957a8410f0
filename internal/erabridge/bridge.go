package erabridge

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpwrap/mcpwrap/internal/era"
	"github.com/mcpwrap/mcpwrap/internal/framing"
	"github.com/mcpwrap/mcpwrap/internal/jsonrpc"
	"github.com/mcpwrap/mcpwrap/middleware"
)

// DefaultRoundTimeout is how long an input-required round the bridge
// opened for a 2026-07-28 client waits for the client's retry before the
// held upstream request is cancelled.
const DefaultRoundTimeout = 5 * time.Minute

// maxRounds bounds the input-required rounds of one request of a session-era
// client, as the go-sdk client bounds its retries.
const maxRounds = 10

// Options configure a bridge. The zero value finds out the upstream's era,
// logs nothing, and uses the defaults below.
type Options struct {
	// Pin is the era the upstream is taken to speak; "" is [Auto].
	Pin Pin
	// DiscoverFirst makes the bridge ask the upstream server/discover
	// before it sends a session-era client's initialize, as the go-sdk
	// client opens, and speak 2026-07-28 to a server that answers it. Set
	// it for an upstream on which a discover commits no session (one over
	// HTTP, where each request stands alone); a stdio server of both eras
	// takes a discover for its session's handshake and would refuse the
	// initialize after it. Ignored when Pin is not Auto.
	DiscoverFirst bool
	// Logger receives the bridge's records; nil discards them.
	Logger *slog.Logger
	// RoundTimeout bounds the wait for a 2026-07-28 client's retry of a
	// round; zero means [DefaultRoundTimeout].
	RoundTimeout time.Duration
	// MaxMessageBytes bounds a message the Session writes in parts while
	// the bridge translates (it is then held whole); zero means
	// [middleware.DefaultMaxMessageBytes].
	MaxMessageBytes int
	// AfterFunc arms the round timers; nil means time.AfterFunc.
	AfterFunc func(time.Duration, func()) interface{ Stop() bool }
}

// Dial returns a Dialer whose every Conn is dial's, wrapped: the era is
// found out again for every connection (a restart, a reconnect).
func Dial(dial middleware.Dialer, opts Options) middleware.Dialer {
	return func(ctx context.Context) (middleware.Conn, error) {
		conn, err := dial(ctx)
		if err != nil {
			return nil, err
		}
		return Wrap(conn, opts), nil
	}
}

// mode is what the bridge does with a connection's messages.
type mode int32

const (
	negotiating  mode = iota // the era is not known yet: the handshake decides
	same                     // both sides speak one era: bytes pass untouched
	modernClient             // a 2026-07-28 client, a session-era server
	modernServer             // a session-era client, a 2026-07-28 server
)

// The optional capabilities of a middleware.Conn that a Session looks for
// (middleware/conn.go), forwarded while the eras are the same.
type (
	headReader interface {
		ReadHead() (msg []byte, whole bool, err error)
		ReadPart() (part []byte, last bool, err error)
	}
	bufferedReader interface{ Buffered() bool }
	holdingWriter  interface {
		HoldMessage(msg []byte) error
		Flush() error
	}
	partsWriter interface {
		BeginMessage() middleware.MessageWriter
	}
)

// Conn is the bridge over one upstream connection. It meets the contract
// of [middleware.Conn]: ReadMessage from one goroutine at a time,
// WriteMessage concurrently with it and with itself, Close at any time and
// more than once, ending blocked calls.
//
// Until the handshake is answered it reads on the caller's goroutine, and
// when both sides speak one era it stays so: every call goes straight to
// the upstream's Conn. When it translates, one goroutine of its own reads
// the upstream (so that an answer it makes itself can be read while the
// upstream is silent), and another writes what the reading side must
// send upstream; Close waits for both.
type Conn struct {
	inner  middleware.Conn
	opts   Options
	log    *slog.Logger
	ctx    context.Context // ends at Close: the bridge's own writes
	cancel context.CancelFunc
	mode   atomic.Int32
	prefix string // the ids of the bridge's own requests: `"erabridge-NONCE-`
	seq    atomic.Int64

	done      chan struct{} // closed by Close
	closeOnce sync.Once
	closeErr  error
	wg        sync.WaitGroup // the reader and the writer

	upstream chan item     // the reader's translated messages (bridged)
	wake     chan struct{} // an injected message waits
	readErr  error         // why the reader ended; set before upstream is closed

	mu       sync.Mutex
	closed   bool
	hs       *handshake // the Session's handshake being negotiated
	injected [][]byte   // the bridge's own messages to the Session
	outbox   [][]byte   // the reader's messages to the upstream
	writing  bool       // the writer runs
	timers   map[*round]struct{}
	down     downState // modernClient
	up       upState   // modernServer
	// clientVersion and serverVersion are the protocol versions each side
	// speaks, once the handshake is answered (see Eras).
	clientVersion, serverVersion string
}

var _ middleware.EraReporter = (*Conn)(nil)

// item is one message (or a dropped one's error) of the reader.
type item struct {
	msg []byte
	err error
}

// Wrap returns a bridge over inner, an upstream's Conn freshly dialled, on
// which nothing was written yet.
func Wrap(inner middleware.Conn, opts Options) middleware.Conn {
	c := newConn(inner, opts)
	h, ok1 := inner.(headReader)
	b, ok2 := inner.(bufferedReader)
	w, ok3 := inner.(holdingWriter)
	p, ok4 := inner.(partsWriter)
	if ok1 && ok2 && ok3 && ok4 {
		return &streamConn{Conn: c, h: h, b: b, w: w, p: p}
	}
	return c
}

func newConn(inner middleware.Conn, opts Options) *Conn {
	if opts.Pin == "" {
		opts.Pin = Auto
	}
	if opts.RoundTimeout <= 0 {
		opts.RoundTimeout = DefaultRoundTimeout
	}
	if opts.MaxMessageBytes <= 0 {
		opts.MaxMessageBytes = middleware.DefaultMaxMessageBytes
	}
	if opts.AfterFunc == nil {
		opts.AfterFunc = func(d time.Duration, f func()) interface{ Stop() bool } { return time.AfterFunc(d, f) }
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var nonce [6]byte
	_, _ = rand.Read(nonce[:])
	ctx, cancel := context.WithCancel(context.Background())
	return &Conn{
		inner: inner, opts: opts, log: log, ctx: ctx, cancel: cancel,
		prefix: `"erabridge-` + base64.RawURLEncoding.EncodeToString(nonce[:]) + "-",
		done:   make(chan struct{}),
		wake:   make(chan struct{}, 1),
	}
}

// Eras reports the protocol version each side speaks on this connection:
// the client's (the Session's) as its handshake was answered, and the
// upstream's; both "" until the handshake is answered, the same when no
// translation takes place. It may be called concurrently with anything.
func (c *Conn) Eras() (client, server string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.clientVersion, c.serverVersion
}

// ReadMessage implements [middleware.Conn].
func (c *Conn) ReadMessage() ([]byte, error) {
	switch mode(c.mode.Load()) {
	case same:
		return c.inner.ReadMessage()
	case negotiating:
		return c.readNegotiating()
	}
	return c.readBridged()
}

// WriteMessage implements [middleware.Conn].
func (c *Conn) WriteMessage(ctx context.Context, msg []byte) error {
	switch mode(c.mode.Load()) {
	case same:
		return c.inner.WriteMessage(ctx, msg)
	case negotiating:
		return c.writeNegotiating(ctx, msg)
	case modernClient:
		return c.writeModernClient(ctx, msg)
	}
	return c.writeModernServer(ctx, msg)
}

// Close implements [middleware.Conn]: it closes the upstream's Conn and
// waits for the bridge's goroutines.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.closed = true
		for r := range c.timers {
			r.timer.Stop()
		}
		c.timers = nil
		c.mu.Unlock()
		c.cancel()
		close(c.done)
		c.closeErr = c.inner.Close()
		c.wg.Wait()
	})
	return c.closeErr
}

// errClosed is what a read returns once Close ended it.
var errClosed = errors.New("erabridge: connection closed")

// readBridged returns the next message for the Session while the bridge
// translates: its own first, then the reader's.
func (c *Conn) readBridged() ([]byte, error) {
	for {
		c.mu.Lock()
		if len(c.injected) > 0 {
			msg := c.injected[0]
			c.injected[0] = nil
			c.injected = c.injected[1:]
			c.mu.Unlock()
			return msg, nil
		}
		c.mu.Unlock()
		select {
		case it, ok := <-c.upstream:
			if !ok {
				return nil, c.readErr
			}
			return it.msg, it.err
		case <-c.wake:
		case <-c.done:
			return nil, errClosed
		}
	}
}

// pending reports whether readBridged has a message without waiting.
func (c *Conn) pending() bool {
	c.mu.Lock()
	n := len(c.injected)
	c.mu.Unlock()
	return n > 0 || len(c.upstream) > 0
}

// inject queues msg, the bridge's own, for the Session.
func (c *Conn) inject(msg []byte) {
	c.mu.Lock()
	if !c.closed {
		c.injected = append(c.injected, msg)
	}
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// post queues msg for the upstream, written by the bridge's writer: the
// reader never waits on a write.
func (c *Conn) post(msg []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.outbox = append(c.outbox, msg)
	if !c.writing {
		c.writing = true
		c.wg.Add(1)
		go c.writeOutbox()
	}
}

// writeOutbox writes what post queued until none is left.
func (c *Conn) writeOutbox() {
	defer c.wg.Done()
	for {
		c.mu.Lock()
		if len(c.outbox) == 0 || c.closed {
			c.outbox, c.writing = nil, false
			c.mu.Unlock()
			return
		}
		msg := c.outbox[0]
		c.outbox[0] = nil
		c.outbox = c.outbox[1:]
		c.mu.Unlock()
		if err := c.inner.WriteMessage(c.ctx, msg); err != nil {
			c.log.Debug("cannot write to the upstream", "error", err)
		}
	}
}

// startReader makes the bridge translate in mode m from now on: its
// reader takes over the upstream. Called by the Session's reader (the
// handshake's answer), before it returns that answer.
func (c *Conn) startReader(m mode) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hs = nil
	c.upstream = make(chan item, 16)
	c.mode.Store(int32(m))
	if c.closed {
		close(c.upstream)
		c.readErr = errClosed
		return
	}
	c.wg.Add(1)
	go c.read(m)
}

// read reads the upstream, translating, until it ends or Close.
func (c *Conn) read(m mode) {
	defer c.wg.Done()
	defer close(c.upstream)
	for {
		msg, err := c.inner.ReadMessage()
		var outs [][]byte
		switch {
		case errors.Is(err, middleware.ErrMessageTooLarge):
			select {
			case c.upstream <- item{err: err}:
			case <-c.done:
				c.readErr = errClosed
				return
			}
			continue
		case err != nil:
			c.readErr = err
			return
		case m == modernClient:
			outs = c.fromSessionServer(msg)
		default:
			outs = c.fromStatelessServer(msg)
		}
		for _, out := range outs {
			select {
			case c.upstream <- item{msg: out}:
			case <-c.done:
				c.readErr = errClosed
				return
			}
		}
	}
}

// newID returns a fresh id of the bridge's own, as raw JSON.
func (c *Conn) newID() []byte {
	return []byte(c.prefix + strconv.FormatInt(c.seq.Add(1), 10) + `"`)
}

// isOwn reports whether id is one of the bridge's own.
func (c *Conn) isOwn(id []byte) bool {
	return bytes.HasPrefix(id, []byte(c.prefix))
}

// arm starts r's timer, which abandons it.
func (c *Conn) armLocked(r *round) {
	if c.closed {
		return
	}
	r.timer = c.opts.AfterFunc(c.opts.RoundTimeout, func() { c.abandon(r) })
	if c.timers == nil {
		c.timers = make(map[*round]struct{})
	}
	c.timers[r] = struct{}{}
}

// Messages the bridge writes itself.

func response(id, result []byte) []byte {
	out := make([]byte, 0, len(id)+len(result)+32)
	out = append(out, `{"jsonrpc":"2.0","id":`...)
	out = append(out, id...)
	out = append(out, `,"result":`...)
	out = append(out, result...)
	return append(out, '}')
}

func request(id []byte, method string, params []byte) []byte {
	m, _ := json.Marshal(method)
	out := append([]byte(`{"jsonrpc":"2.0","id":`), id...)
	out = append(out, `,"method":`...)
	out = append(out, m...)
	if params != nil {
		out = append(out, `,"params":`...)
		out = append(out, params...)
	}
	return append(out, '}')
}

func notification(method string, params []byte) []byte {
	m, _ := json.Marshal(method)
	out := append([]byte(`{"jsonrpc":"2.0","method":`), m...)
	if params != nil {
		out = append(out, `,"params":`...)
		out = append(out, params...)
	}
	return append(out, '}')
}

// rpcError is a JSON-RPC error object, as the bridge reads one.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    struct {
		Supported []string `json:"supported"`
	} `json:"data"`
}

func parseError(raw []byte) rpcError {
	var e rpcError
	_ = json.Unmarshal(raw, &e)
	return e
}

// offeredStateless returns the newest stateless version an unsupported
// version error lists, or "".
func (e rpcError) offeredStateless() string {
	best := ""
	if e.Code != jsonrpc.CodeUnsupportedProtocolVersion {
		return ""
	}
	for _, v := range e.Data.Supported {
		if era.IsStateless(v) && v > best {
			best = v
		}
	}
	return best
}

// serverCaps is what the bridge reads of a server's capabilities.
type serverCaps struct {
	Tools *struct {
		ListChanged bool `json:"listChanged"`
	} `json:"tools"`
	Prompts *struct {
		ListChanged bool `json:"listChanged"`
	} `json:"prompts"`
	Resources *struct {
		ListChanged bool `json:"listChanged"`
		Subscribe   bool `json:"subscribe"`
	} `json:"resources"`
}

func parseCaps(raw []byte) serverCaps {
	var c serverCaps
	_ = json.Unmarshal(raw, &c)
	return c
}

// subscriptions are the notifications of a subscriptions/listen request.
type subscriptions struct {
	ToolsListChanged      bool     `json:"toolsListChanged,omitempty"`
	PromptsListChanged    bool     `json:"promptsListChanged,omitempty"`
	ResourcesListChanged  bool     `json:"resourcesListChanged,omitempty"`
	ResourceSubscriptions []string `json:"resourceSubscriptions,omitempty"`
}

// agreed returns what of want a server of caps honours.
func (caps serverCaps) agreed(want subscriptions) subscriptions {
	var a subscriptions
	a.ToolsListChanged = want.ToolsListChanged && caps.Tools != nil && caps.Tools.ListChanged
	a.PromptsListChanged = want.PromptsListChanged && caps.Prompts != nil && caps.Prompts.ListChanged
	a.ResourcesListChanged = want.ResourcesListChanged && caps.Resources != nil && caps.Resources.ListChanged
	if caps.Resources != nil && caps.Resources.Subscribe {
		a.ResourceSubscriptions = want.ResourceSubscriptions
	}
	return a
}

func (s subscriptions) any() bool {
	return s.ToolsListChanged || s.PromptsListChanged || s.ResourcesListChanged || len(s.ResourceSubscriptions) > 0
}

// wants reports whether s takes the notification of method with params.
func (s subscriptions) wants(method string, params []byte) bool {
	switch method {
	case "notifications/tools/list_changed":
		return s.ToolsListChanged
	case "notifications/prompts/list_changed":
		return s.PromptsListChanged
	case "notifications/resources/list_changed":
		return s.ResourcesListChanged
	case "notifications/resources/updated":
		raw, _, err := framing.LookupMember(params, "uri")
		if err != nil || raw == nil {
			return false
		}
		uri, err := framing.String(raw)
		if err != nil {
			return false
		}
		for _, u := range s.ResourceSubscriptions {
			if u == uri {
				return true
			}
		}
	}
	return false
}

// member returns the value of obj's member name, read as every parser
// reads it, or nil.
func member(obj []byte, name string) []byte {
	if len(obj) == 0 {
		return nil
	}
	v, _, err := framing.LookupMember(obj, name)
	if err != nil {
		return nil
	}
	return v
}

// stringMember returns obj's member name when it is a string.
func stringMember(obj []byte, name string) string {
	v := member(obj, name)
	if v == nil {
		return ""
	}
	s, _ := framing.String(v)
	return s
}

// orEmpty returns raw, or {} when it is missing.
func orEmpty(raw []byte) []byte {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return []byte("{}")
	}
	return raw
}

// isListChange reports whether method is a notification a listen carries.
func isListChange(method string) bool {
	return strings.HasPrefix(method, "notifications/") &&
		(strings.HasSuffix(method, "/list_changed") || method == "notifications/resources/updated")
}
