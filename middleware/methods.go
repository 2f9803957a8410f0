package middleware

import (
	"context"
	"encoding/json"

	"github.com/mcpwrap/mcpwrap/internal/framing"
	"github.com/mcpwrap/mcpwrap/resilience"
)

// This file holds what the Session knows of the methods a client sends:
// one table, read wherever handling a client's message depends on its
// method, so that each method is spelled once (the go-sdk's
// serverMethodInfos). A method missing from it is relayed byte for byte,
// as it arrives, and answered with the upstream's status while no upstream
// is ready. A new method, or an era's, is a row, not another switch.

// methodFlags say how the Session treats a client's message of a method.
type methodFlags uint8

const (
	// intercepted: the sidecar reads the message itself, so it must come
	// alone: a batch holding it is refused whole (see clientBatch), and it
	// is never relayed as it arrives (see streamClient).
	intercepted methodFlags = 1 << iota
	// replayed: the sidecar sends the request again to a restarted
	// upstream (the handshake, and the session state the client set), so
	// its own request of the method carries the params as the client sent
	// them, without the client's _meta added (see request).
	replayed
	// answeredEmpty: while no upstream is ready the sidecar answers the
	// request {} at once, without waiting for one that restarts: ping needs
	// no upstream, and the state the others set is replayed to the next
	// one (see answerUnready and answeredUnready).
	answeredEmpty
	// reopened: the request is kept whole while in flight and sent again to
	// a restarted upstream (see rememberListen), so it is never relayed as
	// it arrives.
	reopened
	// untimed: the request stays unanswered by design for as long as the
	// client wants it (subscriptions/listen carries the server's
	// notifications until the client cancels it): no call timeout applies
	// to it.
	untimed
	// gated: the request is judged by the ToolPolicy, when there is one,
	// before it is sent (see gateCall).
	gated
	// answeredAsTool: the sidecar's own answers to the request (a bound
	// reached, a timeout, the upstream's status) are an isError tool
	// result, which the agent reads, rather than a JSON-RPC error.
	answeredAsTool
	// filtered: the upstream's answer is rewritten by the ToolPolicy, when
	// there is one (see rewriteToolsList), and refused when ambiguous.
	filtered
)

// methodInfo is what the Session does with a client's message of one
// method: its flags, and the handlers where a method has code of its own.
// Every handler is optional.
type methodInfo struct {
	flags methodFlags
	// handle takes the client's request in place of the relay.
	handle func(s *Session, ctx context.Context, env framing.Envelope)
	// note records what the client's request sets, or counts it, before
	// it is relayed, held or answered.
	note func(s *Session, env framing.Envelope)
	// unready answers the request while no upstream is ready, st being the
	// upstream's status. Without it the request is answered {} when it is
	// answeredEmpty, else with a JSON-RPC error carrying the status.
	unready func(s *Session, ctx context.Context, env framing.Envelope, st resilience.Outcome)
	// alone reports whether unready answers the request with nothing the
	// upstream's status changes, so that it need not wait for a restart (as
	// an answeredEmpty request does not).
	alone func(s *Session, env framing.Envelope) bool
	// notify handles the client's notification of the method and reports
	// whether it is forwarded to the upstream. A notification that is not
	// intercepted is handled inside a batch too, which is forwarded whole
	// whatever notify reports.
	notify func(s *Session, env framing.Envelope) (forward bool)
}

// is reports whether m has every flag of f.
func (m methodInfo) is(f methodFlags) bool {
	return m.flags&f == f
}

// streamable reports whether a client request of the method may be
// relayed as it arrives, before the sidecar has read it whole.
func (m methodInfo) streamable() bool {
	return m.flags&(intercepted|reopened) == 0
}

// clientMethods is the one table of the client's methods the Session
// treats apart from any other; a lookup of another gives the zero
// methodInfo. It is filled by init because its handlers reach code that
// reads it, which a variable's initializer cannot. It is never written
// after init.
var clientMethods map[string]methodInfo

