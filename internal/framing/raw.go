package framing

// Elements returns the raw elements of the JSON array arr, aliasing it.
func Elements(arr []byte) ([][]byte, error) {
	i := skipSpace(arr, 0)
	if i >= len(arr) || arr[i] != '[' {
		return nil, syntaxError(i, "'['")
	}
	var out [][]byte
	i = skipSpace(arr, i+1)
	if i < len(arr) && arr[i] == ']' {
		return out, nil
	}
	for {
		end, err := skipValue(arr, i)
		if err != nil {
			return nil, err
		}
		out = append(out, arr[i:end])
		i = skipSpace(arr, end)
		if i < len(arr) && arr[i] == ',' {
			i = skipSpace(arr, i+1)
			continue
		}
		if i < len(arr) && arr[i] == ']' {
			return out, nil
		}
		return nil, syntaxError(i, "',' or ']'")
	}
}

// Member is one member of a JSON object, both parts raw and aliasing the
// object. Name keeps its quotes and escapes.
type Member struct {
	Name  []byte
	Value []byte
}

// Members returns the members of the JSON object obj in order.
func Members(obj []byte) ([]Member, error) {
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
		end, err = skipValue(obj, start)
		if err != nil {
			return nil, err
		}
		out = append(out, Member{Name: name, Value: obj[start:end]})
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

// Splice returns a copy of msg in which part, a subslice of msg (such as an
// [Envelope] field), is replaced by repl.
func Splice(msg, part, repl []byte) []byte {
	start := cap(msg) - cap(part) // part aliases msg, so the capacities tell its offset
	if start < 0 || start+len(part) > len(msg) {
		panic("framing: Splice: part is not a subslice of msg")
	}
	out := make([]byte, 0, len(msg)-len(part)+len(repl))
	out = append(out, msg[:start]...)
	out = append(out, repl...)
	return append(out, msg[start+len(part):]...)
}
