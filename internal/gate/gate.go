// Package gate decides tool availability for one running sidecar: it joins
// the operator config (through a policy.Evaluator), the per-run allow-list
// and the user state store, and satisfies middleware.VersionedPolicy.
//
// The store is read once at start and again whenever it changes on disk;
// evaluations use the in-memory snapshot, so the hot path never touches the
// file system. A store that cannot be read makes every tool that operator
// policy allows disabled_unknown: the gate fails closed. One that is only
// out of reach for now (state.ErrUnavailable: a database that is down)
// after the gate read it leaves the gate judging by the state it read last,
// until the store's Watch calls back with it reachable (StoreErr says so).
package gate

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpwrap/mcpwrap/internal/policy"
	"github.com/mcpwrap/mcpwrap/internal/state"
	"github.com/mcpwrap/mcpwrap/internal/tooldef"
	"github.com/mcpwrap/mcpwrap/middleware"
)

// A Gate is the availability policy of one server. It is safe for
// concurrent use.
type Gate struct {
	server string
	store  state.Store
	log    *slog.Logger
	now    func() time.Time

	// reads numbers the store reads Reload starts, in the order they start.
	reads atomic.Uint64
	// version counts the changes of what Evaluate answers (see Version).
	version atomic.Uint64

	// recording serialises recording catalogs in the store.
	recording sync.Mutex

	mu sync.RWMutex
	// eval is the operator policy, replaced by SetEvaluator (under mu) when
	// the config file changes; read without mu where only it is needed.
	eval atomic.Pointer[policy.Evaluator]
	user userState // the server's state as last read
	// upstream is what the server said of itself in its last successful
	// load, as last read from the store (nil if never); see
	// RememberedUpstream.
	upstream *state.Upstream
	errUse   error // why the store could not be read, if it could not
	// stale is why the store is unavailable for now while the gate judges
	// by user, the state loaded last (loaded); nil otherwise.
	stale   error
	loaded  bool   // some Reload read the store
	applied uint64 // the number of the read user and errUse came from
	tools   map[string]policy.Tool
	// cacheBytes is the size of tools (its keys, names and hashes); past
	// cacheLimit it starts afresh.
	cacheBytes, cacheLimit int
	// unrecorded is the last catalog seen if it could not be recorded in
	// the store (nil otherwise), to record once the store can be read.
	unrecorded []json.RawMessage
	// catalog is the last catalog recorded, read as Evaluate reads it, to
	// tell which of its tools are pending approval (see Pending).
	catalog []policy.Tool
	// pending are the tools of catalog pending approval, sorted, as last
	// computed by refreshPending.
	pending []string
}

// New returns the gate of the named server. Call Reload before use to read
// the store; until then no tool is user-disabled and no baseline exists.
func New(server string, eval *policy.Evaluator, store state.Store, logger *slog.Logger) *Gate {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	g := &Gate{server: server, store: store, log: logger, now: time.Now,
		tools: make(map[string]policy.Tool), cacheLimit: maxCacheBytes}
	g.eval.Store(eval)
	return g
}

// maxCacheBytes bounds the parsed-definition cache: definitions evaluated
// between two recorded catalogs (tools/list pages, the bare name of each
// unknown tool a client calls) are the upstream's and the client's to
// choose. It is as large as the largest catalog the sidecar keeps by
// default.
const maxCacheBytes = middleware.DefaultMaxCatalogBytes

// cacheSize is what the cache entry for raw holds.
func cacheSize(raw string, t policy.Tool) int { return len(raw) + len(t.Name) + len(t.Hash) }

