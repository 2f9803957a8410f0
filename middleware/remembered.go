package middleware

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"

	"github.com/mcpwrap/mcpwrap/internal/era"
)

// This file holds what the sidecar remembers of the upstream across
// sessions: the capabilities and serverInfo of its last successful load,
// which the degraded handshake advertises (see answerDegraded), so that a
// client that follows capabilities still asks for resources and prompts
// once the upstream is ready.

// UpstreamInfo is what an upstream said of itself in its handshake: its
// capabilities and its serverInfo, each a JSON object as it sent it, its
// instructions, and the protocol version it agreed to in an initialize.
type UpstreamInfo struct {
	Capabilities json.RawMessage
	ServerInfo   json.RawMessage // nil when it sent none
	Instructions string          // "" when it sent none
	// ProtocolVersion is the initialize result's protocolVersion; "" for a
	// server/discover, which agrees to none. A Session answers a client's
	// initialize from this memory only for the version remembered (see
	// OnDemand). A memory leaves it "" while the upstream is not to be
	// started (its server turned off), so that no client is greeted as if
	// it would start: its load fails, and the client is told why.
	ProtocolVersion string
}

// An UpstreamMemory is a [ToolPolicy] that also remembers, across sessions
// and processes, what the upstream said of itself in its last successful
// load (handshake and catalog). A Session that answers the client's
// handshake itself, the upstream not being ready within ReadyTimeout,
// advertises those capabilities (each list it names with listChanged, as
// the Session sends the list changes once the upstream is ready) and that
// serverInfo. Without one, or before the upstream ever loaded, it
// advertises only tools: the one list it can answer truly before then.
// A Session whose Dialer is [OnDemand] answers a client's initialize with
// what it remembers, as the upstream answered it (unless the memory
// withholds the version, see UpstreamInfo.ProtocolVersion), and starts the
// upstream only on the client's first request that needs it. Its methods
// must be safe for concurrent use; RememberedUpstream must not block.
type UpstreamMemory interface {
	// RememberedUpstream returns what the upstream said of itself in its
	// last successful load; false when it never loaded.
	RememberedUpstream() (UpstreamInfo, bool)
	// UpstreamSeen is called after each successful load with what the
	// upstream said of itself in it. It must not call back into the
	// Session.
	UpstreamSeen(ctx context.Context, u UpstreamInfo)
}

// maxRememberedBytes bounds what is remembered of an upstream: it is the
// upstream's to choose, and kept in a file every sidecar of the server
// reads.
const maxRememberedBytes = 64 << 10

// upstreamInfo reads what an upstream said of itself in result, its answer
// to the handshake method: initialize's capabilities, serverInfo,
// instructions and protocolVersion, or server/discover's capabilities,
// instructions and _meta serverInfo. It reports false for a result without
// a capabilities object, one whose serverInfo is no object, or one past
// maxRememberedBytes.
func upstreamInfo(method string, result json.RawMessage) (UpstreamInfo, bool) {
	var r struct {
		Capabilities    json.RawMessage            `json:"capabilities"`
		ServerInfo      json.RawMessage            `json:"serverInfo"`
		Instructions    string                     `json:"instructions"`
		ProtocolVersion string                     `json:"protocolVersion"`
		Meta            map[string]json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(result, &r) != nil {
		return UpstreamInfo{}, false
	}
	u := UpstreamInfo{Capabilities: r.Capabilities, ServerInfo: r.ServerInfo, Instructions: r.Instructions, ProtocolVersion: r.ProtocolVersion}
	if method == "server/discover" {
		u.ServerInfo, u.ProtocolVersion = r.Meta[era.MetaServerInfo], ""
	}
	if !isObject(u.Capabilities) || u.ServerInfo != nil && !isObject(u.ServerInfo) ||
		len(u.Capabilities)+len(u.ServerInfo)+len(u.Instructions)+len(u.ProtocolVersion) > maxRememberedBytes {
		return UpstreamInfo{}, false
	}
	return u, true
}

// same reports whether u and v say the same, their JSON objects compared
// by value (a store may re-indent what it keeps).
func (u UpstreamInfo) same(v UpstreamInfo) bool {
	return sameJSON(u.Capabilities, v.Capabilities) && sameJSON(u.ServerInfo, v.ServerInfo) &&
		u.Instructions == v.Instructions && u.ProtocolVersion == v.ProtocolVersion
}

// sameJSON reports whether a and b, JSON or nil, hold the same value:
// members in any order, whitespace aside.
func sameJSON(a, b json.RawMessage) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return bytes.Equal(a, b)
	}
	return reflect.DeepEqual(va, vb)
}

