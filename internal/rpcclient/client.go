// Package rpcclient is the client side of JSON-RPC over a connection
// whose reader belongs to someone else: it sends requests under ids of an
// id space of its own and hands each response its owner's reader passes
// it to the request it answers.
package rpcclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/mcpwrap/mcpwrap/internal/framing"
)

// ErrClosed is a Reply's Err when the connection ended before the
// response came.
var ErrClosed = errors.New("connection closed")

// A Client sends requests with the ids "PREFIX1", "PREFIX2", … (JSON
// strings) and matches responses to them by id, however a peer spells it.
// Its reader (a pump that also reads other messages) passes it each
// response whose id Owns reports as its own.
//
// Create one with New. It is safe for concurrent use.
type Client struct {
	prefix   string                          // of every id, as it appears between the quotes
	rpcError func(obj json.RawMessage) error // decodes a response's error object
	seq      atomic.Uint64

	mu      sync.Mutex
	pending map[string]chan Reply // requests waiting for their response, by framing.IDKey of their id
}

// New returns a Client whose ids start with prefix, which must need no
// escaping in a JSON string. rpcError turns the error object of an error
// response into the Reply's Err; it is given the object as sent.
func New(prefix string, rpcError func(obj json.RawMessage) error) *Client {
	return &Client{prefix: prefix, rpcError: rpcError, pending: make(map[string]chan Reply)}
}

// A Reply is what came of a request.
type Reply struct {
	Msg    []byte          // the whole response, owned; nil when none came
	Result json.RawMessage // its result, owned; nil when none
	Err    error           // its error (from rpcError), or why no usable response came
}

// Prefix returns the prefix of the Client's ids.
func (c *Client) Prefix() string { return c.prefix }

// Owns reports whether id is in the Client's id space, however it is
// spelled. It allocates nothing for the ids peers use in practice.
func (c *Client) Owns(id []byte) bool {
	if len(id) == 0 || id[0] != '"' { // own ids are strings; most peers number theirs
		return false
	}
	var buf [64]byte
	key := framing.AppendIDKey(buf[:0], id)
	return len(key) > len(c.prefix) && key[0] == 's' && string(key[1:1+len(c.prefix)]) == c.prefix
}

// Call sends a request of method with params (omitted when nil), by write
// (given ctx), and waits for its response, for closed to be closed (the
// connection ended: the Reply's Err is ErrClosed) or for ctx.
func (c *Client) Call(ctx context.Context, write func(ctx context.Context, msg []byte) error, closed <-chan struct{}, method string, params json.RawMessage) Reply {
	id := strconv.Quote(c.prefix + strconv.FormatUint(c.seq.Add(1), 10))
	msg, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params,omitempty"`
	}{"2.0", json.RawMessage(id), method, params})
	if err != nil {
		return Reply{Err: err}
	}
	ch := make(chan Reply, 1)
	key := framing.IDKey([]byte(id))
	c.mu.Lock()
	c.pending[key] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.pending, key)
		c.mu.Unlock()
	}()
	if err := write(ctx, msg); err != nil {
		return Reply{Err: err}
	}
	select {
	case r := <-ch:
		return r
	case <-closed:
		return Reply{Err: ErrClosed}
	case <-ctx.Done():
		return Reply{Err: ctx.Err()}
	}
}

// Deliver hands msg, a response with envelope env (as framing.Peek read
// it, with Peek's error peekErr), to the request it answers, and reports
// whether one was waiting for it. An ambiguous response fails the request
// instead. msg is copied.
func (c *Client) Deliver(msg []byte, env framing.Envelope, peekErr error) bool {
	if peekErr != nil {
		return c.Fail(env.ID, peekErr)
	}
	r := Reply{Msg: bytes.Clone(msg)}
	if env.Result != nil {
		r.Result = bytes.Clone(env.Result)
	}
	if env.Error != nil {
		r.Err = c.rpcError(env.Error)
	}
	return c.hand(env.ID, r)
}

// Fail fails the request with id with err, as if its response said so,
// and reports whether one was waiting.
func (c *Client) Fail(id []byte, err error) bool {
	return c.hand(id, Reply{Err: err})
}

func (c *Client) hand(id []byte, r Reply) bool {
	c.mu.Lock()
	ch, ok := c.pending[framing.IDKey(id)]
	c.mu.Unlock()
	if !ok {
		return false
	}
	select {
	case ch <- r:
	default: // answered already: a peer that answers twice
	}
	return true
}
