package middleware

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/mcpwrap/mcpwrap/internal/framing"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// untilMarker returns what the client receives up to (not including) the
// upstream notification the test sends last as a marker.
func untilMarker(t *testing.T, h *harness) [][]byte {
	t.Helper()
	const marker = `{"jsonrpc":"2.0","method":"notifications/marker"}`
	h.up.send(marker + "\n")
	var got [][]byte
	for {
		msg := h.client.next()
		if string(msg) == marker {
			return got
		}
		got = append(got, msg)
	}
}

// withID returns the messages whose id is id (by JSON value).
func withID(msgs [][]byte, id string) [][]byte {
	var out [][]byte
	for _, m := range msgs {
		if env, err := framing.Peek(m); err == nil && framing.IDKey(env.ID) == framing.IDKey([]byte(id)) {
			out = append(out, m)
		}
	}
	return out
}

// upstreamReceived reads what the upstream receives until the client's
// request with id marker, which the test sends last, and returns it.
func upstreamReceived(t *testing.T, h *harness, marker string) [][]byte {
	t.Helper()
	var got [][]byte
	for {
		msg := h.up.next()
		env, err := framing.Peek(msg)
		require.NoError(t, err)
		if env.Kind == framing.Request && framing.IDKey(env.ID) == framing.IDKey([]byte(marker)) {
			return got
		}
		got = append(got, msg)
	}
}

// TestReusedIDOfATimedOutCallIsNotAnsweredTwice is an attack on "every
// request is answered exactly once": a call times out (the sidecar answers
// it), the client uses its id again, and the upstream's late answer to the
// first call then arrives. Matched to the second request, it was delivered
// as that request's answer, and the second request's own answer followed
// as a second one.
func TestReusedIDOfATimedOutCallIsNotAnsweredTwice(t *testing.T) {
	clock := &fakeClock{}
	h := start(t, 0, withCallTimeout(clock))
	h.client.send(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"hang"}}` + "\n")
	h.up.next()
	require.NotZero(t, clock.fire())
	h.up.next() // notifications/cancelled
	timedOut := h.client.next()
	require.Contains(t, string(timedOut), `"timeout"`)

	h.client.send(`{"jsonrpc":"2.0","id":7,"method":"ping"}` + "\n")
	h.client.send(`{"jsonrpc":"2.0","id":"marker","method":"ping"}` + "\n")
	reached := upstreamReceived(t, h, `"marker"`)
	// The upstream answers the call late, and anything it received since.
	h.up.send(`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"late"}]}}` + "\n")
	for range reached {
		h.up.send(`{"jsonrpc":"2.0","id":7,"result":{}}` + "\n")
	}
	got := untilMarker(t, h)

	answers := withID(got, "7")
	require.Len(t, answers, 1, "the second request with id 7 is answered once: %q", answers)
	assert.NotContains(t, string(answers[0]), "late", "never the first request's answer")
}

// TestReusedIDOfACancelledListDoesNotUnfilterIt is an attack on "nothing
// locked is listed": the client cancels a tools/list and sends another
// method under the same id; the upstream's late answer to the tools/list,
// matched to the other method, reached the client unfiltered, showing a
// locked tool's definition. A long answer, which could be relayed as it
// arrives, is held and filtered all the same.
func TestReusedIDOfACancelledListDoesNotUnfilterIt(t *testing.T) {
	tests := []struct {
		name string
		desc string // the open tool's description
	}{
		{name: "short", desc: "fine"},
		{name: "long", desc: long},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			policy := &fakePolicy{status: map[string]string{"secret": "pending_approval"}}
			h := start(t, 0, func(s *Session) { s.Tools = policy })
			loadEmptyCatalog(t, h) // the load is complete: tools/list goes to the upstream
			h.client.send(`{"jsonrpc":"2.0","id":9,"method":"tools/list"}` + "\n")
			h.client.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9}}` + "\n")
			h.client.send(`{"jsonrpc":"2.0","id":9,"method":"resources/list"}` + "\n")
			h.client.send(`{"jsonrpc":"2.0","id":"marker","method":"ping"}` + "\n")
			reached := upstreamReceived(t, h, `"marker"`)

			h.up.send(`{"jsonrpc":"2.0","id":9,"result":{"tools":[` + tool("open", tt.desc) + `,` + tool("secret", "UNAPPROVED TEXT") + `]}}` + "\n")
			for _, msg := range reached {
				if env, _ := framing.Peek(msg); env.Method == "resources/list" {
					h.up.send(`{"jsonrpc":"2.0","id":9,"result":{"resources":[]}}` + "\n")
				}
			}
			got := untilMarker(t, h)
			for _, msg := range got {
				assert.NotContains(t, string(msg), "UNAPPROVED TEXT", "a locked tool's definition reached the client")
			}
			assert.Len(t, withID(got, "9"), 2, "the late list, filtered, and the refusal or answer of the second request")
		})
	}
}

