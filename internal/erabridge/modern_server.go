package erabridge

import (
	"bytes"
	"context"
	"encoding/json"
	"sort"

	"github.com/mcpwrap/mcpwrap/internal/era"
	"github.com/mcpwrap/mcpwrap/internal/framing"
	"github.com/mcpwrap/mcpwrap/internal/jsonrpc"
	"github.com/mcpwrap/mcpwrap/internal/paramheader"
)

// A session-era client in front of a 2026-07-28 server (modernServer).
//
// Every request goes up with the 2026-07-28 _meta (the protocol version,
// and the clientInfo and capabilities of the client's initialize), from
// which the remote upstream derives its headers. What has no 2026-07-28
// counterpart is answered by the bridge: initialize (from the server's
// discover), ping, notifications/initialized (dropped), logging/setLevel
// (whose level goes into every later request's _meta), and
// resources/subscribe and unsubscribe, which become the resource
// subscriptions of the bridge's one subscriptions/listen (opened after the
// handshake for the list changes the server announces, and opened anew
// when the subscriptions change). An input-required result becomes the
// server requests a session-era client understands, sent under ids of the
// bridge's own; once the client has answered them all, the request is
// sent again under a new id of the bridge's own, with the answers and the
// untouched requestState, and its final answer goes to the client under
// the id it used. tools/list results lose the tools whose x-mcp-header
// annotations are invalid, as a 2026-07-28 client must drop them.

// upState is what the bridge keeps in modernServer mode (guarded by
// Conn.mu).
type upState struct {
	meta    [][2][]byte // the _meta members every request carries
	init    []byte      // the answer to the client's initialize
	caps    serverCaps
	calls   map[string]*upCall // by the id the upstream knows
	gathers map[string]*gather // by the id of a server request sent to the client
	lists   map[string]bool    // tools/list requests in flight
	subs    map[string]bool    // the client's resource subscriptions
	listen  []byte             // the id of the bridge's listen, nil when none is open
	level   []byte             // the client's logging level (raw JSON), nil until it sets one
}

// upCall is a client request that may be answered with input-required.
type upCall struct {
	client  []byte // the client's id
	method  string
	params  []byte // as first sent, with the _meta
	upID    []byte // the id the upstream has it under
	rounds  int
	state   []byte      // the round's requestState, raw
	want    int         // server requests of the round not answered yet
	answers [][2][]byte // key, answer
	failed  bool
}

// gather is a server request sent to the client for a call's round.
type gather struct {
	call *upCall
	key  []byte // raw JSON string: its key in inputRequests
}

// writeModernServer writes msg, a message of a session-era client's
// session, to the 2026-07-28 upstream.
func (c *Conn) writeModernServer(ctx context.Context, msg []byte) error {
	env, err := framing.Peek(msg)
	if err != nil {
		return c.inner.WriteMessage(ctx, msg)
	}
	switch env.Kind {
	case framing.Request:
		switch env.Method {
		case "initialize":
			c.mu.Lock()
			res := c.up.init
			c.mu.Unlock()
			c.inject(response(env.ID, res))
			return nil
		case "ping":
			// The 2026-07-28 protocol has none (a go-sdk server answers
			// method not found): the bridge answers for the upstream.
			c.inject(response(env.ID, []byte("{}")))
			return nil
		case "logging/setLevel":
			// The 2026-07-28 protocol asks for log messages per request,
			// in its _meta: every later request carries the level.
			if level := member(env.Params, "level"); level != nil {
				c.mu.Lock()
				c.up.level = bytes.Clone(level)
				c.mu.Unlock()
			}
			c.inject(response(env.ID, []byte("{}")))
			return nil
		case "resources/subscribe", "resources/unsubscribe":
			c.subscribeUp(env)
			c.inject(response(env.ID, []byte("{}")))
			return nil
		}
		return c.sendUp(ctx, msg, env)
	case framing.Notification:
		switch env.Method {
		case "notifications/initialized":
			return nil
		case "notifications/cancelled":
			return c.cancelUp(ctx, msg, env)
		}
	case framing.Response:
		if c.isOwn(env.ID) {
			return c.gathered(ctx, env)
		}
	}
	return c.inner.WriteMessage(ctx, msg)
}

