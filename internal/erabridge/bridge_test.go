package erabridge

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/internal/era"
	"github.com/mcpwrap/mcpwrap/internal/framing"
)

const (
	clientDiscover = `{"jsonrpc":"2.0","id":"mcpwrap-x-1","method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"c26","version":"1"},"io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}}`
	clientInit     = `{"jsonrpc":"2.0","id":"mcpwrap-x-1","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"elicitation":{}},"clientInfo":{"name":"c25","version":"1"}}}`
	initResult     = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true},"resources":{"subscribe":true}},"serverInfo":{"name":"old","version":"1"},"instructions":"hi"}`
)

// bridgedDown brings a rig to a 2026-07-28 client in front of a
// session-era server.
func bridgedDown(t *testing.T, opts Options) *rig {
	r := newRig(t, opts)
	r.write(clientDiscover)
	if opts.Pin != Session {
		d := r.upGets()
		require.Equal(t, "server/discover", d.Method)
		r.say(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`, d.ID))
	}
	init := r.upGets()
	require.Equal(t, "initialize", init.Method)
	p := decode(t, init.Params)
	assert.Equal(t, "2025-11-25", p["protocolVersion"])
	assert.Equal(t, map[string]any{"name": "c26", "version": "1"}, p["clientInfo"])
	assert.Equal(t, map[string]any{"elicitation": map[string]any{}}, p["capabilities"])
	r.say(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, init.ID, initResult))
	assert.Equal(t, "notifications/initialized", r.upGets().Method)
	ans := r.read()
	require.Equal(t, `"mcpwrap-x-1"`, string(ans.ID))
	res := decode(t, ans.Result)
	assert.Equal(t, []any{"2026-07-28"}, res["supportedVersions"])
	assert.Equal(t, "hi", res["instructions"])
	assert.Equal(t, map[string]any{"name": "old", "version": "1"}, res["_meta"].(map[string]any)[era.MetaServerInfo])
	return r
}

