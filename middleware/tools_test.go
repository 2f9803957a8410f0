package middleware

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpwrap/mcpwrap/internal/framing"
	"github.com/mcpwrap/mcpwrap/internal/tooldef"
	"github.com/mcpwrap/mcpwrap/resilience"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakePolicy locks tools by name; tools it does not name are callable.
type fakePolicy struct {
	mu     sync.Mutex
	status map[string]string // tool → locked status
	scope  map[string]bool   // when non-nil, only these tools are in scope
	pinned bool              // approval is on: every Availability is Pinned

	version   atomic.Uint64 // bumped by set (see versionedFake)
	evaluated atomic.Int64  // definitions evaluated
}

func (p *fakePolicy) set(tool, status string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.status[tool] = status
	p.version.Add(1)
}

func (p *fakePolicy) Evaluate(tools []json.RawMessage) []Availability {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.evaluated.Add(int64(len(tools)))
	out := make([]Availability, len(tools))
	for i, t := range tools {
		name := defOf(t).Name
		out[i] = Availability{InScope: p.scope == nil || p.scope[name], Status: p.status[name], Pinned: p.pinned}
	}
	return out
}

func (p *fakePolicy) Remediation(status, tool string) string { return "remedy for " + status }

func (p *fakePolicy) Rejection(status, tool, discovery string) string {
	return fmt.Sprintf("%s is %s; see %s", tool, status, discovery)
}

// versionedFake is a fakePolicy that is a VersionedPolicy, as the real gate
// is: the Session judges calls from the verdicts it keeps.
type versionedFake struct{ *fakePolicy }

func (p versionedFake) Version() uint64 { return p.version.Load() }

// defOf reads a tool definition as the sidecar does; fakes use it to name
// tools.
func defOf(t json.RawMessage) tooldef.Def {
	d, _ := tooldef.Identify(t)
	return d
}

// fakeUpstream answers tools/list from pages of a catalog and tools/call
// with a text naming the tool, for the client's and the sidecar's own
// requests alike, and records every method it received.
type fakeUpstream struct {
	t        *testing.T
	peer     *peer
	pages    [][]string // raw tool definitions per page
	mu       sync.Mutex
	received []string
}

func (f *fakeUpstream) serve() {
	for msg := range f.peer.recv {
		env, err := framing.Peek(msg)
		if err != nil || env.Kind != framing.Request {
			continue
		}
		f.mu.Lock()
		f.received = append(f.received, env.Method)
		f.mu.Unlock()
		var result string
		switch env.Method {
		case "tools/list":
			var p struct {
				Cursor string `json:"cursor"`
			}
			_ = json.Unmarshal(env.Params, &p)
			page := 0
			fmt.Sscan(strings.TrimPrefix(p.Cursor, "page"), &page)
			result = `{"tools":[` + strings.Join(f.pages[page], ",") + `]`
			if page+1 < len(f.pages) {
				result += fmt.Sprintf(`,"nextCursor":"page%d"`, page+1)
			}
			result += `}`
		case "tools/call":
			var p callParams
			_ = json.Unmarshal(env.Params, &p)
			result = `{"content":[{"type":"text","text":"called ` + p.Name + `"}]}`
		default:
			result = `{}`
		}
		// Not peer.send: the session may be gone when a late answer goes out.
		if _, err := io.WriteString(f.peer.in, `{"jsonrpc":"2.0","id":`+string(env.ID)+`,"result":`+result+"}\n"); err != nil {
			return
		}
	}
}

func (f *fakeUpstream) calls(method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, m := range f.received {
		if m == method {
			n++
		}
	}
	return n
}

func tool(name, desc string) string {
	return `{"name":"` + name + `","description":"` + desc + `","inputSchema":{"type":"object"}}`
}

type toolsHarness struct {
	client  *peer
	up      *fakeUpstream
	session *Session
	policy  *fakePolicy
	done    chan error
}

