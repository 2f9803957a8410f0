// Package tooldef reads MCP tool definitions, the objects of a tools/list
// result, the one way every part of mcpwrap reads them: the sidecar's
// catalog index, the policy, the approval hash and the tools CLI all take a
// tool's name and definition from Parse or Identify, so no two of them can
// disagree about which tool an object is.
//
// The upstream is untrusted. JSON readers disagree about an object whose
// member is spelled twice (first wins, last wins), in another letter case
// (Go's encoding/json matches member names case-insensitively) or under an
// escaped spelling ("n\u0061me"), so an upstream could show a client one
// tool and have mcpwrap judge, or the upstream run, another. Such a
// definition is ambiguous: it is refused, and the caller must treat it as a
// tool with no trusted name, callable under none of the names it claims
// (see Claims).
//
// Everything here is pure and safe for concurrent use.
package tooldef

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/mcpwrap/mcpwrap/internal/framing"
)

// ErrInvalid is matched (errors.Is) by the error about a definition that is
// not a JSON object with a non-empty string name, or is not valid JSON.
var ErrInvalid = errors.New("tooldef: invalid tool definition")

// ErrAmbiguous is matched (errors.Is) by the error about a definition that
// JSON readers may read differently: a member that names or defines the
// tool (name, description, inputSchema, outputSchema, annotations) appears
// more than once, in another letter case or under an escaped spelling; an
// object anywhere inside description, inputSchema, outputSchema or
// annotations has two members whose names decode alike; or annotations
// spells readOnlyHint twice, in another case or escaped.
//
// Inside the schemas only exact duplicates are ambiguous: JSON Schema
// keywords and property names are case-sensitive, and the hash covers
// "type" and "Type" as the two distinct keys they are.
var ErrAmbiguous = errors.New("tooldef: ambiguous tool definition")

// Def is what mcpwrap reads from one tool definition.
type Def struct {
	// Name is the tool's name, never empty.
	Name string
	// Description is the description member when it is a string, else "".
	Description string
	// ReadOnly reports whether the tool is annotated readOnlyHint: true.
	// Annotations that are not an object, or a readOnlyHint that is not a
	// boolean, count as not read-only.
	ReadOnly bool
	// Hash is the definition hash (lowercase hex SHA-256): the hash
	// covers name, description, inputSchema and outputSchema, in a
	// canonical JSON form (sorted keys, no whitespace, minimal string
	// escapes, numbers by value), so equivalent spellings of one
	// definition hash alike and annotations, title, icons and _meta are
	// left out. A null member hashes like an absent one. It is persisted
	// as the approved hash, so its encoding never changes. Identify
	// leaves it empty.
	Hash string
}

// Parse reads one tool definition. The error matches ErrInvalid or
// ErrAmbiguous; Def is then zero.
func Parse(raw []byte) (Def, error) { return parse(raw, true) }

// Identify is Parse without computing the hash, for readers that only need
// the name: it refuses exactly the definitions Parse refuses.
func Identify(raw []byte) (Def, error) { return parse(raw, false) }

// The members that name or define a tool, by index into parse's table.
const (
	memberName = iota
	memberDescription
	memberInputSchema
	memberOutputSchema
	memberAnnotations
	numMembers
)

var memberNames = [numMembers]string{"name", "description", "inputSchema", "outputSchema", "annotations"}

func memberIndex(key string) int {
	for i, k := range memberNames {
		if k == key {
			return i
		}
	}
	return -1
}

// spelledAs returns the index of the member key spells in any letter case
// (as a case-insensitive reader matches it), or -1.
func spelledAs(key string) int {
	if len(key) > 3*len("outputSchema") { // no case variant is longer (a rune folds from at most 3 bytes)
		return -1
	}
	for i, k := range memberNames {
		if strings.EqualFold(key, k) {
			return i
		}
	}
	return -1
}

