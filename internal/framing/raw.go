package framing

import (
	"bytes"
	"fmt"
	"hash/maphash"
)

// Elements returns the raw elements of the JSON array arr, aliasing it.
func Elements(arr []byte) ([][]byte, error) {
	i := skipSpace(arr, 0)
	if i >= len(arr) || arr[i] != '[' {
		return nil, syntaxError(i, "'['")
	}
	out, _, end, err := splitArray(arr, i, nil)
	if err != nil {
		return nil, err
	}
	if skipSpace(arr, end) != len(arr) {
		return nil, syntaxError(end, "end of array")
	}
	return out, nil
}

// splitArray returns the elements of the array starting at b[i]=='[' (a
// non-nil slice, empty for []) and the offset just past it. With a non-nil
// known it also returns, for each element, the index of a known value
// with its bytes (-1 for none), and skips without scanning each element
// that is the known value after the one before it.
func splitArray(b []byte, i int, known *Known) ([][]byte, []int, int, error) {
	out := [][]byte{}
	var at []int
	if known != nil {
		// As many elements as known values of their size fit in b.
		n := min(len(known.vals), (len(b)-i)/known.size+1)
		out, at = make([][]byte, 0, n), make([]int, 0, n)
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return out, at, i + 1, nil
	}
	next := 0 // the known value expected next
	for {
		j, end := known.match(b, i, next)
		if j < 0 {
			var err error
			if end, err = skipValue(b, i); err != nil {
				return nil, nil, 0, err
			}
			j = known.find(b[i:end])
		}
		out = append(out, b[i:end])
		if known != nil {
			at = append(at, j)
			next = j + 1 // after an unknown element, the first value again
		}
		i = skipSpace(b, end)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
			continue
		}
		if i < len(b) && b[i] == ']' {
			return out, at, i + 1, nil
		}
		return nil, nil, 0, syntaxError(i, "',' or ']'")
	}
}

// Known is a list of JSON values that [MembersSplitKnown] recognises by
// their bytes in the arrays it splits, rather than scanning them again,
// such as the tool definitions of a catalog in a tools/list page that
// repeats it. NewKnown checks each value once to be one whole value as
// the splitter reads it; one that is not is never recognised. A Known is
// immutable and safe for concurrent use; a nil *Known recognises nothing.
type Known struct {
	vals [][]byte       // nil for a value that is not whole
	at   map[uint64]int // hash of a value -> its index, to find one out of sequence
	size int            // the mean size of the values, at least 1
}

var knownSeed = maphash.MakeSeed()

// NewKnown returns the Known of vals, which it keeps (not to be modified).
func NewKnown[V ~[]byte](vals []V) *Known {
	k := &Known{vals: make([][]byte, len(vals)), at: make(map[uint64]int, len(vals))}
	total := 0
	for i, v := range vals {
		if end, err := skipValue(v, 0); err == nil && end == len(v) {
			k.vals[i] = v
			k.at[maphash.Bytes(knownSeed, v)] = i
		}
		total += len(v)
	}
	k.size = max(1, total/max(1, len(vals)))
	return k
}

// match returns the index of value next and the offset just past it when
// b[i:] starts with it as skipValue would read it; -1 otherwise.
func (k *Known) match(b []byte, i, next int) (int, int) {
	if k == nil || next >= len(k.vals) {
		return -1, 0
	}
	v := k.vals[next]
	if v == nil || !bytes.HasPrefix(b[i:], v) {
		return -1, 0
	}
	end := i + len(v)
	if end < len(b) && isScalarByte(v[len(v)-1]) && isScalarByte(b[end]) {
		return -1, 0 // a number or literal that goes on
	}
	return next, end
}

// find returns the index of a value with v's bytes, or -1.
func (k *Known) find(v []byte) int {
	if k == nil {
		return -1
	}
	if j, ok := k.at[maphash.Bytes(knownSeed, v)]; ok && bytes.Equal(k.vals[j], v) {
		return j
	}
	return -1
}

// Member is one member of a JSON object, both parts raw and aliasing the
// object. Name keeps its quotes and escapes.
type Member struct {
	Name  []byte
	Value []byte
	// Elements are Value's elements when MembersSplit was asked to split
	// it and it is an array (empty, not nil, for []); nil otherwise.
	Elements [][]byte
	// Known holds, for each of Elements split by MembersSplitKnown, the
	// index of a known value with its bytes, or -1; nil otherwise.
	Known []int
}

// Members returns the members of the JSON object obj in order.
func Members(obj []byte) ([]Member, error) {
	return MembersSplit(obj, nil)
}

// LookupMember returns the value of the member of the JSON object obj
// named name, read as every JSON parser reads it. found is false when obj
// has no such member, or is not an object. The error wraps [ErrAmbiguous]
// when parsers may read another value: a second member whose name matches
// name in any letter case (first or last wins, or, with Go's
// encoding/json, a case-insensitive match, merged into a map), the only
// one spelled otherwise, or a member name whose escapes do not decode.
func LookupMember(obj []byte, name string) (value []byte, found bool, err error) {
	l, scanErr := lookupMember(obj, name, false)
	switch {
	case scanErr != nil:
		return nil, false, nil
	case l.ambiguous != nil:
		return nil, false, l.ambiguous
	}
	return l.value, l.value != nil, nil
}

// memberLookup is what lookupMember read of one name in an object.
type memberLookup struct {
	value     []byte // the member's value; nil when absent or ambiguous
	ambiguous error  // wraps ErrAmbiguous when parsers may read another value
	insert    int    // where a new member goes: just past the last value, or the '{'
	empty     bool   // the object has no members
	end       int    // just past the closing '}'
}