// sendUp sends a request with the 2026-07-28 _meta.
func (c *Conn) sendUp(ctx context.Context, msg []byte, env framing.Envelope) error {
	c.mu.Lock()
	meta := c.up.meta
	if c.up.level != nil {
		meta = append(meta[:len(meta):len(meta)], [2][]byte{[]byte(era.MetaLogLevel), c.up.level})
	}
	c.mu.Unlock()
	out, err := setParamsMeta(msg, env, true, meta...)
	if err != nil {
		c.inject(jsonrpc.ErrorResponse(env.ID, jsonrpc.CodeInvalidParams, "Invalid params: _meta is spelled more than once, or in another letter case, or is not an object", nil))
		return nil
	}
	key := framing.IDKey(env.ID)
	c.mu.Lock()
	switch env.Method {
	case "tools/list":
		if c.up.lists == nil {
			c.up.lists = make(map[string]bool)
		}
		c.up.lists[key] = true
	case "tools/call", "prompts/get", "resources/read":
		oenv, _ := framing.Peek(out)
		if c.up.calls == nil {
			c.up.calls = make(map[string]*upCall)
		}
		c.up.calls[key] = &upCall{client: bytes.Clone(env.ID), method: env.Method, params: bytes.Clone(oenv.Params), upID: bytes.Clone(env.ID)}
	}
	c.mu.Unlock()
	if err := c.inner.WriteMessage(ctx, out); err != nil {
		c.mu.Lock()
		delete(c.up.lists, key)
		delete(c.up.calls, key)
		c.mu.Unlock()
		return err
	}
	return nil
}

// cancelUp relays a client's cancellation under the id the upstream has
// the request under.
func (c *Conn) cancelUp(ctx context.Context, msg []byte, env framing.Envelope) error {
	id := member(env.Params, "requestId")
	if id == nil {
		return c.inner.WriteMessage(ctx, msg)
	}
	c.mu.Lock()
	var found *upCall
	for _, call := range c.up.calls {
		if framing.IDKey(call.client) == framing.IDKey(id) {
			found = call
			break
		}
	}
	if found != nil {
		delete(c.up.calls, framing.IDKey(found.upID))
		found.failed = true
	}
	c.mu.Unlock()
	if found == nil || bytes.Equal(found.upID, found.client) {
		return c.inner.WriteMessage(ctx, msg)
	}
	return c.inner.WriteMessage(ctx, framing.Splice(msg, id, found.upID))
}

// subscribeUp records a resources/subscribe or unsubscribe and opens the
// bridge's listen anew when the subscriptions changed.
func (c *Conn) subscribeUp(env framing.Envelope) {
	uri := stringMember(env.Params, "uri")
	if uri == "" {
		return
	}
	c.mu.Lock()
	changed := c.up.subs[uri] != (env.Method == "resources/subscribe")
	if env.Method == "resources/subscribe" {
		if c.up.subs == nil {
			c.up.subs = make(map[string]bool)
		}
		c.up.subs[uri] = true
	} else {
		delete(c.up.subs, uri)
	}
	c.mu.Unlock()
	if changed {
		c.openUpstreamListen()
	}
}

// openUpstreamListen opens the bridge's subscriptions/listen for the list
// changes the server announces and the client's resource subscriptions,
// ending the one open before.
func (c *Conn) openUpstreamListen() {
	c.mu.Lock()
	caps := c.up.caps
	want := subscriptions{
		ToolsListChanged:     caps.Tools != nil && caps.Tools.ListChanged,
		PromptsListChanged:   caps.Prompts != nil && caps.Prompts.ListChanged,
		ResourcesListChanged: caps.Resources != nil && caps.Resources.ListChanged,
	}
	for uri := range c.up.subs {
		want.ResourceSubscriptions = append(want.ResourceSubscriptions, uri)
	}
	sort.Strings(want.ResourceSubscriptions)
	old := c.up.listen
	c.up.listen = nil
	var id []byte
	if want.any() {
		id = c.newID()
		c.up.listen = id
	}
	meta := c.up.meta
	c.mu.Unlock()
	if old != nil {
		c.post(notification("notifications/cancelled", append(append([]byte(`{"requestId":`), old...), `,"reason":"the subscriptions changed"}`...)))
	}
	if id == nil {
		return
	}
	notes, _ := json.Marshal(want)
	msg := request(id, "subscriptions/listen", append(append([]byte(`{"notifications":`), notes...), '}'))
	env, _ := framing.Peek(msg)
	if out, err := setParamsMeta(msg, env, true, meta...); err == nil {
		msg = out
	}
	c.post(msg)
}

// gathered takes the client's answer env to a server request of a round;
// with every answer in, the call is sent again.
func (c *Conn) gathered(ctx context.Context, env framing.Envelope) error {
	key := framing.IDKey(env.ID)
	c.mu.Lock()
	g := c.up.gathers[key]
	delete(c.up.gathers, key)
	if g == nil || g.call.failed {
		c.mu.Unlock()
		return nil
	}
	call := g.call
	if env.Result == nil {
		call.failed = true
		c.mu.Unlock()
		e := parseError(env.Error)
		c.inject(jsonrpc.ErrorResponse(call.client, jsonrpc.CodeInternalError, "the client refused the server's request for input: "+e.Message, nil))
		return nil
	}
	call.answers = append(call.answers, [2][]byte{g.key, bytes.Clone(env.Result)})
	if call.want--; call.want > 0 {
		c.mu.Unlock()
		return nil
	}
	id := c.newID()
	call.upID = id
	c.up.calls[framing.IDKey(id)] = call
	answers, state := call.answers, call.state
	call.answers = nil
	c.mu.Unlock()

	obj := []byte("{")
	for i, a := range answers {
		if i > 0 {
			obj = append(obj, ',')
		}
		obj = append(append(append(obj, a[0]...), ':'), a[1]...)
	}
	obj = append(obj, '}')
	params, err := framing.SetMember(orEmpty(call.params), "inputResponses", obj)
	if err == nil && state != nil {
		params, err = framing.SetMember(params, "requestState", state)
	}
	if err != nil {
		c.inject(jsonrpc.ErrorResponse(call.client, jsonrpc.CodeInternalError, "mcpwrap could not retry the request with the client's answers", nil))
		return nil
	}
	return c.inner.WriteMessage(ctx, request(id, call.method, params))
}

