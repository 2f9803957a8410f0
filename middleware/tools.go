package middleware

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"slices"
	"strings"
	"time"

	"github.com/mcpwrap/mcpwrap/internal/framing"
	"github.com/mcpwrap/mcpwrap/internal/tooldef"
	"github.com/mcpwrap/mcpwrap/resilience"
)

// This file holds the interception of tools/list and tools/call, which only
// happens when Session.Tools is set.

func (s *Session) discoveryName() string {
	if s.DiscoveryTool != "" {
		return s.DiscoveryTool
	}
	return DefaultDiscoveryTool
}

// upstreamState is the upstream's status as the agent is told it.
func (s *Session) upstreamState() UpstreamState {
	o := s.Status()
	u := UpstreamState{Status: o.Class, Attempts: o.Attempts}
	if o.Class != resilience.Available {
		u.Message = o.Message()
		if o.Err != nil {
			u.Error = o.Err.Error()
		}
	}
	return u
}

// policy returns the ToolPolicy, or one that locks nothing.
func (s *Session) policy() ToolPolicy {
	if s.Tools == nil {
		return openPolicy{}
	}
	return s.Tools
}

// openPolicy is the policy of a Session without one: every tool callable.
type openPolicy struct{}

func (openPolicy) Evaluate(tools []json.RawMessage) []Availability {
	out := make([]Availability, len(tools))
	for i := range out {
		out[i].InScope = true
	}
	return out
}

func (openPolicy) Remediation(string, string) string       { return "" }
func (openPolicy) Rejection(string, string, string) string { return "" }

// catalogView is the full upstream catalog with its evaluation.
type catalogView struct {
	tools []json.RawMessage
	index *tooldef.Index // never nil
	avail []Availability
}

func (v catalogView) locked() int {
	n := 0
	for _, a := range v.avail {
		if a.InScope && a.Status != "" {
			n++
		}
	}
	return n
}

// view evaluates the cached catalog against the current policy. With a
// VersionedPolicy it also publishes the verdicts, unless the catalog
// changed meanwhile (its setter evaluates the new one), for callVerdict.
func (s *Session) view() catalogView {
	snap := s.cat.verdicts.Load()
	if snap == nil {
		return catalogView{index: new(tooldef.Index)}
	}
	return catalogView{tools: snap.tools, index: snap.index, avail: s.evaluate(snap)}
}

// evaluate asks the policy for its verdicts on the catalog snap holds, as
// the sidecar applies them (see untrusted), and with a VersionedPolicy
// publishes them unless the catalog changed meanwhile. The caller may
// modify what it returns.
func (s *Session) evaluate(snap *verdicts) []Availability {
	var version uint64
	if s.versioned != nil {
		version = s.versioned.Version() // before Evaluate: a change during it leaves the verdicts stale, never wrong
	}
	avail := s.policy().Evaluate(snap.tools)
	for i := range avail {
		if snap.names[i] == "" {
			avail[i] = untrusted
		}
	}
	if s.versioned != nil {
		s.cat.publish(snap, slices.Clone(avail), version)
	}
	return avail
}

// catalogVerdicts returns the verdicts on the catalog snap holds as of the
// policy's current version, to be read only: those published when they are
// current, else evaluated (and published) now. It returns nil when the
// policy is not a VersionedPolicy, whose verdicts are asked of it for each
// definition judged.
func (s *Session) catalogVerdicts(snap *verdicts) []Availability {
	if s.versioned == nil {
		return nil
	}
	if cur := s.cat.verdicts.Load(); cur.index == snap.index {
		snap = cur // the same catalog, maybe evaluated since
	}
	if snap.avail != nil && snap.version == s.versioned.Version() {
		return snap.avail
	}
	return s.evaluate(snap)
}

