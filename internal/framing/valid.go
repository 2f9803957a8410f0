package framing

// maxDepth is the deepest nesting a validated value may have, as in
// encoding/json, which refuses deeper input.
const maxDepth = 10000

// validValue is skipValue that checks the value in full, as json.Valid
// does: strings with their escapes, numbers, literals, and the commas and
// colons of every object and array at any depth.
func validValue(b []byte, i int) (int, error) {
	return validNested(b, i, 0)
}

func validNested(b []byte, i, depth int) (int, error) {
	if i >= len(b) {
		return 0, syntaxError(i, "a value")
	}
	switch c := b[i]; {
	case c == '"':
		return validString(b, i)
	case c == '{' || c == '[':
		if depth+1 > maxDepth {
			return 0, syntaxError(i, "less nesting")
		}
		return validContainer(b, i, depth+1)
	case c == '-' || c >= '0' && c <= '9':
		return validNumber(b, i)
	case c == 't':
		return validLiteral(b, i, "true")
	case c == 'f':
		return validLiteral(b, i, "false")
	case c == 'n':
		return validLiteral(b, i, "null")
	}
	return 0, syntaxError(i, "a value")
}

// validContainer checks the object or array starting at b[i].
func validContainer(b []byte, i, depth int) (int, error) {
	object := b[i] == '{'
	closer := byte(']')
	if object {
		closer = '}'
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == closer {
		return i + 1, nil
	}
	for {
		var err error
		if object {
			if i >= len(b) || b[i] != '"' {
				return 0, syntaxError(i, "member name")
			}
			if i, err = validString(b, i); err != nil {
				return 0, err
			}
			i = skipSpace(b, i)
			if i >= len(b) || b[i] != ':' {
				return 0, syntaxError(i, "':'")
			}
			i = skipSpace(b, i+1)
		}
		if i, err = validNested(b, i, depth); err != nil {
			return 0, err
		}
		i = skipSpace(b, i)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
			continue
		}
		if i < len(b) && b[i] == closer {
			return i + 1, nil
		}
		return 0, syntaxError(i, "',' or a closing bracket")
	}
}

// validString is skipString that also checks every escape.
func validString(b []byte, i int) (int, error) { return scanString(b, i, true) }

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// validNumber checks the JSON number starting at b[i]:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func validNumber(b []byte, i int) (int, error) {
	start := i
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(b, i)
	default:
		return 0, syntaxError(i, "a digit")
	}
	if i < len(b) && b[i] == '.' {
		if i+1 >= len(b) || b[i+1] < '0' || b[i+1] > '9' {
			return 0, syntaxError(i+1, "a digit")
		}
		i = digits(b, i+1)
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return 0, syntaxError(i, "a digit")
		}
		i = digits(b, i)
	}
	if i == start {
		return 0, syntaxError(i, "a number")
	}
	return i, nil
}

func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

func validLiteral(b []byte, i int, lit string) (int, error) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return 0, syntaxError(i, lit)
	}
	return i + len(lit), nil
}