// startTools runs a Session with a fake policy in front of a fake upstream
// serving pages, and completes the handshake.
func startTools(t *testing.T, pages [][]string, locked map[string]string, scope ...string) *toolsHarness {
	t.Helper()
	return startToolsWith(t, false, pages, locked, scope...)
}

// startToolsWith is startTools; with versioned, the Session's policy is a
// VersionedPolicy.
func startToolsWith(t *testing.T, versioned bool, pages [][]string, locked map[string]string, scope ...string) *toolsHarness {
	t.Helper()
	return startToolsConfigured(t, versioned, pages, locked, nil, scope...)
}

// startToolsConfigured is startToolsWith, with configure (when not nil)
// applied to the Session before it runs.
func startToolsConfigured(t *testing.T, versioned bool, pages [][]string, locked map[string]string, configure func(*Session), scope ...string) *toolsHarness {
	t.Helper()
	client, clientConn := newPeer(t, 0)
	upPeer, upConn := newPeer(t, 0)
	if locked == nil {
		locked = map[string]string{}
	}
	policy := &fakePolicy{status: locked}
	if scope != nil {
		policy.scope = map[string]bool{}
		for _, name := range scope {
			policy.scope[name] = true
		}
	}
	h := &toolsHarness{client: client, up: &fakeUpstream{t: t, peer: upPeer, pages: pages},
		policy: policy, done: make(chan error, 1)}
	var tools ToolPolicy = h.policy
	if versioned {
		tools = versionedFake{h.policy}
	}
	h.session = &Session{Name: "fx", Client: clientConn, Dial: dialOnce(upConn), Tools: tools}
	if configure != nil {
		configure(h.session)
	}
	go h.up.serve()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { h.done <- h.session.Run(ctx) }()
	h.client.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}` + "\n")
	h.client.next()
	h.client.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
	return h
}

// call sends a request and returns the raw response.
func (h *toolsHarness) call(id int, method, params string) []byte {
	h.client.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", id, method, params))
	return h.client.next()
}

func TestToolsListIsByteIdenticalWhenNothingIsLocked(t *testing.T) {
	pages := [][]string{
		{tool("a", "first"), tool("b", "second")},
		{tool("c", "third")},
		{`{"name":"d","description":"odd  spacing","inputSchema":{"type":"object"},"x-extra":[1,2]}`},
	}
	h := startTools(t, pages, nil)
	var transcript strings.Builder
	cursor := `{}`
	for i := range pages {
		got := h.call(10+i, "tools/list", cursor)
		want := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"tools":[%s]`, 10+i, strings.Join(pages[i], ","))
		if i+1 < len(pages) {
			want += fmt.Sprintf(`,"nextCursor":"page%d"`, i+1)
			cursor = fmt.Sprintf(`{"cursor":"page%d"}`, i+1)
		}
		want += "}}"
		assert.Equal(t, want, string(got), "page %d", i)
		transcript.Write(got)
		transcript.WriteByte('\n')
	}
	checkGolden(t, filepath.Join("testdata", "tools_list_untouched.golden"), transcript.String())
}

func TestToolsListHidesLockedToolsAndAppendsDiscoveryOnTheLastPage(t *testing.T) {
	pages := [][]string{{tool("a", "first"), tool("b", "second")}, {tool("c", "third")}}
	h := startTools(t, pages, map[string]string{"b": "disabled_by_user"}, "a", "b") // c is out of scope

	var first, last listResponse
	require.NoError(t, json.Unmarshal(h.call(1, "tools/list", `{}`), &first))
	require.NoError(t, json.Unmarshal(h.call(2, "tools/list", `{"cursor":"page1"}`), &last))
	assert.Equal(t, []string{"a"}, first.names(), "the locked tool is gone from its page")
	assert.Equal(t, "page1", first.Result.NextCursor, "other members are kept")
	assert.Equal(t, []string{"discover_tools"}, last.names(), "out-of-scope c is absent; discovery is last")
}

type listResponse struct {
	Result struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
		NextCursor string `json:"nextCursor"`
	} `json:"result"`
}

