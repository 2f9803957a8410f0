// Package erabridge lets a client of one MCP protocol era use a server of
// the other: the 2025 session era (initialize, a session, server requests)
// and the 2026-07-28 stateless era (server/discover, a _meta on every
// request, input-required rounds, subscriptions/listen; SEP-2575,
// SEP-2322). Its [Wrap] is a [middleware.Conn] decorator that sits
// between a [middleware.Session] and the upstream it dialled: the Session
// speaks its client's era, the upstream its own, and the Session never
// learns that eras exist.
//
// The facts of the eras (versions, _meta keys) are internal/era's; this
// package has the one place a 2026-07-28 _meta is read ([ParseMeta]) and a
// member removed ([RemoveMembers]); a member is set in place by
// [framing.SetMember].
package erabridge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/mcpwrap/mcpwrap/internal/era"
	"github.com/mcpwrap/mcpwrap/internal/framing"
)

// Pin is which era the upstream is taken to speak: [Auto] finds out.
type Pin string

// The pins. The zero value is Auto.
const (
	Auto      Pin = "auto"
	Session   Pin = era.SessionVersion   // initialize only
	Stateless Pin = era.StatelessVersion // server/discover only
)

// DefaultPin is the pin of a server the config says nothing of.
const DefaultPin = Auto

// ParsePin reads a pin as the flag and the config file spell it.
func ParsePin(s string) (Pin, error) {
	switch p := Pin(s); p {
	case "", Auto:
		return Auto, nil
	case Session, Stateless:
		return p, nil
	}
	return "", fmt.Errorf("%q: want auto, %s or %s", s, era.SessionVersion, era.StatelessVersion)
}

// Meta is what a stateless request's _meta says of its client, read once
// by [ParseMeta]. Raw members are as sent, nil when absent.
type Meta struct {
	ProtocolVersion    string
	ClientInfo         json.RawMessage
	ClientCapabilities json.RawMessage
	SubscriptionID     json.RawMessage
}

// ErrBadMeta is wrapped by ParseMeta's error for a _meta parsers read
// differently (a key spelled twice, or in another letter case) or of the
// wrong type.
var ErrBadMeta = errors.New("erabridge: ambiguous or malformed _meta")

// ParseMeta reads the _meta of params, a request's or notification's
// params, as every parser reads it: found is false when there is none.
func ParseMeta(params []byte) (m Meta, found bool, err error) {
	if len(params) == 0 {
		return m, false, nil
	}
	raw, found, err := framing.LookupMember(params, "_meta")
	if err != nil {
		return m, false, fmt.Errorf("%w: %v", ErrBadMeta, err)
	}
	if !found {
		return m, false, nil
	}
	if _, err := framing.Members(raw); err != nil {
		return m, true, fmt.Errorf("%w: _meta is not an object", ErrBadMeta)
	}
	get := func(key string) (json.RawMessage, error) {
		v, ok, err := framing.LookupMember(raw, key)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBadMeta, err)
		}
		if !ok {
			return nil, nil
		}
		return v, nil
	}
	v, err := get(era.MetaProtocolVersion)
	if err != nil {
		return m, true, err
	}
	if v != nil {
		if m.ProtocolVersion, err = framing.String(v); err != nil {
			return m, true, fmt.Errorf("%w: the protocol version is not a string", ErrBadMeta)
		}
	}
	if m.ClientInfo, err = get(era.MetaClientInfo); err != nil {
		return m, true, err
	}
	if m.ClientCapabilities, err = get(era.MetaClientCapabilities); err != nil {
		return m, true, err
	}
	if m.SubscriptionID, err = get(era.MetaSubscriptionID); err != nil {
		return m, true, err
	}
	return m, true, nil
}

// setParamsMeta returns msg, a request or notification whose envelope is
// env, with each of the members kv (key, raw value pairs) set in its
// params' _meta (made when absent or null); when keep is set, a key _meta
// has already is left as it is. msg is never written.
func setParamsMeta(msg []byte, env framing.Envelope, keep bool, kv ...[2][]byte) ([]byte, error) {
	meta, found, err := framing.LookupMember(env.Params, "_meta")
	if err != nil {
		return nil, err
	}
	if found && bytes.Equal(meta, []byte("null")) {
		found = false
	}
	m := meta
	if !found {
		m = []byte("{}")
	}
	for _, p := range kv {
		if keep && found {
			if _, ok, err := framing.LookupMember(m, string(p[0])); err != nil {
				return nil, err
			} else if ok {
				continue
			}
		}
		if m, err = framing.SetMember(m, string(p[0]), p[1]); err != nil {
			return nil, err
		}
	}
	if found {
		return framing.Splice(msg, meta, m), nil
	}
	return framing.SetMemberPath(msg, []string{"params", "_meta"}, m)
}

// RemoveMembers returns obj, a JSON object, without its members named in
// names (exactly); obj itself when it has none of them. obj is never
// written.
func RemoveMembers(obj []byte, names ...string) []byte {
	members, err := framing.Members(obj)
	if err != nil {
		return obj
	}
	off := func(part []byte) int { return cap(obj) - cap(part) }
	var out []byte
	from := 0 // obj[from:] is still to copy
	for i, m := range members {
		key, err := framing.String(m.Name)
		if err != nil || !slices.Contains(names, key) {
			continue
		}
		start, end := off(m.Name), off(m.Value)+len(m.Value)
		switch {
		case i+1 < len(members): // up to the next member's name
			end = off(members[i+1].Name)
		case i > 0: // from the previous member's end
			prev := members[i-1].Value
			start = off(prev) + len(prev)
		}
		if start < from { // the previous member was removed up to this one's name
			start = from
		}
		out = append(out, obj[from:start]...)
		from = end
	}
	if out == nil && from == 0 {
		return obj
	}
	return append(out, obj[from:]...)
}

// withoutClientMeta returns msg, whose envelope is env, without the
// era.ClientMetaKeys of its params' _meta, and its envelope; msg and env
// themselves when it has none.
func withoutClientMeta(msg []byte, env framing.Envelope) ([]byte, framing.Envelope) {
	meta := member(env.Params, "_meta")
	if meta == nil {
		return msg, env
	}
	stripped := RemoveMembers(meta, era.ClientMetaKeys...)
	if len(stripped) == len(meta) {
		return msg, env
	}
	out := framing.Splice(msg, meta, stripped)
	oenv, err := framing.Peek(out)
	if err != nil {
		return msg, env
	}
	return out, oenv
}
