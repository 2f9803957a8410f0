package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mcpwrap/mcpwrap/internal/policy"
)

// Parsing happens in two passes. tree checks the syntax (encoding/json
// reports exact offsets only when it validates a whole document) and builds
// a tree of nodes that remember their offsets. The schema walk then reads
// the tree in file order, so the first problem in the file is the one
// reported, with its position and key path.

type kind uint8

const (
	kindNull kind = iota
	kindBool
	kindNumber
	kindString
	kindArray
	kindObject
)

func (k kind) String() string {
	return [...]string{"null", "a boolean", "a number", "a string", "an array", "an object"}[k]
}

// node is one JSON value and where it starts. Array elements are not kept:
// the schema has no arrays.
type node struct {
	kind    kind
	off     int
	text    string // a string's value, a number's literal
	boolean bool
	members []member
}

type member struct {
	key   string
	off   int // where the key starts
	value *node
}

type parser struct {
	file string
	data []byte
}

// errorAt returns an *Error located at byte offset off.
func (p *parser) errorAt(off int, key, msg string, cause error) *Error {
	off = max(0, min(off, len(p.data)))
	before := p.data[:off]
	lineStart := bytes.LastIndexByte(before, '\n') + 1
	return &Error{
		File:   p.file,
		Line:   bytes.Count(before, []byte{'\n'}) + 1,
		Column: utf8.RuneCount(before[lineStart:]) + 1,
		Key:    key,
		Msg:    msg,
		Err:    cause,
	}
}

// valueError returns an *Error about the value n of key.
func (p *parser) valueError(n *node, key, msg string, cause error) *Error {
	return p.errorAt(n.off, key, fmt.Sprintf("%q: %s", key, msg), cause)
}

func (p *parser) typeError(n *node, key, want string) *Error {
	if key == "" {
		return p.errorAt(n.off, key, fmt.Sprintf("the top level must be an object, got %s", n.kind), nil)
	}
	return p.valueError(n, key, fmt.Sprintf("expected %s, got %s", want, n.kind), nil)
}

func (p *parser) tree() (*node, error) {
	if err := json.Unmarshal(p.data, new(json.RawMessage)); err != nil {
		off := 0
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) {
			off = int(syntax.Offset) - 1 // Offset counts the offending byte
		}
		return nil, p.errorAt(off, "", "invalid JSON: "+strings.TrimPrefix(err.Error(), "json: "), err)
	}
	dec := json.NewDecoder(bytes.NewReader(p.data))
	dec.UseNumber()
	return p.value(dec)
}

// value reads the next value of a document already known to be valid JSON.
func (p *parser) value(dec *json.Decoder) (*node, error) {
	n := &node{off: p.tokenStart(dec.InputOffset())}
	tok, err := dec.Token()
	if err != nil {
		return nil, p.errorAt(n.off, "", "invalid JSON: "+err.Error(), err)
	}
	switch t := tok.(type) {
	case json.Delim:
		n.kind = kindArray
		if t == '{' {
			n.kind = kindObject
		}
		for dec.More() {
			if n.kind == kindArray {
				if _, err := p.value(dec); err != nil {
					return nil, err
				}
				continue
			}
			m := member{off: p.tokenStart(dec.InputOffset())}
			key, err := dec.Token()
			if err != nil {
				return nil, p.errorAt(m.off, "", "invalid JSON: "+err.Error(), err)
			}
			m.key, _ = key.(string) // object keys are strings in valid JSON
			if m.value, err = p.value(dec); err != nil {
				return nil, err
			}
			n.members = append(n.members, m)
		}
		if _, err := dec.Token(); err != nil { // the closing delimiter
			return nil, p.errorAt(len(p.data), "", "invalid JSON: "+err.Error(), err)
		}
	case string:
		n.kind, n.text = kindString, t
	case json.Number:
		n.kind, n.text = kindNumber, t.String()
	case bool:
		n.kind, n.boolean = kindBool, t
	default:
		n.kind = kindNull
	}
	return n, nil
}

// tokenStart returns where the token after offset starts: the decoder's
// offset can sit before whitespace and the ':' or ',' it has yet to consume.
func (p *parser) tokenStart(offset int64) int {
	i := int(offset)
	for i < len(p.data) && strings.IndexByte(" \t\r\n,:", p.data[i]) >= 0 {
		i++
	}
	return i
}

// errUnknownKey, returned by a field function, makes object report the key.
var errUnknownKey = errors.New("unknown key")