// callVerdict returns the policy's verdict on a call to the named tool, a
// definition of the loaded catalog: known is false when no catalog is
// loaded or no definition is trusted under name, and claimed then reports
// whether one claims it nonetheless (see untrusted). While the policy's
// version is the one the catalog was evaluated at, it takes no lock and
// allocates nothing; otherwise it asks the policy about the definition.
func (s *Session) callVerdict(name string) (a Availability, known, claimed bool) {
	snap := s.cat.verdicts.Load()
	if snap == nil {
		return Availability{}, false, false
	}
	i, known, claimed := snap.index.Lookup(name)
	if !known {
		return Availability{}, false, claimed
	}
	if snap.avail != nil && snap.version == s.versioned.Version() {
		return snap.avail[i], true, true
	}
	return s.Tools.Evaluate([]json.RawMessage{snap.tools[i]})[0], true, true
}

// untrusted is the availability of a tool definition that has no name the
// sidecar can trust (see tooldef: it is ambiguous or malformed, or another
// definition claims its name too), whatever the policy says: an upstream
// could show the client one tool under that name and run another. It is
// listed nowhere and counted as locked, and a call under any name it claims
// is answered by the sidecar.
var untrusted = Availability{InScope: true, Status: statusUnknown}

// statusUnknown is the status of a tool whose availability cannot be
// determined; the policy explains it like any other status.
const statusUnknown = "disabled_unknown"

// statusServerDisabled is the status of every tool of a server the
// operator turned off, which is never started (see
// resilience.CodeServerDisabled).
const statusServerDisabled = resilience.CodeServerDisabled

// showDiscovery reports whether the discovery tool is listed, given how many
// tools are locked.
func (s *Session) showDiscovery(locked int) bool {
	switch s.Discovery {
	case DiscoveryAlways:
		return true
	case DiscoveryNever:
		return false
	}
	return locked > 0 || !s.upstreamState().Available()
}

// rewriteToolsList removes locked and out-of-scope tools from a tools/list
// response and appends the discovery tool on the last page when it is
// shown. When there is nothing to change it returns msg itself, so the
// client gets the upstream's bytes.
func (s *Session) rewriteToolsList(msg []byte, env framing.Envelope) []byte {
	guide := pageGuide{snap: s.cat.verdicts.Load()}
	members, err := framing.MembersSplitKnown(env.Result, func(name string) bool { return strings.EqualFold(name, "tools") }, guide.snap.knownDefinitions())
	if err != nil {
		s.log.Warn("malformed tools/list result; passed through", "error", err)
		return msg
	}
	// Names are compared decoded, as a client reads them. A second "tools",
	// or one in another letter case (which Go's encoding/json matches), could
	// be the array a client reads: refused rather than guessed.
	var toolsVal []byte
	var page [][]byte
	lastPage, ambiguous, cached := true, false, false
	for _, m := range members {
		key, err := m.Key()
		switch {
		case err != nil:
			ambiguous = true
		case key == "tools" && toolsVal == nil:
			toolsVal, page, guide.at = m.Value, m.Elements, m.Known
		case strings.EqualFold(key, "tools"):
			ambiguous = true
		case key == "nextCursor":
			lastPage = bytes.Equal(m.Value, []byte("null")) || bytes.Equal(m.Value, []byte(`""`))
		case key == "ttlMs":
			cached = !bytes.Equal(m.Value, []byte("0"))
		}
	}
	if ambiguous {
		s.log.Warn(`ambiguous tools/list result refused: "tools" appears more than once or in another case`)
		return errorResponse(env.ID, codeInternalError, `the upstream's tools/list result is ambiguous ("tools" appears more than once or in another case); refused`, nil)
	}
	if toolsVal == nil {
		return msg
	}
	if page == nil {
		s.log.Warn("tools/list result whose tools is not an array; passed through")
		return msg
	}
	v := s.pageVerdicts(page, guide)
	kept, locked := 0, 0
	for k := range page {
		switch a := v.at(k); {
		case a.Callable():
			kept++
		case a.InScope:
			locked++
		}
	}
	// Earlier pages of this walk may have had locked tools even when the
	// catalog has not been loaded yet.
	locked = s.cat.walkPage(locked, lastPage)
	discovery := lastPage && s.showDiscovery(locked)
	if kept == len(page) && !discovery {
		return msg
	}
	var discoveryDef []byte
	if discovery {
		discoveryDef = s.discoveryDefinition(locked)
	}
	out := framing.SpliceFunc(msg, toolsVal, len(toolsVal)+len(discoveryDef)+1, func(b []byte) []byte {
		b = append(b, '[')
		first := true
		for k, t := range page {
			if !v.at(k).Callable() {
				continue
			}
			if !first {
				b = append(b, ',')
			}
			b, first = append(b, t...), false
		}
		if discovery {
			if kept > 0 {
				b = append(b, ',')
			}
			b = append(b, discoveryDef...)
		}
		return append(b, ']')
	})
	if cached {
		out = uncached(out)
	}
	return out
}