func (r listResponse) names() []string {
	var out []string
	for _, t := range r.Result.Tools {
		out = append(out, t.Name)
	}
	return out
}

func TestLockedCallsAreAnsweredAndNeverForwarded(t *testing.T) {
	statuses := []string{"server_disabled", "disabled_by_config", "disabled_by_user", "pending_approval", "disabled_unknown"}
	var page []string
	locked := map[string]string{}
	for _, s := range statuses {
		page = append(page, tool("t_"+s, s))
		locked["t_"+s] = s
	}
	page = append(page, tool("open", "callable"))
	scope := []string{"open"}
	for _, s := range statuses {
		scope = append(scope, "t_"+s)
	}
	h := startTools(t, [][]string{page}, locked, scope...)

	for i, s := range statuses {
		t.Run(s, func(t *testing.T) {
			var resp struct {
				Result struct {
					Content []struct{ Text string } `json:"content"`
					IsError bool                    `json:"isError"`
					Meta    map[string]any          `json:"_meta"`
				} `json:"result"`
			}
			require.NoError(t, json.Unmarshal(h.call(100+i, "tools/call", `{"name":"t_`+s+`","arguments":{}}`), &resp))
			assert.True(t, resp.Result.IsError)
			assert.Equal(t, s, resp.Result.Meta["status"])
			assert.Equal(t, "t_"+s+" is "+s+"; see discover_tools", resp.Result.Content[0].Text)
		})
	}
	var unknown struct {
		Error RPCError `json:"error"`
	}
	require.NoError(t, json.Unmarshal(h.call(200, "tools/call", `{"name":"hidden"}`), &unknown))
	assert.Equal(t, codeInvalidParams, unknown.Error.Code, "an out-of-scope tool is unknown")

	assert.Contains(t, string(h.call(201, "tools/call", `{"name":"open"}`)), "called open")
	assert.Equal(t, 1, h.up.calls("tools/call"), "only the callable tool reached the upstream")
	stats := h.session.Stats()
	assert.Equal(t, len(statuses), stats.Rejections)
	assert.Equal(t, len(statuses)+2, stats.Calls, "every tools/call is counted, answered by the sidecar or not")
}

func TestReevaluateToolsNotifiesOnlyWhenTheVisibleSetChanges(t *testing.T) {
	h := startTools(t, [][]string{{tool("a", "x"), tool("b", "y")}}, nil)
	require.Eventually(t, h.session.catalogLoadIdle, timeout, tick)

	h.policy.set("b", "disabled_by_user")
	h.session.ReevaluateTools()
	assert.JSONEq(t, `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`, string(h.client.next()))

	h.session.ReevaluateTools() // nothing changed: no notification
	h.client.send(`{"jsonrpc":"2.0","id":9,"method":"ping"}` + "\n")
	assert.Contains(t, string(h.client.next()), `"id":9`, "the next message is the ping's answer, not a notification")
}

func TestDiscoveryAnswers(t *testing.T) {
	var page []string
	locked := map[string]string{}
	for i := range 25 {
		name := fmt.Sprintf("locked_search_%02d", i)
		page = append(page, tool(name, "a locked search tool"))
		locked[name] = []string{"disabled_by_config", "disabled_by_user"}[i%2]
	}
	page = append(page, tool("find_files", "search files by name"), tool("read_file", "read a file"))
	allCallable := [][]string{{tool("find_files", "search files by name"), tool("read_file", "read a file")}}

	tests := []struct {
		name   string
		pages  [][]string
		locked map[string]string
		args   string
	}{
		{name: "notice_without_flag", pages: [][]string{page}, locked: locked, args: `{"query":"locked search"}`},
		{name: "with_flag_capped", pages: [][]string{page}, locked: locked, args: `{"query":"search","include_disabled":true}`},
		{name: "with_flag_small_limit", pages: [][]string{page}, locked: locked, args: `{"query":"search","include_disabled":true,"limit":3}`},
		{name: "only_user_disabled_present", pages: [][]string{page}, locked: locked, args: `{"query":"locked_search_01","include_disabled":true}`},
		{name: "all_callable_no_counts", pages: allCallable, args: `{"query":"file"}`},
		{name: "no_arguments", pages: allCallable, args: `null`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := startTools(t, tt.pages, tt.locked)
			raw := h.call(1, "tools/call", `{"name":"discover_tools","arguments":`+tt.args+`}`)
			var resp struct {
				Result struct {
					Content           []struct{ Text string } `json:"content"`
					StructuredContent json.RawMessage         `json:"structuredContent"`
				} `json:"result"`
			}
			require.NoError(t, json.Unmarshal(raw, &resp))
			assert.JSONEq(t, resp.Result.Content[0].Text, string(resp.Result.StructuredContent), "text and structured content agree")
			var pretty strings.Builder
			enc := json.NewEncoder(&pretty)
			enc.SetIndent("", "  ")
			require.NoError(t, enc.Encode(resp.Result.StructuredContent))
			checkGolden(t, filepath.Join("testdata", "discovery", tt.name+".json"), pretty.String())
			assert.Equal(t, 0, h.up.calls("tools/call"), "discovery never reaches the upstream")
		})
	}
}