// object walks the members of object n at key path, in file order, calling
// field with each member and its key path. It rejects duplicate keys and,
// when field returns errUnknownKey, unknown ones.
func (p *parser) object(n *node, path string, field func(m member, at string) error) error {
	if n.kind != kindObject {
		return p.typeError(n, path, "an object")
	}
	seen := make(map[string]bool, len(n.members))
	for _, m := range n.members {
		at := m.key
		if path != "" {
			at = path + "." + m.key
		}
		if seen[m.key] {
			return p.errorAt(m.off, at, fmt.Sprintf("duplicate key %q", at), nil)
		}
		seen[m.key] = true
		if err := field(m, at); err != nil {
			if errors.Is(err, errUnknownKey) {
				return p.errorAt(m.off, at, fmt.Sprintf("unknown key %q", at), nil)
			}
			return err
		}
	}
	return nil
}

func (p *parser) root(root *node, f *File) error {
	return p.object(root, "", func(m member, at string) error {
		switch m.key {
		case "defaults":
			return p.settings(m.value, at, &f.defaults)
		case "store":
			return p.store(m.value, at, f)
		case "servers":
			return p.object(m.value, at, func(m member, at string) error {
				if m.key == "" {
					return p.errorAt(m.off, at, "a server name must not be empty", nil)
				}
				l := &layer{}
				f.servers[m.key] = l
				return p.settings(m.value, at, l)
			})
		}
		return errUnknownKey
	})
}

// store reads `store`: "file", or a postgres:// URL without a password,
// which the file, often shared or checked in, must not hold.
func (p *parser) store(n *node, key string, f *File) error {
	s, err := p.str(n, key)
	if err != nil {
		return err
	}
	if s == StoreFile {
		f.store = s
		return nil
	}
	if !strings.HasPrefix(s, "postgres://") && !strings.HasPrefix(s, "postgresql://") {
		return p.valueError(n, key, `want "file" (the state directory, the default) or a postgres:// URL`, nil)
	}
	if u, err := url.Parse(s); err != nil {
		return p.valueError(n, key, "the URL does not parse", nil)
	} else if _, ok := u.User.Password(); ok || u.Query().Has("password") {
		return p.valueError(n, key, "the URL must not carry the password: put it in $PGPASSWORD or a password file ($PGPASSFILE, else ~/.pgpass)", nil)
	}
	f.store = s
	return nil
}

// settings reads the keys a server entry and `defaults` share.
func (p *parser) settings(n *node, path string, l *layer) error {
	return p.object(n, path, func(m member, at string) (err error) {
		v := m.value
		switch m.key {
		case "enabled":
			l.enabled, err = p.boolean(v, at)
		case "tools":
			err = p.tools(v, at, l)
		case "approval":
			l.approval, err = enum[policy.ApprovalMode](p, v, at, policy.ApprovalTOFU, policy.ApprovalManual, policy.ApprovalOff)
		case "ready_timeout":
			l.readyTimeout, err = p.duration(v, at)
		case "call_timeout":
			l.callTimeout, err = p.durationOrZero(v, at)
		case "retry":
			err = p.retry(v, at, &l.retry)
		case "retry_refused":
			l.retryRefused, err = p.boolean(v, at)
		case "env":
			l.env, err = p.env(v, at)
		case "discovery_tool":
			l.discoveryTool, err = p.toolName(v, at)
		case "discovery":
			l.discovery, err = enum[DiscoveryMode](p, v, at, DiscoveryAuto, DiscoveryAlways, DiscoveryNever)
		case "max_line_bytes":
			l.maxLineBytes, err = p.integer(v, at, MinMaxLineBytes)
		case "max_held_requests":
			l.maxHeld, err = p.integer(v, at, 1)
		case "max_held_bytes":
			l.maxHeldBytes, err = p.integer(v, at, MinMaxLineBytes)
		case "max_in_flight":
			l.maxInFlight, err = p.integer(v, at, 1)
		case "max_catalog_bytes":
			l.maxCatalog, err = p.integer(v, at, MinMaxLineBytes)
		case "oauth":
			err = p.oauth(v, at, &l.oauth)
		default:
			err = errUnknownKey
		}
		return err
	})
}

func (p *parser) tools(n *node, path string, l *layer) error {
	return p.object(n, path, func(m member, at string) (err error) {
		v := m.value
		switch m.key {
		case "default":
			l.toolDefault, err = enum[policy.ToolDefault](p, v, at, policy.DefaultAll, policy.DefaultReadOnly, policy.DefaultNone)
		case "overrides":
			l.overrides = map[string]bool{}
			err = p.object(v, at, func(m member, at string) error {
				if err := policy.ValidatePattern(m.key); err != nil {
					return p.errorAt(m.off, at, fmt.Sprintf("%q: %v", at, err), err)
				}
				on, err := p.boolean(m.value, at)
				if err != nil {
					return err
				}
				l.overrides[m.key] = *on
				return nil
			})
		default:
			err = errUnknownKey
		}
		return err
	})
}

