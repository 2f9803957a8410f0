package middleware

import (
	"encoding/json"
	"strings"
)

// In the 2026-07-28 protocol there is no session: every request carries
// the protocol version, client info and client capabilities in its _meta
// (the client sent them with server/discover). The sidecar's own requests
// (catalog loads, pings, replays) must carry the client's, or a stateless
// server refuses them.

// metaPrefix marks the _meta keys the protocol itself defines.
const metaPrefix = "io.modelcontextprotocol/"

// withClientMeta returns params with the protocol _meta of the client's
// server/discover added, when the client opened the session that way;
// params unchanged otherwise, or when they carry a _meta of their own.
func (s *Session) withClientMeta(method string, params json.RawMessage) json.RawMessage {
	if method == "initialize" || method == "server/discover" {
		return params
	}
	s.mu.Lock()
	hs := s.hs
	s.mu.Unlock()
	if hs.Method != "server/discover" {
		return params
	}
	var discover struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(hs.Params, &discover) != nil {
		return params
	}
	meta := map[string]json.RawMessage{}
	for k, v := range discover.Meta {
		if strings.HasPrefix(k, metaPrefix) {
			meta[k] = v
		}
	}
	if len(meta) == 0 {
		return params
	}
	fields := map[string]json.RawMessage{}
	if len(params) > 0 && json.Unmarshal(params, &fields) != nil {
		return params // not an object: nothing to add to
	}
	if _, own := fields["_meta"]; own {
		return params
	}
	fields["_meta"], _ = json.Marshal(meta)
	out, err := json.Marshal(fields)
	if err != nil {
		return params
	}
	return out
}
