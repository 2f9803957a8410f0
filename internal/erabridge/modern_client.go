package erabridge

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"

	"github.com/mcpwrap/mcpwrap/internal/era"
	"github.com/mcpwrap/mcpwrap/internal/framing"
	"github.com/mcpwrap/mcpwrap/internal/jsonrpc"
)

// A 2026-07-28 client in front of a session-era server (modernClient).
//
// The client's requests go up as they are (a session-era server ignores
// the _meta keys it does not know), but for the three a server may ask the
// client something during (tools/call, prompts/get, resources/read), which
// go under an id of the bridge's own: such a request outlives the client's
// id when it is answered with an input-required round. A request the
// upstream sends during such a call (elicitation/create,
// sampling/createMessage, roots/list) is held, and the call answered with
// a round: the request as an input request, and a requestState of the
// bridge's own (state.go). The client's retry, carrying that state and the
// answers, answers the held requests, and the upstream's answer to the
// call answers the retry. A round not resumed within RoundTimeout is
// abandoned: the held requests get an error and the call is cancelled.
//
// A server request is tied to a call only when exactly one such call is in
// flight: the session era does not say which call a request is for, and a
// round must never reach a client whose call it is not. Otherwise it is
// refused, as is any server request but ping, which the bridge answers: a
// 2026-07-28 client never receives a server request.
//
// subscriptions/listen is answered by the bridge (acknowledged with what
// the server's capabilities honour; resource subscriptions made with
// resources/subscribe), and the upstream's list changes go to each listen
// that asked for them, with its subscription id; with no listen open they
// pass as they are, since the Session refreshes its tool catalog on them.

// downState is what the bridge keeps in modernClient mode (guarded by
// Conn.mu).
type downState struct {
	discover []byte     // the answer to the client's server/discover
	caps     serverCaps // the upstream's
	calls    map[string]*downCall
	byClient map[string]*downCall // the calls by the client id now waiting on them
	rounds   map[string]*round
	listens  map[string]*listen // by the listen request's id key
	subs     map[string]int     // resource URIs subscribed upstream, by listens wanting them
	methods  map[string]string  // the other client requests in flight, by id key
}

// downCall is a client request sent up under an id of the bridge's own.
type downCall struct {
	own     []byte // the upstream's id for it
	client  []byte // the client id waiting on it; nil while a round waits for its retry
	bind    binding
	pending []serverReq // upstream requests not in a round yet
	round   *round      // the round waiting for the client's retry
	final   []byte      // the upstream's answer that came during a round
}

// serverReq is a request of the upstream's, held for a round.
type serverReq struct {
	id     []byte
	method string
	params []byte
	key    string // its key in the round's inputRequests
}

// round is an input-required round handed to a client.
type round struct {
	id    string
	call  *downCall
	reqs  []serverReq
	timer interface{ Stop() bool }
}

// listen is a client's subscriptions/listen.
type listen struct {
	id     []byte
	agreed subscriptions
}

// writeModernClient writes msg, a message of a 2026-07-28 client's session,
// to the session-era upstream.
func (c *Conn) writeModernClient(ctx context.Context, msg []byte) error {
	env, err := framing.Peek(msg)
	if err != nil {
		return c.inner.WriteMessage(ctx, msg)
	}
	// A session-era server (a remote one's transport above all, which
	// takes the version for its header) must not read the 2026-07-28
	// client description as this request's protocol.
	msg, env = withoutClientMeta(msg, env)
	switch env.Kind {
	case framing.Request:
		switch env.Method {
		case "server/discover":
			c.mu.Lock()
			res := c.down.discover
			c.mu.Unlock()
			c.inject(response(env.ID, res))
			return nil
		case "subscriptions/listen":
			return c.openListen(ctx, env)
		case "tools/call", "prompts/get", "resources/read":
			return c.sendCall(ctx, msg, env)
		}
		key := framing.IDKey(env.ID)
		c.mu.Lock()
		if c.down.methods == nil {
			c.down.methods = make(map[string]string)
		}
		c.down.methods[key] = env.Method
		c.mu.Unlock()
		if err := c.inner.WriteMessage(ctx, msg); err != nil {
			c.mu.Lock()
			delete(c.down.methods, key)
			c.mu.Unlock()
			return err
		}
		return nil
	case framing.Notification:
		if env.Method == "notifications/cancelled" {
			return c.cancelDown(ctx, msg, env)
		}
	}
	return c.inner.WriteMessage(ctx, msg)
}