func (p *parser) retry(n *node, path string, r *retryLayer) error {
	return p.object(n, path, func(m member, at string) (err error) {
		v := m.value
		switch m.key {
		case "initial":
			r.initial, err = p.duration(v, at)
		case "max_interval":
			r.maxInterval, err = p.duration(v, at)
		case "max_elapsed":
			r.maxElapsed, err = p.duration(v, at)
		case "multiplier":
			r.multiplier, err = p.float(v, at, 1, math.MaxFloat64)
		case "jitter":
			r.jitter, err = p.float(v, at, 0, 1)
		case "max_attempts":
			r.maxAttempts, err = p.integer(v, at, 1)
		default:
			err = errUnknownKey
		}
		return err
	})
}

func (p *parser) env(n *node, path string) (map[string]string, error) {
	env := map[string]string{}
	err := p.object(n, path, func(m member, at string) error {
		if m.key == "" || strings.ContainsAny(m.key, "=\x00") {
			return p.errorAt(m.off, at, fmt.Sprintf("%q: an environment variable name must be non-empty, without '=' or NUL", at), nil)
		}
		value, err := p.str(m.value, at)
		if err != nil {
			return err
		}
		if strings.ContainsRune(value, 0) {
			return p.valueError(m.value, at, "an environment variable value must not contain NUL", nil)
		}
		env[m.key] = value
		return nil
	})
	return env, err
}

func (p *parser) boolean(n *node, key string) (*bool, error) {
	if n.kind != kindBool {
		return nil, p.typeError(n, key, "a boolean")
	}
	return &n.boolean, nil
}

func (p *parser) str(n *node, key string) (string, error) {
	if n.kind != kindString {
		return "", p.typeError(n, key, "a string")
	}
	return n.text, nil
}

// enum reads a string that must be one of allowed.
func enum[T ~string](p *parser, n *node, key string, allowed ...T) (*T, error) {
	s, err := p.str(n, key)
	if err != nil {
		return nil, err
	}
	for _, a := range allowed {
		if s == string(a) {
			return &a, nil
		}
	}
	names := make([]string, len(allowed))
	for i, a := range allowed {
		names[i] = string(a)
	}
	return nil, p.valueError(n, key, fmt.Sprintf("unknown value %q (want %s)", s, strings.Join(names, ", ")), nil)
}

// duration reads a positive Go duration string such as "250ms".
func (p *parser) duration(n *node, key string) (*time.Duration, error) {
	if n.kind != kindString {
		return nil, p.typeError(n, key, `a duration string such as "30s"`)
	}
	d, err := time.ParseDuration(n.text)
	if err != nil {
		return nil, p.valueError(n, key, fmt.Sprintf(`invalid duration %q (want a number with a unit, such as "250ms" or "30s")`, n.text), err)
	}
	if d <= 0 {
		return nil, p.valueError(n, key, fmt.Sprintf("the duration must be positive, got %q", n.text), nil)
	}
	return &d, nil
}

// durationOrZero reads a duration that may be zero ("0s"), which turns a
// bound off, for example one set in `defaults`.
func (p *parser) durationOrZero(n *node, key string) (*time.Duration, error) {
	if n.kind == kindString {
		if d, err := time.ParseDuration(n.text); err == nil && d == 0 {
			return &d, nil
		}
	}
	return p.duration(n, key)
}

// integer reads a whole number of at least least.
func (p *parser) integer(n *node, key string, least int) (*int, error) {
	if n.kind != kindNumber {
		return nil, p.typeError(n, key, "an integer")
	}
	i, err := strconv.Atoi(n.text)
	if err != nil {
		return nil, p.valueError(n, key, fmt.Sprintf("expected an integer, got %s", n.text), err)
	}
	if i < least {
		return nil, p.valueError(n, key, fmt.Sprintf("must be at least %d, got %d", least, i), nil)
	}
	return &i, nil
}

// float reads a number in [least, most].
func (p *parser) float(n *node, key string, least, most float64) (*float64, error) {
	if n.kind != kindNumber {
		return nil, p.typeError(n, key, "a number")
	}
	f, err := strconv.ParseFloat(n.text, 64)
	if err != nil || f < least || f > most {
		rng := fmt.Sprintf("between %g and %g", least, most)
		if most == math.MaxFloat64 {
			rng = fmt.Sprintf("at least %g", least)
		}
		return nil, p.valueError(n, key, fmt.Sprintf("must be a number %s, got %s", rng, n.text), nil)
	}
	return &f, nil
}

// toolName reads a name valid for an MCP tool: 1 to 128 of A-Z a-z 0-9 _ - .
func (p *parser) toolName(n *node, key string) (*string, error) {
	s, err := p.str(n, key)
	if err != nil {
		return nil, err
	}
	valid := len(s) >= 1 && len(s) <= 128
	for i := 0; valid && i < len(s); i++ {
		c := s[i]
		valid = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.'
	}
	if !valid {
		return nil, p.valueError(n, key, fmt.Sprintf("invalid tool name %q (want 1 to 128 of A-Z a-z 0-9 _ - .)", s), nil)
	}
	return &s, nil
}