func init() {
	clientMethods = map[string]methodInfo{
		"initialize":                {flags: intercepted | replayed, handle: (*Session).clientHandshake},
		"server/discover":           {flags: intercepted | replayed, handle: (*Session).clientHandshake},
		"notifications/initialized": {flags: intercepted, notify: (*Session).clientInitialized},
		"ping":                      {flags: answeredEmpty},
		"logging/setLevel":          {flags: intercepted | replayed | answeredEmpty, note: (*Session).noteLogLevel},
		"resources/subscribe":       {flags: intercepted | replayed | answeredEmpty, note: (*Session).noteSubscribe},
		"resources/unsubscribe":     {flags: intercepted | answeredEmpty, note: (*Session).noteUnsubscribe},
		"tools/list":                {flags: intercepted | filtered, unready: (*Session).unreadyToolsList},
		"tools/call": {
			flags:   intercepted | gated | answeredAsTool,
			note:    (*Session).noteCall,
			unready: (*Session).unreadyToolsCall,
			alone:   (*Session).isDiscoveryCall,
			notify:  (*Session).callNotification,
		},
		// Empty until the upstream is ready, when the client is told the
		// list changed (see notifyListsChanged), as a degraded handshake
		// that remembered these capabilities promised.
		"resources/list":           {unready: answerWith(`{"resources":[]}`)},
		"resources/templates/list": {unready: answerWith(`{"resourceTemplates":[]}`)},
		"prompts/list":             {unready: answerWith(`{"prompts":[]}`)},
		// The client's subscription outlives an upstream: a restarted one
		// is sent the request again (the 2026-07-28 protocol has no session
		// state to replay but this).
		"subscriptions/listen":    {flags: reopened | untimed},
		"notifications/cancelled": {notify: (*Session).cancelledNotification},
	}
}

// openEnded reports whether a request of method stays unanswered by
// design for as long as the client wants it: no call timeout applies to it.
func openEnded(method string) bool {
	return clientMethods[method].is(untimed)
}

// noteLogLevel keeps the client's logging level, for replay.
func (s *Session) noteLogLevel(env framing.Envelope) {
	s.hs.setLogLevel(env.Params)
}

// noteSubscribe remembers the URI the client subscribes to, for replay.
func (s *Session) noteSubscribe(env framing.Envelope) {
	if uri, ok := subscriptionURI(env.Params); ok {
		s.rememberSubscription(uri)
	}
}

// noteUnsubscribe forgets the URI the client unsubscribes from.
func (s *Session) noteUnsubscribe(env framing.Envelope) {
	if uri, ok := subscriptionURI(env.Params); ok {
		s.hs.unsubscribe(uri)
	}
}

// subscriptionURI reads the uri of resources/(un)subscribe params; ok is
// false when they are not an object.
func subscriptionURI(params json.RawMessage) (uri string, ok bool) {
	var p struct {
		URI string `json:"uri"`
	}
	if json.Unmarshal(params, &p) != nil {
		return "", false
	}
	return p.URI, true
}

// noteCall counts a tools/call for Stats.
func (s *Session) noteCall(framing.Envelope) {
	s.counts.calls.Add(1)
}

// clientInitialized takes the client's notifications/initialized: the
// sidecar sends its own after every successful initialize, so that a
// restarted upstream gets one too; the client's is not needed.
func (s *Session) clientInitialized(framing.Envelope) bool {
	s.hs.setInitialized()
	return false
}

// callNotification drops a tools/call sent as a notification when calls
// are gated: without an id it cannot be answered, nor judged like a
// request, and an upstream that dispatches on the method alone would run
// it.
func (s *Session) callNotification(framing.Envelope) bool {
	if s.Tools == nil {
		return true
	}
	s.log.Warn("tools/call sent as a notification; dropped")
	return false
}

// cancelledNotification ends the request the client cancels (see
// clientCancelled); the notification goes on to the upstream.
func (s *Session) cancelledNotification(env framing.Envelope) bool {
	s.clientCancelled(env.Params)
	return true
}
