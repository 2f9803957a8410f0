package middleware

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpwrap/mcpwrap/internal/framing"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// approvalPolicy stands for tofu approval after a baseline: a definition
// whose description says "changed" is pending approval, and approval is on.
type approvalPolicy struct{}

func (approvalPolicy) Evaluate(tools []json.RawMessage) []Availability {
	out := make([]Availability, len(tools))
	for i, t := range tools {
		out[i] = Availability{InScope: true, Pinned: true}
		if strings.Contains(defOf(t).Description, "changed") {
			out[i].Status = "pending_approval"
		}
	}
	return out
}
func (approvalPolicy) Remediation(string, string) string       { return "approve it" }
func (approvalPolicy) Rejection(string, string, string) string { return "locked" }

const (
	echoApproved = `{"name":"echo","description":"approved","inputSchema":{"type":"object"}}`
	echoChanged  = `{"name":"echo","description":"changed: now does something else","inputSchema":{"type":"object"}}`
)

// serveChanged answers, from now on, every request the upstream receives:
// tools/list with the changed catalog, tools/call by recording it in called.
func serveChanged(h *harness, called *atomic.Bool) {
	go func() {
		for msg := range h.up.recv {
			env, err := framing.Peek(msg)
			if err != nil || env.Kind != framing.Request {
				continue
			}
			result := `{}`
			switch env.Method {
			case "tools/list":
				result = `{"tools":[` + echoChanged + `]}`
			case "tools/call":
				called.Store(true)
				result = `{"content":[{"type":"text","text":"ran"}]}`
			}
			h.up.in.Write([]byte(`{"jsonrpc":"2.0","id":` + string(env.ID) + `,"result":` + result + "}\n"))
		}
	}()
}

// answerTo returns the client's next message with id, skipping others.
func answerTo(t *testing.T, p *peer, id string) []byte {
	t.Helper()
	for {
		msg := p.next()
		if env, err := framing.Peek(msg); err == nil && env.Kind == framing.Response && string(env.ID) == id {
			return msg
		}
	}
}

// untilListChanged skips the client's messages up to the upstream's
// notifications/tools/list_changed, relayed.
func untilListChanged(t *testing.T, p *peer) {
	t.Helper()
	for !strings.Contains(string(p.next()), "notifications/tools/list_changed") {
	}
}

// TestListChangedDuringACatalogLoadLoadsItAgain is an attack on "nothing
// unapproved reaches the upstream": the upstream announces a change
// (notifications/tools/list_changed) while the sidecar's own catalog load
// is under way, having served that load the old definitions. The refresh
// the change asked for joined the load under way and kept the old catalog,
// so calls were judged by the approved definition the upstream no longer
// has (and the change was never recorded for approval). The test joins the
// load as the refresh does, at a moment it controls.
func TestListChangedDuringACatalogLoadLoadsItAgain(t *testing.T) {
	h := start(t, 0, func(s *Session) { s.Tools = approvalPolicy{} })
	h.client.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"unknown"}}` + "\n")
	load, err := framing.Peek(h.up.next())
	require.NoError(t, err)
	require.Equal(t, "tools/list", load.Method)
	h.up.send(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}` + "\n")
	untilListChanged(t, h.client)
	refresh := h.session.catalogLoad(context.Background()) // joins the load under way
	h.up.send(`{"jsonrpc":"2.0","id":` + string(load.ID) + `,"result":{"tools":[` + echoApproved + `]}}` + "\n")
	// Until the joined load ends, the upstream answers its tools/list with
	// the changed catalog. A load begun after it ends (a refresh scheduled
	// late) is not answered: its result is in refresh before its request
	// goes out, and it is answered after the check.
	var late []byte
	for ended := false; !ended; {
		select {
		case <-refresh.done:
			require.NoError(t, refresh.err)
			ended = true
		case msg := <-h.up.recv:
			select {
			case <-refresh.done:
				require.NoError(t, refresh.err)
				ended, late = true, msg
				continue
			default:
			}
			env, err := framing.Peek(msg)
			require.NoError(t, err)
			require.Equal(t, "tools/list", env.Method)
			h.up.send(`{"jsonrpc":"2.0","id":` + string(env.ID) + `,"result":{"tools":[` + echoChanged + `]}}` + "\n")
		case <-time.After(timeout):
			t.Fatal("the load did not end")
		}
	}

	def, known := h.session.ToolDefinition("echo")
	require.True(t, known)
	assert.JSONEq(t, echoChanged, string(def), "the catalog holds what the upstream lists since its change")
	if late != nil {
		env, err := framing.Peek(late)
		require.NoError(t, err)
		h.up.send(`{"jsonrpc":"2.0","id":` + string(env.ID) + `,"result":{"tools":[` + echoChanged + `]}}` + "\n")
	}
	var called atomic.Bool
	serveChanged(h, &called)
	answerTo(t, h.client, "1")
	h.client.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo"}}` + "\n")
	var resp response
	require.NoError(t, json.Unmarshal(answerTo(t, h.client, "2"), &resp))
	require.NotNil(t, resp.Result)
	assert.True(t, resp.Result.IsError, "judged by the changed definition")
	assert.False(t, called.Load(), "the call reached the upstream")
}