// uncached sets the ttlMs of a rewritten list result (the 2026-07-28
// protocol's cache lifetime) to 0: which tools the sidecar shows may change
// at any moment (a user's toggle, an approval, the upstream's status), and
// a client learns of it from notifications/tools/list_changed, not from a
// lifetime the upstream chose for its own list.
func uncached(msg []byte) []byte {
	env, err := framing.Peek(msg)
	if err != nil {
		return msg
	}
	members, err := framing.Members(env.Result)
	if err != nil {
		return msg
	}
	for _, m := range members {
		if key, err := m.Key(); err == nil && key == "ttlMs" {
			return framing.Splice(msg, m.Value, []byte("0"))
		}
	}
	return msg
}

func rawList(items [][]byte) []json.RawMessage {
	out := make([]json.RawMessage, len(items))
	for i, it := range items {
		out[i] = it
	}
	return out
}

// discoveryDefinition is the discovery tool as listed in tools/list, given
// how many tools are locked.
func (s *Session) discoveryDefinition(locked int) []byte {
	up := s.upstreamState()
	var desc string
	switch {
	case !up.Available():
		desc = fmt.Sprintf("Server '%s' is not available (%s); call this tool to learn why and whether waiting helps.", s.Name, up.Status)
	default:
		desc = fmt.Sprintf("Find the tools of server '%s' by query. %d tool(s) are locked; call with include_disabled: true to see them and who can unlock them.", s.Name, locked)
	}
	def := map[string]any{
		"name":        s.discoveryName(),
		"description": desc,
		"inputSchema": map[string]any{
			"type": "object",
			"properties": map[string]any{
				"query":            map[string]any{"type": "string", "description": "words or a substring to match in tool names and descriptions; empty matches all"},
				"limit":            map[string]any{"type": "integer", "minimum": 1, "description": "most callable tools to return (default 15)"},
				"include_disabled": map[string]any{"type": "boolean", "description": "also list locked tools, each with its status, and how to unlock them"},
			},
		},
		"annotations": map[string]any{"readOnlyHint": true},
	}
	b, _ := json.Marshal(def)
	return b
}

// callParams are the members of tools/call params the gate reads.
type callParams struct {
	Name      string
	Arguments json.RawMessage
}

// errAmbiguousCall is why the gate refuses tools/call params it cannot
// judge as surely as any upstream would read them.
var errAmbiguousCall = errors.New(`params must be an object with exactly one member "name", a string`)