// completeResult returns msg, the session-era server's answer env to a
// request of method, with what a 2026-07-28 result must carry and a
// session-era one lacks: its resultType, and, for a result a client may
// cache, a cache lifetime of zero and a private scope (the server said
// nothing of either). msg itself when nothing is missing.
func completeResult(msg []byte, env framing.Envelope, method string) []byte {
	if env.Result == nil {
		return msg
	}
	res := env.Result
	var err error
	add := func(name, value string) {
		if err != nil {
			return
		}
		if _, found, e := framing.LookupMember(res, name); e != nil || found {
			return
		}
		res, err = framing.SetMember(res, name, []byte(value))
	}
	add("resultType", `"complete"`)
	switch method {
	case "tools/list", "prompts/list", "resources/list", "resources/templates/list", "resources/read":
		add("ttlMs", "0")
		add("cacheScope", `"private"`)
	}
	if err != nil || len(res) == len(env.Result) {
		return msg
	}
	return framing.Splice(msg, env.Result, res)
}

// bindingOf reads what a round for the request env is bound to.
func bindingOf(env framing.Envelope) (binding, bool) {
	b := binding{method: env.Method}
	var raw []byte
	if env.Method == "resources/read" {
		raw = member(env.Params, "uri")
	} else {
		raw = env.Name
	}
	if raw != nil {
		s, err := framing.String(raw)
		if err != nil {
			return b, false
		}
		b.name = s
	}
	args, _, err := framing.LookupMember(env.Params, "arguments")
	if err != nil {
		return b, false
	}
	b.arguments = args
	return b, true
}

// sendCall sends a call, or resumes its round when it is a retry.
func (c *Conn) sendCall(ctx context.Context, msg []byte, env framing.Envelope) error {
	b, ok := bindingOf(env)
	state, hasState, err := framing.LookupMember(env.Params, "requestState")
	if !ok || err != nil {
		c.inject(jsonrpc.ErrorResponse(env.ID, jsonrpc.CodeInvalidParams, "Invalid params: the request's name, arguments or requestState is spelled more than once, or in another letter case", nil))
		return nil
	}
	if hasState {
		return c.resume(ctx, env, b, state)
	}
	own := c.newID()
	call := &downCall{own: own, client: bytes.Clone(env.ID), bind: b}
	c.mu.Lock()
	if c.down.calls == nil {
		c.down.calls = make(map[string]*downCall)
		c.down.byClient = make(map[string]*downCall)
	}
	c.down.calls[framing.IDKey(own)] = call
	c.down.byClient[framing.IDKey(env.ID)] = call
	c.mu.Unlock()
	if err := c.inner.WriteMessage(ctx, framing.Splice(msg, env.ID, own)); err != nil {
		c.mu.Lock()
		c.dropCallLocked(call)
		c.mu.Unlock()
		return err
	}
	return nil
}

func (c *Conn) dropCallLocked(call *downCall) {
	delete(c.down.calls, framing.IDKey(call.own))
	if call.client != nil && c.down.byClient[framing.IDKey(call.client)] == call {
		delete(c.down.byClient, framing.IDKey(call.client))
	}
}