// isObject reports whether raw, valid JSON, is an object.
func isObject(raw json.RawMessage) bool {
	b := bytes.TrimSpace(raw)
	return len(b) > 0 && b[0] == '{'
}

// rememberUpstream gives the Session's UpstreamMemory, if it has one, what
// the upstream just loaded said of itself, off the load's path.
func (s *Session) rememberUpstream() {
	m, ok := s.Tools.(UpstreamMemory)
	if !ok {
		return
	}
	hs := s.hs.handshake()
	u, ok := upstreamInfo(hs.Method, hs.Result)
	if !ok {
		return
	}
	s.background.Go(func() { m.UpstreamSeen(s.runCtx(), u) })
}

// degradedSelf is what the sidecar says of the upstream when it answers
// the client's handshake itself: the capabilities and serverInfo the
// upstream's last successful load showed, when they are remembered, each
// list announced as changing (the real lists arrive with list_changed once
// the upstream is ready, see notifyListsChanged); else only tools, and a
// serverInfo of the sidecar's own.
func (s *Session) degradedSelf() (capabilities, serverInfo json.RawMessage) {
	var caps map[string]json.RawMessage
	serverInfo, _ = json.Marshal(map[string]any{"name": s.Name, "version": "mcpwrap-degraded"})
	if m, ok := s.Tools.(UpstreamMemory); ok {
		if u, ok := m.RememberedUpstream(); ok && json.Unmarshal(u.Capabilities, &caps) == nil && caps != nil {
			if isObject(u.ServerInfo) {
				serverInfo = u.ServerInfo
			}
		} else {
			caps = nil // what was remembered cannot be read: as if nothing was
		}
	}
	if caps == nil {
		caps = map[string]json.RawMessage{}
	}
	caps["tools"] = withListChanged(caps["tools"])
	for _, list := range changingLists {
		if raw, ok := caps[list]; ok {
			caps[list] = withListChanged(raw)
		}
	}
	capabilities, _ = json.Marshal(caps)
	return capabilities, serverInfo
}

// changingLists are the capabilities besides tools whose lists a client
// is told changed when the upstream becomes ready after the sidecar
// answered for it.
var changingLists = []string{"resources", "prompts"}

// withListChanged returns the capability object raw with listChanged true.
func withListChanged(raw json.RawMessage) json.RawMessage {
	c := map[string]json.RawMessage{}
	if json.Unmarshal(raw, &c) != nil || c == nil {
		c = map[string]json.RawMessage{}
	}
	c["listChanged"] = json.RawMessage("true")
	b, _ := json.Marshal(c)
	return b
}

// notifyListsChanged tells the client that the lists of resources and
// prompts changed, those the ready upstream's handshake names: it becomes
// available after the client was told it was not (its handshake answered
// by the sidecar, with empty lists until now, or a restart after a crash,
// whose upstream's lists may differ).
func (s *Session) notifyListsChanged() {
	hs := s.hs.handshake()
	u, ok := upstreamInfo(hs.Method, hs.Result)
	if !ok {
		return
	}
	var caps map[string]json.RawMessage
	if json.Unmarshal(u.Capabilities, &caps) != nil {
		return
	}
	for _, list := range changingLists {
		if _, ok := caps[list]; ok {
			msg := []byte(`{"jsonrpc":"2.0","method":"notifications/` + list + `/list_changed"}`)
			if err := s.Client.WriteMessage(s.life, msg); err != nil {
				s.log.Debug("cannot notify the client", "error", err)
			}
		}
	}
}
