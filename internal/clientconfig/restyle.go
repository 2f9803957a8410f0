package clientconfig

import (
	"bytes"
	"encoding/json"
	"slices"
)

// This file lays out a rewritten value like the one it replaces, so that
// Install and Uninstall change only the bytes they must: members and
// elements the new value shares with the old keep their bytes, and the
// whitespace around them (after the opening bracket, between items, before
// the closing one, after a key's colon) is the old value's. Install and
// Uninstall add, drop and replace members and elements in the same places,
// so each gives back what the other changed, whatever the style: an entry
// on one line, args on one line in an indented file, a compact file.

// renamed pairs the members Install renames (url becomes command, headers
// becomes args) and Uninstall renames back: the new member takes the old
// one's place, its colon and, for a value of another kind, its style (on
// one line or indented).
var renamed = map[string]string{"command": "url", "url": "command", "args": "headers", "headers": "args"}

// restyle returns value (valid JSON) laid out like old, the value it
// replaces, whose key starts a line indented by prefix. With old nil, or of
// another kind, an object or array is written whole: indented when old was
// (or, without old, when multiline is set), else on one line.
func (l layout) restyle(old, value []byte, prefix string, multiline bool) []byte {
	kind := func(b []byte) byte {
		if i := skipSpace(b, 0); i < len(b) && (b[i] == '{' || b[i] == '[') {
			return b[i]
		}
		return 0
	}
	oldKind, newKind := kind(old), kind(value)
	switch {
	case newKind == 0:
		return value
	case newKind == oldKind && newKind == '{':
		return l.restyleObject(old, value, prefix, multiline)
	case newKind == oldKind:
		return l.restyleArray(old, value, prefix, multiline)
	case old != nil:
		multiline = bytes.IndexByte(old, '\n') >= 0
	}
	if multiline {
		return l.format(value, prefix)
	}
	return l.inline(value)
}

// restyleObject is restyle for an object replacing an object.
func (l layout) restyleObject(old, value []byte, prefix string, multiline bool) []byte {
	fields, _ := parseObject(value)
	olds, _ := members(old, 0)
	spans := make([][2]int, len(olds))
	for i, m := range olds {
		spans[i] = [2]int{m.keyStart, m.valueEnd}
	}
	s := l.shapeOf(old, spans, prefix, multiline)
	if len(olds) > 0 {
		s.colon = old[stringEnd(old, olds[0].keyStart):olds[0].valueStart]
	}
	used := make([]bool, len(olds))
	match := func(key string) int { // the first old member of that key not yet matched
		for i, m := range olds {
			if m.key == key && !used[i] {
				return i
			}
		}
		return -1
	}
	parts := make([][]byte, len(fields))
	for j, f := range fields {
		i := match(f.key)
		if i < 0 && fields.index(renamed[f.key]) < 0 {
			i = match(renamed[f.key])
		}
		if i < 0 {
			parts[j] = slices.Concat(f.rawKey, s.colon, l.restyle(nil, f.value, s.prefix, s.multiline))
			continue
		}
		used[i] = true
		m := olds[i]
		keyEnd := stringEnd(old, m.keyStart)
		if bytes.Equal(old[m.keyStart:keyEnd], f.rawKey) && bytes.Equal(old[m.valueStart:m.valueEnd], f.value) {
			parts[j] = old[m.keyStart:m.valueEnd]
			continue
		}
		parts[j] = slices.Concat(f.rawKey, old[keyEnd:m.valueStart], l.restyle(old[m.valueStart:m.valueEnd], f.value, s.prefix, s.multiline))
	}
	return s.join('{', parts, '}')
}