// TestAmbiguousIDNeverUnfiltersAList is an attack on "nothing locked is
// listed": while the client waits for a tools/list, the upstream answers
// another request with a tools/list-shaped result and spells "id" twice,
// the second time as the tools/list's id. The sidecar read the first id,
// or none, and relayed it unfiltered; a client whose parser takes the last
// "id" (JavaScript's JSON.parse) took it for its tools/list and listed the
// locked tool. Held or relayed as it arrives, such a message never
// reaches the client.
func TestAmbiguousIDNeverUnfiltersAList(t *testing.T) {
	tests := []struct {
		name string
		pad  string // makes the message long, relayed as it arrives if anything is
	}{
		{name: "held whole"},
		{name: "long", pad: long},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			policy := &fakePolicy{status: map[string]string{"secret": "disabled_by_config"}}
			h := start(t, 0, func(s *Session) { s.Tools = policy })
			h.client.send(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"x"}}` + "\n")
			h.client.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}` + "\n")
			h.client.send(`{"jsonrpc":"2.0","id":"marker","method":"ping"}` + "\n")
			reached := upstreamReceived(t, h, `"marker"`)

			h.up.send(`{"jsonrpc":"2.0","id":1,"result":{"tools":[` + tool("open", tt.pad) + `,` + tool("secret", "LOCKED TOOL") + `]},"id":2}` + "\n")
			for _, msg := range reached {
				env, err := framing.Peek(msg)
				require.NoError(t, err)
				if string(env.ID) == "2" {
					h.up.send(`{"jsonrpc":"2.0","id":2,"result":{"tools":[` + tool("open", "") + `,` + tool("secret", "LOCKED TOOL") + `]}}` + "\n")
				}
			}
			for _, msg := range untilMarker(t, h) {
				assert.NotContains(t, string(msg), "LOCKED TOOL", "a locked tool's definition reached the client: %.200s", msg)
			}
		})
	}
}