func TestDiscoverAnsweredFromInitialize(t *testing.T) {
	for _, pin := range []Pin{Auto, Session} {
		t.Run(string(pin), func(t *testing.T) {
			r := bridgedDown(t, Options{Pin: pin})
			// Later requests go up as they are; answers come back as they are.
			r.write(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`)
			got := r.upGets()
			assert.Equal(t, "tools/list", got.Method)
			assert.Equal(t, "2", string(got.ID))
			assert.JSONEq(t, `{"_meta":{}}`, string(got.Params), "no 2026-07-28 version for a remote's header")
			r.say(`{"jsonrpc":"2.0","id":2,"result":{"tools":[]}}`)
			// A 2026-07-28 result carries its type and cache lifetime.
			assert.Equal(t, `{"jsonrpc":"2.0","id":2,"result":{"tools":[],"resultType":"complete","ttlMs":0,"cacheScope":"private"}}`, string(r.readRaw()))
			// The client's discover again is answered by the bridge.
			r.write(`{"jsonrpc":"2.0","id":3,"method":"server/discover","params":{}}`)
			assert.Equal(t, "3", string(r.read().ID))
		})
	}
}

func TestSameEraPassesBytes(t *testing.T) {
	tests := []struct {
		name          string
		pin           Pin
		discoverFirst bool
		handshake     string
		probe         bool // the bridge sends a discover of its own first
		answer        string
	}{
		{name: "2026 both", pin: Auto, handshake: clientDiscover, answer: `{"supportedVersions":["2026-07-28"],"capabilities":{}}`},
		{name: "2026 pinned", pin: Stateless, handshake: clientDiscover, answer: `{"supportedVersions":["2026-07-28"],"capabilities":{}}`},
		{name: "2025 pinned", pin: Session, handshake: clientInit, answer: initResult},
		{name: "2025 both", pin: Auto, handshake: clientInit, answer: initResult},
		{name: "2025 both, discover first", pin: Auto, discoverFirst: true, handshake: clientInit, probe: true, answer: initResult},
		{name: "2025 pinned, discover first", pin: Session, discoverFirst: true, handshake: clientInit, answer: initResult},
		{name: "2026 both, discover first", pin: Auto, discoverFirst: true, handshake: clientDiscover, answer: `{"supportedVersions":["2026-07-28"],"capabilities":{}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, Options{Pin: tt.pin, DiscoverFirst: tt.discoverFirst})
			r.write(tt.handshake)
			if tt.probe {
				d := r.upGets()
				require.Equal(t, "server/discover", d.Method)
				r.say(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"nope"}}`, d.ID))
			}
			hs := r.upGets()
			assert.Equal(t, `"mcpwrap-x-1"`, string(hs.ID))
			r.say(`{"jsonrpc":"2.0","id":"mcpwrap-x-1","result":` + tt.answer + `}`)
			assert.Equal(t, `"mcpwrap-x-1"`, string(r.read().ID))
			msg := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x","arguments":{}}}`
			r.write(msg)
			select {
			case got := <-r.up.got:
				assert.Equal(t, msg, string(got))
			case <-r.done:
			}
			r.say(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`)
			assert.Equal(t, `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`, string(r.readRaw()))
		})
	}
}

func TestDiscoverVersionOfferIsTheClients(t *testing.T) {
	r := newRig(t, Options{})
	r.write(clientDiscover)
	r.upGets()
	refusal := `{"jsonrpc":"2.0","id":"mcpwrap-x-1","error":{"code":-32022,"message":"unsupported","data":{"supported":["2026-09-01"]}}}`
	r.say(refusal)
	assert.Equal(t, refusal, string(r.readRaw()))
}

// roundTrip opens a call and has the upstream ask for input during it; it
// returns the call's id upstream and the round's answer.
func roundTrip(t *testing.T, r *rig, call string) (upID []byte, round map[string]any) {
	r.write(call)
	up := r.upGets()
	require.Equal(t, "tools/call", up.Method)
	require.True(t, strings.HasPrefix(string(up.ID), `"erabridge-`), string(up.ID))
	r.say(`{"jsonrpc":"2.0","id":41,"method":"elicitation/create","params":{"message":"sure?","requestedSchema":{"type":"object"}}}`)
	ans := r.read()
	require.NotNil(t, ans.Result, "the call is answered with a round")
	return up.ID, decode(t, ans.Result)
}

func TestServerRequestBecomesARound(t *testing.T) {
	r := bridgedDown(t, Options{})
	upID, round := roundTrip(t, r, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"ask","arguments":{"a":1}}}`)
	assert.Equal(t, "input_required", round["resultType"])
	reqs := round["inputRequests"].(map[string]any)
	require.Len(t, reqs, 1)
	var key string
	for k, v := range reqs {
		key = k
		assert.Equal(t, "elicitation/create", v.(map[string]any)["method"])
	}
	state, _ := json.Marshal(round["requestState"])
	// The retry, under a new id, with the arguments spelled otherwise.
	r.write(fmt.Sprintf(`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"arguments": {"a":1.0},"name":"ask","inputResponses":{%q:{"action":"accept","content":{"ok":true}}},"requestState":%s}}`, key, state))
	answer := r.upGets()
	assert.Equal(t, "41", string(answer.ID))
	assert.JSONEq(t, `{"action":"accept","content":{"ok":true}}`, string(answer.Result))
	r.say(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"done"}]}}`, upID))
	final := r.read()
	assert.Equal(t, "6", string(final.ID))
	assert.Contains(t, string(final.Result), "done")
}

