package framing

import (
	"bytes"
	"encoding/json"
)

// maxScannedValue bounds the raw "id" and "method" values an envScanner
// keeps; a longer one is not recovered.
const maxScannedValue = 1 << 10

// envScanner finds the top-level "id" and "method" members of a JSON
// object fed to it in pieces, wherever in the object they are, keeping
// only those two values: it recovers them from a line too large to hold.
// Member names are compared as Peek compares them, and a member spelled
// twice or in another letter case is not recovered.
type envScanner struct {
	state   scanState
	depth   int  // nesting inside the current member's value
	inStr   bool // inside a string (a name or within a value)
	esc     bool // after a backslash inside a string
	key     []byte
	keyLong bool // the name is too long to be a routing member
	val     []byte
	capture *[]byte // where the current value goes; nil skips it
	over    bool    // the captured value exceeded maxScannedValue

	id, method         []byte
	badID, badMethod   bool
	seenID, seenMethod bool
}

type scanState uint8

const (
	scanStart      scanState = iota // before the object's '{'
	scanName                        // between members, expecting a name or '}'
	scanInName                      // inside a member name
	scanColon                       // after a name, expecting ':'
	scanValueStart                  // after ':', expecting a value
	scanValue                       // inside a value
	scanDone                        // after the object, or not an object
)

// write scans the next piece of the line.
func (s *envScanner) write(p []byte) {
	for i := 0; i < len(p) && s.state != scanDone; i++ {
		c := p[i]
		switch s.state {
		case scanStart:
			switch c {
			case ' ', '\t', '\r', '\n':
			case '{':
				s.state = scanName
			default:
				s.state = scanDone
			}
		case scanName:
			switch c {
			case '"':
				s.state, s.key, s.keyLong = scanInName, s.key[:0], false
			case '}':
				s.state = scanDone
			}
		case scanInName:
			switch {
			case s.esc:
				s.esc = false
			case c == '\\':
				s.esc = true
			case c == '"':
				s.state = scanColon
				continue
			}
			if len(s.key) < 64 {
				s.key = append(s.key, c)
			} else {
				s.keyLong = true
			}
		case scanColon:
			if c == ':' {
				s.state = scanValueStart
			}
		case scanValueStart:
			switch c {
			case ' ', '\t', '\r', '\n':
				continue
			}
			s.startValue()
			s.state, s.depth = scanValue, 0
			i-- // c starts the value
		case scanValue:
			if s.capture == nil {
				// A value not kept matters only for where it ends: skip to
				// the next byte that can end it, a string's quote or
				// backslash inside one, else structure. A long message is
				// mostly values not kept, mostly strings.
				j := skipUnkept(p[i:], s.inStr && !s.esc, s.inStr)
				if j < 0 {
					return
				}
				i += j
				c = p[i]
			}
			if s.inStr {
				switch {
				case s.esc:
					s.esc = false
				case c == '\\':
					s.esc = true
				case c == '"':
					s.inStr = false
				}
				s.keep(c)
				continue
			}
			switch c {
			case '"':
				s.inStr = true
			case '{', '[':
				s.depth++
			case '}', ']':
				if s.depth == 0 { // the object's own '}'
					s.endValue()
					s.state = scanDone
					continue
				}
				s.depth--
			case ',':
				if s.depth == 0 {
					s.endValue()
					s.state = scanName
					continue
				}
			}
			s.keep(c)
		}
	}
}

// skipUnkept returns the index in p of the first byte the scanner must
// look at inside a value it does not keep, or -1 when there is none: in a
// string (unescaped says the last byte was not a backslash), its quote or
// a backslash; outside one, a byte of structure.
func skipUnkept(p []byte, unescaped, inStr bool) int {
	switch {
	case unescaped:
		q := bytes.IndexByte(p, '"')
		if q < 0 {
			return bytes.IndexByte(p, '\\')
		}
		if b := bytes.IndexByte(p[:q], '\\'); b >= 0 {
			return b
		}
		return q
	case inStr: // the byte after a backslash
		if len(p) == 0 {
			return -1
		}
		return 0
	}
	for j, c := range p {
		if structural[c] {
			return j
		}
	}
	return -1
}

// structural marks the bytes that matter in a value outside its strings.
var structural = [256]bool{'"': true, '{': true, '[': true, '}': true, ']': true, ',': true}

// startValue decides, from the member's name, whether to keep its value.
func (s *envScanner) startValue() {
	s.capture, s.over, s.val = nil, false, s.val[:0]
	if s.keyLong {
		return
	}
	name, err := memberName(append(append([]byte{'"'}, s.key...), '"'))
	if err != nil {
		return
	}
	switch string(name) {
	case "id":
		if s.seenID {
			s.badID = true
		}
		s.seenID, s.capture = true, &s.id
	case "method":
		if s.seenMethod {
			s.badMethod = true
		}
		s.seenMethod, s.capture = true, &s.method
	default:
		switch routingVariant(name) {
		case "id":
			s.badID = true
		case "method":
			s.badMethod = true
		}
	}
}

func (s *envScanner) keep(c byte) {
	if s.capture == nil || s.over {
		return
	}
	if len(s.val) == maxScannedValue {
		s.over = true
		return
	}
	s.val = append(s.val, c)
}

func (s *envScanner) endValue() {
	if s.capture == nil {
		return
	}
	if s.over {
		*s.capture = nil
	} else if *s.capture == nil {
		v := s.val[:skipSpaceBack(s.val)]
		*s.capture = append([]byte(nil), v...)
	}
	s.capture = nil
}

// skipSpaceBack returns the length of b without its trailing whitespace.
func skipSpaceBack(b []byte) int {
	n := len(b)
	for n > 0 {
		switch b[n-1] {
		case ' ', '\t', '\r', '\n':
			n--
		default:
			return n
		}
	}
	return n
}

// result returns what the scan recovered: the raw id and the decoded
// method, each when it was read whole and spelled once; nil and ""
// otherwise.
func (s *envScanner) result() (id []byte, method string) {
	if !s.badID && json.Valid(s.id) {
		id = s.id
	}
	if !s.badMethod && s.method != nil {
		_ = json.Unmarshal(s.method, &method)
	}
	return id, method
}

// A MemberWatch watches a JSON object fed to it in pieces, as a relay
// passes it on, for a routing member spelled again: an "id" or "method"
// that appears twice, or in another letter case or escaped spelling. A
// relay that routed the object on its head (see [PeekHead]), where each
// appears once and exactly, must not pass such an object on whole: a
// parser that keeps the last spelling would route it elsewhere.
//
// Its zero value is ready for an object's first piece. It is not safe for
// concurrent use.
type MemberWatch struct{ s envScanner }

// Write scans p, the next piece of the object.
func (w *MemberWatch) Write(p []byte) { w.s.write(p) }

// Twice reports whether the pieces written so far spell "id", or
// "method", more than once.
func (w *MemberWatch) Twice() (id, method bool) { return w.s.badID, w.s.badMethod }
