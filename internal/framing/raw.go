package framing

// Elements returns the raw elements of the JSON array arr, aliasing it.
func Elements(arr []byte) ([][]byte, error) {
	i := skipSpace(arr, 0)
	if i >= len(arr) || arr[i] != '[' {
		return nil, syntaxError(i, "'['")
	}
	out, end, err := splitArray(arr, i)
	if err != nil {
		return nil, err
	}
	if skipSpace(arr, end) != len(arr) {
		return nil, syntaxError(end, "end of array")
	}
	return out, nil
}

// splitArray returns the elements of the array starting at b[i]=='[' (a
// non-nil slice, empty for []) and the offset just past it.
func splitArray(b []byte, i int) ([][]byte, int, error) {
	out := [][]byte{}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return out, i + 1, nil
	}
	for {
		end, err := skipValue(b, i)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, b[i:end])
		i = skipSpace(b, end)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
			continue
		}
		if i < len(b) && b[i] == ']' {
			return out, i + 1, nil
		}
		return nil, 0, syntaxError(i, "',' or ']'")
	}
}

// Member is one member of a JSON object, both parts raw and aliasing the
// object. Name keeps its quotes and escapes.
type Member struct {
	Name  []byte
	Value []byte
	// Elements are Value's elements when MembersSplit was asked to split
	// it and it is an array (empty, not nil, for []); nil otherwise.
	Elements [][]byte
}

// Members returns the members of the JSON object obj in order.
func Members(obj []byte) ([]Member, error) {
	return MembersSplit(obj, nil)
}

// MembersSplit is [Members] that also splits, in the same pass, the array
// value of each member whose decoded name split accepts into
// Member.Elements: a large array is scanned once, not once to find its end
// and again for its elements. A nil split splits nothing.
func MembersSplit(obj []byte, split func(name string) bool) ([]Member, error) {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return nil, syntaxError(i, "'{'")
	}
	var out []Member
	i = skipSpace(obj, i+1)
	if i < len(obj) && obj[i] == '}' {
		return out, nil
	}
	for {
		if i >= len(obj) || obj[i] != '"' {
			return nil, syntaxError(i, "member name")
		}
		end, err := skipString(obj, i)
		if err != nil {
			return nil, err
		}
		name := obj[i:end]
		i = skipSpace(obj, end)
		if i >= len(obj) || obj[i] != ':' {
			return nil, syntaxError(i, "':'")
		}
		start := skipSpace(obj, i+1)
		var elems [][]byte
		if start < len(obj) && obj[start] == '[' && accepts(split, name) {
			elems, end, err = splitArray(obj, start)
		} else {
			end, err = skipValue(obj, start)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, Member{Name: name, Value: obj[start:end], Elements: elems})
		i = skipSpace(obj, end)
		if i < len(obj) && obj[i] == ',' {
			i = skipSpace(obj, i+1)
			continue
		}
		if i < len(obj) && obj[i] == '}' {
			return out, nil
		}
		return nil, syntaxError(i, "',' or '}'")
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