func TestRequestStateRefused(t *testing.T) {
	tests := []struct {
		name  string
		retry func(state []byte, key string) string
	}{
		{name: "forged", retry: func(state []byte, key string) string {
			s := string(state)
			forged := s[:len(s)-3] + "A" + s[len(s)-2:]
			if forged == s {
				forged = s[:len(s)-3] + "B" + s[len(s)-2:]
			}
			return `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"ask","arguments":{"a":1},"requestState":` + forged + `}}`
		}},
		{name: "made up", retry: func([]byte, string) string {
			return `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"ask","arguments":{"a":1},"requestState":"mcpwrap1.AAAAAAAAAAAAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}}`
		}},
		{name: "another tool", retry: func(state []byte, key string) string {
			return `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"other","arguments":{"a":1},"requestState":` + string(state) + `}}`
		}},
		{name: "other arguments", retry: func(state []byte, key string) string {
			return `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"ask","arguments":{"a":2},"requestState":` + string(state) + `}}`
		}},
		{name: "another method", retry: func(state []byte, key string) string {
			return `{"jsonrpc":"2.0","id":6,"method":"prompts/get","params":{"name":"ask","arguments":{"a":1},"requestState":` + string(state) + `}}`
		}},
		{name: "state spelled twice", retry: func(state []byte, key string) string {
			return `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"ask","arguments":{"a":1},"requestState":` + string(state) + `,"RequestState":"x"}}`
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := bridgedDown(t, Options{})
			_, round := roundTrip(t, r, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"ask","arguments":{"a":1}}}`)
			state, _ := json.Marshal(round["requestState"])
			r.write(tt.retry(state, ""))
			ans := r.read()
			assert.Equal(t, "6", string(ans.ID))
			require.NotNil(t, ans.Error)
			assert.Contains(t, string(ans.Error), "-32602")
			// The round is still the rightful client's.
			r.write(`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"ask","arguments":{"a":1},"inputResponses":{},"requestState":` + string(state) + `}}`)
			assert.Equal(t, "41", string(r.upGets().ID))
		})
	}
}

func TestRequestStateReplayRefused(t *testing.T) {
	r := bridgedDown(t, Options{})
	_, round := roundTrip(t, r, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"ask","arguments":{}}}`)
	state, _ := json.Marshal(round["requestState"])
	retry := `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"ask","arguments":{},"inputResponses":{},"requestState":` + string(state) + `}}`
	r.write(fmt.Sprintf(retry, 6))
	assert.Equal(t, "41", string(r.upGets().ID))
	r.write(fmt.Sprintf(retry, 7))
	ans := r.read()
	assert.Equal(t, "7", string(ans.ID))
	assert.Contains(t, string(ans.Error), "-32602")
}

func TestAbandonedRoundIsCancelledUpstream(t *testing.T) {
	r := bridgedDown(t, Options{})
	upID, _ := roundTrip(t, r, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"ask"}}`)
	r.timers.fireAll()
	refused := r.upGets()
	assert.Equal(t, "41", string(refused.ID))
	assert.NotNil(t, refused.Error)
	cancel := r.upGets()
	assert.Equal(t, "notifications/cancelled", cancel.Method)
	assert.Equal(t, string(upID), string(member(cancel.Params, "requestId")))
}

func TestServerRequestOutsideOneCallIsRefused(t *testing.T) {
	r := bridgedDown(t, Options{})
	r.say(`{"jsonrpc":"2.0","id":50,"method":"roots/list"}`)
	refused := r.upGets()
	assert.Equal(t, "50", string(refused.ID))
	assert.NotNil(t, refused.Error)
	r.say(`{"jsonrpc":"2.0","id":51,"method":"ping"}`)
	pong := r.upGets()
	assert.Equal(t, "51", string(pong.ID))
	assert.Equal(t, "{}", string(pong.Result))
	// Two calls in flight: which one asks is unknown.
	r.write(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}}`)
	r.upGets()
	r.write(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"b"}}`)
	r.upGets()
	r.say(`{"jsonrpc":"2.0","id":52,"method":"elicitation/create","params":{}}`)
	refused = r.upGets()
	assert.Equal(t, "52", string(refused.ID))
	assert.NotNil(t, refused.Error)
}

func TestListenCarriesListChanges(t *testing.T) {
	r := bridgedDown(t, Options{})
	r.write(`{"jsonrpc":"2.0","id":"L","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true,"promptsListChanged":true,"resourceSubscriptions":["file:///a"]}}}`)
	sub := r.upGets()
	assert.Equal(t, "resources/subscribe", sub.Method)
	assert.JSONEq(t, `{"uri":"file:///a"}`, string(sub.Params))
	ack := r.read()
	assert.Equal(t, "notifications/subscriptions/acknowledged", ack.Method)
	assert.JSONEq(t, `{"notifications":{"toolsListChanged":true,"resourceSubscriptions":["file:///a"]},"_meta":{"io.modelcontextprotocol/subscriptionId":"L"}}`, string(ack.Params))
	r.say(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{}}`, sub.ID)) // swallowed
	r.say(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`)
	n := r.read()
	assert.Equal(t, "notifications/tools/list_changed", n.Method)
	assert.JSONEq(t, `{"_meta":{"io.modelcontextprotocol/subscriptionId":"L"}}`, string(n.Params))
	r.say(`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"file:///a"}}`)
	n = r.read()
	assert.JSONEq(t, `{"uri":"file:///a","_meta":{"io.modelcontextprotocol/subscriptionId":"L"}}`, string(n.Params))
	r.write(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"L"}}`)
	assert.Equal(t, "resources/unsubscribe", r.upGets().Method)
}

// bridgedUp brings a rig to a session-era client in front of a 2026-07-28
// server.
func bridgedUp(t *testing.T, pin Pin) *rig {
	return bridgedUpWith(t, Options{Pin: pin})
}

// bridgedUpWith is bridgedUp with opts: with DiscoverFirst, the bridge
// asks server/discover before the client's initialize is sent.
func bridgedUpWith(t *testing.T, opts Options) *rig {
	r := newRig(t, opts)
	r.write(clientInit)
	if opts.Pin != Stateless && !opts.DiscoverFirst {
		init := r.upGets()
		require.Equal(t, "initialize", init.Method)
		r.say(`{"jsonrpc":"2.0","id":"mcpwrap-x-1","error":{"code":-32601,"message":"Method not found"}}`)
	}
	d := r.upGets()
	require.Equal(t, "server/discover", d.Method)
	m, found, err := ParseMeta(d.Params)
	require.NoError(t, err)
	require.True(t, found)
	assert.Equal(t, "2026-07-28", m.ProtocolVersion)
	assert.JSONEq(t, `{"name":"c25","version":"1"}`, string(m.ClientInfo))
	assert.JSONEq(t, `{"elicitation":{}}`, string(m.ClientCapabilities))
	r.say(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{"listChanged":true}},"instructions":"new","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"new","version":"2"}}}}`, d.ID))
	ans := r.read()
	assert.Equal(t, `"mcpwrap-x-1"`, string(ans.ID))
	assert.JSONEq(t, `{"protocolVersion":"2025-06-18","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"new","version":"2"},"instructions":"new"}`, string(ans.Result))
	listen := r.upGets()
	assert.Equal(t, "subscriptions/listen", listen.Method)
	assert.JSONEq(t, `{"toolsListChanged":true}`, string(member(listen.Params, "notifications")))
	r.say(`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"toolsListChanged":true}}}`) // swallowed
	r.write(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)                                                                   // swallowed
	return r
}

