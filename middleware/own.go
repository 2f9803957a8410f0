package middleware

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/mcpwrap/mcpwrap/internal/framing"
	"github.com/mcpwrap/mcpwrap/internal/rpcclient"
)

// This file holds the sidecar's own requests to the upstream (the
// handshake, its replay, catalog loads, Call): sent in an id space the
// client cannot use, and answered to the sidecar, never to the client.

// ownIDPrefix starts the id of every request the sidecar sends itself. Its
// ids are JSON strings "mcpwrap-NONCE-SEQ", where NONCE is random per
// Session: a client request using this Session's "mcpwrap-NONCE-" is
// refused, so the two id spaces never collide, while the ids of another
// mcpwrap in front of this one (whose nonce differs) pass like any other.
const ownIDPrefix = "mcpwrap-"

// ErrNotReady is returned by [Session.Call] while no upstream is ready.
var ErrNotReady = errors.New("upstream is not ready")

// ownReply is what came of an own request.
type ownReply = rpcclient.Reply

// Call sends a request of the sidecar's own to the ready upstream and
// waits for its result. The response never reaches the client. It returns
// [ErrNotReady] when no upstream is ready.
func (s *Session) Call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	s.once.Do(s.init)
	l := s.readyLink()
	if l == nil {
		return nil, ErrNotReady
	}
	r := s.request(ctx, l, method, params)
	return r.Result, r.Err
}

// request sends an own request on link l and waits for the reply, the
// link's death or ctx.
func (s *Session) request(ctx context.Context, l *link, method string, params any) ownReply {
	var rawParams json.RawMessage
	switch p := params.(type) {
	case nil:
	case json.RawMessage:
		rawParams = p
	default:
		b, err := json.Marshal(p)
		if err != nil {
			return ownReply{Err: err}
		}
		rawParams = b
	}
	if !clientMethods[method].is(replayed) {
		// The client's own requests, repeated to a new upstream, are sent
		// as the client sent them; the sidecar's own speak as the client.
		rawParams = s.withClientMeta(rawParams)
	}
	r := s.own.Call(ctx, l.conn.WriteMessage, l.dead, method, rawParams)
	if brokenPipe(r.Err) {
		// The write found the upstream's input gone before its reader saw
		// why (a child that exited): the reason is the reader's, which comes
		// at once. A link that outlives the grace has its write's error.
		t := time.NewTimer(brokenPipeGrace)
		select {
		case <-l.dead:
			r.Err = rpcclient.ErrClosed
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
	if errors.Is(r.Err, rpcclient.ErrClosed) {
		s.mu.Lock()
		ready := l.ready // a link lost after its handshake crashed (see linkError)
		s.mu.Unlock()
		r.Err = fmt.Errorf("upstream connection lost: %w", s.linkError(l, ready))
	}
	return r
}

// brokenPipeGrace bounds the wait, after a write found the upstream's
// input closed, for its reader to report why.
const brokenPipeGrace = time.Second

// brokenPipe reports whether err is a write to a peer that closed its end
// (EPIPE, or a pipe closed here).
func brokenPipe(err error) bool {
	return errors.Is(err, syscall.EPIPE) || errors.Is(err, io.ErrClosedPipe) || errors.Is(err, os.ErrClosed)
}

// deliverOwn hands the upstream's answer msg to the own request it
// answers. peekErr is Peek's error for msg: an ambiguous answer fails the
// request instead.
func (s *Session) deliverOwn(msg []byte, env framing.Envelope, peekErr error) {
	if !s.own.Deliver(msg, env, peekErr) {
		s.log.Debug("dropping a late response to an own request", "id", string(env.ID))
	}
}

// deliverOwnReply fails the own request with id with err, if it still
// waits.
func (s *Session) deliverOwnReply(id []byte, err error) {
	if !s.own.Fail(id, err) {
		s.log.Debug("dropping a late response to an own request", "id", string(id))
	}
}

// decodeRPCError reads the error object of a response to an own request.
func decodeRPCError(obj json.RawMessage) error {
	e := &RPCError{}
	if err := json.Unmarshal(obj, e); err != nil {
		return fmt.Errorf("malformed error response: %w", err)
	}
	return e
}

// isOwnID reports whether id is in this Session's own id space, however it
// is spelled.
func (s *Session) isOwnID(id []byte) bool {
	return s.own.Owns(id)
}

// errOwnID is why a client request using the own id space is refused.
func (s *Session) errOwnID() string {
	return "Invalid Request: ids starting with " + strconv.Quote(s.ownID) + " are reserved by this mcpwrap"
}

// newOwnIDPrefix returns a fresh own-id prefix: ownIDPrefix, a random
// nonce and "-". Two Sessions (such as two mcpwraps in a chain) get
// different ones, so neither refuses the other's requests.
func newOwnIDPrefix() string {
	var b [6]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return ownIDPrefix + base64.RawURLEncoding.EncodeToString(b[:]) + "-"
}
