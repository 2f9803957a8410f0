package upstream

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/mcpwrap/mcpwrap/internal/framing"
)

// The 2026-07-28 protocol lets a tool designate arguments that a client
// also sends as HTTP headers (SEP-2243), so that gateways can route on
// them: a property of the tool's inputSchema annotated "x-mcp-header": NAME
// is sent, on a tools/call over HTTP, as the header Mcp-Param-NAME. The
// RemoteConn learns the annotations from the tools/list results it relays
// and adds the headers to the calls it POSTs, as the spec says a client
// must.

// paramHeaderPrefix starts the name of every tool-designated header.
const paramHeaderPrefix = "Mcp-Param-"

// paramBinding maps a (possibly nested) property of a tool's input to the
// header that carries it.
type paramBinding struct {
	path   []string
	header string // without the prefix
}

// schemaProperty is the part of an input schema property the annotations
// live in.
type schemaProperty struct {
	Type       string                    `json:"type"`
	XMCPHeader json.RawMessage           `json:"x-mcp-header"`
	Properties map[string]schemaProperty `json:"properties"`
}

// toolParamHeaders reads the x-mcp-header annotations of the tools of a
// tools/list result. A tool whose annotations are invalid (a property not
// of a primitive type, a name that is not an HTTP token, a name used twice
// in any letter case) gets none: a client must not call it, and its calls
// carry no header a gateway could misread.
func toolParamHeaders(result []byte) map[string][]paramBinding {
	var r struct {
		Tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"tools"`
	}
	if json.Unmarshal(result, &r) != nil {
		return nil
	}
	out := make(map[string][]paramBinding)
	for _, t := range r.Tools {
		var schema schemaProperty
		if json.Unmarshal(t.InputSchema, &schema) != nil {
			continue
		}
		bindings, ok := collectBindings(schema.Properties, nil, map[string]bool{}, nil)
		if ok && len(bindings) > 0 {
			out[t.Name] = bindings
		}
	}
	return out
}

func collectBindings(props map[string]schemaProperty, prefix []string, seen map[string]bool, out []paramBinding) ([]paramBinding, bool) {
	for name, prop := range props {
		path := append(append([]string(nil), prefix...), name)
		if prop.XMCPHeader != nil {
			var header string
			if json.Unmarshal(prop.XMCPHeader, &header) != nil || !validHeaderName(header) {
				return nil, false
			}
			switch prop.Type {
			case "string", "integer", "boolean":
			default:
				return nil, false
			}
			lower := strings.ToLower(header)
			if seen[lower] {
				return nil, false
			}
			seen[lower] = true
			out = append(out, paramBinding{path: path, header: header})
		}
		if len(prop.Properties) > 0 {
			var ok bool
			if out, ok = collectBindings(prop.Properties, path, seen, out); !ok {
				return nil, false
			}
		}
	}
	return out, true
}

// setParamHeaders sets the Mcp-Param headers of a tools/call whose params
// are params, from the tool's bindings: one for each designated argument
// present with a primitive value (null and absent ones get none).
func setParamHeaders(h http.Header, bindings []paramBinding, params []byte) {
	var p struct {
		Arguments map[string]json.RawMessage `json:"arguments"`
	}
	if json.Unmarshal(params, &p) != nil || p.Arguments == nil {
		return
	}
	for _, b := range bindings {
		raw, ok := lookupArgument(p.Arguments, b.path)
		if !ok {
			continue
		}
		if value, ok := headerValue(raw); ok {
			h.Set(paramHeaderPrefix+b.header, value)
		}
	}
}

func lookupArgument(args map[string]json.RawMessage, path []string) (json.RawMessage, bool) {
	cur, ok := args[path[0]]
	for _, part := range path[1:] {
		if !ok {
			return nil, false
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(cur, &obj) != nil {
			return nil, false
		}
		cur, ok = obj[part]
	}
	return cur, ok
}

// maxSafeInteger bounds the integers a JSON peer reads exactly.
const maxSafeInteger = 1<<53 - 1

// headerValue encodes an argument as a header value: a string as it is
// when it is printable ASCII without surrounding blanks (else, and when it
// looks like an encoded value, as =?base64?…?=), a boolean as true or false,
// an integer in decimal; any other value has no header form.
func headerValue(raw json.RawMessage) (string, bool) {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return "", false
	}
	switch v := v.(type) {
	case string:
		if needsBase64(v) {
			return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(v)) + "?=", true
		}
		return v, true
	case bool:
		return strconv.FormatBool(v), true
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) || v != math.Trunc(v) || math.Abs(v) > maxSafeInteger {
			return "", false
		}
		return strconv.FormatInt(int64(v), 10), true
	}
	return "", false
}

func needsBase64(s string) bool {
	if s == "" {
		return false
	}
	if s[0] == ' ' || s[0] == '\t' || s[len(s)-1] == ' ' || s[len(s)-1] == '\t' {
		return true
	}
	for _, c := range s {
		if c < 0x20 || c > 0x7e {
			return true
		}
	}
	return strings.HasPrefix(s, "=?base64?") && strings.HasSuffix(s, "?=")
}

// learnTools records the header annotations of a tools/list result msg.
// A page replaces what was known of its tools; tools of other pages stay.
func (c *RemoteConn) learnTools(msg []byte) {
	env, err := framing.Peek(msg)
	if err != nil || env.Kind != framing.Response || env.Result == nil {
		return
	}
	var r struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if json.Unmarshal(env.Result, &r) != nil {
		return
	}
	found := toolParamHeaders(env.Result)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range r.Tools {
		if b, ok := found[t.Name]; ok {
			c.paramHeaders[t.Name] = b
		} else {
			delete(c.paramHeaders, t.Name)
		}
	}
}
