package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpwrap/mcpwrap/internal/policy"
	"github.com/mcpwrap/mcpwrap/internal/state"
	"github.com/mcpwrap/mcpwrap/internal/syncbuf"
	"github.com/mcpwrap/mcpwrap/middleware"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// memStore is an in-memory state store.
type memStore struct {
	mu     sync.Mutex
	st     map[string]*state.Server // by server name
	err    error                    // returned by Load and Update when set
	writes int
	// onLoad, when set, runs in Load after the snapshot is taken, before it
	// is returned.
	onLoad func()
	// watching, when set, receives the callback of every Watch.
	watching chan func()
}

// server returns the stored state of the named server, for the test to read
// or set directly.
func (m *memStore) server(name string) *state.Server {
	if m.st[name] == nil {
		if m.st == nil {
			m.st = make(map[string]*state.Server)
		}
		m.st[name] = &state.Server{}
	}
	return m.st[name]
}

func (m *memStore) Load(_ context.Context, server string) (*state.Server, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return nil, m.err
	}
	b, _ := json.Marshal(m.st[server])
	var cp state.Server
	_ = json.Unmarshal(b, &cp)
	if m.onLoad != nil {
		m.mu.Unlock()
		m.onLoad()
		m.mu.Lock()
	}
	return &cp, nil
}

func (m *memStore) Update(ctx context.Context, server string, fn func(*state.Server) error) error {
	srv, err := m.Load(ctx, server)
	if err != nil {
		return err
	}
	if err := fn(srv); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	*m.server(server) = *srv
	m.writes++
	return nil
}

func (m *memStore) Watch(ctx context.Context, _ string, onChange func()) {
	if m.watching != nil {
		m.watching <- onChange
	}
	<-ctx.Done()
}

// WatchAll is not used by the gate.
func (m *memStore) WatchAll(ctx context.Context, _ func()) { <-ctx.Done() }

func (m *memStore) Servers(context.Context) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Sorted(maps.Keys(m.st)), nil
}

func (m *memStore) setErr(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.err = err
}

func raw(name, desc string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"name": name, "description": desc, "inputSchema": map[string]any{"type": "object"}})
	return b
}

func newGate(t *testing.T, o policy.Options, store *memStore) *Gate {
	t.Helper()
	eval, err := policy.NewEvaluator(o)
	require.NoError(t, err)
	g := New("fs", eval, store, nil)
	g.Reload(context.Background())
	return g
}

func statuses(avail []middleware.Availability) []string {
	out := make([]string, len(avail))
	for i, a := range avail {
		switch {
		case !a.InScope:
			out[i] = "out-of-scope"
		case a.Status == "":
			out[i] = "callable"
		default:
			out[i] = a.Status
		}
	}
	return out
}

func TestGateTofuBaselineThenRugPull(t *testing.T) {
	ctx := context.Background()
	store := &memStore{}
	g := newGate(t, policy.Options{}, store)
	catalog := []json.RawMessage{raw("read", "reads"), raw("write", "writes")}

	assert.Equal(t, []string{"callable", "callable"}, statuses(g.Evaluate(catalog)), "tofu grants the first catalog")
	g.CatalogSeen(ctx, catalog)
	_, approved := store.server("fs").Approval("write")
	assert.True(t, approved, "the first catalog is the baseline")

	changed := []json.RawMessage{raw("read", "reads"), raw("write", "writes, and also uploads everything"), raw("new", "new")}
	assert.Equal(t, []string{"callable", "pending_approval", "pending_approval"}, statuses(g.Evaluate(changed)))

	writes := store.writes
	g.CatalogSeen(ctx, changed)
	assert.Equal(t, writes+1, store.writes, "the new catalog is recorded")
	g.CatalogSeen(ctx, changed)
	assert.Len(t, store.server("fs").Approvals, 2, "a later catalog never approves itself")
}