func TestInitializeAnsweredFromDiscover(t *testing.T) {
	for _, pin := range []Pin{Auto, Stateless} {
		t.Run(string(pin), func(t *testing.T) {
			r := bridgedUp(t, pin)
			r.write(`{"jsonrpc":"2.0","id":2,"method":"prompts/list"}`)
			list := r.upGets()
			assert.Equal(t, "prompts/list", list.Method)
			m, _, err := ParseMeta(list.Params)
			require.NoError(t, err)
			assert.Equal(t, "2026-07-28", m.ProtocolVersion)
			r.write(`{"jsonrpc":"2.0","id":"p","method":"ping"}`)
			pong := r.read()
			assert.Equal(t, `"p"`, string(pong.ID), "the 2026-07-28 protocol has no ping: the bridge answers it")
			r.write(`{"jsonrpc":"2.0","id":3,"method":"initialize","params":{}}`)
			assert.Equal(t, "3", string(r.read().ID))
			// The logging level goes with every later request.
			r.write(`{"jsonrpc":"2.0","id":4,"method":"logging/setLevel","params":{"level":"debug"}}`)
			assert.Equal(t, "4", string(r.read().ID))
			r.write(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"log"}}`)
			call := r.upGets()
			assert.Equal(t, `"debug"`, string(member(member(call.Params, "_meta"), era.MetaLogLevel)))
		})
	}
}

// With DiscoverFirst (a remote upstream, on which a discover commits no
// session), a server that speaks both eras is spoken to in 2026-07-28 as
// the go-sdk client does, also for a session-era client: its initialize
// never reaches the upstream.
func TestDiscoverFirstBridgesADualEraServer(t *testing.T) {
	r := bridgedUpWith(t, Options{DiscoverFirst: true})
	r.write(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	list := r.upGets()
	assert.Equal(t, "tools/list", list.Method, "the client's initialize was never sent")
	m, _, err := ParseMeta(list.Params)
	require.NoError(t, err)
	assert.Equal(t, "2026-07-28", m.ProtocolVersion)
	client, server := r.conn.(interface{ Eras() (string, string) }).Eras()
	assert.Equal(t, []string{"2025-06-18", "2026-07-28"}, []string{client, server})
}

// A discover the bridge sent first and the server refused, in every way but
// an offer of a 2026-07-28 version, leaves the client's initialize to go
// as it is; a -32022 offer is tried once.
func TestDiscoverFirstFallsBackToInitialize(t *testing.T) {
	refuse := func(code int, data string) func(*rig, framing.Envelope) {
		return func(r *rig, d framing.Envelope) {
			r.say(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":"no","data":%s}}`, d.ID, code, data))
		}
	}
	tests := []struct {
		name   string
		answer func(*rig, framing.Envelope) // the upstream's answer to the bridge's discover
	}{
		{name: "method not found", answer: refuse(-32601, `null`)},
		{name: "invalid request", answer: refuse(-32600, `null`)},
		{name: "a version offer of the session era only", answer: refuse(-32022, `{"supported":["2025-11-25"]}`)},
		{name: "a result listing no 2026-07-28 version", answer: func(r *rig, d framing.Envelope) {
			r.say(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"supportedVersions":["2025-11-25"],"capabilities":{}}}`, d.ID))
		}},
		{name: "a transport failure", answer: func(r *rig, d framing.Envelope) { r.fail(d.ID, errors.New("HTTP 500")) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, Options{DiscoverFirst: true})
			r.write(clientInit)
			d := r.upGets()
			require.Equal(t, "server/discover", d.Method)
			tt.answer(r, d)
			init := <-r.up.got
			assert.Equal(t, clientInit, string(init), "the client's initialize, as it is")
			r.say(`{"jsonrpc":"2.0","id":"mcpwrap-x-1","result":` + initResult + `}`)
			assert.Equal(t, `"mcpwrap-x-1"`, string(r.read().ID))
			msg := `{"jsonrpc":"2.0","id":7,"method":"tools/list"}`
			r.write(msg)
			assert.Equal(t, msg, string(<-r.up.got), "same era: bytes pass")
			client, server := r.conn.(interface{ Eras() (string, string) }).Eras()
			assert.Equal(t, []string{"2025-11-25", "2025-11-25"}, []string{client, server})
		})
	}
}

// A -32022 offer is tried once, even of the version the bridge asked for
// (a server may refuse a first request whatever it asks, as the
// request-metadata client scenario's does).
func TestDiscoverFirstVersionOfferTriedOnce(t *testing.T) {
	for _, offer := range []string{"2026-07-28", "2026-09-01"} {
		t.Run(offer, func(t *testing.T) {
			r := newRig(t, Options{DiscoverFirst: true})
			r.write(clientInit)
			d := r.upGets()
			r.say(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32022,"message":"unsupported","data":{"supported":[%q]}}}`, d.ID, offer))
			again := r.upGets()
			require.Equal(t, "server/discover", again.Method)
			m, _, err := ParseMeta(again.Params)
			require.NoError(t, err)
			assert.Equal(t, offer, m.ProtocolVersion)
			r.say(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32022,"message":"unsupported","data":{"supported":["2026-10-01"]}}}`, again.ID))
			assert.Equal(t, clientInit, string(<-r.up.got), "one offer only, then the client's initialize")
		})
	}
}

// A client's initialize refused after the bridge's discover was refused
// too gets its own refusal, with no second discover.
func TestDiscoverFirstBothRefused(t *testing.T) {
	r := newRig(t, Options{DiscoverFirst: true})
	r.write(clientInit)
	d := r.upGets()
	r.say(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`, d.ID))
	assert.Equal(t, clientInit, string(<-r.up.got))
	refusal := `{"jsonrpc":"2.0","id":"mcpwrap-x-1","error":{"code":-32600,"message":"bad"}}`
	r.say(refusal)
	assert.Equal(t, refusal, string(r.readRaw()))
	select {
	case m := <-r.up.got:
		t.Fatalf("sent after both refusals: %s", m)
	default:
	}
}

