package middleware

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/internal/framing"
	"github.com/mcpwrap/mcpwrap/resilience"
)

// onDemandSession runs a Session whose Dialer is OnDemand around a dial of
// upConn that reports each dial on the returned channel; the Session
// remembers remembered, when not nil.
func onDemandSession(t *testing.T, clientConn, upConn Conn, remembered *UpstreamInfo, clock *fakeClock) (*Session, <-chan struct{}) {
	t.Helper()
	dialled := make(chan struct{}, 1)
	once := dialOnce(upConn)
	dial := func(ctx context.Context) (Conn, error) {
		dialled <- struct{}{}
		return once(ctx)
	}
	memory := &memoryPolicy{fakePolicy: &fakePolicy{status: map[string]string{}}, remembered: remembered, seen: make(chan UpstreamInfo, 4)}
	s := &Session{Name: "lazy", Client: clientConn, Dial: OnDemand(dial), Tools: memory}
	if clock != nil {
		s.hooks.afterFunc = clock.afterFunc
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return s, dialled
}

// serveLoad plays the upstream's side of a load: it answers the client's
// initialize (whose params it checks) with result, then every tools/list
// with one tool, and other requests (the replayed logging level) with an
// empty result, until it has answered the client's own tools/list, id 2.
func serveLoad(t *testing.T, up *peer, params, result string) {
	t.Helper()
	env, err := framing.Peek(up.next())
	require.NoError(t, err)
	require.Equal(t, "initialize", env.Method)
	assert.JSONEq(t, params, string(env.Params), "the upstream is initialised with the client's handshake")
	up.send(`{"jsonrpc":"2.0","id":` + string(env.ID) + `,"result":` + result + "}\n")
	for {
		env, err := framing.Peek(up.next())
		require.NoError(t, err)
		switch {
		case env.Kind != framing.Request:
			continue
		case env.Method != "tools/list":
			up.send(`{"jsonrpc":"2.0","id":` + string(env.ID) + `,"result":{}}` + "\n")
			continue
		}
		up.send(`{"jsonrpc":"2.0","id":` + string(env.ID) + `,"result":{"tools":[{"name":"echo","inputSchema":{"type":"object"}}]}}` + "\n")
		if string(env.ID) == "2" {
			return
		}
	}
}

// TestInitializeFromMemoryStartsTheUpstreamOnDemand: with an OnDemand
// Dialer and a remembered answer to an initialize of the version the
// client asks for, the client's initialize is answered from memory, as the
// upstream answered it, and nothing is dialled until a request the
// upstream must answer (not notifications/initialized, ping or
// logging/setLevel): then the upstream is initialised with the client's
// handshake and the request is relayed once it is loaded. When the
// upstream then says otherwise of itself, the client is told its lists
// changed. Without such a memory the dial is made at once and the upstream
// answers the initialize.
func TestInitializeFromMemoryStartsTheUpstreamOnDemand(t *testing.T) {
	const (
		params     = `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}`
		remembered = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true},"logging":{}},"serverInfo":{"name":"everything","version":"2.0"},"instructions":"Use echo."}`
		differs    = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{"listChanged":true},"resources":{}},"serverInfo":{"name":"everything","version":"2.1"}}`
	)
	memory := &UpstreamInfo{
		Capabilities:    json.RawMessage("{\n  \"logging\": {},\n  \"tools\": {\"listChanged\": true}\n}"), // as a store re-indents it
		ServerInfo:      json.RawMessage(`{"name":"everything","version":"2.0"}`),
		Instructions:    "Use echo.",
		ProtocolVersion: "2025-11-25",
	}
	tests := []struct {
		name       string
		remembered *UpstreamInfo
		params     string   // the client's initialize params
		upstream   string   // the upstream's initialize result
		lazy       bool     // the initialize is answered from memory, nothing dialled
		told       []string // the notifications the client gets before its tools/list's answer
	}{
		{name: "remembered", remembered: memory, params: params, upstream: remembered, lazy: true},
		{name: "remembered, the upstream says otherwise", remembered: memory, params: params, upstream: differs, lazy: true,
			told: []string{"notifications/tools/list_changed", "notifications/resources/list_changed"}},
		{name: "another version asked", remembered: memory, params: `{"protocolVersion":"2025-06-18","capabilities":{}}`,
			upstream: `{"protocolVersion":"2025-06-18","capabilities":{"tools":{}}}`},
		{name: "nothing remembered", params: params, upstream: remembered},
		{name: "no version remembered (server/discover)", remembered: &UpstreamInfo{Capabilities: memory.Capabilities}, params: params, upstream: remembered},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client, clientConn := newPeer(t, 0)
			up, upConn := newPeer(t, 0)
			_, dialled := onDemandSession(t, clientConn, upConn, tt.remembered, nil)

			client.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":` + tt.params + "}\n")
			if !tt.lazy {
				<-dialled
				env, err := framing.Peek(up.next())
				require.NoError(t, err)
				require.Equal(t, "initialize", env.Method, "dialled at once")
				up.send(`{"jsonrpc":"2.0","id":` + string(env.ID) + `,"result":` + tt.upstream + "}\n")
				assert.JSONEq(t, `{"jsonrpc":"2.0","id":0,"result":`+tt.upstream+`}`, string(client.next()), "the upstream's answer")
				return
			}
			assert.JSONEq(t, `{"jsonrpc":"2.0","id":0,"result":`+remembered+`}`, string(client.next()), "the upstream's answer in its last load")
			client.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
			client.send(`{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"info"}}` + "\n")
			assert.JSONEq(t, `{"jsonrpc":"2.0","id":1,"result":{}}`, string(client.next()))
			client.send(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n")
			assert.JSONEq(t, `{"jsonrpc":"2.0","id":1,"result":{}}`, string(client.next()))
			assert.Empty(t, dialled, "nothing dialled before a request the upstream must answer")

			client.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}` + "\n")
			<-dialled
			serveLoad(t, up, tt.params, tt.upstream)
			var told []string
			for {
				msg := client.next()
				env, err := framing.Peek(msg)
				require.NoError(t, err)
				if env.Kind == framing.Notification {
					told = append(told, env.Method)
					continue
				}
				assert.Equal(t, "2", string(env.ID))
				assert.Contains(t, string(msg), `"name":"echo"`, "the upstream's tools")
				break
			}
			assert.ElementsMatch(t, tt.told, told)
		})
	}
}

// TestSessionWaitingForItsDemandIsIdle: while its OnDemand dial waits for
// the client's first request, its initialize answered from memory, the
// Session's status is idle (not started, no attempt, no error), not a
// load failing transiently; the client's request starts the load, transient
// at its first attempt until the upstream is available. A Session that
// cannot answer from memory is never idle: its load starts at once.
func TestSessionWaitingForItsDemandIsIdle(t *testing.T) {
	const (
		params = `{"protocolVersion":"2025-11-25","capabilities":{}}`
		result = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}}}`
	)
	client, clientConn := newPeer(t, 0)
	up, upConn := newPeer(t, 0)
	s, dialled := onDemandSession(t, clientConn, upConn, &UpstreamInfo{Capabilities: json.RawMessage(`{"tools":{}}`), ProtocolVersion: "2025-11-25"}, nil)

	client.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":` + params + "}\n")
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":0,"result":`+result+`}`, string(client.next()), "answered from memory")
	client.send(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n")
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":1,"result":{}}`, string(client.next()))
	assert.Equal(t, resilience.Outcome{Server: "lazy", Class: resilience.Idle}, s.Status(), "not started, not failing")
	assert.Equal(t, "Server 'lazy' is not started yet; it starts on the first request that needs it.", s.Status().Message())
	client.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"discover_tools","arguments":{}}}` + "\n")
	discovered := string(client.next()) // answered alone: it starts nothing
	assert.Contains(t, discovered, `\"status\":\"idle\"`, "the agent is told the server is not started, not that it is starting up")
	assert.Contains(t, discovered, "is not started yet; it starts on the first request that needs it")
	assert.Empty(t, dialled)
	s.Retry() // as a config change or a sign-in does: nothing failed, nothing to retry
	assert.Empty(t, s.kick, "an idle upstream is not reloaded: it starts when asked for")

	client.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}` + "\n")
	<-dialled
	st := s.Status()
	assert.Equal(t, resilience.Transient, st.Class, "loading once asked: %+v", st)
	serveLoad(t, up, params, result)
	assert.Contains(t, string(client.next()), `"name":"echo"`)
	assert.Equal(t, resilience.Available, s.Status().Class)

	// Nothing remembered: the load starts at once, never idle.
	client, clientConn = newPeer(t, 0)
	_, upConn = newPeer(t, 0)
	s, dialled = onDemandSession(t, clientConn, upConn, nil, nil)
	client.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":` + params + "}\n")
	<-dialled
	assert.Equal(t, resilience.Transient, s.Status().Class)
}

