package upstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/mcpwrap/mcpwrap/internal/era"
	"github.com/mcpwrap/mcpwrap/internal/framing"
)

// outbound is one client message on its way to the server, with the few
// facts the transport routes on. body is a private copy, sent byte for byte.
type outbound struct {
	body        []byte
	kind        framing.Kind
	method      string      // of a request or notification
	calls       [][]byte    // raw ids of the requests that expect an answer
	metaVersion string      // _meta protocol version of a request, if any
	name        string      // tool or prompt name, or resource URI: the Mcp-Name header
	params      []byte      // of a request; aliases body
	header      http.Header // added to its request (WithRequestHeader), or nil
}

// newOutbound copies msg and peeks at it. A message that does not parse is
// still sent as is: the server owns the verdict on it.
func newOutbound(msg []byte) *outbound {
	out := &outbound{body: bytes.Clone(msg)}
	env, err := framing.Peek(out.body)
	if err != nil {
		return out
	}
	out.kind, out.method = env.Kind, env.Method
	switch env.Kind {
	case framing.Request:
		out.calls = [][]byte{env.ID}
		out.params = env.Params
		out.metaVersion, out.name = requestFacts(env.Method, env.Params)
	case framing.Batch:
		var elems []json.RawMessage
		if json.Unmarshal(out.body, &elems) == nil {
			for _, elem := range elems {
				if e, err := framing.Peek(elem); err == nil && e.Kind == framing.Request {
					out.calls = append(out.calls, e.ID)
				}
			}
		}
	}
	return out
}

// requestFacts picks the protocol version from a request's _meta and the
// name the Mcp-Name header carries, without decoding anything else.
func requestFacts(method string, params []byte) (metaVersion, name string) {
	// Only 2026-07-28 requests need these facts, and they all carry the
	// version in _meta: skip the others (a tool's arguments may be large).
	if !bytes.Contains(params, []byte(era.MetaProtocolVersion)) {
		return "", ""
	}
	if metaVersion, name, ok := requestFactsInPlace(method, params); ok {
		return metaVersion, name
	}
	return requestFactsDecoded(method, params)
}

// requestFactsInPlace is requestFactsDecoded read in place, without a
// decoder; ok is false when a member is spelled in a way parsers may read
// differently, which is then left to encoding/json, as the server reads it.
func requestFactsInPlace(method string, params []byte) (metaVersion, name string, ok bool) {
	var member [3][]byte // _meta, name, uri
	for i, key := range [...]string{"_meta", "name", "uri"} {
		raw, _, err := framing.LookupMember(params, key)
		if err != nil {
			return "", "", false
		}
		member[i] = raw
	}
	meta, nameRaw, uriRaw := member[0], member[1], member[2]
	// What makes encoding/json refuse the whole struct: the facts are
	// then none.
	if meta != nil && meta[0] != '{' && string(meta) != "null" {
		return "", "", true
	}
	strs := [2]string{}
	for i, raw := range [][]byte{nameRaw, uriRaw} {
		if raw == nil || string(raw) == "null" {
			continue
		}
		s, err := framing.String(raw)
		if err != nil {
			return "", "", true
		}
		strs[i] = s
	}
	if meta != nil && meta[0] == '{' {
		version, found, err := framing.LookupMember(meta, era.MetaProtocolVersion)
		if err != nil {
			return "", "", false
		}
		if found {
			metaVersion, _ = framing.String(version) // not a string: none
		}
	}
	switch method {
	case "tools/call", "prompts/get":
		name = strs[0]
	case "resources/read":
		name = strs[1]
	}
	return metaVersion, name, true
}