// A request of the bridge's own whose answer the transport lost fails the
// Session's handshake it stood for, under the Session's id: the Session
// never learnt the bridge's.
func TestBridgeRequestFailureFailsTheHandshake(t *testing.T) {
	r := newRig(t, Options{Pin: Stateless})
	r.write(clientInit)
	d := r.upGets()
	r.fail(d.ID, errors.New("HTTP 502"))
	select {
	case f := <-r.failed:
		assert.Equal(t, `"mcpwrap-x-1"`, string(f.ID))
		assert.EqualError(t, f.Err, "HTTP 502")
	case <-time.After(wait):
		t.Fatal("the handshake never failed")
	}
}

func TestInitializeRefusedAlsoByDiscover(t *testing.T) {
	r := newRig(t, Options{})
	r.write(clientInit)
	r.upGets()
	refusal := `{"jsonrpc":"2.0","id":"mcpwrap-x-1","error":{"code":-32600,"message":"bad"}}`
	r.say(refusal)
	d := r.upGets()
	require.Equal(t, "server/discover", d.Method)
	r.say(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`, d.ID))
	assert.Equal(t, refusal, string(r.readRaw()), "the initialize's own refusal answers it")
}

func TestStatelessPinRefusesASessionServer(t *testing.T) {
	r := newRig(t, Options{Pin: Stateless})
	r.write(clientInit)
	d := r.upGets()
	r.say(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`, d.ID))
	ans := r.read()
	assert.Equal(t, `"mcpwrap-x-1"`, string(ans.ID))
	assert.NotNil(t, ans.Error)
}