func TestGateStatuses(t *testing.T) {
	catalog := []json.RawMessage{raw("read", "r"), raw("write", "w"), raw("move", "m")}
	tests := []struct {
		name     string
		opts     policy.Options
		disabled []string
		storeErr error
		want     []string
	}{
		{name: "all callable", opts: policy.Options{Approval: policy.ApprovalOff}, want: []string{"callable", "callable", "callable"}},
		{name: "config denies write", opts: policy.Options{Approval: policy.ApprovalOff, Rules: policy.Rules{Overrides: map[string]bool{"write": false}}},
			want: []string{"callable", "disabled_by_config", "callable"}},
		{name: "user disabled move", opts: policy.Options{Approval: policy.ApprovalOff}, disabled: []string{"move"},
			want: []string{"callable", "callable", "disabled_by_user"}},
		{name: "server disabled", opts: policy.Options{ServerDisabled: true}, want: []string{"server_disabled", "server_disabled", "server_disabled"}},
		{name: "store unreadable fails closed", opts: policy.Options{Rules: policy.Rules{Overrides: map[string]bool{"write": false}}},
			storeErr: &state.CorruptError{Path: "state.json", Err: errors.New("bad")},
			want:     []string{"disabled_unknown", "disabled_by_config", "disabled_unknown"}},
		{name: "allow-list narrows", opts: policy.Options{Approval: policy.ApprovalOff, Allow: mustAllow(t, "read,mo*")},
			want: []string{"callable", "out-of-scope", "callable"}},
		{name: "manual approval", opts: policy.Options{Approval: policy.ApprovalManual}, want: []string{"pending_approval", "pending_approval", "pending_approval"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := &memStore{err: tt.storeErr}
			for _, d := range tt.disabled {
				store.server("fs").Disable(d)
			}
			g := newGate(t, tt.opts, store)
			assert.Equal(t, tt.want, statuses(g.Evaluate(catalog)))
		})
	}
}

func TestGateReloadReportsChanges(t *testing.T) {
	ctx := context.Background()
	store := &memStore{}
	g := newGate(t, policy.Options{}, store)
	assert.False(t, g.Reload(ctx), "nothing changed")
	require.NoError(t, store.Update(ctx, "fs", func(srv *state.Server) error { srv.Disable("x"); return nil }))
	assert.True(t, g.Reload(ctx))
	require.NoError(t, store.Update(ctx, "other", func(srv *state.Server) error { srv.Disable("x"); return nil }))
	assert.False(t, g.Reload(ctx), "another server's change is not ours")
}

func TestGateTexts(t *testing.T) {
	g := newGate(t, policy.Options{}, &memStore{})
	assert.Contains(t, g.Rejection("disabled_by_user", "write", "discover_tools"), "Tool is disabled and not callable.")
	assert.Contains(t, g.Remediation("disabled_by_user", "write"), "mcpwrap tools enable fs write")
	assert.NotContains(t, g.Rejection("disabled_by_config", "write", "discover_tools"), "mcpwrap tools enable")
}

func mustAllow(t *testing.T, s string) policy.AllowList {
	a, err := policy.ParseAllowList(s)
	require.NoError(t, err)
	return a
}

// Two reloads overlap (the catalog being recorded and the watcher): the one
// that read the store first must not overwrite, when it finishes last, the
// newer snapshot the other one applied.
func TestGateReloadKeepsNewerSnapshot(t *testing.T) {
	ctx := context.Background()
	store := &memStore{}
	g := newGate(t, policy.Options{Approval: policy.ApprovalOff}, store)
	catalog := []json.RawMessage{raw("write", "w")}

	read, resume := make(chan struct{}), make(chan struct{})
	var loads atomic.Int32
	store.mu.Lock()
	store.onLoad = func() {
		if loads.Add(1) == 1 {
			close(read)
			<-resume
		}
	}
	store.mu.Unlock()
	staleDone := make(chan bool)
	go func() { staleDone <- g.Reload(ctx) }()
	<-read // the first reload holds the state before the user's change

	require.NoError(t, store.Update(ctx, "fs", func(srv *state.Server) error { srv.Disable("write"); return nil }))
	assert.True(t, g.Reload(ctx), "the second reload sees the user's change")
	close(resume)
	assert.False(t, <-staleDone, "the older snapshot changes nothing")

	assert.Equal(t, []string{"disabled_by_user"}, statuses(g.Evaluate(catalog)))
}

