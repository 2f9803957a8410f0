package framing

import (
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// ErrNotObject is wrapped by the error of [SetMember] and [SetMemberPath]
// for an object on the path that is some other JSON value.
var ErrNotObject = errors.New("framing: not a JSON object")

// SetMember returns a copy of the JSON object obj with its member name set
// to value, one JSON value (the spaces around it left out): where obj has the member, only that value's
// bytes change; where it has none, the member is added after the last one.
// Every other byte of obj is kept as sent (order, spacing, escapes,
// numbers, whatever a decoder would read into another form). obj is never
// written.
//
// obj and value are checked in full, as json.Valid checks them: a
// malformed one is an error (a [*SyntaxError]), as is an obj that is not an
// object ([ErrNotObject]) or a name that is not UTF-8. An obj in which
// parsers may read name's member differently, spelled twice or in another
// letter case (see [LookupMember]), is an error wrapping [ErrAmbiguous]:
// which member to set is never guessed.
func SetMember(obj []byte, name string, value []byte) ([]byte, error) {
	return SetMemberPath(obj, []string{name}, value)
}

// SetMemberPath is [SetMember] for a member of nested objects: the member
// path[len(path)-1] of the object at path[:len(path)-1], such as
// {"params", "_meta", key} in a message. An object on the path that is
// absent or null is made, holding only the rest of the path; one that is
// another value is an error wrapping [ErrNotObject]. Each object on the
// path is read as SetMember reads obj, and the result is obj with one
// splice: the one value set, or the one member added.
func SetMemberPath(obj []byte, path []string, value []byte) ([]byte, error) {
	if len(path) == 0 {
		return nil, errors.New("framing: SetMemberPath: no member named")
	}
	for _, name := range path {
		if !utf8.ValidString(name) {
			return nil, fmt.Errorf("framing: member name %q is not UTF-8", name)
		}
	}
	value, err := validWhole(value)
	if err != nil {
		return nil, fmt.Errorf("framing: the value to set: %w", err)
	}
	cur := obj // the object path[i] is in; it aliases obj
	for i, name := range path {
		l, err := lookupMember(cur, name, i == 0) // the objects within were checked with obj
		if err != nil {
			if i == 0 && !isObject(obj) {
				return nil, fmt.Errorf("%w: %w", ErrNotObject, err)
			}
			return nil, err
		}
		if i == 0 && skipSpace(obj, l.end) != len(obj) {
			return nil, syntaxError(l.end, "end of object")
		}
		if l.ambiguous != nil {
			return nil, l.ambiguous
		}
		rest := path[i+1:]
		switch {
		case l.value == nil: // absent: added after the last member
			at := cur[l.insert:l.insert]
			return SpliceFunc(obj, at, len(name)+len(value)+16, func(out []byte) []byte {
				if !l.empty {
					out = append(out, ',')
				}
				return appendNested(appendMember(out, name), rest, value)
			}), nil
		case len(rest) == 0:
			return Splice(obj, l.value, value), nil
		case string(l.value) == "null":
			return SpliceFunc(obj, l.value, len(value)+16, func(out []byte) []byte {
				return appendNested(out, rest, value)
			}), nil
		case l.value[0] != '{':
			return nil, fmt.Errorf("%w: member %q", ErrNotObject, name)
		}
		cur = l.value
	}
	panic("unreachable")
}

// appendNested appends value nested in an object for each name of path:
// {"a":{"b":value}} for path a, b; value itself for none.
func appendNested(out []byte, path []string, value []byte) []byte {
	for _, name := range path {
		out = appendMember(append(out, '{'), name)
	}
	out = append(out, value...)
	for range path {
		out = append(out, '}')
	}
	return out
}

// appendMember appends name, quoted, and a colon.
func appendMember(out []byte, name string) []byte {
	key, _ := json.Marshal(name) // a string always encodes
	return append(append(out, key...), ':')
}

// validWhole checks that b is one JSON value, as json.Valid does, and
// returns it without the spaces around it.
func validWhole(b []byte) ([]byte, error) {
	start := skipSpace(b, 0)
	end, err := validValue(b, start)
	if err != nil {
		return nil, err
	}
	if i := skipSpace(b, end); i != len(b) {
		return nil, syntaxError(i, "end of value")
	}
	return b[start:end], nil
}

// isObject reports whether b starts, after spaces, as an object does.
func isObject(b []byte) bool {
	i := skipSpace(b, 0)
	return i < len(b) && b[i] == '{'
}