// TestInitializeFromMemoryThenASlowUpstream: a request waiting for an
// upstream started on demand is answered with its status past the ready
// timeout, as after a crash; the client, told at its initialize that the
// upstream was there, is told its tools changed once the upstream is
// ready.
func TestInitializeFromMemoryThenASlowUpstream(t *testing.T) {
	const params = `{"protocolVersion":"2025-11-25","capabilities":{}}`
	result := `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}}}`
	clock := &fakeClock{}
	client, clientConn := newPeer(t, 0)
	up, upConn := newPeer(t, 0)
	_, dialled := onDemandSession(t, clientConn, upConn, &UpstreamInfo{Capabilities: json.RawMessage(`{"tools":{}}`), ProtocolVersion: "2025-11-25"}, clock)

	client.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":` + params + "}\n")
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":0,"result":`+result+`}`, string(client.next()))
	client.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}` + "\n")
	<-dialled
	env, err := framing.Peek(up.next()) // the upstream takes its time
	require.NoError(t, err)
	require.Equal(t, "initialize", env.Method)
	require.Eventually(t, func() bool { return clock.fire() > 0 }, timeout, tick, "the ready timeout")
	var answer struct {
		Result struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		} `json:"result"`
	}
	require.NoError(t, json.Unmarshal(client.next(), &answer))
	require.Len(t, answer.Result.Tools, 1, "the discovery tool only")

	up.send(`{"jsonrpc":"2.0","id":` + string(env.ID) + `,"result":` + result + "}\n")
	for { // the load's first catalog: the upstream is ready once it is loaded
		env, err = framing.Peek(up.next())
		require.NoError(t, err)
		if env.Method == "tools/list" {
			up.send(`{"jsonrpc":"2.0","id":` + string(env.ID) + `,"result":{"tools":[]}}` + "\n")
			break
		}
	}
	env, err = framing.Peek(client.next())
	require.NoError(t, err)
	assert.Equal(t, "notifications/tools/list_changed", env.Method, "told once the upstream is ready")
}

// TestInitializeCapturedBeforeTheDialWaits: a client's initialize that
// came before the OnDemand dial began to wait (it armed its ready timer, as
// one waiting for the upstream) is answered from memory by the dial as it
// begins to wait, its ready timer stopped, and nothing is dialled.
func TestInitializeCapturedBeforeTheDialWaits(t *testing.T) {
	const result = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}}}`
	clock := &fakeClock{}
	armed := make(chan struct{})
	var once sync.Once
	client, clientConn := newPeer(t, 0)
	_, upConn := newPeer(t, 0)
	dialled := make(chan struct{}, 1)
	lazy := OnDemand(func(ctx context.Context) (Conn, error) {
		dialled <- struct{}{}
		return upConn, nil
	})
	memory := &memoryPolicy{fakePolicy: &fakePolicy{status: map[string]string{}},
		remembered: &UpstreamInfo{Capabilities: json.RawMessage(`{"tools":{}}`), ProtocolVersion: "2025-11-25"}, seen: make(chan UpstreamInfo, 1)}
	s := &Session{Name: "lazy", Client: clientConn, Tools: memory,
		Dial: func(ctx context.Context) (Conn, error) {
			<-armed // the client's initialize waits for the upstream
			return lazy(ctx)
		},
		hooks: hooks{afterFunc: func(d time.Duration, f func()) interface{ Stop() bool } {
			once.Do(func() { close(armed) })
			return clock.afterFunc(d, f)
		}},
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Run(ctx)
	}()
	defer func() {
		cancel()
		<-done
	}()

	client.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}` + "\n")
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":0,"result":`+result+`}`, string(client.next()), "answered from memory")
	assert.Zero(t, clock.fire(), "its ready timer stopped")
	assert.Empty(t, dialled, "nothing dialled")
}