// lookupMember reads the whole object obj for its member name (see
// [LookupMember]), checking every byte of it as json.Valid does when
// valid is set. The error is obj's malformation; an ambiguity is not one.
func lookupMember(obj []byte, name string, valid bool) (memberLookup, error) {
	l := memberLookup{insert: skipSpace(obj, 0) + 1, empty: true}
	found := false
	end, err := eachMember(obj, nil, nil, valid, func(m Member) bool {
		l.empty = false
		l.insert = cap(obj) - cap(m.Value) + len(m.Value) // Value aliases obj
		if l.ambiguous != nil {
			return true // the object is still read to its end: malformed is not ambiguous
		}
		key, err := memberName(m.Name)
		switch {
		case err != nil:
			l.ambiguous = fmt.Errorf("%w: a member name does not decode", ErrAmbiguous)
		case !bytes.EqualFold(key, []byte(name)):
		case string(key) != name || found:
			l.ambiguous = fmt.Errorf("%w: %q is spelled more than once, or in another letter case", ErrAmbiguous, name)
		default:
			l.value, found = m.Value, true
		}
		return true
	})
	if err != nil {
		return memberLookup{}, err
	}
	if l.ambiguous != nil {
		l.value = nil
	}
	l.end = end
	return l, nil
}

// EachMember calls yield with each member of the JSON object obj in
// order, until yield returns false: [Members] without the slice, for a
// reader that wants one pass and no allocation. A malformed obj is an
// error, reported once the members before the fault have been yielded.
func EachMember(obj []byte, yield func(Member) bool) error {
	_, err := eachMember(obj, nil, nil, false, yield)
	return err
}

// MembersSplit is [Members] that also splits, in the same pass, the array
// value of each member whose decoded name split accepts into
// Member.Elements: a large array is scanned once, not once to find its end
// and again for its elements. A nil split splits nothing.
func MembersSplit(obj []byte, split func(name string) bool) ([]Member, error) {
	return MembersSplitKnown(obj, split, nil)
}

// MembersSplitKnown is [MembersSplit] that recognises the values of known
// among the elements it splits (see Member.Known). A value that follows
// the one recognised before it is taken by comparing its bytes, without
// scanning it; the result is the same as MembersSplit's.
func MembersSplitKnown(obj []byte, split func(name string) bool, known *Known) ([]Member, error) {
	var out []Member
	_, err := eachMember(obj, split, known, false, func(m Member) bool {
		out = append(out, m)
		return true
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// eachMember is the one scanner of an object's members: it yields each
// member of obj, splitting the arrays split accepts (see
// [MembersSplitKnown]), until yield returns false or obj ends, and returns
// the offset just past the closing '}' (0 when yield stopped it). With
// valid set it checks every name and value as json.Valid does, and splits
// nothing.
func eachMember(obj []byte, split func(name string) bool, known *Known, valid bool, yield func(Member) bool) (int, error) {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return 0, syntaxError(i, "'{'")
	}
	i = skipSpace(obj, i+1)
	if i < len(obj) && obj[i] == '}' {
		return i + 1, nil
	}
	for {
		if i >= len(obj) || obj[i] != '"' {
			return 0, syntaxError(i, "member name")
		}
		end, err := scanString(obj, i, valid)
		if err != nil {
			return 0, err
		}
		name := obj[i:end]
		i = skipSpace(obj, end)
		if i >= len(obj) || obj[i] != ':' {
			return 0, syntaxError(i, "':'")
		}
		start := skipSpace(obj, i+1)
		var elems [][]byte
		var at []int
		switch {
		case valid:
			end, err = validNested(obj, start, 1)
		case start < len(obj) && obj[start] == '[' && accepts(split, name):
			elems, at, end, err = splitArray(obj, start, known)
		default:
			end, err = skipValue(obj, start)
		}
		if err != nil {
			return 0, err
		}
		if !yield(Member{Name: name, Value: obj[start:end], Elements: elems, Known: at}) {
			return 0, nil
		}
		i = skipSpace(obj, end)
		if i < len(obj) && obj[i] == ',' {
			i = skipSpace(obj, i+1)
			continue
		}
		if i < len(obj) && obj[i] == '}' {
			return i + 1, nil
		}
		return 0, syntaxError(i, "',' or '}'")
	}
}

// accepts reports whether split accepts the member named quoted.
func accepts(split func(name string) bool, quoted []byte) bool {
	if split == nil {
		return false
	}
	key, err := memberName(quoted)
	return err == nil && split(string(key))
}

// Splice returns a copy of msg in which part, a subslice of msg (such as an
// [Envelope] field), is replaced by repl.
func Splice(msg, part, repl []byte) []byte {
	return SpliceFunc(msg, part, len(repl), func(out []byte) []byte { return append(out, repl...) })
}

// SpliceFunc is [Splice] for a replacement of about n bytes that write
// appends to the copy, so that it is built in place rather than copied in.
func SpliceFunc(msg, part []byte, n int, write func(out []byte) []byte) []byte {
	start := cap(msg) - cap(part) // part aliases msg, so the capacities tell its offset
	if start < 0 || start+len(part) > len(msg) {
		panic("framing: Splice: part is not a subslice of msg")
	}
	out := make([]byte, 0, len(msg)-len(part)+n)
	out = append(out, msg[:start]...)
	out = write(out)
	return append(out, msg[start+len(part):]...)
}