// parseCall reads the tools/call params of env the way any upstream reads
// them, or refuses them: the envelope's Name is nil when a second "name"
// or a "name" in another letter case (which Go's encoding/json would
// match) makes it ambiguous, or when params is not an object (see
// framing.Envelope); a name that is not a string is refused too. Unknown
// members are ignored. framing read the members in its one pass over the
// message, so this costs no scan of params, however large. The name of a
// tool in the catalog comes back as the catalog's own string, which costs
// no allocation.
func (s *Session) parseCall(env framing.Envelope) (callParams, error) {
	if env.Name == nil {
		return callParams{}, errAmbiguousCall
	}
	var known framing.Interner
	if snap := s.cat.verdicts.Load(); snap != nil {
		known = snap.index
	}
	name, err := framing.StringKnown(env.Name, known)
	if err != nil {
		return callParams{}, errAmbiguousCall
	}
	return callParams{Name: name, Arguments: env.Arguments}, nil
}

// gateCall decides a client's tools/call: it answers calls to the discovery
// tool, to locked tools and to out-of-scope tools itself and forwards the
// rest. A call it cannot judge without loading the catalog is judged off
// the client pump, so that the client's answers to the upstream's requests
// (which the upstream may need before it serves tools/list) keep flowing;
// while it waits it is held (see hold), and refused past the bounds. held
// says msg is kept already (see keep); gateCall releases it.
func (s *Session) gateCall(ctx context.Context, msg []byte, env framing.Envelope, held bool) {
	p, err := s.parseCall(env)
	if err != nil {
		s.log.Warn("tools/call refused", "error", err)
		s.replyError(env.ID, codeInvalidParams, "Invalid params: "+err.Error())
		s.unhold(msg, held)
		return
	}
	// Staleness first: a verdict read before it could be of the catalog
	// the upstream announced stale, the refresh ending in between.
	stale := s.catalogStale()
	a, known, claimed := s.callVerdict(p.Name)
	if s.hooks.verdictRead != nil {
		s.hooks.verdictRead(p.Name)
	}
	if stale {
		known, claimed = false, false // wait for the catalog the upstream announced
	}
	switch {
	case p.Name == s.discoveryName() && s.cat.verdicts.Load() != nil:
		s.reply(env.ID, s.discover(ctx, p.Arguments))
		s.unhold(msg, held)
		return
	case known:
		s.judge(ctx, msg, env, p.Name, a)
		s.unhold(msg, held)
		return
	case claimed:
		s.rejectUntrusted(env.ID, p.Name)
		s.unhold(msg, held)
		return
	}
	s.gateCallLater(ctx, msg, env, held)
}

// gateCallLater is gateCall for a call that waits for the catalog: it keeps
// msg and judges it off the client pump. It is a function of its own so
// that what its goroutine captures escapes to the heap here only, not on
// gateCall's path for a tool the catalog knows.
func (s *Session) gateCallLater(ctx context.Context, msg []byte, env framing.Envelope, held bool) {
	msg, env, ok := s.keep(msg, env, held)
	if !ok {
		return
	}
	p, _ := s.parseCall(env) // its Arguments alias the kept copy
	if !s.gating.start() {
		s.answerUnready(ctx, env)
		s.unhold(msg, true)
		return
	}
	// The catalog is not loaded yet, or lacks the tool: it may be new (the
	// upstream announced a change the refresh has not caught up with), so
	// look again, joining a load under way. New tools are never let
	// through unjudged.
	loaded := s.catalogLoad(ctx)
	go func() {
		defer s.gating.done()
		<-loaded.done
		if err := loaded.err; err != nil && p.Name != s.discoveryName() {
			if s.readyLink() == nil {
				s.awaitUpstream(ctx, msg, env, true) // the upstream crashed: wait for its restart
				return
			}
			// Fail closed, telling the agent why the catalog is unknown
			// (its load fails the upstream's: see firstCatalog).
			o := resilience.Outcome{Server: s.Name, Err: s.catalogError(err)}
			o.Class = o.Err.Class
			s.reply(env.ID, toolError(o.Message(), statusMeta(o)))
			s.unhold(msg, true)
			return
		}
		switch a, known, claimed := s.callVerdict(p.Name); {
		case p.Name == s.discoveryName():
			s.reply(env.ID, s.discover(ctx, p.Arguments))
		case known:
			s.judge(ctx, msg, env, p.Name, a)
		case claimed:
			s.rejectUntrusted(env.ID, p.Name)
		default:
			s.judgeUnlisted(ctx, msg, env, p)
		}
		s.unhold(msg, true)
	}()
}