// resume takes a client's retry env of a round: its requestState must be
// one the bridge handed out, for this request, of a round still open.
func (c *Conn) resume(ctx context.Context, env framing.Envelope, b binding, stateRaw []byte) error {
	state, err := framing.String(stateRaw)
	var id string
	if err == nil {
		id, err = openState(processKey(), state, b)
	}
	c.mu.Lock()
	r := c.down.rounds[id]
	if err != nil || r == nil {
		c.mu.Unlock()
		c.log.Warn("a retry's requestState was refused", "method", env.Method)
		c.inject(jsonrpc.ErrorResponse(env.ID, jsonrpc.CodeInvalidParams, "Invalid params: requestState is not one this server handed out for this request, or its round is over", nil))
		return nil
	}
	delete(c.down.rounds, id)
	delete(c.timers, r)
	r.timer.Stop()
	call := r.call
	call.round = nil
	call.client = bytes.Clone(env.ID)
	c.down.byClient[framing.IDKey(env.ID)] = call
	final := call.final
	call.final = nil
	var next []byte
	if final != nil {
		c.dropCallLocked(call)
	} else if len(call.pending) > 0 {
		next = c.openRoundLocked(call)
	}
	c.mu.Unlock()

	answers, _, aerr := framing.LookupMember(env.Params, "inputResponses")
	for _, q := range r.reqs {
		var v []byte
		if aerr == nil && answers != nil {
			v = member(answers, q.key)
		}
		out := jsonrpc.ErrorResponse(q.id, jsonrpc.CodeInternalError, "the client gave no answer to this request", nil)
		if v != nil {
			out = response(q.id, v)
		}
		if err := c.inner.WriteMessage(ctx, out); err != nil {
			return err
		}
	}
	switch {
	case final != nil:
		fenv, _ := framing.Peek(final)
		out := framing.Splice(final, fenv.ID, call.client)
		oenv, _ := framing.Peek(out)
		c.inject(completeResult(out, oenv, call.bind.method))
	case next != nil:
		c.inject(next)
	}
	return nil
}

// openRoundLocked hands call's pending requests to its client as a round
// and returns the answer that carries it.
func (c *Conn) openRoundLocked(call *downCall) []byte {
	r := &round{id: newRoundID(), call: call, reqs: call.pending}
	call.pending = nil
	reqs := []byte("{")
	for i := range r.reqs {
		r.reqs[i].key = "mcpwrap-" + strconv.Itoa(i+1)
		if i > 0 {
			reqs = append(reqs, ',')
		}
		k, _ := json.Marshal(r.reqs[i].key)
		m, _ := json.Marshal(r.reqs[i].method)
		reqs = append(reqs, k...)
		reqs = append(reqs, `:{"method":`...)
		reqs = append(reqs, m...)
		if r.reqs[i].params != nil {
			reqs = append(reqs, `,"params":`...)
			reqs = append(reqs, r.reqs[i].params...)
		}
		reqs = append(reqs, '}')
	}
	reqs = append(reqs, '}')
	state, _ := json.Marshal(sealState(processKey(), r.id, call.bind))
	result := append([]byte(`{"resultType":"input_required","inputRequests":`), reqs...)
	result = append(append(append(result, `,"requestState":`...), state...), '}')
	out := response(call.client, result)
	delete(c.down.byClient, framing.IDKey(call.client))
	call.client = nil
	call.round = r
	if c.down.rounds == nil {
		c.down.rounds = make(map[string]*round)
	}
	c.down.rounds[r.id] = r
	c.armLocked(r)
	return out
}

// abandon ends round r, not resumed in time: its requests are refused and
// its call cancelled upstream.
func (c *Conn) abandon(r *round) {
	c.mu.Lock()
	if c.closed || c.down.rounds[r.id] != r {
		c.mu.Unlock()
		return
	}
	delete(c.down.rounds, r.id)
	delete(c.timers, r)
	c.dropCallLocked(r.call)
	c.mu.Unlock()
	c.log.Warn("an input-required round was not resumed in time; the call is cancelled upstream", "timeout", c.opts.RoundTimeout.String())
	for _, q := range r.reqs {
		c.post(jsonrpc.ErrorResponse(q.id, jsonrpc.CodeInternalError, "the client did not answer in time", nil))
	}
	c.post(notification("notifications/cancelled", append(append([]byte(`{"requestId":`), r.call.own...), `,"reason":"the client did not resume the call in time"}`...)))
}

