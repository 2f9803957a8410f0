package state

import (
	"encoding/json"
	"time"
)

// Upstream is what a server said of itself in its last successful load:
// the capabilities and serverInfo of its handshake, as it sent them. A
// sidecar whose server is slower than its ready timeout answers the
// client's handshake itself, and advertises these, so that a client that
// follows capabilities still asks for resources and prompts once the
// server is ready.
type Upstream struct {
	// Capabilities is the server's capabilities object.
	Capabilities json.RawMessage `json:"capabilities"`
	// SeenAt is when the server said so.
	SeenAt time.Time `json:"seen_at"`
	// ServerInfo is the server's serverInfo (name, version, ...) object,
	// or nil when it sent none.
	ServerInfo json.RawMessage `json:"server_info,omitempty"`
}

// Same reports whether u says what v says, whenever each was seen (the
// store re-indents what it keeps, so the objects are compared without
// whitespace).
func (u *Upstream) Same(v *Upstream) bool {
	if u == nil || v == nil {
		return u == v
	}
	return sameJSON(u.Capabilities, v.Capabilities) && sameJSON(u.ServerInfo, v.ServerInfo)
}