func TestInvalidHeaderToolsFiltered(t *testing.T) {
	r := bridgedUp(t, Auto)
	r.write(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	got := r.upGets()
	assert.Equal(t, "tools/list", got.Method)
	m, _, _ := ParseMeta(got.Params)
	assert.Equal(t, "2026-07-28", m.ProtocolVersion)
	r.say(`{"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"ok","inputSchema":{"type":"object","properties":{"r":{"type":"string","x-mcp-header":"Region"}}}},{"name":"bad","inputSchema":{"type":"object","properties":{"r":{"type":"object","x-mcp-header":"Region"}}}}]}}`)
	list := r.read()
	var res struct {
		Tools []struct{ Name string } `json:"tools"`
	}
	require.NoError(t, json.Unmarshal(list.Result, &res))
	require.Len(t, res.Tools, 1)
	assert.Equal(t, "ok", res.Tools[0].Name)
}

func TestInputRequiredBecomesServerRequests(t *testing.T) {
	r := bridgedUp(t, Auto)
	r.write(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"ask","arguments":{"a":1},"_meta":{"progressToken":"p"}}}`)
	call := r.upGets()
	assert.Equal(t, "9", string(call.ID))
	r.say(`{"jsonrpc":"2.0","id":9,"result":{"resultType":"input_required","inputRequests":{"e1":{"method":"elicitation/create","params":{"message":"sure?"}},"r1":{"method":"roots/list"}},"requestState":"opaque-1"}}`)
	asked := map[string]framing.Envelope{}
	for range 2 {
		req := r.read()
		asked[req.Method] = req
	}
	require.Contains(t, asked, "elicitation/create")
	require.Contains(t, asked, "roots/list")
	r.write(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"roots":[]}}`, asked["roots/list"].ID))
	r.write(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"action":"accept"}}`, asked["elicitation/create"].ID))
	retry := r.upGets()
	assert.Equal(t, "tools/call", retry.Method)
	assert.NotEqual(t, "9", string(retry.ID))
	p := decode(t, retry.Params)
	assert.Equal(t, "opaque-1", p["requestState"])
	assert.Equal(t, map[string]any{"e1": map[string]any{"action": "accept"}, "r1": map[string]any{"roots": []any{}}}, p["inputResponses"])
	assert.Equal(t, "p", p["_meta"].(map[string]any)["progressToken"])
	r.say(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"resultType":"complete","content":[]}}`, retry.ID))
	final := r.read()
	assert.Equal(t, "9", string(final.ID))
	assert.NotNil(t, final.Result)
}

func TestSubscribeBecomesListen(t *testing.T) {
	r := bridgedUp(t, Auto)
	r.write(`{"jsonrpc":"2.0","id":4,"method":"resources/subscribe","params":{"uri":"file:///b"}}`)
	assert.Equal(t, "4", string(r.read().ID))
	cancel := r.upGets()
	assert.Equal(t, "notifications/cancelled", cancel.Method)
	listen := r.upGets()
	assert.Equal(t, "subscriptions/listen", listen.Method)
	assert.JSONEq(t, `{"toolsListChanged":true,"resourceSubscriptions":["file:///b"]}`, string(member(listen.Params, "notifications")))
}

func TestCloseEndsABlockedRead(t *testing.T) {
	r := bridgedDown(t, Options{})
	require.NoError(t, r.conn.Close())
	<-r.done
}
