package erabridge

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"sync"
)

// The requestState a 2026-07-28 client is handed with an input-required
// round of the bridge's (SEP-2322) is the bridge's own: the round's random
// id and a MAC, under a key of this process, over that id and what the
// round is bound to (the request's method, its tool or prompt name or
// resource URI, and its arguments). A client cannot make one up (forge), use
// one twice (the round is gone once resumed: replay), or resume another
// request's round with it (steal): the retried request must be the one the
// round was opened for.

// statePrefix starts every requestState the bridge hands out; its version.
const statePrefix = "mcpwrap1."

// roundIDLen is the size of a round's random id, in bytes.
const roundIDLen = 16

// processKey is the MAC key of this process's requestStates.
var processKey = sync.OnceValue(func() []byte {
	k := make([]byte, 32)
	_, _ = rand.Read(k) // never fails (crypto/rand)
	return k
})

// ErrBadState is returned for a requestState the bridge did not hand out
// for this request, or not in this process.
var ErrBadState = errors.New("erabridge: requestState is not one mcpwrap handed out for this request")

// binding is what a round is bound to: the request it was opened for.
type binding struct {
	method, name string
	arguments    json.RawMessage
}

// digest hashes b, the arguments read as every parser reads them (their
// canonical encoding), so that a retry that spells them otherwise binds
// the same.
func (b binding) digest() []byte {
	h := sha256.New()
	h.Write([]byte(b.method))
	h.Write([]byte{0})
	h.Write([]byte(b.name))
	h.Write([]byte{0})
	if len(b.arguments) > 0 {
		var v any
		if json.Unmarshal(b.arguments, &v) == nil {
			canon, _ := json.Marshal(v)
			h.Write(canon)
		} else {
			h.Write(b.arguments)
		}
	}
	return h.Sum(nil)
}

// newRoundID returns a fresh round id.
func newRoundID() string {
	var b [roundIDLen]byte
	_, _ = rand.Read(b[:])
	return string(b[:])
}

// sealState returns the requestState of the round with id, bound to b.
func sealState(key []byte, id string, b binding) string {
	return statePrefix + base64.RawURLEncoding.EncodeToString([]byte(id)) + "." + base64.RawURLEncoding.EncodeToString(stateMAC(key, id, b))
}

func stateMAC(key []byte, id string, b binding) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id))
	m.Write(b.digest())
	return m.Sum(nil)
}

// openState checks state, a requestState a client sent back with a
// request bound as b, and returns the id of the round it names. It does not
// say whether the round is still open: the caller looks it up, and forgets
// it when resumed.
func openState(key []byte, state string, b binding) (id string, err error) {
	id, mac, ok := parseState(state)
	if !ok || !hmac.Equal(mac, stateMAC(key, id, b)) {
		return "", ErrBadState
	}
	return id, nil
}

// parseState splits a requestState into its round id and MAC, strictly:
// anything but the one spelling sealState writes is refused.
func parseState(state string) (id string, mac []byte, ok bool) {
	rest, found := strings.CutPrefix(state, statePrefix)
	if !found {
		return "", nil, false
	}
	idText, macText, found := strings.Cut(rest, ".")
	if !found {
		return "", nil, false
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(idText)
	if err != nil || len(raw) != roundIDLen {
		return "", nil, false
	}
	mac, err = base64.RawURLEncoding.Strict().DecodeString(macText)
	if err != nil || len(mac) != sha256.Size {
		return "", nil, false
	}
	return string(raw), mac, true
}