// judge answers or forwards a tools/call to the named tool of the catalog
// given the policy's verdict on it (see callVerdict).
func (s *Session) judge(ctx context.Context, msg []byte, env framing.Envelope, name string, a Availability) {
	switch {
	case !a.InScope:
		s.replyError(env.ID, codeInvalidParams, fmt.Sprintf("unknown tool %q", name))
	case a.Status != "":
		s.reject(env.ID, name, a.Status)
	default:
		s.send(ctx, msg, env)
	}
}

// judgeUnlisted answers or forwards a call to a tool the loaded catalog
// does not list. Such a tool has no definition anyone approved, so while
// approval is on (Availability.Pinned) the sidecar answers the call itself
// as one to an unknown tool; with approval off, a name the policy lets on
// by its name alone is forwarded for the upstream to answer. Either way no
// answer names a remediation: there is nothing to approve or enable.
func (s *Session) judgeUnlisted(ctx context.Context, msg []byte, env framing.Envelope, p callParams) {
	a := s.Tools.Evaluate([]json.RawMessage{minimalTool(p.Name)})[0]
	if a.Callable() && !a.Pinned {
		s.send(ctx, msg, env)
		return
	}
	s.log.Info("call to a tool the upstream does not list answered as unknown", "tool", p.Name)
	s.replyError(env.ID, codeInvalidParams, fmt.Sprintf("unknown tool %q", p.Name))
}

// rejectUntrusted answers a call under a name that a definition of the
// catalog claims but the sidecar cannot trust (see untrusted).
func (s *Session) rejectUntrusted(id []byte, tool string) {
	s.log.Warn("call under the name of an ambiguous tool definition refused", "tool", tool)
	s.reject(id, tool, statusUnknown)
}

// reject answers a call to a tool locked with status.
func (s *Session) reject(id []byte, tool, status string) {
	s.counts.rejections.Add(1)
	s.log.Info("call to a locked tool rejected", "tool", tool, "status", status)
	s.reply(id, toolError(s.policy().Rejection(status, tool, s.listedDiscoveryName()), rejectionMeta(status)))
}

// listedDiscoveryName is the discovery tool a text may send the agent to:
// "" when it is never listed, since the agent cannot see it.
func (s *Session) listedDiscoveryName() string {
	if s.Discovery == DiscoveryNever {
		return ""
	}
	return s.discoveryName()
}

// rejectionMeta is the _meta of a call rejected for a lock with status: the
// status, and the class and retryability every status answer carries (see
// statusMeta). A lock is lifted only by someone acting on it (the user, the
// operator): retrying the call will not help.
func rejectionMeta(status string) map[string]any {
	return map[string]any{"status": status, "class": resilience.Permanent.String(), "retryable": false}
}

func minimalTool(name string) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"name": name})
	return b
}

// ToolDefinition returns the upstream's definition of the named tool, as
// last loaded (raw JSON, not to be modified); false when the catalog is not
// loaded yet or lacks the tool. A transport uses it to check what a
// definition asks of a call, such as the headers it designates. It is safe
// for concurrent use.
func (s *Session) ToolDefinition(name string) (json.RawMessage, bool) {
	s.once.Do(s.init)
	tool, known, _ := s.catalogTool(name)
	return tool, known
}

// catalogTool returns the definition of the named tool in the loaded
// catalog; known is false when the catalog is not loaded or no definition
// is trusted under the name, and claimed then reports whether one claims
// it nonetheless (see untrusted).
func (s *Session) catalogTool(name string) (tool json.RawMessage, known, claimed bool) {
	snap := s.cat.verdicts.Load()
	if snap == nil {
		return nil, false, false
	}
	i, known, claimed := snap.index.Lookup(name)
	if !known {
		return nil, false, claimed
	}
	return snap.tools[i], true, true
}

