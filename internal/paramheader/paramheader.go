// Package paramheader implements the tool-designated HTTP headers of the
// 2026-07-28 MCP protocol (SEP-2243): a property of a tool's inputSchema
// annotated "x-mcp-header": NAME is also sent, on a tools/call over HTTP,
// as the header Mcp-Param-NAME, so that gateways can route on it. A client
// produces the headers from the tool definitions it has seen ([Headers]);
// a server checks that they match the body ([Validate]).
//
// Every function is pure and safe for concurrent use.
package paramheader

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/mcpwrap/mcpwrap/internal/framing"
)

// Prefix starts the name of every tool-designated header.
const Prefix = "Mcp-Param-"

// A Binding maps a (possibly nested) property of a tool's input to the
// header that carries it.
type Binding struct {
	Path   []string // property names from the arguments object down
	Header string   // without [Prefix]
}

// ErrInvalidAnnotation is wrapped by the error [Bindings] returns for a
// tool whose annotations a client must refuse the tool for.
var ErrInvalidAnnotation = errors.New("invalid x-mcp-header annotation")

// ErrMismatch is wrapped by the error [Validate] returns.
var ErrMismatch = errors.New("header mismatch")

type schemaProperty struct {
	Type       string                    `json:"type"`
	XMCPHeader json.RawMessage           `json:"x-mcp-header"`
	Properties map[string]schemaProperty `json:"properties"`
}

// Bindings reads the x-mcp-header annotations of a tool's inputSchema. An
// annotation on a property that is not a string, integer or boolean, a
// header name that is not an HTTP token, or a name used twice (in any
// letter case) makes the tool invalid: the error wraps
// [ErrInvalidAnnotation]. A schema that does not parse has no bindings.
func Bindings(inputSchema []byte) ([]Binding, error) {
	var schema schemaProperty
	if json.Unmarshal(inputSchema, &schema) != nil {
		return nil, nil
	}
	return collect(schema.Properties, nil, map[string]bool{}, nil)
}