func TestIncludeDisabledCounter(t *testing.T) {
	h := startTools(t, [][]string{{tool("a", "x")}}, map[string]string{"a": "disabled_by_user"})
	h.call(1, "tools/call", `{"name":"discover_tools","arguments":{"include_disabled":true}}`)
	h.call(2, "tools/call", `{"name":"discover_tools","arguments":{"include_disabled":false}}`)
	h.call(3, "tools/call", `{"name":"discover_tools","arguments":{"include_disabled":true,"query":"zzz"}}`)
	assert.Equal(t, 2, h.session.Stats().IncludeDisabledQueries)
}

func checkGolden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run with -update to create it")
	assert.Equal(t, string(want), got)
}

// TestCallToAnUnlistedTool: a call to a tool the upstream does not list
// reloads the catalog once and is then answered as a call to an unknown
// tool, never with a remediation (there is nothing to approve or enable).
// While approval is on the sidecar answers it even when the policy would
// let the name on; only with approval off may the upstream answer it.
func TestCallToAnUnlistedTool(t *testing.T) {
	tests := []struct {
		name          string
		pinned        bool   // approval on
		status        string // the policy's verdict on the bare name
		wantForwarded bool
	}{
		{name: "approval on, pending by name", pinned: true, status: "pending_approval"},
		{name: "approval on, callable by name", pinned: true},
		{name: "approval off, callable by name", wantForwarded: true},
		{name: "approval off, config-denied by name", status: "disabled_by_config"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := startTools(t, [][]string{{tool("a", "x")}}, map[string]string{"ghost": tt.status})
			h.policy.mu.Lock()
			h.policy.pinned = tt.pinned
			h.policy.mu.Unlock()
			require.Eventually(t, h.session.catalogLoadIdle, timeout, tick)
			lists := h.up.calls("tools/list")

			resp := string(h.call(1, "tools/call", `{"name":"ghost"}`))
			assert.Equal(t, lists+1, h.up.calls("tools/list"), "the catalog was reloaded once")
			if tt.wantForwarded {
				assert.Equal(t, 1, h.up.calls("tools/call"), "the upstream answers it")
				return
			}
			assert.JSONEq(t, `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"unknown tool \"ghost\""}}`, resp)
			assert.NotContains(t, resp, "approve")
			assert.Equal(t, 0, h.up.calls("tools/call"), "the call never reached the upstream")
		})
	}
}