func parse(raw []byte, withHash bool) (Def, error) {
	// Valid JSON throughout: the members are only balanced by the scanner,
	// and a reader could stop at a malformed nested value.
	if !json.Valid(raw) {
		return Def{}, fmt.Errorf("%w: not valid JSON", ErrInvalid)
	}
	members, err := framing.Members(raw)
	if err != nil {
		return Def{}, fmt.Errorf("%w: not a JSON object", ErrInvalid)
	}
	var vals [numMembers][]byte
	for _, m := range members {
		key, err := m.Key()
		if err != nil {
			return Def{}, fmt.Errorf("%w: malformed member name", ErrInvalid)
		}
		i := spelledAs(key)
		if i < 0 {
			continue
		}
		if err := spelling(m, key, memberNames[i], vals[i] != nil); err != nil {
			return Def{}, fmt.Errorf("%w: %v", ErrAmbiguous, err)
		}
		vals[i] = m.Value
	}
	var d Def
	if json.Unmarshal(vals[memberName], &d.Name) != nil || d.Name == "" {
		return Def{}, fmt.Errorf("%w: no string name", ErrInvalid)
	}
	for _, i := range [...]int{memberDescription, memberInputSchema, memberOutputSchema, memberAnnotations} {
		if vals[i] == nil {
			continue
		}
		if err := uniqueKeys(vals[i]); err != nil {
			return Def{}, fmt.Errorf("%w: tool %q: member %q: %v", ErrAmbiguous, d.Name, memberNames[i], err)
		}
	}
	_ = json.Unmarshal(vals[memberDescription], &d.Description) // a non-string is no description
	if d.ReadOnly, err = readOnly(vals[memberAnnotations]); err != nil {
		return Def{}, fmt.Errorf("%w: tool %q: %v", ErrAmbiguous, d.Name, err)
	}
	if withHash {
		if d.Hash, err = hash(&vals); err != nil {
			return Def{}, err
		}
	}
	return d, nil
}

// spelling checks that member m, whose decoded name is key and which some
// reader takes for the member want, is spelled exactly and only once.
func spelling(m framing.Member, key, want string, seen bool) error {
	switch {
	case key != want:
		return fmt.Errorf("member %q spelled %s", want, m.Name)
	case bytes.IndexByte(m.Name, '\\') >= 0:
		return fmt.Errorf("member %q spelled with escapes %s", want, m.Name)
	case seen:
		return fmt.Errorf("member %q appears more than once", want)
	}
	return nil
}

// readOnly reads readOnlyHint from the annotations member.
func readOnly(annotations []byte) (bool, error) {
	members, err := framing.Members(annotations)
	if err != nil {
		return false, nil // not an object (null, or anything else): not read-only
	}
	const want = "readOnlyHint"
	var val []byte
	for _, m := range members {
		key, err := m.Key()
		if err != nil || !strings.EqualFold(key, want) {
			continue
		}
		if err := spelling(m, key, want, val != nil); err != nil {
			return false, fmt.Errorf("annotations: %v", err)
		}
		val = m.Value
	}
	return string(val) == "true", nil
}

// Claims returns every name a reader could take the tool object raw for:
// the string values of each top-level member spelled "name" in any letter
// case or escaping. A call under any of them must not reach the upstream
// when raw is refused. For a definition Parse accepts it is just its name.
// It returns nil when raw is not a JSON object.
func Claims(raw []byte) []string {
	members, err := framing.Members(raw)
	if err != nil {
		return nil
	}
	var names []string
	for _, m := range members {
		key, err := m.Key()
		if err != nil || spelledAs(key) != memberName {
			continue
		}
		var name string
		if json.Unmarshal(m.Value, &name) == nil && !containsString(names, name) {
			names = append(names, name)
		}
	}
	return names
}