// cancelDown relays a client's cancellation: of a call, under the id the
// upstream knows; of a listen, by ending it here.
func (c *Conn) cancelDown(ctx context.Context, msg []byte, env framing.Envelope) error {
	id := member(env.Params, "requestId")
	if id == nil {
		return c.inner.WriteMessage(ctx, msg)
	}
	key := framing.IDKey(id)
	c.mu.Lock()
	if l := c.down.listens[key]; l != nil {
		delete(c.down.listens, key)
		gone := c.unsubscribeLocked(l.agreed.ResourceSubscriptions)
		c.mu.Unlock()
		for _, uri := range gone {
			c.post(request(c.newID(), "resources/unsubscribe", uriParams(uri)))
		}
		return nil
	}
	call := c.down.byClient[key]
	if call == nil {
		c.mu.Unlock()
		return c.inner.WriteMessage(ctx, msg)
	}
	c.dropCallLocked(call)
	c.mu.Unlock()
	return c.inner.WriteMessage(ctx, framing.Splice(msg, id, call.own))
}

func uriParams(uri string) []byte {
	u, _ := json.Marshal(uri)
	return append(append([]byte(`{"uri":`), u...), '}')
}

// openListen answers a client's subscriptions/listen: acknowledged with
// what the upstream honours, kept open until the client cancels it.
func (c *Conn) openListen(ctx context.Context, env framing.Envelope) error {
	var want subscriptions
	if raw := member(env.Params, "notifications"); raw != nil {
		_ = json.Unmarshal(raw, &want)
	}
	c.mu.Lock()
	agreed := c.down.caps.agreed(want)
	l := &listen{id: bytes.Clone(env.ID), agreed: agreed}
	var fresh []string
	if agreed.any() {
		if c.down.listens == nil {
			c.down.listens = make(map[string]*listen)
		}
		c.down.listens[framing.IDKey(env.ID)] = l
		if c.down.subs == nil {
			c.down.subs = make(map[string]int)
		}
		for _, uri := range agreed.ResourceSubscriptions {
			if c.down.subs[uri]++; c.down.subs[uri] == 1 {
				fresh = append(fresh, uri)
			}
		}
	}
	c.mu.Unlock()
	for _, uri := range fresh {
		if err := c.inner.WriteMessage(ctx, request(c.newID(), "resources/subscribe", uriParams(uri))); err != nil {
			return err
		}
	}
	sub := append(append([]byte(`{"`+era.MetaSubscriptionID+`":`), env.ID...), '}')
	notes, _ := json.Marshal(agreed)
	params := append(append(append([]byte(`{"notifications":`), notes...), `,"_meta":`...), sub...)
	c.inject(notification("notifications/subscriptions/acknowledged", append(params, '}')))
	if !agreed.any() { // nothing to listen to: over at once, as a 2026-07-28 server does
		c.inject(response(env.ID, append(append([]byte(`{"_meta":`), sub...), '}')))
	}
	return nil
}

// unsubscribeLocked drops the listen's hold on uris and returns those no
// listen wants any more.
func (c *Conn) unsubscribeLocked(uris []string) (gone []string) {
	for _, uri := range uris {
		if c.down.subs[uri]--; c.down.subs[uri] <= 0 {
			delete(c.down.subs, uri)
			gone = append(gone, uri)
		}
	}
	return gone
}