// catalogStale reports whether the upstream announced a change of its
// tools that the catalog does not hold yet.
func (s *Session) catalogStale() bool {
	return s.cat.refreshing.Load() // no lock on the call path
}

// toolError is a tools/call result with isError set.
func toolError(text string, meta map[string]any) json.RawMessage {
	b, _ := json.Marshal(map[string]any{
		"content": []any{map[string]any{"type": "text", "text": text}},
		"isError": true,
		"_meta":   meta,
	})
	return b
}

// catalogTimeout bounds one load of the catalog, so that an upstream that
// never answers the sidecar's own tools/list cannot hold a call forever.
const catalogTimeout = 30 * time.Second

// refreshCatalog loads the upstream's full catalog, or waits for the load
// under way, and returns how it ended.
func (s *Session) refreshCatalog(ctx context.Context) error {
	l := s.catalogLoad(ctx)
	<-l.done
	return l.err
}

// catalogLoad starts a load of the catalog, or joins the one under way
// (one at a time: each walks every page, and two finishing out of order
// could keep the older), and returns it. A load is under way until it has
// ended whole (catalog kept, recorded and re-evaluated): a caller that
// finds none running and a catalog loaded gets a fresh load, never the
// tail of one whose pages were read before it asked.
func (s *Session) catalogLoad(ctx context.Context) *catalogLoading {
	l, fresh := s.cat.startLoad()
	if !fresh {
		return l
	}
	if !s.background.Go(func() { s.cat.endLoad(l, s.loadAndKeepCatalog(ctx)) }) {
		s.cat.endLoad(l, errSessionEnded)
	}
	return l
}

// loadAndKeepCatalog loads the upstream's full catalog with the sidecar's
// own tools/list requests, following every page, then announces a change
// of the visible tool set to the client. A load during which the client was
// shown definitions the catalog lacked (see notePage), or the upstream
// announced a change of its tools, may hold older ones than those, so it
// is not kept: the catalog is loaded anew.
func (s *Session) loadAndKeepCatalog(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, catalogTimeout)
	defer cancel()
	for try := 1; ; try++ {
		merges := s.cat.mergeCount()
		all, err := s.loadCatalog(ctx)
		if err != nil {
			return err
		}
		s.cat.identities.warm(all)
		first, kept := s.cat.keep(all, merges)
		if !kept {
			if try < maxCatalogTries {
				continue
			}
			s.log.Warn("the tool catalog keeps changing while it loads")
			return errCatalogChanging
		}
		if first != nil {
			// The load's first catalog: the upstream is available, before
			// the visible set is recorded (it shows no discovery tool for an
			// unavailable upstream) and before anyone waiting for the
			// catalog reads the status.
			s.completeLoad()
			close(first)
		}
		if s.CatalogSeen != nil {
			s.CatalogSeen(all)
		}
		s.ReevaluateTools()
		return nil
	}
}

// DefaultMaxCatalogBytes is the bound on the tool catalog a zero
// [Session.MaxCatalogBytes] stands for: as large as the largest message by
// default.
const DefaultMaxCatalogBytes = DefaultMaxMessageBytes

// maxCatalogBytes returns MaxCatalogBytes or its default.
func (s *Session) maxCatalogBytes() int {
	if s.MaxCatalogBytes > 0 {
		return s.MaxCatalogBytes
	}
	return DefaultMaxCatalogBytes
}

// errCatalogTooLarge is why a catalog over MaxCatalogBytes is not loaded.
var errCatalogTooLarge = errors.New("the tool catalog exceeds the size mcpwrap keeps")

// maxCatalogTries bounds the loads of one refreshCatalog whose results are
// overtaken by what the client was shown.
const maxCatalogTries = 3