// A change the hash does not cover (annotations) still updates the recorded
// catalog: the CLI reads readOnlyHint and the diff from it.
func TestGateCatalogSeenRecordsAnnotationChange(t *testing.T) {
	ctx := context.Background()
	store := &memStore{}
	g := newGate(t, policy.Options{}, store)
	withHint := func(readOnly bool) json.RawMessage {
		b, _ := json.Marshal(map[string]any{"name": "write", "description": "w",
			"inputSchema": map[string]any{"type": "object"}, "annotations": map[string]any{"readOnlyHint": readOnly}})
		return b
	}

	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	g.now = func() time.Time { clock = clock.Add(time.Minute); return clock }

	g.CatalogSeen(ctx, []json.RawMessage{withHint(true)})
	g.CatalogSeen(ctx, []json.RawMessage{withHint(false)})
	catalog := store.server("fs").Catalog
	assert.JSONEq(t, string(withHint(false)), string(catalog.Tools["write"].Definition))

	seenAt := catalog.SeenAt
	g.CatalogSeen(ctx, []json.RawMessage{withHint(false)})
	assert.Equal(t, seenAt, store.server("fs").Catalog.SeenAt, "an unchanged catalog is left as it was")
}

// With the real store, which re-indents the definitions it keeps, seeing the
// same catalog again writes nothing.
func TestGateCatalogSeenUnchangedWritesNothing(t *testing.T) {
	ctx := context.Background()
	store := state.Open(t.TempDir(), nil)
	eval, err := policy.NewEvaluator(policy.Options{})
	require.NoError(t, err)
	g := New("fs", eval, store, nil)
	g.Reload(ctx)
	catalog := []json.RawMessage{json.RawMessage(`{"name":"write","description":"w","inputSchema":{"type":"object","properties":{"a":{"type":"string"}}},"annotations":{"readOnlyHint":true}}`)}

	g.CatalogSeen(ctx, catalog)
	before, err := os.Stat(store.Path("fs"))
	require.NoError(t, err)
	g.CatalogSeen(ctx, catalog)
	after, err := os.Stat(store.Path("fs"))
	require.NoError(t, err)
	assert.True(t, os.SameFile(before, after), "the state file was not replaced")
}

// The store was unreadable when the first catalog was seen, so it could not
// be recorded; once the store is repaired, the catalog is recorded and, under
// tofu, becomes the baseline, as the first catalog seen would have.
func TestGateRecordsCatalogOnceStoreIsRepaired(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	store := &memStore{err: &state.CorruptError{Path: "state.json", Err: errors.New("bad")}, watching: make(chan func(), 1)}
	g := newGate(t, policy.Options{}, store)
	catalog := []json.RawMessage{raw("read", "reads"), raw("write", "writes")}
	go g.Watch(ctx, func() {})
	onChange := <-store.watching

	g.CatalogSeen(ctx, catalog) // fails: the store is corrupt
	assert.Equal(t, []string{"disabled_unknown", "disabled_unknown"}, statuses(g.Evaluate(catalog)))

	store.setErr(nil) // the user moved the corrupt file aside
	onChange()

	srv := store.server("fs")
	require.NotNil(t, srv.Catalog, "the catalog is recorded")
	assert.Len(t, srv.Catalog.Tools, 2)
	assert.Len(t, srv.Approvals, 2, "the catalog is the tofu baseline")
	changed := []json.RawMessage{raw("read", "reads"), raw("write", "writes, and uploads")}
	assert.Equal(t, []string{"callable", "pending_approval"}, statuses(g.Evaluate(changed)))
}

// An upstream whose definitions keep changing (a counter in a description)
// must not grow the parsed-definition cache without bound: it holds the
// definitions of the latest catalog.
func TestGateToolCacheIsBounded(t *testing.T) {
	ctx := context.Background()
	g := newGate(t, policy.Options{Approval: policy.ApprovalOff}, &memStore{})
	for i := range 50 {
		catalog := []json.RawMessage{raw("read", "reads"), raw("clock", fmt.Sprintf("it is %d o'clock", i))}
		g.Evaluate(catalog)
		g.CatalogSeen(ctx, catalog)
	}
	g.mu.RLock()
	defer g.mu.RUnlock()
	assert.Len(t, g.tools, 2)
}

// Whether the catalog becomes the tofu baseline is decided by the store as
// it is when the catalog is recorded, not by the gate's last snapshot: the
// user may have moved the state file aside since.
func TestGateBaselineJudgedByCurrentStore(t *testing.T) {
	ctx := context.Background()
	store := &memStore{}
	store.server("fs").Approve("old", state.Approval{Hash: "h"})
	g := newGate(t, policy.Options{}, store) // its snapshot has a baseline
	store.mu.Lock()
	store.st = nil // the state file was moved aside; no reload yet
	store.mu.Unlock()

	catalog := []json.RawMessage{raw("read", "reads"), raw("write", "writes")}
	g.CatalogSeen(ctx, catalog)

	assert.Len(t, store.server("fs").Approvals, 2, "the catalog is the new baseline")
	assert.Equal(t, []string{"callable", "callable"}, statuses(g.Evaluate(catalog)))
}