// fromSessionServer translates msg, read from the session-era upstream,
// into what the 2026-07-28 client's Session reads: none, one or several
// messages, each the bridge's own copy.
func (c *Conn) fromSessionServer(msg []byte) [][]byte {
	env, err := framing.Peek(msg)
	if err != nil {
		return [][]byte{bytes.Clone(msg)}
	}
	switch env.Kind {
	case framing.Response:
		if !c.isOwn(env.ID) {
			key := framing.IDKey(env.ID)
			c.mu.Lock()
			method, ok := c.down.methods[key]
			delete(c.down.methods, key)
			c.mu.Unlock()
			if ok {
				return [][]byte{bytes.Clone(completeResult(msg, env, method))}
			}
			break
		}
		c.mu.Lock()
		call := c.down.calls[framing.IDKey(env.ID)]
		switch {
		case call == nil: // an answer to the bridge's own subscribe, or to a call cancelled
			c.mu.Unlock()
			return nil
		case call.client == nil: // a round waits for its retry: that retry gets it
			call.final = bytes.Clone(msg)
			c.mu.Unlock()
			return nil
		}
		c.dropCallLocked(call)
		client, method := call.client, call.bind.method
		c.mu.Unlock()
		out := framing.Splice(msg, env.ID, client)
		oenv, _ := framing.Peek(out)
		return [][]byte{completeResult(out, oenv, method)}
	case framing.Request:
		return c.serverRequest(env)
	case framing.Notification:
		if env.Method == "notifications/cancelled" {
			c.serverCancelled(env)
			return nil
		}
		if isListChange(env.Method) {
			return c.toListens(msg, env)
		}
	}
	return [][]byte{bytes.Clone(msg)}
}

// serverRequest takes a request of the upstream's: ping is answered, a
// request a call may ask its client goes into that call's round, anything
// else is refused.
func (c *Conn) serverRequest(env framing.Envelope) [][]byte {
	switch env.Method {
	case "ping":
		c.post(response(env.ID, []byte("{}")))
		return nil
	case "elicitation/create", "sampling/createMessage", "roots/list":
	default:
		c.post(jsonrpc.ErrorResponse(env.ID, jsonrpc.CodeMethodNotFound, "mcpwrap: the client speaks 2026-07-28, which has no server requests", nil))
		return nil
	}
	c.mu.Lock()
	var call *downCall
	if len(c.down.calls) == 1 {
		for _, call = range c.down.calls {
		}
	}
	if call == nil {
		n := len(c.down.calls)
		c.mu.Unlock()
		c.log.Warn("refusing a server request no single call can carry to the 2026-07-28 client", "method", env.Method, "calls", n)
		c.post(jsonrpc.ErrorResponse(env.ID, jsonrpc.CodeInternalError, "mcpwrap: the client speaks 2026-07-28, and this request can reach it only during exactly one call in flight", nil))
		return nil
	}
	call.pending = append(call.pending, serverReq{id: bytes.Clone(env.ID), method: env.Method, params: bytes.Clone(env.Params)})
	var out []byte
	if call.client != nil {
		out = c.openRoundLocked(call)
	}
	c.mu.Unlock()
	if out == nil {
		return nil
	}
	return [][]byte{out}
}

// serverCancelled forgets a held request the upstream cancelled.
func (c *Conn) serverCancelled(env framing.Envelope) {
	id := member(env.Params, "requestId")
	if id == nil {
		return
	}
	key := framing.IDKey(id)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, call := range c.down.calls {
		call.pending = dropReq(call.pending, key)
		if call.round != nil {
			call.round.reqs = dropReq(call.round.reqs, key)
		}
	}
}

func dropReq(reqs []serverReq, key string) []serverReq {
	out := reqs[:0]
	for _, q := range reqs {
		if framing.IDKey(q.id) != key {
			out = append(out, q)
		}
	}
	return out
}

// toListens sends a list change to every listen that asked for it, with
// its subscription id; with none, as it is.
func (c *Conn) toListens(msg []byte, env framing.Envelope) [][]byte {
	c.mu.Lock()
	var ids [][]byte
	for _, l := range c.down.listens {
		if l.agreed.wants(env.Method, env.Params) {
			ids = append(ids, l.id)
		}
	}
	c.mu.Unlock()
	if len(ids) == 0 {
		return [][]byte{bytes.Clone(msg)}
	}
	outs := make([][]byte, 0, len(ids))
	for _, id := range ids {
		out, err := setParamsMeta(msg, env, false, [2][]byte{[]byte(era.MetaSubscriptionID), id})
		if err != nil {
			return [][]byte{bytes.Clone(msg)}
		}
		outs = append(outs, out)
	}
	return outs
}