// requestFactsDecoded is requestFacts by encoding/json.
func requestFactsDecoded(method string, params []byte) (metaVersion, name string) {
	var p struct {
		Name string                     `json:"name"`
		URI  string                     `json:"uri"`
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil {
		return "", ""
	}
	if raw, ok := p.Meta[era.MetaProtocolVersion]; ok {
		_ = json.Unmarshal(raw, &metaVersion)
	}
	switch method {
	case "tools/call", "prompts/get":
		name = p.Name
	case "resources/read":
		name = p.URI
	}
	return metaVersion, name
}

// idKey canonicalises a raw JSON-RPC id so that a response can be matched to
// its request however either side spelled the id.
func idKey(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return "s:" + s
		}
	}
	text := string(raw)
	if n, err := strconv.ParseInt(text, 10, 64); err == nil {
		return "n:" + strconv.FormatInt(n, 10)
	}
	if strings.ContainsAny(text, ".eE") {
		if f, err := strconv.ParseFloat(text, 64); err == nil {
			if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
				return "n:" + strconv.FormatInt(int64(f), 10) // 1.0 is 1
			}
			return "n:" + strconv.FormatFloat(f, 'g', -1, 64)
		}
	}
	return "r:" + text // including integers beyond int64, compared digit by digit
}

// pendingCalls tracks which of a POST's requests are still unanswered.
type pendingCalls map[string][]byte // idKey → raw id

func newPendingCalls(ids [][]byte) pendingCalls {
	p := make(pendingCalls, len(ids))
	for _, id := range ids {
		p[idKey(id)] = id
	}
	return p
}

// answeredIDs returns the raw ids of the requests msg answers: its id for
// a response, the ids of its responses for a batch. msg may also be the head
// of a message too large to deliver: framing.Peek stops early there, but an
// id it read before a method still names the request answered.
func answeredIDs(msg []byte) [][]byte {
	env, err := framing.Peek(msg)
	switch {
	case env.Kind == framing.Response:
		return [][]byte{env.ID}
	case env.Kind == framing.Batch:
		var elems []json.RawMessage
		if json.Unmarshal(msg, &elems) != nil {
			return nil
		}
		var ids [][]byte
		for _, elem := range elems {
			if e, err := framing.Peek(elem); err == nil && e.Kind == framing.Response {
				ids = append(ids, e.ID)
			}
		}
		return ids
	case err != nil && env.ID != nil && !headHasMethod(msg):
		return [][]byte{env.ID}
	}
	return nil
}

// headHasMethod reports whether the head of a JSON object, possibly cut
// short, has a top-level "method" member: whether it belongs to a request or
// notification rather than a response. framing.Peek cannot say, since it
// reports the method only for a complete message.
func headHasMethod(head []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(head))
	depth, wantKey := 0, false
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		delim, isDelim := tok.(json.Delim)
		switch {
		case depth == 1 && wantKey:
			if tok == "method" {
				return true
			}
			wantKey = false
			continue
		case isDelim && (delim == '{' || delim == '['):
			depth++
			if depth > 1 {
				continue
			}
		case isDelim:
			depth--
		}
		// A value at the top level is complete: a member name comes next.
		wantKey = depth == 1
	}
}

// answered removes the requests msg answers and reports whether any was
// pending here.
func (p pendingCalls) answered(msg []byte) bool {
	found := false
	for _, id := range answeredIDs(msg) {
		key := idKey(id)
		_, ok := p[key]
		delete(p, key)
		found = found || ok
	}
	return found
}

// errNotJSON reports a server message that is not JSON.
var errNotJSON = errors.New("not a JSON value")

// normalize prepares a message from the server for the relay: it trims the
// surrounding whitespace and, only when the message spans several lines (a
// pretty-printed body, a multi-line SSE data field), compacts it, because
// the client side frames messages by newlines. Otherwise the bytes are left
// exactly as the server sent them.
func normalize(msg []byte) ([]byte, error) {
	msg = bytes.TrimSpace(msg)
	if !json.Valid(msg) {
		return nil, errNotJSON
	}
	if !bytes.ContainsAny(msg, "\r\n") {
		return msg, nil
	}
	var b bytes.Buffer
	b.Grow(len(msg))
	if err := json.Compact(&b, msg); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// initializeVersion returns the protocolVersion of an initialize result.
func initializeVersion(result []byte) string {
	var r struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if json.Unmarshal(result, &r) != nil {
		return ""
	}
	return r.ProtocolVersion
}

// validHeaderValue reports whether s can be sent as an HTTP header value:
// no control characters other than tab.
func validHeaderValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}