// fromStatelessServer translates msg, read from the 2026-07-28 upstream,
// into what the session-era client's Session reads.
func (c *Conn) fromStatelessServer(msg []byte) [][]byte {
	env, err := framing.Peek(msg)
	if err != nil {
		return [][]byte{bytes.Clone(msg)}
	}
	switch env.Kind {
	case framing.Response:
		key := framing.IDKey(env.ID)
		c.mu.Lock()
		call := c.up.calls[key]
		list := c.up.lists[key]
		delete(c.up.lists, key)
		c.mu.Unlock()
		switch {
		case call != nil:
			return c.callAnswered(call, msg, env)
		case c.isOwn(env.ID): // the end of a listen of the bridge's, or of a call given up
			return nil
		case list && env.Result != nil:
			return [][]byte{filterTools(msg, env)}
		}
	case framing.Notification:
		if env.Method == "notifications/subscriptions/acknowledged" {
			return nil
		}
	}
	return [][]byte{bytes.Clone(msg)}
}

// callAnswered takes the upstream's answer to call: a final one goes to
// the client; an input-required one becomes server requests.
func (c *Conn) callAnswered(call *upCall, msg []byte, env framing.Envelope) [][]byte {
	c.mu.Lock()
	delete(c.up.calls, framing.IDKey(env.ID))
	c.mu.Unlock()
	if env.Result != nil && stringMember(env.Result, "resultType") == "input_required" {
		return c.askClient(call, env)
	}
	if bytes.Equal(env.ID, call.client) {
		return [][]byte{bytes.Clone(msg)}
	}
	return [][]byte{framing.Splice(msg, env.ID, call.client)}
}

// askClient sends the input requests of an input-required result to the
// client as server requests.
func (c *Conn) askClient(call *upCall, env framing.Envelope) [][]byte {
	reqs, err := framing.Members(orEmpty(member(env.Result, "inputRequests")))
	call.rounds++
	switch {
	case err != nil || len(reqs) == 0:
		return [][]byte{jsonrpc.ErrorResponse(call.client, jsonrpc.CodeInternalError, "the server asked for input it did not describe (or is busy); retry later", nil)}
	case call.rounds > maxRounds:
		return [][]byte{jsonrpc.ErrorResponse(call.client, jsonrpc.CodeInternalError, "the server asked for input more than 10 times for one request", nil)}
	}
	var outs [][]byte
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.up.gathers == nil {
		c.up.gathers = make(map[string]*gather)
	}
	call.state = member(env.Result, "requestState")
	if call.state != nil {
		call.state = bytes.Clone(call.state)
	}
	call.want = len(reqs)
	for _, m := range reqs {
		method := stringMember(m.Value, "method")
		if method == "" {
			call.failed = true
			return [][]byte{jsonrpc.ErrorResponse(call.client, jsonrpc.CodeInternalError, "the server asked for input without a method", nil)}
		}
		id := c.newID()
		c.up.gathers[framing.IDKey(id)] = &gather{call: call, key: bytes.Clone(m.Name)}
		outs = append(outs, request(id, method, bytes.Clone(member(m.Value, "params"))))
	}
	return outs
}

// filterTools drops from a tools/list answer the tools whose x-mcp-header
// annotations are invalid (SEP-2243): a 2026-07-28 client must not call
// them. msg is returned as a copy, untouched when none is dropped.
func filterTools(msg []byte, env framing.Envelope) []byte {
	tools := member(env.Result, "tools")
	elems, err := framing.Elements(tools)
	if tools == nil || err != nil {
		return bytes.Clone(msg)
	}
	kept := elems[:0:0]
	for _, t := range elems {
		if _, err := paramheader.Bindings(member(t, "inputSchema")); err != nil {
			continue
		}
		kept = append(kept, t)
	}
	if len(kept) == len(elems) {
		return bytes.Clone(msg)
	}
	list := append(append([]byte{'['}, bytes.Join(kept, []byte{','})...), ']')
	return framing.Splice(msg, tools, list)
}