// TestGateConfigError: an evaluator built on an unusable config locks every
// tool and every text the agent sees names the config error; the next
// evaluator unlocks them again.
func TestGateConfigError(t *testing.T) {
	errConfig := errors.New("/etc/mcpwrap.json:3:25: unknown key \"servers.fs.tools.defualt\"")
	broken, err := policy.NewEvaluator(policy.Options{ConfigErr: errConfig})
	require.NoError(t, err)
	g := New("fs", broken, &memStore{}, nil)
	g.Reload(context.Background())
	catalog := []json.RawMessage{raw("read", "r"), raw("write", "w")}

	assert.Equal(t, []string{"disabled_unknown", "disabled_unknown"}, statuses(g.Evaluate(catalog)))
	want := "mcpwrap's config file has an error: " + errConfig.Error() + "; fix it and the tools will appear."
	assert.Equal(t, want, g.Notice())
	assert.Equal(t, want, g.Remediation("disabled_unknown", ""))
	assert.Equal(t, "Tool is disabled and not callable. "+want+" Call find with include_disabled:true to see locked tools and remediation.",
		g.Rejection("disabled_unknown", "read", "find"))

	fixed, err := policy.NewEvaluator(policy.Options{Approval: policy.ApprovalOff})
	require.NoError(t, err)
	assert.True(t, g.SetEvaluator(fixed))
	assert.False(t, g.SetEvaluator(fixed), "the same policy again is no change")
	assert.Equal(t, []string{"callable", "callable"}, statuses(g.Evaluate(catalog)))
	assert.Empty(t, g.Notice())
	assert.Equal(t, policy.RemediationFor(policy.DisabledUnknown, "fs", ""), g.Remediation("disabled_unknown", ""))
}

// TestGateRefusesUntrustedDefinitions: a definition tooldef refuses, or
// one whose name another definition claims too, is disabled_unknown under
// every mode (approval off and an allow-list included) and is never
// recorded, so neither the baseline nor the CLI knows it under any name.
func TestGateRefusesUntrustedDefinitions(t *testing.T) {
	catalog := []json.RawMessage{
		raw("ok", "plain"),
		json.RawMessage(`{"name":"safe","NAME":"evil"}`),
		json.RawMessage(`{"n\u0061me":"sneaky"}`),
		json.RawMessage(`{"name":"t","inputSchema":{"type":"object","type":"string"}}`),
		raw("twin", "one"), raw("twin", "two"),
		json.RawMessage(`{"name":"x","Name":"claimed"}`), raw("claimed", "clean, but claimed by x too"),
	}
	want := []string{"callable", "disabled_unknown", "disabled_unknown", "disabled_unknown",
		"disabled_unknown", "disabled_unknown", "disabled_unknown", "disabled_unknown"}
	tests := []struct {
		name string
		opts policy.Options
	}{
		{name: "tofu", opts: policy.Options{}},
		{name: "approval off", opts: policy.Options{Approval: policy.ApprovalOff}},
		{name: "allow-list naming the claims", opts: policy.Options{Allow: mustAllow(t, "ok,safe,evil,twin,claimed")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := &memStore{}
			g := newGate(t, tt.opts, store)
			g.CatalogSeen(context.Background(), catalog)
			assert.Equal(t, want, statuses(g.Evaluate(catalog)))
			srv := store.server("fs")
			require.NotNil(t, srv.Catalog)
			assert.Equal(t, []string{"ok"}, slices.Sorted(maps.Keys(srv.Catalog.Tools)), "only the trusted tool is recorded")
		})
	}
}

// TestGatePinnedFollowsApproval: every verdict is Pinned while approval is
// on, so the sidecar answers a call to a tool the upstream does not list
// itself; with approval off it is not.
func TestGatePinnedFollowsApproval(t *testing.T) {
	for _, tt := range []struct {
		mode policy.ApprovalMode
		want bool
	}{{policy.ApprovalTOFU, true}, {policy.ApprovalManual, true}, {policy.ApprovalOff, false}} {
		t.Run(string(tt.mode), func(t *testing.T) {
			g := newGate(t, policy.Options{Approval: tt.mode}, &memStore{})
			a := g.Evaluate([]json.RawMessage{raw("ghost", "")})[0]
			assert.Equal(t, tt.want, a.Pinned)
		})
	}
}