// Reload reads the store and reports whether the server's state changed.
// Reloads may overlap (the watcher, recording a catalog): a read that
// started before one already applied is dropped, since it may be older.
func (g *Gate) Reload(ctx context.Context) bool {
	read := g.reads.Add(1)
	srv, err := g.store.Load(ctx, g.server)
	var user userState
	var upstream *state.Upstream
	if err == nil {
		user, upstream = snapshot(srv), srv.Upstream
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if read < g.applied {
		return false
	}
	if err != nil && errors.Is(err, state.ErrUnavailable) && g.loaded {
		// A store out of reach for now (a database that is down): judge by
		// the state loaded last until Watch calls back with it reachable.
		if g.stale == nil {
			g.log.Warn("the state store is unavailable; judging tools by the state loaded last until it is back", "error", err)
		}
		g.stale, g.applied = err, read
		return false
	}
	if g.stale != nil && err == nil {
		g.log.Info("the state store is available again")
	}
	g.stale = nil
	if err != nil {
		g.log.Error("cannot read the state store; tools are disabled_unknown until it is fixed", "error", err)
	} else {
		g.loaded = true
	}
	changed := !reflect.DeepEqual(user, g.user) || (err == nil) != (g.errUse == nil)
	g.user, g.errUse, g.applied = user, err, read
	if err == nil { // an unreadable store forgets nothing remembered
		g.upstream = upstream
	}
	if changed {
		g.version.Add(1) // under g.mu: no Evaluate reads the new state before it
	}
	return changed
}

// StoreErr returns why the state store cannot be used, if it cannot: an
// error matching state.ErrUnavailable while the gate judges by the state
// it loaded last, any other when tools are locked disabled_unknown for it.
func (g *Gate) StoreErr() error {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return cmp.Or(g.errUse, g.stale)
}

// Watch reloads the store whenever it changes on disk and calls onChange
// when the server's state changed, until ctx is done. Once the store can be
// read again, it records the catalog seen while it could not.
func (g *Gate) Watch(ctx context.Context, onChange func()) {
	g.store.Watch(ctx, g.server, func() {
		changed := g.Reload(ctx)
		if g.recordUnrecorded(ctx) {
			changed = true
		}
		g.refreshPending() // an approval unlocks, a lost store locks
		if changed {
			onChange()
		}
	})
}

// tool parses a raw definition, caching the result by its bytes: a catalog
// is evaluated on every tools/list, and hashing is the costly part. Each
// catalog recorded resets the cache to its own definitions, so an upstream
// whose definitions keep changing does not grow it without bound.
func (g *Gate) tool(raw json.RawMessage) policy.Tool {
	g.mu.RLock()
	t, ok := g.tools[string(raw)]
	g.mu.RUnlock()
	if ok {
		return t
	}
	t, err := policy.ParseTool(raw)
	if err != nil {
		g.log.Warn("malformed tool definition", "error", err)
	}
	key := string(raw)
	g.mu.Lock()
	if _, ok := g.tools[key]; !ok {
		if g.cacheBytes+cacheSize(key, t) > g.cacheLimit {
			g.tools, g.cacheBytes = make(map[string]policy.Tool), 0
		}
		g.tools[key] = t
		g.cacheBytes += cacheSize(key, t)
	}
	g.mu.Unlock()
	return t
}

// Evaluate implements middleware.ToolPolicy.
func (g *Gate) Evaluate(raws []json.RawMessage) []middleware.Availability {
	tools := make([]policy.Tool, len(raws))
	var missed []int // definitions not parsed yet
	g.mu.RLock()
	for i, raw := range raws {
		t, ok := g.tools[string(raw)]
		if !ok {
			missed = append(missed, i)
		}
		tools[i] = t
	}
	g.mu.RUnlock()
	for _, i := range missed { // one lock for a whole page, not one per tool
		tools[i] = g.tool(raws[i])
	}
	refuseUntrusted(raws, tools)
	g.mu.RLock()
	eval := g.eval.Load() // the one judging, and saying whether approval is on
	ev := eval.Evaluate(tools, g.user, g.errUse)
	user, errUse := g.user, g.errUse
	g.mu.RUnlock()
	out := make([]middleware.Availability, len(raws))
	pinned := eval.Approval() != policy.ApprovalOff
	for _, e := range ev.Entries {
		a := middleware.Availability{InScope: true, Pinned: pinned}
		if e.Status.Locked() {
			a.Status = string(e.Status)
			a.Unapproved = pinned && eval.Unapproved(tools[e.Index], user, errUse) // whose description is withheld
		}
		out[e.Index] = a
	}
	return out
}

// SetEvaluator replaces the operator policy, as after the config file
// changed, and reports whether it differs from the one it replaces (the
// caller then re-evaluates what the client sees). An evaluator built with
// a ConfigErr locks every tool until the next one.
func (g *Gate) SetEvaluator(eval *policy.Evaluator) bool {
	g.mu.Lock()
	changed := !reflect.DeepEqual(eval, g.eval.Load())
	g.eval.Store(eval)
	if changed {
		g.version.Add(1)
	}
	g.mu.Unlock()
	if changed {
		g.refreshPending() // approval may have been turned on or off
	}
	return changed
}

// Version implements middleware.VersionedPolicy: it changes when the
// user state or the operator policy Evaluate judges by changes, so that a
// Session judges calls from verdicts it keeps until then. Evaluate
// depends on nothing else: a definition's parse is a function of its bytes.
func (g *Gate) Version() uint64 { return g.version.Load() }

// ServerDisabled reports whether the operator's config turns the server
// off (`enabled: false`), as of the evaluator now in use.
func (g *Gate) ServerDisabled() bool { return g.eval.Load().ServerDisabled() }

// ConfigErr returns why the operator's config cannot be used, if it cannot
// (the evaluator's ConfigErr).
func (g *Gate) ConfigErr() error { return g.eval.Load().ConfigErr() }

// Why Ready finds the gate not ready. Their texts name no path and quote no
// error: a readiness probe answers whoever asks; the log has the detail.
var (
	// ErrNotLoaded: the store has not been read yet (Reload never ran).
	ErrNotLoaded = errors.New("the state store has not been read yet")
	// ErrStoreUnreadable: the last read of the store failed, so every tool
	// is locked (disabled_unknown) until it can be read. A store out of
	// reach before the gate ever read it is this too: nothing was loaded.
	ErrStoreUnreadable = errors.New("the state store cannot be read (see the log)")
	// ErrConfigUnusable: the operator's config has an error, so every tool
	// is locked until it is fixed.
	ErrConfigUnusable = errors.New("mcpwrap's config file has an error (see the log)")
	// ErrStoreUnavailable: the store is out of reach for now
	// (state.ErrUnavailable) and the gate judges by the state it read
	// last. Ready reports it as degraded: the replica still serves.
	ErrStoreUnavailable = errors.New("the state store is out of reach; tools are judged by the state read last (see the log)")
)

// Ready reports whether the gate judges calls by a policy it has loaded:
// nil once the operator's config is usable and the last read of the store
// succeeded, else [ErrConfigUnusable], [ErrNotLoaded] or
// [ErrStoreUnreadable]. While the store is out of reach after a read, the
// gate still judges by that read: Ready returns [ErrStoreUnavailable] in an
// error whose Degraded method reports true, so that a probe can tell a
// replica that still serves (a database outage must not take every replica
// out of the balancer at once) from one that cannot. It reads memory only,
// so a probe costs no store read. Safe for concurrent use.
func (g *Gate) Ready(context.Context) error {
	if g.ConfigErr() != nil {
		return ErrConfigUnusable
	}
	g.mu.RLock()
	applied, errUse, stale := g.applied, g.errUse, g.stale
	g.mu.RUnlock()
	switch {
	case applied == 0:
		return ErrNotLoaded
	case errUse != nil:
		return ErrStoreUnreadable
	case stale != nil:
		return degradedError{ErrStoreUnavailable}
	}
	return nil
}

// degradedError is a reason Ready gives while the gate still judges calls.
type degradedError struct{ error }

// Degraded reports true: the replica serves, by the state it read last.
func (degradedError) Degraded() bool  { return true }
func (e degradedError) Unwrap() error { return e.error }

// refuseUntrusted marks refused each tool of a catalog that has no name
// anyone can trust because another definition claims its name too (see
// tooldef.Index), as the sidecar's catalog index does.
func refuseUntrusted(raws []json.RawMessage, tools []policy.Tool) {
	var index tooldef.Index
	index.Grow(len(tools))
	for i, t := range tools {
		var err error
		if t.Refused {
			err = errRefused
		}
		index.Add(raws[i], tooldef.Def{Name: t.Name}, err)
	}
	for i := range tools {
		if index.Name(i) == "" {
			tools[i].Refused = true
		}
	}
}

// errRefused stands for the reason a cached tool was refused.
var errRefused = errors.New("refused tool definition")

// Remediation implements middleware.ToolPolicy. A tool locked
// disabled_unknown because the config file or the state store cannot be
// used is told that cause, and who can fix it.
func (g *Gate) Remediation(status, tool string) string {
	if policy.Status(status) == policy.DisabledUnknown {
		if err := g.ConfigErr(); err != nil {
			return policy.ConfigErrorRemediation(err)
		}
		if err := g.StoreErr(); err != nil {
			return policy.StoreErrorRemediation(err)
		}
	}
	return policy.RemediationFor(policy.Status(status), g.server, tool)
}

// Rejection implements middleware.ToolPolicy, telling the cause of a
// disabled_unknown lock as Remediation does.
func (g *Gate) Rejection(status, tool, discoveryTool string) string {
	if policy.Status(status) == policy.DisabledUnknown {
		if err := g.ConfigErr(); err != nil {
			return policy.ConfigErrorRejection(err, discoveryTool)
		}
		if err := g.StoreErr(); err != nil {
			return policy.StoreErrorRejection(err, discoveryTool)
		}
	}
	return policy.RejectionText(policy.Status(status), g.server, tool, discoveryTool)
}

// Notice implements middleware.PolicyNotifier: while the config file or
// the state store cannot be used, every discovery answer says so, whatever
// it matched; while tools are pending approval, every discovery answer
// names them.
func (g *Gate) Notice() string {
	if err := g.ConfigErr(); err != nil {
		return policy.ConfigErrorRemediation(err)
	}
	if err := g.StoreErr(); err != nil {
		return policy.StoreErrorRemediation(err)
	}
	pending := g.Pending()
	if len(pending) == 0 {
		return ""
	}
	return policy.PendingNotice(len(pending), named(pending), g.server)
}

// CatalogSeen records a full catalog loaded from the upstream as the
// server's last seen catalog and, under tofu approval with no baseline yet,
// approves it as the baseline. It writes only when something changed. If
// the store cannot be written, Watch records the catalog once it can.
func (g *Gate) CatalogSeen(ctx context.Context, raws []json.RawMessage) {
	g.recording.Lock()
	defer g.recording.Unlock()
	g.record(ctx, raws)
}

// recordUnrecorded records the catalog CatalogSeen could not, if there is
// one and the store can now be read, and reports whether that changed the
// server's state.
func (g *Gate) recordUnrecorded(ctx context.Context) bool {
	g.recording.Lock()
	defer g.recording.Unlock()
	g.mu.RLock()
	raws, readable := g.unrecorded, g.errUse == nil
	g.mu.RUnlock()
	if raws == nil || !readable {
		return false
	}
	return g.record(ctx, raws)
}

// record is CatalogSeen; it reports whether the server's state changed.
// The caller holds g.recording.
func (g *Gate) record(ctx context.Context, raws []json.RawMessage) bool {
	tools := make([]policy.Tool, len(raws))
	cache := make(map[string]policy.Tool, len(raws))
	size := 0
	for i, raw := range raws {
		tools[i] = g.tool(raw)
		if _, ok := cache[string(raw)]; !ok {
			cache[string(raw)] = tools[i]
			size += cacheSize(string(raw), tools[i])
		}
	}
	g.mu.Lock()
	g.tools, g.cacheBytes = cache, size // what older catalogs defined is no longer evaluated
	g.mu.Unlock()
	refuseUntrusted(raws, tools)

	eval := g.eval.Load()
	now := g.now().UTC()
	err := g.store.Update(ctx, g.server, func(srv *state.Server) error {
		catalog := &state.Catalog{SeenAt: now, Tools: make(map[string]state.CatalogTool, len(raws))}
		for i, t := range tools {
			if !t.Refused { // a refused tool has no name to record it under
				catalog.Tools[t.Name] = state.CatalogTool{Definition: raws[i], Hash: t.Hash}
			}
		}
		if srv.Catalog == nil || !sameTools(srv.Catalog.Tools, catalog.Tools) {
			srv.Catalog = catalog
		}
		// Judged by the state being updated, not by the last snapshot,
		// which may predate the user moving the state file aside.
		if eval.Evaluate(tools, snapshot(srv), nil).RecordBaseline {
			for name, t := range catalog.Tools {
				srv.Approve(name, state.Approval{ApprovedAt: now, Definition: t.Definition, Hash: t.Hash})
			}
			g.log.Info("first catalog approved as the baseline (tofu)", "tools", len(catalog.Tools))
		}
		return nil
	})
	g.mu.Lock()
	g.unrecorded = nil
	if err != nil {
		g.unrecorded = raws
	} else {
		g.catalog = tools
	}
	g.mu.Unlock()
	if err != nil {
		g.log.Error("cannot record the catalog in the state store", "error", err)
		return false
	}
	changed := g.Reload(ctx)
	g.refreshPending()
	return changed
}

// maxNamed bounds the tools a log line or notice names.
const maxNamed = 10

// Pending returns the tools of the last catalog recorded that are locked
// pending approval (new, or changed since the user approved them), sorted,
// as of the last catalog recorded, store reload or policy change. The
// caller must not modify the result.
func (g *Gate) Pending() []string {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.pending
}

// pendingNow computes Pending; the caller holds g.mu.
func (g *Gate) pendingNow() []string {
	if len(g.catalog) == 0 || g.errUse != nil {
		return nil
	}
	var names []string
	for _, e := range g.eval.Load().Evaluate(g.catalog, g.user, nil).Entries {
		if e.Status == policy.PendingApproval {
			names = append(names, g.catalog[e.Index].Name)
		}
	}
	slices.Sort(names)
	return names
}

// refreshPending recomputes Pending and logs at warn when tools became
// pending approval since it last looked: a dependency bump that changed
// definitions locks them, and the user must learn which, and how to unlock
// them.
func (g *Gate) refreshPending() {
	g.mu.Lock()
	pending := g.pendingNow()
	var fresh []string
	for _, name := range pending {
		if _, was := slices.BinarySearch(g.pending, name); !was {
			fresh = append(fresh, name)
		}
	}
	g.pending = pending
	g.mu.Unlock()
	if len(fresh) == 0 {
		return
	}
	g.log.Warn("tools are locked pending approval: new, or changed since they were approved; review and approve them with mcpwrap tools or in the panel (mcpwrap ui)",
		"count", len(pending), "newly_pending", len(fresh), "tools", named(fresh),
		"review", fmt.Sprintf("mcpwrap tools diff %s %s", policy.ShellWord(g.server), policy.ShellWord(fresh[0])),
		"approve", fmt.Sprintf("mcpwrap tools approve %s %s", policy.ShellWord(g.server), strings.Join(shellWords(first(fresh)), " ")))
}

// named renders at most maxNamed names, and how many more there are.
func named(names []string) string {
	out := strings.Join(first(names), ", ")
	if n := len(names) - maxNamed; n > 0 {
		out += fmt.Sprintf(" and %d more", n)
	}
	return out
}

func first(names []string) []string { return names[:min(len(names), maxNamed)] }

func shellWords(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = policy.ShellWord(n)
	}
	return out
}