// TestRewrittenListPromisesNoCacheLifetime: a tools/list result the sidecar
// rewrote carries ttlMs 0 (the 2026-07-28 cache lifetime), since what it
// shows may change at any moment; one it did not touch stays byte for byte.
func TestRewrittenListPromisesNoCacheLifetime(t *testing.T) {
	tests := []struct {
		name   string
		status map[string]string
		result string
		want   string // "" means unchanged
	}{
		{name: "rewritten, with a lifetime",
			status: map[string]string{"b": "disabled_by_user"},
			result: `{"tools":[` + tool("a", "first") + `,` + tool("b", "second") + `],"ttlMs":60000,"cacheScope":"public"}`,
			want:   `"ttlMs":0,"cacheScope":"public"`},
		{name: "rewritten, already uncached",
			status: map[string]string{"b": "disabled_by_user"},
			result: `{"ttlMs":0,"tools":[` + tool("a", "first") + `,` + tool("b", "second") + `]}`,
			want:   `{"ttlMs":0,"tools":[`},
		{name: "untouched", status: map[string]string{},
			result: `{"tools":[` + tool("a", "first") + `],"ttlMs":60000}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &Session{Name: "x", Tools: &fakePolicy{status: tt.status}, Discovery: DiscoveryNever}
			msg := []byte(`{"jsonrpc":"2.0","id":1,"result":` + tt.result + `}`)
			got := s.RewriteToolsList(msg)
			if tt.want == "" {
				assert.Equal(t, string(msg), string(got))
				return
			}
			assert.Contains(t, string(got), tt.want)
			assert.NotContains(t, string(got), `"name":"b"`)
			assert.True(t, json.Valid(got))
		})
	}
}

// TestGateJudgesTheNameTheUpstreamReads: the gate judges the tool the
// upstream will run. Each of these calls names "secret", which operator
// policy locked, to a case-sensitive, escape-decoding upstream (every JS
// and Python server), while Go's encoding/json (case-insensitive keys,
// failing open on a type error) or a comparison of unescaped keys would
// read "open" (or nothing): none may reach the upstream.
func TestGateJudgesTheNameTheUpstreamReads(t *testing.T) {
	tests := []struct {
		name string
		call string
	}{
		{name: "case-insensitive key", call: `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"secret","NAME":"open"}}`},
		{name: "type error fails open", call: `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"secret","Name":0}}`},
		{name: "escaped params key", call: `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"open"},"p\u0061rams":{"name":"secret"}}`},
		{name: "escaped method key", call: `{"jsonrpc":"2.0","id":5,"method":"ping","m\u0065thod":"tools/call","params":{"name":"secret"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := startRaw(t, rawOptions{policy: lockedSecret, catalog: secretCatalog})
			h.client.send(tt.call + "\n")
			h.client.send(`{"jsonrpc":"2.0","id":6,"method":"ping"}` + "\n")
			assert.Equal(t, `{"jsonrpc":"2.0","id":6,"method":"ping"}`, string(h.up.next()),
				"the ambiguous call must not reach the upstream")
		})
	}
}

// TestGateRefreshDoesNotBlockTheClientPump: a call to a tool the catalog
// lacks waits for the catalog off the client pump, so the client's answer
// to a server→client request still reaches an upstream that needs it
// before it serves tools/list; otherwise the session would deadlock.
func TestGateRefreshDoesNotBlockTheClientPump(t *testing.T) {
	h := startRaw(t, rawOptions{policy: lockedSecret, catalog: secretCatalog})
	h.client.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"open"}}` + "\n")
	h.expect("tools/call")
	h.up.send(`{"jsonrpc":"2.0","id":"e1","method":"elicitation/create","params":{}}` + "\n")
	require.Contains(t, string(h.client.next()), `"elicitation/create"`)

	// The agent calls a tool the catalog lacks (a hallucinated name).
	h.client.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ghost"}}` + "\n")
	h.expect("tools/list")                                                                          // the sequential upstream will read it after e1's answer
	go io.WriteString(h.client.in, `{"jsonrpc":"2.0","id":"e1","result":{"action":"accept"}}`+"\n") // blocks while the pump is stuck
	select {
	case msg := <-h.up.recv:
		assert.Contains(t, string(msg), `"e1"`)
	case <-time.After(2 * time.Second):
		t.Fatal("the client's answer to e1 is stuck behind the gate's refresh: deadlock")
	}
}