// TestGateVersionMovesWithWhatEvaluateAnswers: a Session keeps the gate's
// verdicts while Version stays the same, so Version must move with every
// change of what Evaluate answers (the user state, the store's
// readability, the operator policy), and only then: a version that moves
// for nothing sends every call back to Evaluate.
func TestGateVersionMovesWithWhatEvaluateAnswers(t *testing.T) {
	ctx := context.Background()
	store := &memStore{}
	g := newGate(t, policy.Options{Approval: policy.ApprovalOff}, store)
	var _ middleware.VersionedPolicy = g
	catalog := []json.RawMessage{raw("read", "r"), raw("write", "w")}

	steps := []struct {
		name   string
		change func()
		moved  bool
		want   []string
	}{
		{name: "nothing changed", change: func() { g.Reload(ctx) }, moved: false, want: []string{"callable", "callable"}},
		{name: "user disabled write", change: func() {
			require.NoError(t, store.Update(ctx, "fs", func(srv *state.Server) error { srv.Disable("write"); return nil }))
			g.Reload(ctx)
		}, moved: true, want: []string{"callable", "disabled_by_user"}},
		{name: "another server changed", change: func() {
			require.NoError(t, store.Update(ctx, "other", func(srv *state.Server) error { srv.Disable("x"); return nil }))
			g.Reload(ctx)
		}, moved: false, want: []string{"callable", "disabled_by_user"}},
		{name: "store unreadable", change: func() { store.setErr(errors.New("gone")); g.Reload(ctx) }, moved: true,
			want: []string{"disabled_unknown", "disabled_unknown"}},
		{name: "store readable again", change: func() { store.setErr(nil); g.Reload(ctx) }, moved: true,
			want: []string{"callable", "disabled_by_user"}},
		{name: "same operator policy", change: func() {
			eval, err := policy.NewEvaluator(policy.Options{Approval: policy.ApprovalOff})
			require.NoError(t, err)
			g.SetEvaluator(eval)
		}, moved: false, want: []string{"callable", "disabled_by_user"}},
		{name: "operator denies read", change: func() {
			eval, err := policy.NewEvaluator(policy.Options{Approval: policy.ApprovalOff, Rules: policy.Rules{Overrides: map[string]bool{"read": false}}})
			require.NoError(t, err)
			g.SetEvaluator(eval)
		}, moved: true, want: []string{"disabled_by_config", "disabled_by_user"}},
	}
	for _, step := range steps {
		before := g.Version()
		step.change()
		assert.Equal(t, step.moved, g.Version() != before, step.name)
		assert.Equal(t, step.want, statuses(g.Evaluate(catalog)), step.name)
	}
}

// TestGateEvaluateWhileTheConfigChanges: Evaluate judges with one operator
// policy, whatever SetEvaluator does meanwhile: its verdicts and whether
// approval is on (Pinned) come from the same evaluator, read safely.
func TestGateEvaluateWhileTheConfigChanges(t *testing.T) {
	store := &memStore{}
	g := newGate(t, policy.Options{}, store)
	off, err := policy.NewEvaluator(policy.Options{Approval: policy.ApprovalOff})
	require.NoError(t, err)
	on, err := policy.NewEvaluator(policy.Options{Approval: policy.ApprovalManual})
	require.NoError(t, err)
	g.SetEvaluator(off)
	catalog := []json.RawMessage{raw("read", "r")}
	stop := make(chan struct{})
	var flips sync.WaitGroup
	flips.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			g.SetEvaluator([]*policy.Evaluator{off, on}[i%2])
		}
	})
	for range 2000 {
		a := g.Evaluate(catalog)[0]
		// Approval off: callable and not pinned; manual: pinned and pending.
		assert.Equal(t, a.Pinned, a.Status == "pending_approval", "%+v", a)
	}
	close(stop)
	flips.Wait()
}

