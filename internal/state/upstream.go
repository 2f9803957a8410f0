package state

import (
	"encoding/json"
	"time"
)

// Upstream is what a server said of itself in its last successful load:
// the capabilities, serverInfo and instructions of its handshake, as it
// sent them, and the protocol version it agreed to. A sidecar whose server
// is slower than its ready timeout answers the client's handshake itself,
// and advertises these, so that a client that follows capabilities still
// asks for resources and prompts once the server is ready; a --listen
// session answers an initialize with them and starts its server on the
// first request that needs it.
type Upstream struct {
	// Capabilities is the server's capabilities object.
	Capabilities json.RawMessage `json:"capabilities"`
	// Instructions are the server's instructions, "" when it sent none.
	Instructions string `json:"instructions,omitempty"`
	// ProtocolVersion is the protocol version the server agreed to in
	// its last initialize, "" when it never answered one.
	ProtocolVersion string `json:"protocol_version,omitempty"`
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
	return sameJSON(u.Capabilities, v.Capabilities) && sameJSON(u.ServerInfo, v.ServerInfo) &&
		u.Instructions == v.Instructions && u.ProtocolVersion == v.ProtocolVersion
}