// TestToolsListRewriteSurvivesIDReencoding: requests in flight are keyed
// by the id's value, not its bytes: an upstream that re-encodes an id
// (JSON.stringify turns "list\/1" into "list/1") still gets its tools/list
// result rewritten (else a locked tool would be listed as callable), and
// nothing stale is left for the drain to wait on or a crash to answer.
func TestToolsListRewriteSurvivesIDReencoding(t *testing.T) {
	h := startRaw(t, rawOptions{policy: lockedSecret, catalog: secretCatalog})
	h.client.send(`{"jsonrpc":"2.0","id":"list\/1","method":"tools/list"}` + "\n")
	h.expect("tools/list")
	h.up.send(`{"jsonrpc":"2.0","id":"list/1","result":` + secretCatalog + "}\n")
	var list listResponse
	require.NoError(t, json.Unmarshal(h.client.next(), &list))
	assert.NotContains(t, list.names(), "secret", "the locked tool is not listed")
	assert.Equal(t, 0, h.session.inflight(), "the request is no longer in flight")
}

func TestParseCall(t *testing.T) {
	tests := []struct {
		name    string
		params  string
		want    string
		args    string
		wantErr bool
	}{
		{name: "plain", params: `{"name":"a","arguments":{"x":1}}`, want: "a", args: `{"x":1}`},
		{name: "escaped name value", params: `{"name":"se\u0063ret"}`, want: "secret"},
		{name: "escaped member name", params: `{"n\u0061me":"secret"}`, want: "secret"},
		{name: "unknown members ignored", params: `{"_meta":{"progressToken":1},"name":"a"}`, want: "a"},
		{name: "no name", params: `{"arguments":{}}`, wantErr: true},
		{name: "name twice", params: `{"name":"a","name":"b"}`, wantErr: true},
		{name: "name in another case", params: `{"name":"a","Name":"b"}`, wantErr: true},
		{name: "only another case", params: `{"NAME":"a"}`, wantErr: true},
		{name: "mixed case", params: `{"name":"a","nAMe":"b"}`, wantErr: true},
		{name: "unicode fold (Kelvin sign) of another key", params: `{"name":"a","Key":"b"}`, want: "a"},
		{name: "name not a string", params: `{"name":5}`, wantErr: true},
		{name: "params not an object", params: `["a"]`, wantErr: true},
		{name: "params absent", params: ``, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := new(Session).parseCall(callEnvelope(t, []byte(tt.params)))
			if tt.wantErr {
				assert.ErrorIs(t, err, errAmbiguousCall)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, p.Name)
			if tt.args != "" {
				assert.Equal(t, tt.args, string(p.Arguments))
			}
		})
	}
}