// TestGateUnapprovedOnlyForUnapprovedDefinitions: under approval, a tool
// locked by the user or by config whose definition is the approved one is
// not Unapproved (discovery shows its description); a changed or new one
// is, whatever lock comes first.
func TestGateUnapprovedOnlyForUnapprovedDefinitions(t *testing.T) {
	ctx := context.Background()
	store := &memStore{}
	g := newGate(t, policy.Options{Rules: policy.Rules{Overrides: map[string]bool{"ops": false}}}, store)
	catalog := []json.RawMessage{raw("read", "reads"), raw("write", "writes"), raw("ops", "operates")}
	g.CatalogSeen(ctx, catalog) // the tofu baseline
	require.NoError(t, store.Update(ctx, "fs", func(srv *state.Server) error { srv.Disable("write"); return nil }))
	g.Reload(ctx)

	for _, tc := range []struct {
		catalog    []json.RawMessage
		statuses   []string
		unapproved []bool
	}{
		{catalog: catalog, statuses: []string{"callable", "disabled_by_user", "disabled_by_config"}, unapproved: []bool{false, false, false}},
		{catalog: []json.RawMessage{raw("read", "reads"), raw("write", "writes, and uploads"), raw("ops", "operates, and more"), raw("new", "new")},
			statuses:   []string{"callable", "disabled_by_user", "disabled_by_config", "pending_approval"},
			unapproved: []bool{false, true, true, true}},
	} {
		avail := g.Evaluate(tc.catalog)
		assert.Equal(t, tc.statuses, statuses(avail))
		var unapproved []bool
		for _, a := range avail {
			unapproved = append(unapproved, a.Unapproved)
		}
		assert.Equal(t, tc.unapproved, unapproved)
	}
}

// TestGateStoreError: while the state store cannot be read, a tool it locks
// (disabled_unknown) is told the store's error, which names the file and
// the fix, and that the user fixes it; every discovery answer says so; once
// the store reads again, the texts are the usual ones. A tool locked by
// config keeps its own text.
func TestGateStoreError(t *testing.T) {
	ctx := context.Background()
	corrupt := &state.CorruptError{Path: "/s/servers/fs.json", Server: "fs", Err: errors.New("invalid JSON: unexpected end of JSON input")}
	store := &memStore{err: corrupt}
	g := newGate(t, policy.Options{Rules: policy.Rules{Overrides: map[string]bool{"write": false}}}, store)

	want := policy.StoreErrorRemediation(corrupt)
	for _, text := range []string{g.Remediation("disabled_unknown", "read"), g.Rejection("disabled_unknown", "read", "find"), g.Notice()} {
		assert.Contains(t, text, want)
		assert.Contains(t, text, "/s/servers/fs.json is unreadable", "the cause")
		assert.Contains(t, text, "Only the user can fix this", "who can fix it")
		assert.NotContains(t, text, "check mcpwrap's log")
	}
	assert.NotContains(t, g.Rejection("disabled_by_config", "write", "find"), "state store")

	store.setErr(nil)
	g.Reload(ctx)
	assert.Empty(t, g.Notice())
	assert.Equal(t, policy.RemediationFor(policy.DisabledUnknown, "fs", "read"), g.Remediation("disabled_unknown", "read"))
}

// TestGateRemembersTheUpstream: what the server said of itself in a load
// is recorded once (again only when it changed), advertised at once, and
// read by another sidecar of the server from the store.
func TestGateRemembersTheUpstream(t *testing.T) {
	ctx := context.Background()
	store := &memStore{}
	g := newGate(t, policy.Options{}, store)
	_, ok := g.RememberedUpstream()
	assert.False(t, ok, "never loaded")

	seen := middleware.UpstreamInfo{Capabilities: json.RawMessage(`{"tools":{},"resources":{"subscribe":true}}`), ServerInfo: json.RawMessage(`{"name":"fs","version":"2"}`),
		Instructions: "Read files.", ProtocolVersion: "2025-11-25"}
	g.UpstreamSeen(ctx, seen)
	assert.Equal(t, 1, store.writes)
	got, ok := g.RememberedUpstream()
	require.True(t, ok)
	assert.Equal(t, seen, got)
	g.UpstreamSeen(ctx, seen)
	assert.Equal(t, 1, store.writes, "the same again writes nothing")

	other := newGate(t, policy.Options{}, store) // another sidecar of the server
	got, ok = other.RememberedUpstream()
	require.True(t, ok)
	assert.JSONEq(t, string(seen.Capabilities), string(got.Capabilities))
	assert.JSONEq(t, string(seen.ServerInfo), string(got.ServerInfo))
	assert.Equal(t, seen.Instructions, got.Instructions)
	assert.Equal(t, seen.ProtocolVersion, got.ProtocolVersion)

	// A load through server/discover agrees to no version: the one an
	// initialize agreed to stays, for the next initialize to be answered.
	discovered := seen
	discovered.ProtocolVersion = ""
	g.UpstreamSeen(ctx, discovered)
	assert.Equal(t, 1, store.writes, "nothing else changed")
	got, _ = g.RememberedUpstream()
	assert.Equal(t, "2025-11-25", got.ProtocolVersion)
}

