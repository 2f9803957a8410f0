package middleware

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

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
	members, err := framing.Members(env.Result)
	if err != nil {
		s.log.Warn("malformed tools/list result; passed through", "error", err)
		return msg
	}
	var toolsVal []byte
	lastPage := true
	for _, m := range members {
		switch string(m.Name) {
		case `"tools"`:
			toolsVal = m.Value
		case `"nextCursor"`:
			lastPage = bytes.Equal(m.Value, []byte("null")) || bytes.Equal(m.Value, []byte(`""`))
		}
	}
	if toolsVal == nil {
		return msg
	}
	page, err := framing.Elements(toolsVal)
	if err != nil {
		s.log.Warn("malformed tools array; passed through", "error", err)
		return msg
	}
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
	var b bytes.Buffer
	b.Grow(len(toolsVal) + 512)
	b.WriteByte('[')
	for i, t := range kept {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(t)
	}
	if discovery {
		if len(kept) > 0 {
			b.WriteByte(',')
		}
		b.Write(s.discoveryDefinition(locked))
	}
	b.WriteByte(']')
	return framing.Splice(msg, toolsVal, b.Bytes())
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
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// gateCall decides a client's tools/call: it answers calls to the discovery
// tool, to locked tools and to out-of-scope tools itself and reports true;
// it reports false for calls to forward.
func (s *Session) gateCall(ctx context.Context, env framing.Envelope) bool {
	var p callParams
	if err := json.Unmarshal(env.Params, &p); err != nil {
		return false // the upstream answers malformed params its own way
	}
	if p.Name == s.discoveryName() {
		s.reply(env.ID, s.discover(ctx, p.Arguments))
		return true
	}
	tool, ok := s.catalogTool(ctx, p.Name)
	if !ok {
		// A tool the catalog does not have: it may be new (the upstream
		// announced a change the refresh has not caught up with), so look
		// again, and judge it by its name alone if it is still missing. New
		// tools are never let through unjudged.
		s.refreshCatalog(ctx)
		if tool, ok = s.catalogTool(ctx, p.Name); !ok {
			tool = minimalTool(p.Name)
		}
	}
	a := s.Tools.Evaluate([]json.RawMessage{tool})[0]
	switch {
	case !a.InScope:
		s.replyError(env.ID, codeInvalidParams, fmt.Sprintf("unknown tool %q", p.Name))
	case a.Status != "":
		s.mu.Lock()
		s.stats.Rejections++
		s.mu.Unlock()
		s.log.Info("call to a locked tool rejected", "tool", p.Name, "status", a.Status)
		s.reply(env.ID, toolError(s.Tools.Rejection(a.Status, p.Name, s.discoveryName()), map[string]any{"status": a.Status}))
	default:
		return false
	}
	return true
}

func minimalTool(name string) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"name": name})
	return b
}

// catalogTool returns the definition of the named tool, loading the catalog
// first when it is not known yet.
func (s *Session) catalogTool(ctx context.Context, name string) (json.RawMessage, bool) {
	s.mu.Lock()
	known := s.catalogKnown
	s.mu.Unlock()
	if !known {
		s.refreshCatalog(ctx)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.catalogIndex[name]
	if !ok {
		return nil, false
	}
	return s.catalog[i], true
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

// refreshCatalog loads the upstream's full catalog with the sidecar's own
// tools/list requests, following every page, then announces a change of the
// visible tool set to the client.
func (s *Session) refreshCatalog(ctx context.Context) {
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
			return
		}
		var r struct {
			Tools      []json.RawMessage `json:"tools"`
			NextCursor string            `json:"nextCursor"`
		}
		if err := json.Unmarshal(res, &r); err != nil {
			s.log.Warn("malformed tools/list result", "error", err)
			return
		}
		all = append(all, r.Tools...)
		if r.NextCursor == "" {
			break
		}
		cursor = r.NextCursor
	}
	names := make([]string, len(all))
	index := make(map[string]int, len(all))
	for i, t := range all {
		names[i] = toolName(t)
		index[names[i]] = i
	}
	s.mu.Lock()
	s.catalog, s.catalogNames, s.catalogIndex, s.catalogKnown = all, names, index, true
	s.mu.Unlock()
	if s.CatalogSeen != nil {
		s.CatalogSeen(all)
	}
	s.ReevaluateTools()
}

// ReevaluateTools recomputes which tools the client can see and, when that
// changed since the client last learned it, sends the client
// notifications/tools/list_changed. Call it when the policy's inputs change
// (for example the user state store). It is safe for concurrent use.
func (s *Session) ReevaluateTools() {
	s.once.Do(s.init)
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
	if known && prev != sig.String() {
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
