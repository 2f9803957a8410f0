package clientconfig

import (
	"bytes"
	"encoding/json"
	"slices"
)

// This file reads and writes JSON text without losing what a map would lose:
// the order of keys and the exact bytes of every key and value. The scanning
// functions assume valid JSON; [validate] the whole file before using them.

// member is one "key": value pair of an object, located in the text it was
// scanned from.
type member struct {
	key        string // decoded
	keyStart   int    // offset of the key's opening quote
	valueStart int
	valueEnd   int // just past the value
}

// members returns the members of the object at data[i:] (leading whitespace
// allowed), in order; ok is false when the value there is not an object.
func members(data []byte, i int) (ms []member, ok bool) {
	i = skipSpace(data, i)
	if i >= len(data) || data[i] != '{' {
		return nil, false
	}
	for i = skipSpace(data, i+1); i < len(data) && data[i] != '}'; {
		m := member{keyStart: i}
		keyEnd := stringEnd(data, i)
		m.key = decodeString(data[i:keyEnd])
		m.valueStart = skipSpace(data, skipSpace(data, keyEnd)+1) // past the colon
		m.valueEnd = valueEnd(data, m.valueStart)
		ms = append(ms, m)
		if i = skipSpace(data, m.valueEnd); i < len(data) && data[i] == ',' {
			i = skipSpace(data, i+1)
		}
	}
	return ms, true
}

// elements returns the raw elements of the array at data[i:]; ok is false
// when the value there is not an array.
func elements(data []byte, i int) (es [][]byte, ok bool) {
	spans, ok := elementSpans(data, i)
	for _, s := range spans {
		es = append(es, data[s[0]:s[1]])
	}
	return es, ok
}

// elementSpans returns where each element of the array at data[i:] starts
// and ends; ok is false when the value there is not an array.
func elementSpans(data []byte, i int) (spans [][2]int, ok bool) {
	i = skipSpace(data, i)
	if i >= len(data) || data[i] != '[' {
		return nil, false
	}
	for i = skipSpace(data, i+1); i < len(data) && data[i] != ']'; {
		end := valueEnd(data, i)
		spans = append(spans, [2]int{i, end})
		if i = skipSpace(data, end); i < len(data) && data[i] == ',' {
			i = skipSpace(data, i+1)
		}
	}
	return spans, true
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && isSpace(data[i]) {
		i++
	}
	return i
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// valueEnd returns the offset just past the value starting at data[i].
func valueEnd(data []byte, i int) int {
	switch data[i] {
	case '"':
		return stringEnd(data, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(data); j++ {
			switch data[j] {
			case '"':
				j = stringEnd(data, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return len(data)
	default: // number, true, false or null
		j := i
		for j < len(data) && !isSpace(data[j]) && data[j] != ',' && data[j] != '}' && data[j] != ']' {
			j++
		}
		return j
	}
}

// stringEnd returns the offset just past the string whose opening quote is
// at data[i].
func stringEnd(data []byte, i int) int {
	for j := i + 1; j < len(data); j++ {
		switch data[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(data)
}

// decodeString decodes a raw JSON string, or returns "" if raw is not one.
func decodeString(raw []byte) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// isString reports whether raw is a JSON string.
func isString(raw []byte) bool { return len(raw) > 0 && raw[0] == '"' }

// encodeString encodes s as a JSON string the way the rest of a config
// file is usually written: without escaping <, > and &.
func encodeString(s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// array returns a JSON array of raw elements.
func array(elems [][]byte) []byte {
	return slices.Concat([]byte("["), bytes.Join(elems, []byte(",")), []byte("]"))
}

// object is a JSON object as an ordered list of fields, each keeping the
// bytes its key and value were written with. Its zero value is the empty
// object.
type object []field

type field struct {
	key    string // decoded
	rawKey []byte // as written, quotes included
	value  []byte // as written
}

// newField returns a field with a freshly encoded key.
func newField(key string, value []byte) field {
	return field{key: key, rawKey: encodeString(key), value: value}
}

// parseObject returns the fields of the raw object; ok is false when raw is
// not an object.
func parseObject(raw []byte) (o object, ok bool) {
	ms, ok := members(raw, 0)
	if !ok {
		return nil, false
	}
	o = make(object, len(ms))
	for i, m := range ms {
		o[i] = field{
			key:    m.key,
			rawKey: raw[m.keyStart:stringEnd(raw, m.keyStart)],
			value:  raw[m.valueStart:m.valueEnd],
		}
	}
	return o, true
}

// index returns the position of key, or -1.
func (o object) index(key string) int {
	return slices.IndexFunc(o, func(f field) bool { return f.key == key })
}

// duplicate returns a key that occurs more than once, if any.
func (o object) duplicate() (string, bool) {
	seen := make(map[string]bool, len(o))
	for _, f := range o {
		if seen[f.key] {
			return f.key, true
		}
		seen[f.key] = true
	}
	return "", false
}

// marshal returns the object as JSON text; whitespace inside values is kept
// and left for [layout.restyle] to lay out.
func (o object) marshal() []byte {
	buf := []byte{'{'}
	for i, f := range o {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, f.rawKey...)
		buf = append(buf, ':')
		buf = append(buf, f.value...)
	}
	return append(buf, '}')
}

// layout is how a file is indented, so that a rewritten entry looks like
// its neighbours.
type layout struct {
	indent string // one level; "" when the file is on a single line
	crlf   bool   // lines end in \r\n
}

// detectLayout reads the layout off the first key of the top-level object:
// the whitespace starting its line is one level of indentation.
func detectLayout(data []byte) layout {
	l := layout{indent: "  "}
	if i := bytes.IndexByte(data, '\n'); i < 0 {
		return layout{}
	} else if i > 0 && data[i-1] == '\r' {
		l.crlf = true
	}
	start := skipSpace(data, 0) + 1 // past the top-level '{'
	key := skipSpace(data, start)
	if nl := bytes.LastIndexByte(data[start:key], '\n'); nl >= 0 && key > start+nl+1 {
		l.indent = string(data[start+nl+1 : key])
	}
	return l
}

// format lays out the JSON text of a value whose key starts a line indented
// by prefix.
func (l layout) format(value []byte, prefix string) []byte {
	var buf bytes.Buffer
	if l.indent == "" {
		_ = json.Compact(&buf, value) // value is valid: built from valid parts
		return buf.Bytes()
	}
	_ = json.Indent(&buf, value, prefix, l.indent)
	if l.crlf {
		return bytes.ReplaceAll(buf.Bytes(), []byte("\n"), []byte("\r\n"))
	}
	return buf.Bytes()
}

// linePrefix returns the whitespace that starts the line holding data[i].
func linePrefix(data []byte, i int) string {
	start := bytes.LastIndexByte(data[:i], '\n') + 1
	end := start
	for end < i && (data[end] == ' ' || data[end] == '\t') {
		end++
	}
	return string(data[start:end])
}