// TestGateRemembersNoHandshakeOfADisabledServer: while the config turns
// the server off, what it said of itself is remembered without the
// protocol version it agreed to, so that no Session answers a client's
// initialize from memory as if it would start (middleware.OnDemand): the
// client is told it is disabled. Its capabilities and serverInfo are
// still shown by the degraded handshake. Enabled again, the version is
// back.
func TestGateRemembersNoHandshakeOfADisabledServer(t *testing.T) {
	ctx := context.Background()
	store := &memStore{}
	seen := middleware.UpstreamInfo{Capabilities: json.RawMessage(`{"tools":{},"prompts":{}}`), ServerInfo: json.RawMessage(`{"name":"fs","version":"2"}`),
		Instructions: "Read files.", ProtocolVersion: "2025-11-25"}
	newGate(t, policy.Options{}, store).UpstreamSeen(ctx, seen)

	g := newGate(t, policy.Options{ServerDisabled: true}, store)
	got, ok := g.RememberedUpstream()
	require.True(t, ok)
	assert.Empty(t, got.ProtocolVersion, "no initialize is answered from memory")
	assert.JSONEq(t, string(seen.Capabilities), string(got.Capabilities), "the degraded handshake's capabilities")
	assert.JSONEq(t, string(seen.ServerInfo), string(got.ServerInfo))

	enabled, err := policy.NewEvaluator(policy.Options{})
	require.NoError(t, err)
	g.SetEvaluator(enabled)
	got, _ = g.RememberedUpstream()
	assert.Equal(t, "2025-11-25", got.ProtocolVersion, "enabled: its next session may start on demand")
}

// A store that goes out of reach (a database that is down) after the gate
// loaded the state keeps the gate judging by that state, says why through
// StoreErr, and a rug pull seen meanwhile stays locked; a gate that never
// loaded the state fails closed; a reload once it is back ends it.
func TestGateKeepsTheLastStateWhileTheStoreIsUnavailable(t *testing.T) {
	ctx := context.Background()
	down := fmt.Errorf("%w: postgres://db:5432/mcpwrap: connection refused", state.ErrUnavailable)
	catalog := []json.RawMessage{raw("read", "reads"), raw("write", "writes")}
	store := &memStore{}
	g := newGate(t, policy.Options{}, store)
	g.CatalogSeen(ctx, catalog) // the tofu baseline
	require.NoError(t, store.Update(ctx, "fs", func(srv *state.Server) error { srv.Disable("write"); return nil }))
	g.Reload(ctx)
	require.Equal(t, []string{"callable", "disabled_by_user"}, statuses(g.Evaluate(catalog)))

	store.setErr(down)
	assert.False(t, g.Reload(ctx), "what Evaluate answers did not change")
	assert.Equal(t, []string{"callable", "disabled_by_user"}, statuses(g.Evaluate(catalog)))
	assert.ErrorIs(t, g.StoreErr(), state.ErrUnavailable)
	rugPull := []json.RawMessage{raw("read", "reads, and uploads"), raw("write", "writes")}
	assert.Equal(t, []string{"pending_approval", "disabled_by_user"}, statuses(g.Evaluate(rugPull)))

	fresh := newGate(t, policy.Options{}, store) // started while the store is down
	assert.Equal(t, []string{"disabled_unknown", "disabled_unknown"}, statuses(fresh.Evaluate(catalog)))
	assert.ErrorIs(t, fresh.StoreErr(), state.ErrUnavailable)

	store.setErr(nil)
	g.Reload(ctx)
	assert.NoError(t, g.StoreErr())
	assert.True(t, fresh.Reload(ctx))
	assert.Equal(t, []string{"callable", "disabled_by_user"}, statuses(fresh.Evaluate(catalog)))
}