// TestUpstreamAnswersEachRequestOnce is an attack on "every client request
// gets exactly one answer" and "nothing locked is listed": the upstream
// answers a request twice, or sends an answer under an id it was never
// sent (one the client has not used yet, with a tools/list result listing
// a locked tool), alone, in a batch, or long enough to be relayed as it
// arrives. Each reached the client as a response to an id mcpwrap knew
// no request under: the first request was answered twice, and a client
// that had written its next request under that id, not yet read by
// mcpwrap, took the unfiltered list for its answer. A response whose id
// is null (an error the upstream could not tie to a request) still passes.
func TestUpstreamAnswersEachRequestOnce(t *testing.T) {
	list := `{"tools":[` + tool("open", "") + `,` + tool("secret", "LOCKED TOOL") + `]}`
	tests := []struct {
		name  string
		extra string // what the upstream sends after answering id 5 once
	}{
		{name: "twice", extra: `{"jsonrpc":"2.0","id":5,"result":{"again":true}}`},
		{name: "twice in a batch", extra: `[{"jsonrpc":"2.0","id":5,"result":{"again":true}}]`},
		{name: "twice, long", extra: `{"jsonrpc":"2.0","id":5,"result":{"again":"` + long + `"}}`},
		{name: "never asked", extra: `{"jsonrpc":"2.0","id":6,"result":` + list + `}`},
		{name: "never asked, in a batch", extra: `[{"jsonrpc":"2.0","id":6,"result":` + list + `}]`},
		{name: "never asked, long", extra: `{"jsonrpc":"2.0","id":6,"result":{"pad":"` + long + `","tools":[` + tool("secret", "LOCKED TOOL") + `]}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			policy := &fakePolicy{status: map[string]string{"secret": "disabled_by_config"}}
			h := start(t, 0, func(s *Session) { s.Tools = policy })
			h.client.send(`{"jsonrpc":"2.0","id":5,"method":"ping"}` + "\n")
			h.client.send(`{"jsonrpc":"2.0","id":"marker","method":"ping"}` + "\n")
			upstreamReceived(t, h, `"marker"`) // the sidecar's own requests, and the ping
			h.up.send(`{"jsonrpc":"2.0","id":5,"result":{}}` + "\n")
			h.up.send(tt.extra + "\n")
			var got [][]byte // a batch's elements apart
			for _, msg := range untilMarker(t, h) {
				if elems, err := framing.Elements(msg); err == nil {
					got = append(got, elems...)
				} else {
					got = append(got, msg)
				}
			}

			answers := append(withID(got, "5"), withID(got, "6")...)
			assert.Equal(t, 1, len(answers), "the ping is answered once, and nothing else: %s", heads(answers))
			for _, msg := range got {
				assert.False(t, bytes.Contains(msg, []byte("LOCKED TOOL")), "a locked tool's definition reached the client: %s", heads([][]byte{msg}))
			}
		})
	}
	t.Run("null id passes", func(t *testing.T) {
		h := start(t, 0)
		const parseError = `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`
		h.up.send(parseError + "\n")
		assert.Equal(t, [][]byte{[]byte(parseError)}, untilMarker(t, h))
	})
}

// heads returns the first 100 bytes of each of msgs, for a failure message.
func heads(msgs [][]byte) string {
	var out []string
	for _, m := range msgs {
		out = append(out, string(m[:min(len(m), 100)]))
	}
	return strings.Join(out, " | ")
}

// TestLongResponseNeverPassesForAListTrackedAfterItsHead is an attack on
// "nothing locked is listed": the upstream sends a long answer, listing a
// locked tool, under the id the client's next tools/list will have; the
// client sends that tools/list after the relay has looked at the answer's
// head (no tools/list was pending, so it could be relayed as it arrives)
// and before it takes the request the answer is for. The relay took the
// tools/list and relayed the answer to it unfiltered, as it arrived.
func TestLongResponseNeverPassesForAListTrackedAfterItsHead(t *testing.T) {
	policy := &fakePolicy{status: map[string]string{"secret": "disabled_by_config"}}
	var h *harness
	var once sync.Once
	h = start(t, 0, func(s *Session) {
		s.Tools = policy
		s.hooks.streamHead = func() {
			once.Do(func() {
				h.client.send(`{"jsonrpc":"2.0","id":7,"method":"tools/list"}` + "\n")
				h.up.next() // tracked before it was written
			})
		}
	})
	loadEmptyCatalog(t, h) // the load is complete: tools/list goes to the upstream
	h.up.send(`{"jsonrpc":"2.0","id":7,"result":{"tools":[` + tool("open", long) + `,` + tool("secret", "LOCKED TOOL") + `]}}` + "\n")
	answer := h.client.next()
	env, err := framing.Peek(answer)
	require.NoError(t, err)
	assert.Equal(t, "7", string(env.ID))
	assert.False(t, bytes.Contains(answer, []byte("LOCKED TOOL")), "the tools/list answer is filtered: %s", heads([][]byte{answer}))
}

// TestHostileUpstreamAnswersEachRequestExactlyOnce holds "every client
// request gets exactly one answer" against an upstream that, for each
// request, answers it once or twice, alone or in a batch, long or short,
// and in between answers ids it was never sent (counting up past the
// client's, as a guess at its next ones, and null): the client gets one
// answer per request, and nothing under an id it never used.
func TestHostileUpstreamAnswersEachRequestExactlyOnce(t *testing.T) {
	const n = 20                         // all it sends the client, fixed or not, fits the client peer's queue of 64
	rng := rand.New(rand.NewPCG(31, 32)) // a fixed sequence, the same every run
	h := start(t, 0)
	for i := 1; i <= n; i++ {
		h.client.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"resources/read","params":{"uri":"u"}}`+"\n", i))
	}
	answer := func(id string) string {
		pad := ""
		if rng.IntN(4) == 0 {
			pad = long // relayed as it arrives
		}
		msg := `{"jsonrpc":"2.0","id":` + id + `,"result":{"contents":[{"text":"` + pad + `"}]}}`
		if rng.IntN(3) == 0 {
			msg = "[" + msg + "]"
		}
		return msg + "\n"
	}
	for range n {
		env, err := framing.Peek(h.up.next())
		require.NoError(t, err)
		id := string(env.ID)
		h.up.send(answer(id))
		if rng.IntN(2) == 0 {
			h.up.send(answer(id)) // again
		}
		h.up.send(answer(fmt.Sprint(n + 1 + rng.IntN(8)))) // never asked
	}
	h.up.send(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}` + "\n")
	count := map[string]int{}
	for _, msg := range untilMarker(t, h) {
		elems, err := framing.Elements(msg)
		if err != nil {
			elems = [][]byte{msg}
		}
		for _, e := range elems {
			env, err := framing.Peek(e)
			require.NoError(t, err)
			count[framing.IDKey(env.ID)]++
		}
	}
	want := map[string]int{framing.IDKey([]byte("null")): 1}
	for i := 1; i <= n; i++ {
		want[framing.IDKey([]byte(fmt.Sprint(i)))] = 1
	}
	assert.Equal(t, want, count, "answers by id")
}

// loadEmptyCatalog answers the sidecar's first tools/list, which started
// with the handshake, with no tools, and waits until it is kept: the load
// is complete.
func loadEmptyCatalog(t *testing.T, h *harness) {
	t.Helper()
	env, err := framing.Peek(h.up.next())
	require.NoError(t, err)
	require.Equal(t, "tools/list", env.Method)
	h.up.send(`{"jsonrpc":"2.0","id":` + string(env.ID) + `,"result":{"tools":[]}}` + "\n")
	require.Eventually(t, h.session.catalogLoadIdle, timeout, tick)
}