// sameTools reports whether two catalogs hold the same definitions. The
// definitions are compared whole, not by hash alone: members the hash does
// not cover, such as annotations, matter to the CLI. The store re-indents
// the definitions it keeps, so they are compared without whitespace.
func sameTools(a, b map[string]state.CatalogTool) bool {
	if len(a) != len(b) {
		return false
	}
	for name, t := range a {
		u, ok := b[name]
		if !ok || u.Hash != t.Hash || !sameJSON(u.Definition, t.Definition) {
			return false
		}
	}
	return true
}

// sameJSON reports whether a and b are the same JSON text but for
// insignificant whitespace.
func sameJSON(a, b json.RawMessage) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var ca, cb bytes.Buffer
	return json.Compact(&ca, a) == nil && json.Compact(&cb, b) == nil && bytes.Equal(ca.Bytes(), cb.Bytes())
}

// UserState returns a snapshot of one server's user state as the policy
// classifier reads it. Any recorded approval counts as the tofu baseline:
// the first catalog is approved whole, so a server with approvals has one.
func UserState(srv *state.Server) policy.UserState { return snapshot(srv) }

// userState is an immutable snapshot of one server's user state.
type userState struct {
	disabled map[string]bool
	approved map[string]string
}

func snapshot(srv *state.Server) userState {
	u := userState{}
	if len(srv.Disabled) > 0 {
		u.disabled = make(map[string]bool, len(srv.Disabled))
		for _, t := range srv.Disabled {
			u.disabled[t] = true
		}
	}
	if len(srv.Approvals) > 0 {
		u.approved = make(map[string]string, len(srv.Approvals))
		for t, a := range srv.Approvals {
			u.approved[t] = a.Hash
		}
	}
	return u
}