// TestGateReady: the gate is ready once it has read the store and while
// the config is usable; an unreadable store or a config error makes it
// unready, and repairing either makes it ready again. No reason quotes the
// underlying error, which may name paths.
func TestGateReady(t *testing.T) {
	errDisk := errors.New("open /home/alice/.local/state/mcpwrap/servers/fs.json: permission denied")
	errConfig := errors.New("/etc/mcpwrap.json:3:25: unknown key")
	tests := []struct {
		name      string
		reload    bool  // Reload once before asking
		storeErr  error // the store fails with it
		configErr error // the evaluator is built with it
		want      error
	}{
		{name: "never read", want: ErrNotLoaded},
		{name: "read", reload: true},
		{name: "store unreadable", reload: true, storeErr: errDisk, want: ErrStoreUnreadable},
		{name: "config unusable", reload: true, configErr: errConfig, want: ErrConfigUnusable},
		{name: "config unusable, never read", configErr: errConfig, want: ErrConfigUnusable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := &memStore{err: tt.storeErr}
			eval, err := policy.NewEvaluator(policy.Options{ConfigErr: tt.configErr})
			require.NoError(t, err)
			g := New("fs", eval, store, nil)
			if tt.reload {
				g.Reload(t.Context())
			}
			err = g.Ready(t.Context())
			assert.ErrorIs(t, err, tt.want)
			if err != nil {
				assert.NotContains(t, err.Error(), "/", "the reason names no path")
			}
		})
	}

	t.Run("repaired", func(t *testing.T) {
		store := &memStore{err: errDisk}
		g := newGate(t, policy.Options{}, store)
		require.ErrorIs(t, g.Ready(t.Context()), ErrStoreUnreadable)
		store.setErr(nil)
		g.Reload(t.Context())
		assert.NoError(t, g.Ready(t.Context()))
		broken, err := policy.NewEvaluator(policy.Options{ConfigErr: errConfig})
		require.NoError(t, err)
		g.SetEvaluator(broken)
		assert.ErrorIs(t, g.Ready(t.Context()), ErrConfigUnusable)
		fixed, err := policy.NewEvaluator(policy.Options{})
		require.NoError(t, err)
		g.SetEvaluator(fixed)
		assert.NoError(t, g.Ready(t.Context()))
	})

	// A store out of reach after a read: degraded, still serving; before
	// any read: not ready.
	t.Run("unavailable", func(t *testing.T) {
		down := fmt.Errorf("%w: connection refused", state.ErrUnavailable)
		store := &memStore{}
		g := newGate(t, policy.Options{}, store)
		store.setErr(down)
		g.Reload(t.Context())
		err := g.Ready(t.Context())
		require.ErrorIs(t, err, ErrStoreUnavailable)
		var d interface{ Degraded() bool }
		require.ErrorAs(t, err, &d)
		assert.True(t, d.Degraded())
		store.setErr(nil)
		g.Reload(t.Context())
		assert.NoError(t, g.Ready(t.Context()), "back")

		never := New("fs", g.eval.Load(), &memStore{err: down}, nil)
		never.Reload(t.Context())
		err = never.Ready(t.Context())
		assert.ErrorIs(t, err, ErrStoreUnreadable)
		assert.False(t, errors.As(err, &d), "nothing loaded: not degraded but not ready")
	})
}

// A session that ends while what the server said of itself waits to be
// written (another process holds the state's lock) is not a failure to
// warn of: the next load writes it. A store that fails is.
func TestGateRemembersTheUpstreamQuietlyAtTheEnd(t *testing.T) {
	tests := []struct {
		name     string
		cancel   bool
		storeErr error
		warned   bool
	}{
		{name: "the session ended", cancel: true, storeErr: fmt.Errorf("state: waiting to update fs.json: %w", context.Canceled)},
		{name: "the store failed", storeErr: errors.New("state: write fs.json: no space left on device"), warned: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs syncbuf.Buffer
			eval, err := policy.NewEvaluator(policy.Options{})
			require.NoError(t, err)
			store := &memStore{}
			g := New("fs", eval, store, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn})))
			g.Reload(context.Background())
			store.setErr(tt.storeErr)
			ctx, cancel := context.WithCancel(context.Background())
			if tt.cancel {
				cancel()
			}
			defer cancel()
			g.UpstreamSeen(ctx, middleware.UpstreamInfo{ServerInfo: json.RawMessage(`{"name":"fs","version":"2"}`)})
			assert.Equal(t, tt.warned, strings.Contains(logs.String(), "cannot remember"), "log: %s", logs.String())
			_, ok := g.RememberedUpstream()
			assert.True(t, ok, "advertised by this process either way")
		})
	}
}