var errCatalogChanging = errors.New("the tool catalog changed while it loaded")

// errSessionEnded is why a catalog load is not started once Run is
// returning.
var errSessionEnded = errors.New("the session ended")

// loadCatalog reads every page of the upstream's catalog.
func (s *Session) loadCatalog(ctx context.Context) ([]json.RawMessage, error) {
	var all []json.RawMessage
	cursor, size := "", 0
	for page := 0; page < 1000; page++ {
		var params any
		if cursor != "" {
			params = map[string]string{"cursor": cursor}
		}
		res, err := s.Call(ctx, "tools/list", params)
		if err != nil {
			if ctx.Err() == nil { // not a shutdown
				s.log.Warn("cannot load the tool catalog", "error", err)
			}
			return nil, err
		}
		var r struct {
			Tools      []json.RawMessage `json:"tools"`
			NextCursor string            `json:"nextCursor"`
		}
		if err := json.Unmarshal(res, &r); err != nil {
			s.log.Warn("malformed tools/list result", "error", err)
			return nil, err
		}
		for _, t := range r.Tools {
			size += len(t)
		}
		if size > s.maxCatalogBytes() {
			s.log.Warn("the tool catalog is too large; not loaded", "bytes", size, "limit", s.maxCatalogBytes())
			return nil, fmt.Errorf("%w (%d bytes)", errCatalogTooLarge, s.maxCatalogBytes())
		}
		all = append(all, r.Tools...)
		if r.NextCursor == "" {
			break
		}
		cursor = r.NextCursor
	}
	return all, nil
}

// pageView is the verdict on each definition of a tools/list page.
type pageView struct {
	avail   []Availability // by definition of the page, when catalog is nil
	catalog []Availability // by position in the catalog
	pos     []int32        // each definition's position in the catalog, -1 for one without a trusted name
}

// at returns the verdict on definition k of the page.
func (v pageView) at(k int) Availability {
	switch {
	case v.catalog == nil:
		return v.avail[k]
	case v.pos[k] < 0:
		return untrusted
	}
	return v.catalog[v.pos[k]]
}

// pageGuide is where the splitter found the definitions of a tools/list
// page in a catalog (see framing.MembersSplitKnown): at holds, for each,
// its position in snap's catalog, or -1.
type pageGuide struct {
	snap *verdicts
	at   []int
}

// pageVerdicts merges a tools/list page the client is about to see into
// the catalog (see notePage) and returns the verdict on each of its
// definitions. Once a catalog is loaded, a definition is judged as the
// catalog's own, which the one tool-definition parser read once when it
// joined the catalog: under a VersionedPolicy by the verdicts kept for the
// catalog, without asking the policy again.
func (s *Session) pageVerdicts(page [][]byte, guide pageGuide) pageView {
	snap, pos := s.notePage(page, guide)
	if snap == nil {
		avail := s.Tools.Evaluate(rawList(page))
		for i, ok := range s.pageTrust(page) {
			if !ok {
				avail[i] = untrusted
			}
		}
		return pageView{avail: avail}
	}
	distrust(snap, page, pos)
	if catalog := s.catalogVerdicts(snap); catalog != nil {
		return pageView{catalog: catalog, pos: pos}
	}
	avail := s.Tools.Evaluate(rawList(page))
	for k, p := range pos {
		if p < 0 {
			avail[k] = untrusted
		}
	}
	return pageView{avail: avail}
}