// TestUnreadyCallReadsTheNameAsTheGateDoes: with no upstream ready, the
// sidecar still answers calls to its discovery tool, and reads the tool
// name as the gate does: a name spelled twice (which Go's encoding/json
// would read case-insensitively, the last one winning) is no call to the
// discovery tool.
func TestUnreadyCallReadsTheNameAsTheGateDoes(t *testing.T) {
	tests := []struct {
		name      string
		params    string
		discovery bool
	}{
		{name: "the discovery tool", params: `{"name":"` + DefaultDiscoveryTool + `","arguments":{}}`, discovery: true},
		{name: "another tool", params: `{"name":"x","arguments":{}}`},
		{name: "the discovery tool's name in another case, last", params: `{"name":"x","Name":"` + DefaultDiscoveryTool + `","arguments":{}}`},
		{name: "the discovery tool's name twice", params: `{"name":"` + DefaultDiscoveryTool + `","name":"x"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client, clientConn := newPeer(t, 0)
			s := &Session{Name: "down", Client: clientConn, Dial: func(context.Context) (Conn, error) {
				return nil, &resilience.SpawnError{Command: "fixture", Err: exec.ErrNotFound}
			}}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go s.Run(ctx)
			client.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + tt.params + "}\n")
			var resp struct {
				Result struct {
					IsError           bool            `json:"isError"`
					StructuredContent json.RawMessage `json:"structuredContent"`
				} `json:"result"`
			}
			require.NoError(t, json.Unmarshal(client.next(), &resp))
			assert.Equal(t, tt.discovery, resp.Result.StructuredContent != nil, "answered by the discovery tool")
			assert.Equal(t, !tt.discovery, resp.Result.IsError, "answered with the upstream's status")
		})
	}
}

// callEnvelope returns the envelope the client pump reads from a
// tools/call with params (none when empty), which must be valid JSON.
func callEnvelope(t *testing.T, params []byte) framing.Envelope {
	t.Helper()
	msg := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call"`)
	if len(params) > 0 {
		msg = append(append(append(msg, `,"params":`...), params...), '}')
	} else {
		msg = append(msg, '}')
	}
	env, err := framing.PeekValid(msg)
	require.NoError(t, err)
	return env
}

// FuzzParseCall checks that a tool name the gate accepts is the one every
// kind of upstream reads: a case-sensitive parser where the last duplicate
// wins (JavaScript, Python) and Go's case-insensitive encoding/json.
func FuzzParseCall(f *testing.F) {
	for _, seed := range []string{
		`{"name":"a","arguments":{}}`, `{"name":"a","NAME":"b"}`, `{"n\u0061me":"a"}`,
		`{"name":"a","name":"b"}`, `{"Name":0,"name":"a"}`, `{"name":"\u212a"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, params []byte) {
		if !json.Valid(params) {
			return
		}
		p, err := new(Session).parseCall(callEnvelope(t, params))
		if err != nil {
			return
		}
		var exact map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(params, &exact))
		var name string
		require.NoError(t, json.Unmarshal(exact["name"], &name))
		require.Equal(t, name, p.Name, "a case-sensitive, last-wins parser reads another name")
		var folded struct{ Name string }
		if json.Unmarshal(params, &folded) == nil {
			require.Equal(t, folded.Name, p.Name, "encoding/json reads another name")
		}
	})
}

// TestToolsListRewriteFindsEveryToolsMember: rewriteToolsList finds the
// tools array by its raw, quoted name, so a name spelled with an escape
// (which every parser decodes to "tools"), in another letter case (which
// Go's encoding/json matches) or twice (first-wins parsers read the first)
// passes locked tools to the client unfiltered: an upstream can show the
// agent a definition that is pending approval.
func TestToolsListRewriteFindsEveryToolsMember(t *testing.T) {
	tests := []struct {
		name   string
		result string
	}{
		{name: "escaped name", result: `{"t\u006fols":[{"name":"open"},{"name":"secret"}]}`},
		{name: "case variant after", result: `{"tools":[{"name":"open"}],"Tools":[{"name":"secret"}]}`},
		{name: "case variant alone", result: `{"TOOLS":[{"name":"secret"}]}`},
		{name: "twice", result: `{"tools":[{"name":"secret"}],"tools":[{"name":"open"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := startRaw(t, rawOptions{policy: lockedSecret, catalog: secretCatalog})
			h.client.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}` + "\n")
			h.answer(h.expect("tools/list"), tt.result)
			assert.NotContains(t, string(h.nextResponse("1")), "secret", "the locked tool reaches the client")
		})
	}
}

// TestToolsListAnsweredInABatchIsFiltered: an upstream may answer the
// client's tools/list inside a batch; upstreamBatch ends the request but
// does not rewrite the answer, so locked tools reach the client.
func TestToolsListAnsweredInABatchIsFiltered(t *testing.T) {
	h := startRaw(t, rawOptions{policy: lockedSecret, catalog: secretCatalog})
	h.client.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}` + "\n")
	id := h.expect("tools/list")
	h.up.send(`[{"jsonrpc":"2.0","method":"notifications/message","params":{}},{"jsonrpc":"2.0","id":` + string(id) + `,"result":` + secretCatalog + "}]\n")
	msg := h.client.next()
	assert.NotContains(t, string(msg), "secret", "the locked tool reaches the client")
	assert.Contains(t, string(msg), "notifications/message", "the rest of the batch is kept")
	assert.Equal(t, 0, h.session.inflight())
}

// TestToolsCallNotificationIsNotForwarded: a tools/call without an id is a
// notification, which clientNotification forwards unjudged. An upstream
// that dispatches on the method alone runs the locked tool.
func TestToolsCallNotificationIsNotForwarded(t *testing.T) {
	h := startRaw(t, rawOptions{policy: lockedSecret, catalog: secretCatalog})
	h.client.send(`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"secret"}}` + "\n")
	h.client.send(`{"jsonrpc":"2.0","id":2,"method":"ping"}` + "\n")
	assert.Equal(t, `{"jsonrpc":"2.0","id":2,"method":"ping"}`, string(h.up.next()), "the call must not reach the upstream")
}

// TestCatalogRefreshDoesNotUndoWhatTheClientSaw: a catalog refresh that spans a
// tools/list the client made overwrites, when it ends, the definition
// notePage merged from the client's page with the older one it read
// before: the call is judged by a definition the client no longer saw.
func TestCatalogRefreshDoesNotUndoWhatTheClientSaw(t *testing.T) {
	h := startRaw(t, rawOptions{policy: &descPolicy{},
		catalog: `{"tools":[{"name":"a","description":"benign"}]}`})
	h.up.send(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}` + "\n")
	require.Contains(t, string(h.client.next()), "list_changed")
	refresh := h.expect("tools/list")
	h.answer(refresh, `{"tools":[{"name":"a","description":"benign"}],"nextCursor":"2"}`)
	refresh = h.expect("tools/list") // the refresh's second page is still to come

	// The upstream changes "a"; the client lists it and sees it hidden.
	h.client.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}` + "\n")
	h.answer(h.expect("tools/list"), `{"tools":[{"name":"a","description":"now evil"}]}`)
	var list listResponse
	require.NoError(t, json.Unmarshal(h.nextResponse("1"), &list))
	require.NotContains(t, list.names(), "a", "the changed tool is hidden")

	// The upstream answers every later tools/list with what it has now.
	others := make(chan []byte, 8)
	go func() {
		for msg := range h.up.recv {
			env, err := framing.Peek(msg)
			if err == nil && env.Method == "tools/list" {
				io.WriteString(h.up.in, `{"jsonrpc":"2.0","id":`+string(env.ID)+`,"result":{"tools":[{"name":"a","description":"now evil"},{"name":"b"}]}}`+"\n")
				continue
			}
			others <- msg
		}
	}()
	h.answer(refresh, `{"tools":[{"name":"b"}]}`) // the refresh ends with "a" as its first page had it
	require.Eventually(t, func() bool { _, ok, _ := h.session.catalogTool("b"); return ok }, timeout, tick, "the refresh ended")

	h.client.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"a"}}` + "\n")
	h.client.send(`{"jsonrpc":"2.0","id":3,"method":"ping"}` + "\n")
	select {
	case msg := <-others:
		assert.Equal(t, `{"jsonrpc":"2.0","id":3,"method":"ping"}`, string(msg), "the hidden, changed tool must not be callable")
	case <-time.After(timeout):
		t.Fatal("nothing reached the upstream")
	}
}

// TestCatalogLoadsAreShared: calls that need the catalog while a load is
// under way wait for that load instead of each walking the whole catalog
// again (an agent guessing tool names must not multiply the upstream's
// work, and two walks finishing out of order could keep the older one).
func TestCatalogLoadsAreShared(t *testing.T) {
	h := startRaw(t, rawOptions{policy: lockedSecret}) // the first load waits for its answer
	first := h.expect("tools/list")
	h.client.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"open"}}` + "\n")
	h.client.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"open"}}` + "\n")
	h.client.send(`{"jsonrpc":"2.0","id":3,"method":"ping"}` + "\n")
	h.expect("ping") // both calls are waiting for the catalog by now
	h.answer(first, secretCatalog)
	assert.Equal(t, "tools/call", h.expectAny())
	assert.Equal(t, "tools/call", h.expectAny(), "no second walk of the catalog")
}
