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

	"golang.org/x/sync/singleflight"

	"github.com/mcpwrap/mcpwrap/internal/framing"
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
	u := UpstreamState{Status: o.Class.String(), Attempts: o.Attempts}
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
	names []string
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

// view evaluates the cached catalog against the current policy.
func (s *Session) view() catalogView {
	s.mu.Lock()
	v := catalogView{tools: s.catalog, names: s.catalogNames}
	s.mu.Unlock()
	v.avail = s.policy().Evaluate(v.tools)
	return v
}

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
	members, err := framing.MembersSplit(env.Result, func(name string) bool { return strings.EqualFold(name, "tools") })
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
			toolsVal, page = m.Value, m.Elements
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
	s.notePage(page)
	avail := s.Tools.Evaluate(rawList(page))
	kept := make([][]byte, 0, len(page))
	locked := 0
	for i, a := range avail {
		switch {
		case a.Callable():
			kept = append(kept, page[i])
		case a.InScope:
			locked++
		}
	}
	// Earlier pages of this walk may have had locked tools even when the
	// catalog has not been loaded yet.
	s.mu.Lock()
	s.walkLocked += locked
	locked = max(s.walkLocked, s.locked)
	if lastPage {
		s.walkLocked = 0
	}
	s.mu.Unlock()
	discovery := lastPage && s.showDiscovery(locked)
	if len(kept) == len(page) && !discovery {
		return msg
	}
	var discoveryDef []byte
	if discovery {
		discoveryDef = s.discoveryDefinition(locked)
	}
	out := framing.SpliceFunc(msg, toolsVal, len(toolsVal)+len(discoveryDef)+1, func(b []byte) []byte {
		b = append(b, '[')
		for i, t := range kept {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, t...)
		}
		if discovery {
			if len(kept) > 0 {
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

// toolName reads a raw tool definition's name.
func toolName(tool json.RawMessage) string {
	var t struct {
		Name string `json:"name"`
	}
	_ = json.Unmarshal(tool, &t)
	return t.Name
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

// parseCall reads tools/call params the way any upstream reads them, or
// refuses them: member names are compared after decoding their escapes,
// and a second "name" or a "name" in another letter case (which Go's
// encoding/json would match) is ambiguous, as is a name that is not a
// string. Unknown members are ignored.
func parseCall(params []byte) (callParams, error) {
	var p callParams
	members, err := framing.Members(params)
	if err != nil {
		return p, errAmbiguousCall
	}
	names := 0
	for _, m := range members {
		key, err := m.Key()
		if err != nil {
			return p, errAmbiguousCall
		}
		switch {
		case key == "arguments" && p.Arguments == nil:
			p.Arguments = m.Value
		case strings.EqualFold(key, "name"):
			names++
			if key != "name" || json.Unmarshal(m.Value, &p.Name) != nil {
				return p, errAmbiguousCall
			}
		}
	}
	if names != 1 {
		return p, errAmbiguousCall
	}
	return p, nil
}

// gateCall decides a client's tools/call: it answers calls to the discovery
// tool, to locked tools and to out-of-scope tools itself and forwards the
// rest. A call it cannot judge without loading the catalog is judged off
// the client pump, so that the client's answers to the upstream's requests
// (which the upstream may need before it serves tools/list) keep flowing.
func (s *Session) gateCall(ctx context.Context, msg []byte, env framing.Envelope) {
	p, err := parseCall(env.Params)
	if err != nil {
		s.log.Warn("tools/call refused", "error", err)
		s.replyError(env.ID, codeInvalidParams, "Invalid params: "+err.Error())
		return
	}
	tool, known := s.catalogTool(p.Name)
	if known || (p.Name == s.discoveryName() && s.catalogLoaded()) {
		s.judge(ctx, msg, env, p, tool)
		return
	}
	msg = bytes.Clone(msg) // it is only valid until the pump reads again
	env, _ = framing.Peek(msg)
	p, _ = parseCall(env.Params)
	if !s.startGating() {
		s.answerUnready(ctx, env)
		return
	}
	// The catalog is not loaded yet, or lacks the tool: it may be new (the
	// upstream announced a change the refresh has not caught up with), so
	// look again, joining a load under way. New tools are never let
	// through unjudged.
	loaded := s.catalogLoad(ctx)
	go func() {
		defer s.doneGating()
		if err := (<-loaded).Err; err != nil && p.Name != s.discoveryName() {
			if s.readyLink() == nil {
				s.answerUnready(ctx, env)
				return
			}
			s.reject(env.ID, p.Name, "disabled_unknown") // fail closed
			return
		}
		tool, known := s.catalogTool(p.Name)
		if !known {
			tool = minimalTool(p.Name) // judged by its name alone
		}
		s.judge(ctx, msg, env, p, tool)
	}()
}

// judge answers or forwards a tools/call given the definition of its tool.
func (s *Session) judge(ctx context.Context, msg []byte, env framing.Envelope, p callParams, tool json.RawMessage) {
	if p.Name == s.discoveryName() {
		s.reply(env.ID, s.discover(ctx, p.Arguments))
		return
	}
	a := s.Tools.Evaluate([]json.RawMessage{tool})[0]
	switch {
	case !a.InScope:
		s.replyError(env.ID, codeInvalidParams, fmt.Sprintf("unknown tool %q", p.Name))
	case a.Status != "":
		s.reject(env.ID, p.Name, a.Status)
	default:
		s.send(ctx, msg, env)
	}
}

// reject answers a call to a tool locked with status.
func (s *Session) reject(id []byte, tool, status string) {
	s.mu.Lock()
	s.stats.Rejections++
	s.mu.Unlock()
	s.log.Info("call to a locked tool rejected", "tool", tool, "status", status)
	s.reply(id, toolError(s.Tools.Rejection(status, tool, s.discoveryName()), map[string]any{"status": status}))
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
	return s.catalogTool(name)
}

// catalogTool returns the definition of the named tool in the loaded
// catalog; false when the catalog is not loaded or lacks the tool.
func (s *Session) catalogTool(name string) (json.RawMessage, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.catalogIndex[name]
	if !ok {
		return nil, false
	}
	return s.catalog[i], true
}

// catalogLoaded reports whether the upstream's catalog has been loaded.
func (s *Session) catalogLoaded() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.catalogKnown
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
	return (<-s.catalogLoad(ctx)).Err
}

// catalogLoad starts a load of the catalog, or joins the one under way
// (one at a time: each walks every page, and two finishing out of order
// could keep the older), and returns the channel its end is sent on.
func (s *Session) catalogLoad(ctx context.Context) <-chan singleflight.Result {
	return s.catalogLoads.DoChan("catalog", func() (any, error) { return nil, s.loadAndKeepCatalog(ctx) })
}

// loadAndKeepCatalog loads the upstream's full catalog with the sidecar's
// own tools/list requests, following every page, then announces a change
// of the visible tool set to the client. A load during which the client was
// shown definitions the catalog lacked (see notePage) may hold older ones
// than those, so it is not kept: the catalog is loaded anew.
func (s *Session) loadAndKeepCatalog(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, catalogTimeout)
	defer cancel()
	for try := 1; ; try++ {
		s.mu.Lock()
		merges := s.merges
		s.mu.Unlock()
		all, err := s.loadCatalog(ctx)
		if err != nil {
			return err
		}
		s.mu.Lock()
		stale := s.merges != merges
		if !stale {
			s.setCatalogLocked(all)
		}
		s.mu.Unlock()
		if stale {
			if try < maxCatalogTries {
				continue
			}
			s.log.Warn("the tool catalog keeps changing while it loads")
			return errCatalogChanging
		}
		if s.CatalogSeen != nil {
			s.CatalogSeen(all)
		}
		s.ReevaluateTools()
		return nil
	}
}

// maxCatalogTries bounds the loads of one refreshCatalog whose results are
// overtaken by what the client was shown.
const maxCatalogTries = 3

var errCatalogChanging = errors.New("the tool catalog changed while it loaded")

// loadCatalog reads every page of the upstream's catalog.
func (s *Session) loadCatalog(ctx context.Context) ([]json.RawMessage, error) {
	var all []json.RawMessage
	cursor := ""
	for page := 0; page < 1000; page++ {
		var params any
		if cursor != "" {
			params = map[string]string{"cursor": cursor}
		}
		res, err := s.Call(ctx, "tools/list", params)
		if err != nil {
			s.log.Warn("cannot load the tool catalog", "error", err)
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
		all = append(all, r.Tools...)
		if r.NextCursor == "" {
			break
		}
		cursor = r.NextCursor
	}
	return all, nil
}

// setCatalogLocked replaces the catalog; s.mu must be held. The slices it
// replaces are never modified, as views of them may be in use.
func (s *Session) setCatalogLocked(all []json.RawMessage) {
	names := make([]string, len(all))
	index := make(map[string]int, len(all))
	sums := make(map[uint64]struct{}, len(all))
	for i, t := range all {
		names[i] = toolName(t)
		index[names[i]] = i
		sums[maphash.Bytes(catalogSeed, t)] = struct{}{}
	}
	s.catalog, s.catalogNames, s.catalogIndex, s.catalogSums, s.catalogKnown = all, names, index, sums, true
}

// catalogSeed keys the hashes that spot a changed definition.
var catalogSeed = maphash.MakeSeed()

// notePage merges the tool definitions of a tools/list page the client is
// about to see into the loaded catalog, so that a call is judged by the
// definition the client saw, even when the upstream changed it without
// notifications/tools/list_changed. A change also reloads the whole
// catalog, to record it and announce what it changes.
func (s *Session) notePage(page [][]byte) {
	all, changed := s.mergePage(page)
	if !changed {
		return
	}
	s.log.Info("tools/list shows tool definitions the catalog lacked; catalog updated")
	if s.CatalogSeen != nil {
		s.CatalogSeen(all)
	}
	s.reevaluate(false) // the client is being shown the change right now
}

// mergePage is notePage's merge; it returns the catalog and whether it
// changed.
func (s *Session) mergePage(page [][]byte) ([]json.RawMessage, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.catalogKnown {
		return nil, false // the first load is under way
	}
	var all []json.RawMessage
	for _, t := range page {
		if _, ok := s.catalogSums[maphash.Bytes(catalogSeed, t)]; ok {
			continue
		}
		if all == nil {
			all = slices.Clone(s.catalog)
		}
		if i, ok := s.catalogIndex[toolName(t)]; ok {
			all[i] = bytes.Clone(t)
		} else {
			all = append(all, bytes.Clone(t))
		}
	}
	if all == nil {
		return nil, false
	}
	s.setCatalogLocked(all)
	s.merges++
	return all, true
}

// ReevaluateTools recomputes which tools the client can see and, when that
// changed since the client last learned it, sends the client
// notifications/tools/list_changed. Call it when the policy's inputs change
// (for example the user state store). It is safe for concurrent use.
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
	s.reevaluating.Lock()
	defer s.reevaluating.Unlock()
	s.mu.Lock()
	known := s.catalogKnown
	s.mu.Unlock()
	if !known {
		return // nothing to compare with before the first catalog
	}
	v := s.view()
	var sig strings.Builder
	for i, a := range v.avail {
		if a.Callable() {
			sig.WriteString(v.names[i])
			sig.WriteByte(0)
		}
	}
	if s.showDiscovery(v.locked()) {
		sig.WriteString("\x01discovery")
	}
	s.mu.Lock()
	prev, known := s.visible, s.visibleKnown
	s.visible, s.visibleKnown, s.locked = sig.String(), true, v.locked()
	s.mu.Unlock()
	if notify && known && prev != sig.String() {
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
	if err := s.Client.WriteMessage(b); err != nil {
		s.log.Debug("cannot answer the client", "error", err)
	}
}