// distrust sets to -1 the position of each definition of a page merged
// into the catalog snap holds, at positions pos (-1 for one the catalog
// could not take), that has no trusted name: the catalog does not trust
// it, or another definition of the page claims its name. Two definitions
// of the page that the catalog holds under one name are one definition
// spelled twice (distinct definitions claiming a name make it untrusted in
// the catalog); one it does not hold may claim any name.
func distrust(snap *verdicts, page [][]byte, pos []int32) {
	seen := make([]uint8, len(snap.tools)) // page definitions at each position, up to 2
	var claimed map[string]bool            // by definitions the catalog does not hold
	for k, p := range pos {
		switch {
		case p < 0:
			if claimed == nil {
				claimed = make(map[string]bool)
			}
			for _, name := range tooldef.Claims(page[k]) {
				claimed[name] = true
			}
		case seen[p] < 2:
			seen[p]++
		}
	}
	for k, p := range pos {
		if p >= 0 && (seen[p] > 1 || snap.names[p] == "" || claimed[snap.names[p]]) {
			pos[k] = -1
		}
	}
}

// notePage merges the tool definitions of a tools/list page the client is
// about to see into the loaded catalog, so that a call is judged by the
// definition the client saw, even when the upstream changed it without
// notifications/tools/list_changed. A change also reloads the whole
// catalog, to record it and announce what it changes. It returns the
// catalog merged into and the position in it of each definition of the
// page (-1 for one it could not take), or nil when no catalog is loaded.
func (s *Session) notePage(page [][]byte, guide pageGuide) (*verdicts, []int32) {
	m := s.cat.mergePage(page, guide, s.maxCatalogBytes())
	if m.dropped {
		s.log.Warn("tools/list shows tool definitions past the catalog's size limit; not shown", "limit", s.maxCatalogBytes())
	}
	if m.all == nil {
		return m.snap, m.pos
	}
	s.log.Info("tools/list shows tool definitions the catalog lacked; catalog updated")
	if s.CatalogSeen != nil {
		s.CatalogSeen(m.all)
	}
	s.reevaluate(false) // the client is being shown the change right now
	return m.snap, m.pos
}

// pageTrust is pageVerdicts' verdict on a page when no catalog is loaded:
// for each definition, whether a name is trusted for it.
func (s *Session) pageTrust(page [][]byte) []bool {
	var index tooldef.Index
	index.Grow(len(page))
	for _, t := range page {
		d, err := s.cat.identities.read(maphash.Bytes(catalogSeed, t), t)
		index.Add(t, d, err)
	}
	trusted := make([]bool, len(page))
	for i := range trusted {
		trusted[i] = index.Name(i) != ""
	}
	return trusted
}

// ReevaluateTools recomputes which tools the client can see and, when that
// changed since the client last learned it, sends the client
// notifications/tools/list_changed. Call it when the policy's inputs change
// (for example the user state store): with a [VersionedPolicy] it also
// re-evaluates the verdicts calls are judged from, which until then are
// asked of the policy one call at a time. It is safe for concurrent use.
func (s *Session) ReevaluateTools() {
	s.once.Do(s.init)
	s.reevaluate(true)
}

// reevaluate recomputes the visible tool set and, when notify is set and it
// changed, tells the client.
func (s *Session) reevaluate(notify bool) {
	// One at a time: a visible set computed from an older catalog must not
	// be stored after one computed from a newer catalog (a list change
	// nobody made would be announced).
	s.cat.reevaluating.Lock()
	defer s.cat.reevaluating.Unlock()
	if !s.cat.loaded() {
		return // nothing to compare with before the first catalog
	}
	v := s.view()
	var sig strings.Builder
	for i, a := range v.avail {
		if a.Callable() {
			sig.WriteString(v.index.Name(i))
			sig.WriteByte(0)
		}
	}
	if s.showDiscovery(v.locked()) {
		sig.WriteString("\x01discovery")
	}
	if changed := s.cat.setVisible(sig.String(), v.locked()); notify && changed {
		s.notifyToolsChanged()
	}
}

// reply sends the client a result response.
func (s *Session) reply(id []byte, result json.RawMessage) {
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  json.RawMessage `json:"result"`
	}{"2.0", id, result})
	if err := s.Client.WriteMessage(s.life, b); err != nil {
		s.log.Debug("cannot answer the client", "error", err)
	}
}