func (u userState) Disabled(tool string) bool       { return u.disabled[tool] }
func (u userState) ApprovedHash(tool string) string { return u.approved[tool] }
func (u userState) Baseline() bool                  { return len(u.approved) > 0 }

// RememberedUpstream implements middleware.UpstreamMemory: what the server
// said of itself in its last successful load, as the store last read says
// (by any sidecar of the server). While the config turns the server off it
// leaves out the protocol version agreed to: no Session answers a client's
// initialize from memory (middleware.OnDemand) as if the server would
// start; its load fails as disabled and the client is told so, with the
// capabilities and serverInfo remembered (see middleware.UpstreamMemory).
func (g *Gate) RememberedUpstream() (middleware.UpstreamInfo, bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.upstream == nil {
		return middleware.UpstreamInfo{}, false
	}
	u := g.upstream
	info := middleware.UpstreamInfo{Capabilities: u.Capabilities, ServerInfo: u.ServerInfo, Instructions: u.Instructions, ProtocolVersion: u.ProtocolVersion}
	if g.ServerDisabled() {
		info.ProtocolVersion = ""
	}
	return info, true
}

// UpstreamSeen implements middleware.UpstreamMemory: it records what the
// server said of itself in a successful load, writing only when that
// differs from what the store holds. A load through server/discover
// agrees to no protocol version: the one an initialize agreed to is kept.
func (g *Gate) UpstreamSeen(ctx context.Context, u middleware.UpstreamInfo) {
	seen := &state.Upstream{SeenAt: g.now().UTC(), Capabilities: u.Capabilities, ServerInfo: u.ServerInfo,
		Instructions: u.Instructions, ProtocolVersion: u.ProtocolVersion}
	g.mu.Lock()
	if seen.ProtocolVersion == "" && g.upstream != nil {
		seen.ProtocolVersion = g.upstream.ProtocolVersion
	}
	g.upstream = seen // this process advertises it at once, written or not
	g.mu.Unlock()
	err := g.store.Update(ctx, g.server, func(srv *state.Server) error {
		rec := *seen // seen is shared once published
		if rec.ProtocolVersion == "" && srv.Upstream != nil {
			rec.ProtocolVersion = srv.Upstream.ProtocolVersion
		}
		if srv.Upstream.Same(&rec) {
			return errUnchanged
		}
		srv.Upstream = &rec
		return nil
	})
	switch {
	case err == nil, errors.Is(err, errUnchanged):
	case ctx.Err() != nil:
		// The session ended first (waiting for another process's lock,
		// say): nothing failed, and the next load writes it.
		g.log.Debug("the session ended before the server's capabilities were remembered", "error", err)
	default:
		g.log.Warn("cannot remember the server's capabilities in the state store", "error", err)
	}
}

// errUnchanged ends a store update that has nothing to write.
var errUnchanged = errors.New("unchanged")

var _ middleware.UpstreamMemory = (*Gate)(nil)
