package tooldef

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// hashedMembers are the tool members a definition hash covers, in sorted
// order. Everything else (annotations, title, icons, _meta, ...) is excluded:
// changing it does not require re-approval.
var hashedMembers = [...]string{"description", "inputSchema", "name", "outputSchema"}

// hash returns the definition hash of a tool whose members parse has
// checked: the lowercase hex SHA-256 of the canonical JSON of its name,
// description, inputSchema and outputSchema members (see Def.Hash).
//
// Canonical JSON here is: objects with keys sorted bytewise, no
// insignificant whitespace, strings with only `"`, `\` and control
// characters escaped, and numbers in the canonical form of canonicalNumber,
// so numerically equal literals (1, 1.0, 1e0) hash alike. A member that is
// absent and one that is null hash alike. Duplicate keys never reach it:
// parse refuses a definition with a duplicate key at any depth of a hashed
// member, so the canonical form of what it hashes is the only reading of
// it. The hash is persisted as the approved hash, so this encoding must
// never change.
func hash(members *[numMembers][]byte) (string, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	first := true
	for _, key := range hashedMembers {
		raw := members[memberIndex(key)]
		if raw == nil {
			continue
		}
		v, err := decodeValue(raw)
		if err != nil {
			return "", fmt.Errorf("%w: member %q: %v", ErrInvalid, key, err)
		}
		if v == nil {
			continue // null hashes like absent
		}
		if !first {
			buf.WriteByte(',')
		}
		first = false
		writeString(&buf, key)
		buf.WriteByte(':')
		writeCanonical(&buf, v)
	}
	buf.WriteByte('}')
	sum := sha256.Sum256(buf.Bytes())
	return hex.EncodeToString(sum[:]), nil
}

func decodeValue(raw json.RawMessage) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	return v, err
}

func writeCanonical(buf *bytes.Buffer, v any) {
	switch v := v.(type) {
	case nil:
		buf.WriteString("null")
	case bool:
		buf.WriteString(strconv.FormatBool(v))
	case json.Number:
		buf.WriteString(canonicalNumber(string(v)))
	case string:
		writeString(buf, v)
	case []any:
		buf.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeCanonical(buf, e)
		}
		buf.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		buf.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeString(buf, k)
			buf.WriteByte(':')
			writeCanonical(buf, v[k])
		}
		buf.WriteByte('}')
	}
}

// writeString writes s as a JSON string, escaping only what JSON requires.
// The decoder has already replaced invalid UTF-8 with U+FFFD.
func writeString(buf *bytes.Buffer, s string) {
	const hexDigits = "0123456789abcdef"
	buf.WriteByte('"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			buf.WriteRune(r)
			i += size
			continue
		}
		switch {
		case c == '"' || c == '\\':
			buf.WriteByte('\\')
			buf.WriteByte(c)
		case c == '\n':
			buf.WriteString(`\n`)
		case c == '\r':
			buf.WriteString(`\r`)
		case c == '\t':
			buf.WriteString(`\t`)
		case c < 0x20:
			buf.WriteString(`\u00`)
			buf.WriteByte(hexDigits[c>>4])
			buf.WriteByte(hexDigits[c&0xf])
		default:
			buf.WriteByte(c)
		}
		i++
	}
	buf.WriteByte('"')
}

// canonicalNumber rewrites a valid JSON number literal exactly (no float
// rounding) so numerically equal literals agree: zero is "0"; an integer of
// at most 21 digits is written plainly ("100"); anything else is an integer
// mantissa without trailing zeros and a decimal exponent ("15e-1" for 1.5,
// "1e22"). A literal whose exponent does not fit in an int64 is kept as is.
func canonicalNumber(lit string) string {
	sign, rest := "", lit
	if strings.HasPrefix(rest, "-") {
		sign, rest = "-", rest[1:]
	}
	mantissa, exp := rest, int64(0)
	if i := strings.IndexAny(rest, "eE"); i >= 0 {
		e, err := strconv.ParseInt(rest[i+1:], 10, 64)
		if err != nil || e < math.MinInt64/2 || e > math.MaxInt64/2 {
			return lit
		}
		mantissa, exp = rest[:i], e
	}
	whole, frac := mantissa, ""
	if i := strings.IndexByte(mantissa, '.'); i >= 0 {
		whole, frac = mantissa[:i], mantissa[i+1:]
	}
	digits := strings.TrimLeft(whole+frac, "0")
	if digits == "" {
		return "0" // also -0
	}
	exp -= int64(len(frac))
	trimmed := strings.TrimRight(digits, "0")
	exp += int64(len(digits) - len(trimmed))
	digits = trimmed
	if exp >= 0 && int64(len(digits))+exp <= 21 {
		return sign + digits + strings.Repeat("0", int(exp))
	}
	return sign + digits + "e" + strconv.FormatInt(exp, 10)
}