// TestCallRacingARefreshIsJudgedByTheNewCatalog is an attack on "nothing
// unapproved reaches the upstream": right after the upstream announced a
// change of its tools, a call to a tool whose approved definition it
// changed was judged by the catalog the sidecar knows to be stale, and
// forwarded. It now waits for the refresh under way.
func TestCallRacingARefreshIsJudgedByTheNewCatalog(t *testing.T) {
	h := start(t, 0, func(s *Session) { s.Tools = approvalPolicy{} })
	// The first catalog may take more than one load: call 1 can start one
	// before the refresh that follows the handshake counts itself as a
	// change, which the load then does not keep. Every tools/list is
	// answered with the approved catalog until the session is idle, so
	// that no load of it is under way when the upstream announces its change.
	loadApprovedCatalog(t, h)

	// Nothing else sends the client list_changed before the changed
	// catalog is loaded: the one awaited is the upstream's, relayed after
	// the session took it.
	h.up.send(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}` + "\n")
	untilListChanged(t, h.client)
	h.client.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo"}}` + "\n")
	var called atomic.Bool
	serveChanged(h, &called)
	var resp response
	require.NoError(t, json.Unmarshal(answerTo(t, h.client, "2"), &resp))
	require.NotNil(t, resp.Result)
	assert.True(t, resp.Result.IsError, "judged by the changed definition")
	assert.False(t, called.Load(), "the call reached the upstream")
}

// TestCallJudgedAsARefreshEndsWaitsForIt is an attack on "nothing
// unapproved reaches the upstream": a call read the verdict of the catalog
// the upstream had announced stale, then found no refresh pending because
// the refresh ended in between, and was forwarded by that stale verdict.
// The test ends the refresh at that moment.
func TestCallJudgedAsARefreshEndsWaitsForIt(t *testing.T) {
	judging, refreshed := make(chan struct{}), make(chan struct{})
	h := start(t, 0, func(s *Session) {
		s.Tools = approvalPolicy{}
		s.hooks.verdictRead = func(name string) {
			if name == "echo" {
				close(judging)
				<-refreshed
			}
		}
	})
	loadApprovedCatalog(t, h)

	h.up.send(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}` + "\n")
	untilListChanged(t, h.client)
	h.client.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo"}}` + "\n")
	select {
	case <-judging:
	case <-time.After(timeout):
		t.Fatal("call 2 was not judged")
	}
	var called atomic.Bool
	serveChanged(h, &called) // the refresh's loads get the changed catalog
	require.Eventually(t, h.session.catalogLoadIdle, timeout, tick)
	close(refreshed)

	var resp response
	require.NoError(t, json.Unmarshal(answerTo(t, h.client, "2"), &resp))
	require.NotNil(t, resp.Result)
	assert.True(t, resp.Result.IsError, "judged by the changed definition")
	assert.False(t, called.Load(), "the call reached the upstream")
}

// TestListChangedAsALoadEndsLoadsItAgain is an attack on "nothing
// unapproved reaches the upstream": the upstream announces a change while
// a load that read its pages before the change is ending (its catalog kept,
// the load not yet over). The refresh the change asked for joined that
// load and ended with its catalog, so the change was never loaded and
// calls were judged by the definition the upstream no longer has.
func TestListChangedAsALoadEndsLoadsItAgain(t *testing.T) {
	var armed atomic.Bool
	seen, release := make(chan struct{}), make(chan struct{})
	h := start(t, 0, func(s *Session) {
		s.Tools = approvalPolicy{}
		s.CatalogSeen = func([]json.RawMessage) {
			if armed.CompareAndSwap(true, false) {
				close(seen)
				<-release
			}
		}
	})
	var catalog atomic.Pointer[string]
	approved := echoApproved
	catalog.Store(&approved)
	go func() {
		for msg := range h.up.recv {
			if env, err := framing.Peek(msg); err == nil && env.Method == "tools/list" {
				h.up.in.Write([]byte(`{"jsonrpc":"2.0","id":` + string(env.ID) + `,"result":{"tools":[` + *catalog.Load() + "]}}\n"))
			}
		}
	}()
	h.client.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"unknown"}}` + "\n")
	answerTo(t, h.client, "1")
	require.Eventually(t, h.session.catalogLoadIdle, timeout, tick)

	armed.Store(true)
	h.client.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"unknown"}}` + "\n") // a load of the approved catalog
	select {
	case <-seen:
	case <-time.After(timeout):
		t.Fatal("the load did not end")
	}
	changed := echoChanged
	catalog.Store(&changed)
	h.up.send(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}` + "\n")
	untilListChanged(t, h.client)
	close(release)
	answerTo(t, h.client, "2")
	require.Eventually(t, h.session.catalogLoadIdle, timeout, tick)

	def, known := h.session.ToolDefinition("echo")
	require.True(t, known)
	assert.JSONEq(t, echoChanged, string(def), "the catalog holds what the upstream lists since its change")
}

// loadApprovedCatalog has the session load the approved catalog: call 1
// (to an unknown tool) starts a load, and every tools/list is answered
// with echoApproved until the session is idle, however many loads that
// takes (see TestCallRacingARefreshIsJudgedByTheNewCatalog).
func loadApprovedCatalog(t *testing.T, h *harness) {
	t.Helper()
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-stop:
				return
			case msg := <-h.up.recv:
				env, err := framing.Peek(msg)
				if err == nil && env.Method == "tools/list" {
					h.up.in.Write([]byte(`{"jsonrpc":"2.0","id":` + string(env.ID) + `,"result":{"tools":[` + echoApproved + "]}}\n"))
				}
			}
		}
	}()
	h.client.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"unknown"}}` + "\n")
	answerTo(t, h.client, "1")
	require.Eventually(t, h.session.catalogLoadIdle, timeout, tick)
	close(stop)
	<-stopped
}