func containsString(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// uniqueKeys returns an error when an object anywhere in v, valid JSON, has
// two members whose names decode to the same string (the way the hash's
// decoder reads them: escapes decoded, invalid UTF-8 replaced by U+FFFD).
// It is one pass over v; json.Valid bounds its nesting.
func uniqueKeys(v []byte) error {
	_, err := walk(v, skipSpace(v, 0))
	return err
}

// walk checks the value at v[i] and returns the offset just past it.
func walk(v []byte, i int) (int, error) {
	if i >= len(v) {
		return i, errors.New("truncated value")
	}
	switch v[i] {
	case '{':
		var seen map[string]struct{}
		i = skipSpace(v, i+1)
		if i < len(v) && v[i] == '}' {
			return i + 1, nil
		}
		for {
			end, err := skipString(v, i)
			if err != nil {
				return end, err
			}
			key := decodeKey(v[i:end])
			if _, dup := seen[key]; dup {
				return end, fmt.Errorf("key %q appears more than once in an object", key)
			}
			if seen == nil {
				seen = make(map[string]struct{})
			}
			seen[key] = struct{}{}
			i = skipSpace(v, end)
			if i >= len(v) || v[i] != ':' {
				return i, errors.New("malformed object")
			}
			if i, err = walk(v, skipSpace(v, i+1)); err != nil {
				return i, err
			}
			done := false
			if i, done, err = next(v, i, '}'); err != nil || done {
				return i, err
			}
		}
	case '[':
		i = skipSpace(v, i+1)
		if i < len(v) && v[i] == ']' {
			return i + 1, nil
		}
		for {
			var err error
			if i, err = walk(v, i); err != nil {
				return i, err
			}
			done := false
			if i, done, err = next(v, i, ']'); err != nil || done {
				return i, err
			}
		}
	case '"':
		return skipString(v, i)
	}
	for i < len(v) && !isDelimiter(v[i]) {
		i++
	}
	return i, nil
}

// next moves past the separator after a member or element: it returns the
// offset of the next one, or, with done set, the offset just past closer.
func next(v []byte, i int, closer byte) (int, bool, error) {
	i = skipSpace(v, i)
	switch {
	case i < len(v) && v[i] == ',':
		return skipSpace(v, i+1), false, nil
	case i < len(v) && v[i] == closer:
		return i + 1, true, nil
	}
	return i, false, errors.New("malformed container")
}

func isDelimiter(c byte) bool {
	switch c {
	case ',', '}', ']', ' ', '\t', '\r', '\n':
		return true
	}
	return false
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// skipString returns the offset just past the string at b[i].
func skipString(b []byte, i int) (int, error) {
	if i >= len(b) || b[i] != '"' {
		return i, errors.New("malformed string")
	}
	for i++; i < len(b); i++ {
		switch b[i] {
		case '"':
			return i + 1, nil
		case '\\':
			i++
		}
	}
	return i, errors.New("unterminated string")
}

// decodeKey decodes a quoted member name as encoding/json does.
func decodeKey(quoted []byte) string {
	body := quoted[1 : len(quoted)-1]
	if bytes.IndexByte(body, '\\') < 0 && utf8.Valid(body) {
		return string(body)
	}
	var s string
	_ = json.Unmarshal(quoted, &s) // valid: json.Valid passed
	return s
}

// Index is the name index of one catalog: which definition, if any, each
// name of the catalog reaches. A name is trusted only when exactly one
// definition claims it and that definition is accepted; a name claimed by a
// refused definition, or by two definitions, reaches none, since the
// upstream may run either. The zero Index is empty and ready to use; an
// Index is not safe for concurrent mutation.
type Index struct {
	names []string       // the accepted name of each definition, "" when refused
	shown []string       // the name to show for each definition (see Shown)
	descs []string       // the description of each accepted definition
	pos   map[string]int // each claimed name: its one accepted claimant, or -1
}

// Grow makes room for n more definitions.
func (x *Index) Grow(n int) {
	if x.pos == nil {
		x.pos = make(map[string]int, n)
	}
	x.names = slices.Grow(x.names, n)
	x.shown = slices.Grow(x.shown, n)
	x.descs = slices.Grow(x.descs, n)
}

// Add appends the definition raw, read as d and err by Parse or Identify.
func (x *Index) Add(raw []byte, d Def, err error) {
	if x.pos == nil {
		x.pos = make(map[string]int)
	}
	i := len(x.names)
	if err != nil {
		claims := Claims(raw)
		x.names = append(x.names, "")
		x.shown = append(x.shown, strings.Join(claims, " | "))
		x.descs = append(x.descs, "")
		for _, name := range claims {
			x.pos[name] = -1
		}
		return
	}
	x.names = append(x.names, d.Name)
	x.shown = append(x.shown, d.Name)
	x.descs = append(x.descs, d.Description)
	if _, claimed := x.pos[d.Name]; claimed {
		x.pos[d.Name] = -1
	} else {
		x.pos[d.Name] = i
	}
}

// Len returns the number of definitions added.
func (x *Index) Len() int { return len(x.names) }

// Interned returns the Index's own string for name when it is the trusted
// name of a definition, so that a caller holding name as bytes (read off a
// message) gets it as a string without allocating.
func (x *Index) Interned(name []byte) (string, bool) {
	if i, ok := x.pos[string(name)]; ok && i >= 0 {
		return x.names[i], true
	}
	return "", false
}

// Name returns the trusted name of definition i, or "" when the definition
// is refused or another definition claims its name too.
func (x *Index) Name(i int) string {
	if name := x.names[i]; name != "" && x.pos[name] == i {
		return name
	}
	return ""
}

// Shown returns a name to show for definition i, trusted or not, such as in
// a list of locked tools: its name when it is accepted, else the names it
// claims joined by " | " (possibly none). Never use it to route a call.
func (x *Index) Shown(i int) string { return x.shown[i] }

// Description returns the description of definition i, "" when it is
// refused.
func (x *Index) Description(i int) string { return x.descs[i] }

// Lookup returns the definition trusted under name. When ok is false,
// claimed reports whether some definition claims name nonetheless: a call
// under that name must be refused, not forwarded.
func (x *Index) Lookup(name string) (i int, ok, claimed bool) {
	i, claimed = x.pos[name]
	if !claimed || i < 0 {
		return -1, false, claimed
	}
	return i, true, true
}
