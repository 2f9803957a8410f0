package middleware

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/mcpwrap/mcpwrap/internal/framing"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// startFreshCatalog runs a Session with a policy locking nothing in front
// of an upstream whose every tools/list answer (the client's or the
// sidecar's own) lists one tool never listed before, with a description
// of descBytes.
func startFreshCatalog(t *testing.T, descBytes int, configure func(*Session)) *toolsHarness {
	t.Helper()
	client, clientConn := newPeer(t, 0)
	upPeer, upConn := newPeer(t, 0)
	h := &toolsHarness{client: client, policy: &fakePolicy{status: map[string]string{}}, done: make(chan error, 1)}
	h.session = &Session{Name: "fx", Client: clientConn, Dial: dialOnce(upConn), Tools: h.policy}
	configure(h.session)
	desc := strings.Repeat("d", descBytes)
	go serveToolsList(upPeer, func(n int) string { return `{"tools":[` + tool(fmt.Sprintf("t%d", n), desc) + `]}` })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { h.done <- h.session.Run(ctx) }()
	h.client.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}` + "\n")
	h.client.next()
	h.client.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
	return h
}

// answer sends a request and returns its answer, skipping notifications.
func (h *toolsHarness) answer(id int, method, params string) string {
	h.client.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", id, method, params))
	for {
		msg := string(h.client.next())
		if !strings.Contains(msg, `"method"`) {
			return msg
		}
	}
}

// catalogSize returns the bytes of the Session's catalog and of what its
// definition cache keeps.
func catalogSize(s *Session) (catalog, cached int) {
	s.cat.mu.Lock()
	for _, t := range s.cat.tools {
		catalog += len(t)
	}
	s.cat.mu.Unlock()
	s.cat.identities.mu.Lock()
	for _, id := range s.cat.identities.m {
		cached += len(id.def.Name) + len(id.def.Description)
	}
	s.cat.identities.mu.Unlock()
	return catalog, cached
}

// TestCatalogMergedFromPagesIsBounded is an attack on "memory stays
// bounded": an upstream lists a tool never seen before on every tools/list
// page the client reads. Each was merged into the catalog (and read into
// the definition cache) and kept until a full reload, so a client that
// lists again and again grew both without bound. The catalog and the cache
// now stay within MaxCatalogBytes; a definition past it is not shown (it
// cannot be judged against the catalog) and is not callable.
func TestCatalogMergedFromPagesIsBounded(t *testing.T) {
	const limit = 64 << 10
	h := startFreshCatalog(t, 4<<10, func(s *Session) { s.MaxCatalogBytes = limit })
	// A call to an unknown tool loads the catalog.
	require.Contains(t, h.answer(1, "tools/call", `{"name":"nope"}`), `"result"`)
	shown := 0
	for i := range 64 {
		resp := h.answer(10+i, "tools/list", `{}`)
		require.Contains(t, resp, `"result"`)
		if strings.Contains(resp, `"name":"t`) {
			shown++
		}
	}
	catalog, cached := catalogSize(h.session)
	assert.LessOrEqual(t, catalog, limit)
	assert.LessOrEqual(t, cached, limit)
	assert.Positive(t, shown, "definitions within the bound are shown")
	assert.Less(t, shown, 64, "definitions past the bound are not")
}

// TestCatalogLargerThanTheBoundIsNotLoaded is an attack on "memory stays
// bounded": the sidecar's own catalog load followed up to 1000 pages of up
// to the line limit each. A catalog over MaxCatalogBytes now fails to load
// (so a call to a tool it does not know fails closed, told why).
func TestCatalogLargerThanTheBoundIsNotLoaded(t *testing.T) {
	const limit = 16 << 10
	client, clientConn := newPeer(t, 0)
	upPeer, upConn := newPeer(t, 0)
	s := &Session{Name: "fx", Client: clientConn, Dial: dialOnce(upConn), Tools: &fakePolicy{status: map[string]string{}},
		MaxCatalogBytes: limit}
	desc := strings.Repeat("d", 4<<10)
	go serveToolsList(upPeer, func(n int) string {
		return fmt.Sprintf(`{"tools":[%s],"nextCursor":"c%d"}`, tool(fmt.Sprintf("t%d", n), desc), n)
	})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go s.Run(ctx)
	client.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}` + "\n")
	client.next()
	client.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t1"}}` + "\n")
	resp := string(client.next())
	if strings.Contains(resp, "notifications/tools/list_changed") { // the load failed: the tools changed
		resp = string(client.next())
	}
	assert.Contains(t, resp, `"isError":true`)
	// Fails closed, and says why: the catalog is part of the load.
	assert.Contains(t, resp, "the tool catalog exceeds the size mcpwrap keeps")
	assert.Contains(t, resp, `"class":"permanent"`)
	catalog, _ := catalogSize(s)
	assert.Zero(t, catalog)
}

// serveToolsList answers the upstream's requests until its connection ends:
// the nth tools/list with page(n), anything else with an empty result.
func serveToolsList(up *peer, page func(n int) string) {
	n := 0
	for msg := range up.recv {
		env, err := framing.Peek(msg)
		if err != nil || env.Kind != framing.Request {
			continue
		}
		result := `{}`
		if env.Method == "tools/list" {
			n++
			result = page(n)
		}
		if _, err := io.WriteString(up.in, `{"jsonrpc":"2.0","id":`+string(env.ID)+`,"result":`+result+"}\n"); err != nil {
			return
		}
	}
}