func collect(props map[string]schemaProperty, prefix []string, seen map[string]bool, out []Binding) ([]Binding, error) {
	for name, prop := range props {
		path := append(append([]string(nil), prefix...), name)
		if prop.XMCPHeader != nil {
			var header string
			if json.Unmarshal(prop.XMCPHeader, &header) != nil || !isToken(header) {
				return nil, fmt.Errorf("%w: property %q: the header name must be a non-empty HTTP token", ErrInvalidAnnotation, strings.Join(path, "."))
			}
			switch prop.Type {
			case "string", "integer", "boolean":
			default:
				return nil, fmt.Errorf("%w: property %q: only a string, integer or boolean can be a header, not %q", ErrInvalidAnnotation, strings.Join(path, "."), prop.Type)
			}
			lower := strings.ToLower(header)
			if seen[lower] {
				return nil, fmt.Errorf("%w: property %q: header %q is used twice", ErrInvalidAnnotation, strings.Join(path, "."), header)
			}
			seen[lower] = true
			out = append(out, Binding{Path: path, Header: header})
		}
		if len(prop.Properties) > 0 {
			var err error
			if out, err = collect(prop.Properties, path, seen, out); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// isToken reports whether s is an HTTP field name (1*tchar).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9', c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// Headers returns the headers of a tools/call with params (its "arguments"
// read): one for each bound argument present with a primitive value; null
// and absent arguments, and values of other types, get none. Params with a
// bound argument that parsers read differently (see [Validate]) get none.
func Headers(bindings []Binding, params []byte) map[string]string {
	args, err := arguments(params)
	if args == nil || err != nil {
		return nil
	}
	out := make(map[string]string, len(bindings))
	for _, b := range bindings {
		raw, ok, err := lookup(args, b.Path)
		if err != nil {
			return nil // which the server refuses, with or without headers
		}
		if !ok {
			continue
		}
		if v, ok := primitive(raw); ok {
			out[Prefix+b.Header] = encode(v)
		}
	}
	return out
}

// Validate checks the headers h of a tools/call with params against the
// tool's bindings, as a server must: a bound argument that is present and
// not null needs its header, with the argument's value; an absent or null
// one must have none. Bound arguments (and the arguments object) are read
// as every parser reads them, or refused: a member spelled twice, or in
// another letter case (which Go's encoding/json matches when an upstream
// decodes into a struct, and other parsers do not), matches no header,
// since the upstream may act on another value than the one checked. The
// error wraps [ErrMismatch].
func Validate(h http.Header, bindings []Binding, params []byte) error {
	args, err := arguments(params)
	if err != nil && len(bindings) > 0 {
		return fmt.Errorf("%w: %w", ErrMismatch, err)
	}
	for _, b := range bindings {
		name := Prefix + b.Header
		// An empty string argument is sent as an empty header: present.
		values := h.Values(name)
		present := len(values) > 0
		got := h.Get(name)
		raw, ok, err := lookup(args, b.Path)
		if err != nil {
			return fmt.Errorf("%w: parameter %q: %w", ErrMismatch, strings.Join(b.Path, "."), err)
		}
		if !ok || string(raw) == "null" {
			if present {
				return fmt.Errorf("%w: unexpected %s header for absent or null parameter %q", ErrMismatch, name, strings.Join(b.Path, "."))
			}
			continue
		}
		if !present {
			return fmt.Errorf("%w: missing %s header for parameter %q", ErrMismatch, name, strings.Join(b.Path, "."))
		}
		decoded, ok := decode(got)
		if !ok {
			return fmt.Errorf("%w: %s header contains invalid Base64 encoding", ErrMismatch, name)
		}
		v, ok := primitive(raw)
		if !ok {
			return fmt.Errorf("%w: %s header present but parameter %q is not a primitive value", ErrMismatch, name, strings.Join(b.Path, "."))
		}
		if !equal(decoded, v) {
			return fmt.Errorf("%w: %s header value does not match the body value", ErrMismatch, name)
		}
	}
	return nil
}

// arguments returns the raw "arguments" of tools/call params; nil when
// absent or params is not an object.
func arguments(params []byte) ([]byte, error) {
	v, _, err := framing.LookupMember(params, "arguments")
	return v, err
}

// lookup returns the raw value at path in args, an object.
func lookup(args []byte, path []string) (value []byte, ok bool, err error) {
	if len(path) == 0 {
		return nil, false, nil
	}
	cur := args
	for _, part := range path {
		if cur, ok, err = framing.LookupMember(cur, part); !ok || err != nil {
			return nil, false, err
		}
	}
	return cur, true, nil
}

// maxSafeInteger bounds the integers every JSON peer reads exactly.
const maxSafeInteger = 1<<53 - 1

// primitive returns an argument's header form before encoding: a string,
// "true"/"false", or a safe integer in decimal.
func primitive(raw json.RawMessage) (string, bool) {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return "", false
	}
	switch v := v.(type) {
	case string:
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

// equal compares a decoded header with an argument's header form; an
// integer header may be spelled in any number syntax.
func equal(header, want string) bool {
	if header == want {
		return true
	}
	n, err := strconv.ParseInt(want, 10, 64)
	if err != nil {
		return false
	}
	f, err := strconv.ParseFloat(header, 64)
	return err == nil && f == math.Trunc(f) && math.Abs(f) <= maxSafeInteger && int64(f) == n
}

const (
	b64Prefix = "=?base64?"
	b64Suffix = "?="
)

// encode makes s a header value: as it is when it is printable ASCII
// without surrounding blanks and does not look encoded, else Base64 in the
// =?base64?…?= wrapper.
func encode(s string) string {
	if needsBase64(s) {
		return b64Prefix + base64.StdEncoding.EncodeToString([]byte(s)) + b64Suffix
	}
	return s
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
	return strings.HasPrefix(s, b64Prefix) && strings.HasSuffix(s, b64Suffix)
}

func decode(v string) (string, bool) {
	if inner, ok := strings.CutPrefix(v, b64Prefix); ok {
		if inner, ok = strings.CutSuffix(inner, b64Suffix); ok {
			b, err := base64.StdEncoding.DecodeString(inner)
			return string(b), err == nil
		}
	}
	return v, true
}