// restyleArray is restyle for an array replacing an array.
func (l layout) restyleArray(old, value []byte, prefix string, multiline bool) []byte {
	elems, _ := elements(value, 0)
	spans, _ := elementSpans(old, 0)
	s := l.shapeOf(old, spans, prefix, multiline)
	parts := make([][]byte, len(elems))
	for j, e := range elems {
		if slices.ContainsFunc(spans, func(o [2]int) bool { return bytes.Equal(old[o[0]:o[1]], e) }) {
			parts[j] = e
		} else {
			parts[j] = l.restyle(nil, e, s.prefix, s.multiline)
		}
	}
	return s.join('[', parts, ']')
}

// shape is the whitespace of an object or array around its items.
type shape struct {
	lead, trail []byte   // after the opening bracket, before the closing one
	empty       []byte   // between the brackets of an old value with no items
	seps        [][]byte // between items, the comma included
	sep         []byte   // between items beyond those of seps
	colon       []byte   // objects: between a key and its value
	multiline   bool     // items on lines of their own
	prefix      string   // what starts the line of an item
}

// shapeOf reads the shape of old, whose items span old[span[0]:span[1]],
// filling in what old cannot tell (it has fewer than two items, or is nil)
// the way l writes a new value indented by prefix, on one line unless
// multiline.
func (l layout) shapeOf(old []byte, spans [][2]int, prefix string, multiline bool) shape {
	nl := "\n"
	if l.crlf {
		nl = "\r\n"
	}
	s := shape{multiline: multiline, prefix: prefix + l.indent}
	if len(spans) == 0 && len(old) >= 2 {
		s.empty = old[1 : len(old)-1] // "[ ]" stays "[ ]" while it stays empty
	}
	if len(spans) > 0 {
		s.multiline = bytes.IndexByte(old, '\n') >= 0
		s.lead, s.trail = old[1:spans[0][0]], old[spans[len(spans)-1][1]:len(old)-1]
		for i := 1; i < len(spans); i++ {
			s.seps = append(s.seps, old[spans[i-1][1]:spans[i][0]])
		}
		if s.multiline {
			s.prefix = linePrefix(old, spans[0][0])
		}
	}
	switch {
	case len(s.seps) > 0:
		s.sep = s.seps[len(s.seps)-1]
	case !s.multiline && l.indent == "":
		s.sep = []byte(",")
	case !s.multiline:
		s.sep = []byte(", ")
	case len(spans) > 0:
		s.sep = slices.Concat([]byte(","), s.lead)
	default:
		s.lead, s.trail = []byte(nl+prefix+l.indent), []byte(nl+prefix)
		s.sep = slices.Concat([]byte(","), s.lead)
	}
	s.colon = []byte(": ")
	if l.indent == "" {
		s.colon = []byte(":")
	}
	return s
}

// join writes the items between open and close in the shape.
func (s shape) join(open byte, parts [][]byte, close byte) []byte {
	if len(parts) == 0 {
		return slices.Concat([]byte{open}, s.empty, []byte{close})
	}
	out := append([]byte{open}, s.lead...)
	for i, p := range parts {
		if i > 0 {
			if i-1 < len(s.seps) {
				out = append(out, s.seps[i-1]...)
			} else {
				out = append(out, s.sep...)
			}
		}
		out = append(out, p...)
	}
	out = append(out, s.trail...)
	return append(out, close)
}

// inline writes a value on one line: compact in a compact file, else with
// a space after each comma and colon, as JSON written by hand on one line
// usually has.
func (l layout) inline(value []byte) []byte {
	var buf bytes.Buffer
	_ = json.Compact(&buf, value) // value is valid: built from valid parts
	if l.indent == "" {
		return buf.Bytes()
	}
	compact := buf.Bytes()
	out := make([]byte, 0, len(compact)+len(compact)/4)
	for i := 0; i < len(compact); i++ {
		c := compact[i]
		if c == '"' {
			end := stringEnd(compact, i)
			out = append(out, compact[i:end]...)
			i = end - 1
			continue
		}
		out = append(out, c)
		if c == ',' || c == ':' {
			out = append(out, ' ')
		}
	}
	return out
}
