package framing

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"
)

// Kind says what role a JSON-RPC message plays.
type Kind int

// The kinds of message. A message with a method and an id is a request;
// with a method and no id, a notification; with no method, a response.
const (
	Invalid Kind = iota
	Request
	Notification
	Response
	Batch
)

func (k Kind) String() string {
	switch k {
	case Request:
		return "request"
	case Notification:
		return "notification"
	case Response:
		return "response"
	case Batch:
		return "batch"
	}
	return "invalid"
}

// ErrNotJSON is returned by [Peek] for a line that is not a JSON object or
// array, such as a banner an upstream prints on stdout.
var ErrNotJSON = errors.New("framing: not a JSON-RPC message")

// ErrAmbiguous is wrapped by the error [Peek] returns for a message whose
// routing members (id, method, params, result, error) are not each spelled
// once and exactly: a duplicate, or a variant in another letter case. JSON
// parsers disagree on such input (first wins, last wins, or keys matched
// case-insensitively, as Go's encoding/json does), so a relay cannot know
// which value its peer will act on. The envelope is still filled in, with
// the first spelling's values, except ID when "id" itself is ambiguous.
var ErrAmbiguous = errors.New("framing: ambiguous JSON-RPC message")

// Envelope holds the top-level members of a JSON-RPC message that a relay
// routes on, and the members of its params that a relay reads. Raw fields
// alias the peeked line and share its lifetime.
//
// Name is left nil when more than one member of Params is called "name"
// in any letter case, or when the one so called is not spelled "name"
// exactly: upstreams disagree on which of them they read (first wins, last
// wins, or a case-insensitive match, as Go's encoding/json does), so a
// gate cannot judge a call by its name. It is nil too when a member name
// in Params has a malformed escape (which only [Peek] lets through).
type Envelope struct {
	Kind   Kind
	ID     []byte // raw JSON of "id", nil when absent
	Method string // "" when absent
	Params []byte // raw JSON of "params", nil when absent
	Result []byte // raw JSON of "result", nil when absent
	Error  []byte // raw JSON of "error", nil when absent

	// The members of an object Params that a relay reads, found in the
	// same pass, so that no reader scans Params again (tools/call params
	// may be megabytes). Member names are compared after decoding their
	// escapes. Each is nil when Params is not an object or lacks it.
	Name          []byte // raw JSON of "name"; also nil when it is ambiguous (see above)
	Arguments     []byte // raw JSON of the first "arguments"
	ProgressToken []byte // raw JSON of the first "progressToken" of the first "_meta"
}

// Peek scans the top level of line and returns its envelope. On error, the
// envelope still holds the members read before the problem, which lets a
// caller recover the id from the head of a truncated message. It checks the
// structure of the top level and of every string, but does not validate
// nested values beyond balancing brackets: callers that must reject
// malformed input validate it themselves. A line that starts with "[" is
// reported as [Batch] without looking inside. Member names are compared
// after decoding their escapes, as a JSON parser would.
func Peek(line []byte) (env Envelope, err error) {
	return peek(line, false)
}

// PeekValid is [Peek] that also validates the whole line in the same pass,
// exactly as json.Valid would (FuzzPeekValid holds it to that): a nil
// error or one wrapping [ErrAmbiguous] means the line is valid JSON; any
// other error means it is not (or, as with Peek, that it is not an object
// or array). A batch's elements are validated but not peeked at.
func PeekValid(line []byte) (env Envelope, err error) {
	return peek(line, true)
}

// peek is Peek, validating when valid is set.
func peek(line []byte, valid bool) (env Envelope, err error) {
	var method []byte
	defer func() {
		if err != nil && method != nil && env.Method == "" {
			// A truncated head (see LineTooLongError) still tells whether it
			// was a request.
			var m string // not &env.Method, which would put every env on the heap
			_ = json.Unmarshal(method, &m)
			env.Method = m
		}
	}()
	var ambiguous string // the first routing member spelled twice
	i := skipSpace(line, 0)
	if i == len(line) {
		return env, ErrNotJSON
	}
	switch line[i] {
	case '[':
		skip := skipValue
		if valid {
			skip = validValue
		}
		end, err := skip(line, i)
		if err != nil {
			return env, err
		}
		if valid && skipSpace(line, end) != len(line) {
			return env, syntaxError(end, "end of message")
		}
		env.Kind = Batch
		return env, nil
	case '{':
	default:
		return env, ErrNotJSON
	}
	hasMethod := false
	i = skipSpace(line, i+1)
	if i < len(line) && line[i] == '}' {
		i++
	} else {
		for {
			key, start, err := memberKey(line, i, valid)
			if err != nil {
				return env, err
			}
			var end int
			switch {
			case string(key) == "params" && env.Params == nil && start < len(line) && line[start] == '{':
				var w paramsWalk
				end, err = peekParams(line, start, valid, &w)
				env.Name, env.Arguments, env.ProgressToken = w.members()
			case valid:
				end, err = validNested(line, start, 1) // inside the message's own object
			default:
				end, err = skipValue(line, start)
			}
			if err != nil {
				return env, err
			}
			val := line[start:end]
			var slot *[]byte
			switch string(key) {
			case "id":
				slot = &env.ID
			case "method":
				slot, hasMethod = &method, true
			case "params":
				slot = &env.Params
			case "result":
				slot = &env.Result
			case "error":
				slot = &env.Error
			default:
				if r := routingVariant(key); r != "" && ambiguous == "" {
					ambiguous = r
				}
			}
			if slot != nil {
				if *slot != nil && ambiguous == "" {
					ambiguous = string(key)
				}
				if *slot == nil {
					*slot = val
				}
			}
			i = skipSpace(line, end)
			if i < len(line) && line[i] == ',' {
				i = skipSpace(line, i+1)
				continue
			}
			if i < len(line) && line[i] == '}' {
				i++
				break
			}
			return env, syntaxError(i, "',' or '}'")
		}
	}
	if skipSpace(line, i) != len(line) {
		return env, syntaxError(i, "end of message")
	}
	if hasMethod {
		// An ambiguous message is reported as such even when the first
		// spelling of its method is not a string: a peer may read another.
		if env.Method, err = String(method); err != nil && ambiguous == "" {
			return env, fmt.Errorf("framing: method is not a string: %w", err)
		}
	}
	switch {
	case hasMethod && env.ID != nil:
		env.Kind = Request
	case hasMethod:
		env.Kind = Notification
	case env.Result != nil || env.Error != nil:
		env.Kind = Response
	default:
		env.Kind = Invalid
	}
	if ambiguous != "" {
		if ambiguous == "id" {
			env.ID = nil
		}
		return env, fmt.Errorf("%w: member %q appears more than once or in another case", ErrAmbiguous, ambiguous)
	}
	return env, nil
}

// Rebase returns env, which [Peek] or [PeekValid] returned for from, with
// its raw members pointed at the same bytes of to, a copy of from: a
// caller that keeps a message past the buffer it was read into need not
// read it again. It panics when env's members do not alias from.
func (env Envelope) Rebase(from, to []byte) Envelope {
	if len(to) != len(from) {
		panic("framing: Rebase to a copy of another length")
	}
	for _, f := range []*[]byte{&env.ID, &env.Params, &env.Result, &env.Error, &env.Name, &env.Arguments, &env.ProgressToken} {
		if *f == nil {
			continue
		}
		// Peek slices every member as from[start:end], which leaves it the
		// capacity from has past start.
		start := cap(from) - cap(*f)
		if start < 0 || start+len(*f) > len(from) {
			panic("framing: Rebase of an envelope that does not alias its message")
		}
		*f = to[start : start+len(*f) : start+len(*f)]
	}
	return env
}

// peekParams checks (when valid is set) or skips the params object at
// line[i] as peek checks or skips any member's value, and collects in w
// the members of Params that Envelope holds. Without valid, params that
// only balance their brackets (which is all Peek asks of a nested value)
// are skipped with those members left nil.
func peekParams(line []byte, i int, valid bool, w *paramsWalk) (int, error) {
	end, err := w.object(line, i, valid, 2, false) // params is an object in the message's
	if err != nil {
		*w = paramsWalk{}
		if valid {
			return 0, err
		}
		return skipValue(line, i)
	}
	return end, nil
}

// paramsWalk collects the members of params that Envelope holds.
type paramsWalk struct {
	name, arguments, token []byte
	names                  int  // members called "name" in any letter case
	nameExact              bool // the first of them is spelled "name"
	badKey                 bool // a member name failed to decode
	metaSeen               bool // the first "_meta" was read
}

// members returns what Envelope holds of the walk: Name, Arguments and
// ProgressToken.
func (w *paramsWalk) members() (name, arguments, token []byte) {
	if w.names == 1 && w.nameExact && !w.badKey {
		name = w.name
	}
	return name, w.arguments, w.token
}

// maxParamsName is the longest raw member name (inside its quotes) that
// can decode to one paramsWalk looks for: "progressToken", every letter
// escaped as \uXXXX.
const maxParamsName = 6 * len("progressToken")

// object walks the object at b[i] ('{'), which nests at depth, checking
// each member's value as validNested does when valid is set or skipping it
// as skipValue does, and records the members of params (or, with meta, of
// params' first "_meta") that paramsWalk holds. Its errors are
// validContainer's.
func (w *paramsWalk) object(b []byte, i int, valid bool, depth int, meta bool) (int, error) {
	if valid && depth > maxDepth {
		return 0, syntaxError(i, "less nesting")
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return 0, syntaxError(i, "member name")
		}
		keyStart := i
		var escaped bool
		var err error
		i, escaped, err = nameString(b, i, valid)
		if err != nil {
			return 0, err
		}
		key := b[keyStart+1 : i-1]
		if escaped {
			var bad error
			switch {
			case len(key) <= maxParamsName:
				key, bad = memberName(b[keyStart:i])
			case !valid: // decoded only to see that it decodes
				_, bad = validString(b, keyStart)
			}
			if bad != nil && !meta {
				w.badKey = true
			}
		}
		i = skipSpace(b, i)
		if i >= len(b) || b[i] != ':' {
			return 0, syntaxError(i, "':'")
		}
		i = skipSpace(b, i+1)
		start := i
		switch {
		case meta:
			i, err = w.skip(b, i, valid, depth)
			if err == nil && w.token == nil && string(key) == "progressToken" {
				w.token = b[start:i]
			}
		case string(key) == "_meta" && !w.metaSeen:
			w.metaSeen = true
			if i < len(b) && b[i] == '{' {
				i, err = w.object(b, i, valid, depth+1, true)
			} else {
				i, err = w.skip(b, i, valid, depth)
			}
		default:
			i, err = w.skip(b, i, valid, depth)
			switch {
			case err != nil:
			case string(key) == "arguments":
				if w.arguments == nil {
					w.arguments = b[start:i]
				}
			case len(key) == len("name") && bytes.EqualFold(key, []byte("name")): // no other rune folds to these letters
				w.names++
				if w.names == 1 {
					w.name, w.nameExact = b[start:i], string(key) == "name"
				}
			}
		}
		if err != nil {
			return 0, err
		}
		i = skipSpace(b, i)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
			continue
		}
		if i < len(b) && b[i] == '}' {
			return i + 1, nil
		}
		return 0, syntaxError(i, "',' or a closing bracket")
	}
}

// skip checks (valid) or skips the value at b[i] of a member of an object
// nested at depth.
func (w *paramsWalk) skip(b []byte, i int, valid bool, depth int) (int, error) {
	if valid {
		return validNested(b, i, depth)
	}
	return skipValue(b, i)
}

// String decodes raw, a JSON string with its quotes, as encoding/json
// would. The methods of MCP come back without allocating.
func String(raw []byte) (string, error) {
	return StringKnown(raw, nil)
}

// An Interner keeps a set of strings, such as the names of the tools a
// relay knows: Interned returns the set's own string equal to value, if
// it holds one.
type Interner interface {
	Interned(value []byte) (string, bool)
}

// StringKnown is [String] for a string that is likely one of the set known
// keeps (known may be nil): such a value, when it is plain (unescaped),
// comes back as the set's own string, which costs no allocation either.
func StringKnown(raw []byte, known Interner) (string, error) {
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' && plainString(raw[1:len(raw)-1]) {
		if known != nil {
			if s, ok := known.Interned(raw[1 : len(raw)-1]); ok {
				return s, nil
			}
		}
		return knownMethod(raw[1 : len(raw)-1]), nil
	}
	var s string
	err := json.Unmarshal(raw, &s)
	return s, err
}

// knownMethod returns s as a string, interned for the methods a relay sees
// most, which therefore cost no allocation.
func knownMethod(s []byte) string {
	switch string(s) {
	case "tools/call":
		return "tools/call"
	case "tools/list":
		return "tools/list"
	case "notifications/progress":
		return "notifications/progress"
	case "notifications/cancelled":
		return "notifications/cancelled"
	case "notifications/message":
		return "notifications/message"
	case "ping":
		return "ping"
	case "resources/read":
		return "resources/read"
	case "prompts/get":
		return "prompts/get"
	case "completion/complete":
		return "completion/complete"
	}
	return string(s)
}

// routingKeys are the members a relay routes on.
var routingKeys = [...]string{"id", "method", "params", "result", "error"}

// routingVariant returns the routing member that key spells in another
// letter case (as a case-insensitive parser would match it), or "".
func routingVariant(key []byte) string {
	// A fast refusal of most names: a variant is 2 to 7 bytes long ("ſ",
	// U+017F, folds to "s" in two), and begins with the ASCII letter its
	// key begins with, since none of i, m, p, r and e folds to another rune.
	if len(key) < len("id") || len(key) > len("paramſ") {
		return ""
	}
	switch key[0] | 0x20 {
	case 'i', 'm', 'p', 'r', 'e':
	default:
		return ""
	}
	for _, r := range routingKeys {
		if string(key) != r && bytes.EqualFold(key, []byte(r)) {
			return r
		}
	}
	return ""
}

// memberKey reads the name of the object member at b[i], and the colon
// after it, and returns the name (decoded; see memberName) and the offset
// of its value. The name is validated as json.Valid would when valid is
// set, else only delimited.
func memberKey(b []byte, i int, valid bool) (key []byte, value int, err error) {
	if i >= len(b) || b[i] != '"' {
		return nil, 0, syntaxError(i, "member name")
	}
	end, escaped, err := nameString(b, i, valid)
	if err != nil {
		return nil, 0, err
	}
	key = b[i+1 : end-1]
	if escaped {
		if key, err = memberName(b[i:end]); err != nil {
			return nil, 0, err
		}
	}
	i = skipSpace(b, end)
	if i >= len(b) || b[i] != ':' {
		return nil, 0, syntaxError(i, "':'")
	}
	return key, skipSpace(b, i+1), nil
}

// nameString returns the offset just past the member name, a string,
// starting at b[i] ('"'), as validString (valid) or skipString would, and
// whether it holds a backslash, so that no second scan looks for escapes.
func nameString(b []byte, i int, valid bool) (end int, escaped bool, err error) {
	if j := nextStop(b, i+1); j < len(b) && b[j] == '"' {
		return j + 1, false, nil
	}
	// An escape or a control character: the full scanner decides.
	end, err = scanString(b, i, valid)
	return end, true, err
}

// memberName returns the name of a member given its quoted, raw JSON. It
// aliases quoted unless the name has escapes to decode.
func memberName(quoted []byte) ([]byte, error) {
	raw := quoted[1 : len(quoted)-1]
	if bytes.IndexByte(raw, '\\') < 0 {
		return raw, nil
	}
	var name string
	if err := json.Unmarshal(quoted, &name); err != nil {
		return nil, fmt.Errorf("framing: malformed member name: %w", err)
	}
	return []byte(name), nil
}

// SyntaxError describes malformed input found by [Peek].
type SyntaxError struct {
	Offset int    // byte offset of the problem
	Want   string // what was expected there
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("framing: malformed JSON at byte %d: want %s", e.Offset, e.Want)
}

func syntaxError(off int, want string) error { return &SyntaxError{Offset: off, Want: want} }

func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}

// skipString returns the offset just past the string starting at b[i]=='"'.
func skipString(b []byte, i int) (int, error) { return scanString(b, i, false) }

// scanString is skipString, or validString when valid is set.
func scanString(b []byte, i int, valid bool) (int, error) {
	start := i
	for i = nextStop(b, i+1); i < len(b); i = afterEscape(b, i+1) {
		switch b[i] {
		case '"':
			return i + 1, nil
		case '\\':
			if !valid {
				i++ // the escaped byte, whatever it is
				continue
			}
			if i+1 >= len(b) {
				return 0, syntaxError(start, "closing '\"'")
			}
			i++
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(b) || !isHex(b[i+1]) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) {
					return 0, syntaxError(i, "four hex digits")
				}
				i += 4
			default:
				return 0, syntaxError(i, "an escape")
			}
		default:
			return 0, syntaxError(i, "no control character in a string")
		}
	}
	return 0, syntaxError(start, "closing '\"'")
}

// afterEscape is nextStop for the bytes after an escape: escapes come
// close together when they come at all (text of quotes, a language
// written as \u escapes), so it looks at the first few bytes one at a time.
func afterEscape(b []byte, i int) int {
	for end := min(i+8, len(b)); i < end; i++ {
		if stringStop[b[i]] {
			return i
		}
	}
	return nextStop(b, i)
}

// nextStop returns the offset of the first byte from b[i] on that
// stringStop marks, or len(b) (or i, when i is past it) when there is
// none. It reads eight bytes at a time, sixteen while it finds none: most
// strings are plain text, and some (a file's text, base64 data) are long.
func nextStop(b []byte, i int) int {
	if i+8 <= len(b) { // most strings end within their first eight bytes
		if x := stopBytes(binary.LittleEndian.Uint64(b[i:])); x != 0 {
			return i + bits.TrailingZeros64(x)/8
		}
		i += 8
	}
	for ; i+16 <= len(b); i += 16 {
		x, y := stopBytes(binary.LittleEndian.Uint64(b[i:])), stopBytes(binary.LittleEndian.Uint64(b[i+8:]))
		if x|y != 0 {
			if x != 0 {
				return i + bits.TrailingZeros64(x)/8
			}
			return i + 8 + bits.TrailingZeros64(y)/8
		}
	}
	if i+8 <= len(b) {
		if x := stopBytes(binary.LittleEndian.Uint64(b[i:])); x != 0 {
			return i + bits.TrailingZeros64(x)/8
		}
		i += 8
	}
	for i < len(b) && !stringStop[b[i]] {
		i++
	}
	return i
}

// stopBytes returns x, eight bytes of a string, with the high bit of a
// byte set where stringStop marks one (a quote, a backslash or a control
// character): zero when it marks none. A borrow may set the bits above a
// marked byte, never below the first, so the lowest bit set is the first
// marked byte.
func stopBytes(x uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	// x^0x02 puts '"' at 0x20 and keeps control bytes below it, so one
	// test for bytes under 0x21 finds both; another finds zero bytes of
	// x^'\\'.
	low := x ^ (0x02 * ones)
	backslash := x ^ ('\\' * ones)
	return ((low-0x21*ones)&^low | (backslash-ones)&^backslash) & highs
}

// stringStop marks the bytes that end a run of plain string content: the
// closing quote, a backslash and the control characters JSON forbids.
var stringStop = func() (t [256]bool) {
	for c := range 0x20 {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

// skipValue returns the offset just past the value starting at b[i].
func skipValue(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, syntaxError(i, "a value")
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		return skipContainer(b, i)
	}
	start := i
	for i < len(b) && isScalarByte(b[i]) {
		i++
	}
	if i == start {
		return 0, syntaxError(i, "a value")
	}
	return i, nil
}

// skipContainer balances brackets, skipping strings, from b[i] ('{' or '[').
func skipContainer(b []byte, i int) (int, error) {
	var stack []byte // expected closers; deep nesting is rare, so allocate lazily
	var fixed [32]byte
	stack = fixed[:0]
	start := i
	for ; i < len(b); i++ {
		switch c := b[i]; c {
		case '"':
			end, err := skipString(b, i)
			if err != nil {
				return 0, err
			}
			i = end - 1
		case '{':
			stack = append(stack, '}')
		case '[':
			stack = append(stack, ']')
		case '}', ']':
			if len(stack) == 0 || stack[len(stack)-1] != c {
				return 0, syntaxError(i, "matching bracket")
			}
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				return i + 1, nil
			}
		}
	}
	return 0, syntaxError(start, "closing bracket")
}

func isScalarByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'E'
}

// IDKey returns a key for the JSON-RPC id raw under which the spellings a
// peer may re-encode it to are equal: a string by its decoded value (so
// "a\/b" and "a/b" are one id), a number by its value as a float64, the way
// JavaScript peers read and re-encode numbers (so 1, 1.0 and 1e0 are one
// id, and so are integers beyond 2^53 that round to the same float64), an
// object or array (which MCP does not allow as an id, but a relay passes)
// by a canonical form that ignores whitespace and the order of an object's
// members (Go's encoding/json re-encodes an object with its members sorted)
// and reads the strings and numbers in it as above, and anything else by
// its bytes. Keys of different JSON types never collide.
func IDKey(raw []byte) string {
	var a [64]byte
	return string(AppendIDKey(a[:0], raw))
}

// AppendIDKey appends [IDKey](raw) to dst. For the ids peers use in
// practice (a string without escapes, an integer of up to 15 digits) it
// allocates nothing, so that looking an id up in a map keyed by IDKey,
// as m[string(AppendIDKey(buf[:0], id))], costs no allocation.
func AppendIDKey(dst, raw []byte) []byte {
	if len(raw) == 0 {
		return dst
	}
	switch c := raw[0]; {
	case c == '"':
		if len(raw) >= 2 && raw[len(raw)-1] == '"' && plainString(raw[1:len(raw)-1]) {
			return append(append(dst, 's'), raw[1:len(raw)-1]...)
		}
	case c == '-' || c >= '0' && c <= '9':
		if plainInteger(raw) {
			return append(append(dst, 'n'), raw...)
		}
	}
	return append(dst, idKey(raw)...)
}

// plainString reports whether s, the inside of a quoted JSON string, is
// its own decoded value: printable ASCII with no escape or quote.
func plainString(s []byte) bool {
	for _, c := range s {
		if c < 0x20 || c >= 0x80 || c == '\\' || c == '"' {
			return false
		}
	}
	return true
}

// plainInteger reports whether raw is a JSON integer that numberKey would
// spell the same: no leading zero, not -0, and small enough (15 digits)
// to be exact as a float64.
func plainInteger(raw []byte) bool {
	digits := raw
	if digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 15 || digits[0] == '0' && (len(digits) > 1 || len(raw) > 1) {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// idKey is IDKey without the fast paths.
func idKey(raw []byte) string {
	if len(raw) == 0 {
		return ""
	}
	switch c := raw[0]; {
	case c == '"':
		if bytes.IndexByte(raw, '\\') < 0 && len(raw) >= 2 {
			return "s" + string(raw[1:len(raw)-1])
		}
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return "s" + s
		}
	case c == '-' || c >= '0' && c <= '9':
		if n, ok := numberKey(raw); ok {
			return "n" + n
		}
	case c == '{' || c == '[':
		if b, err := canonical(nil, raw); err == nil {
			return "j" + string(b)
		}
	}
	return "r" + string(raw)
}

// numberKey returns the canonical form of the JSON number raw (see IDKey).
func numberKey(raw []byte) (string, bool) {
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		return "", false
	}
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return strconv.FormatInt(int64(f), 10), true
	}
	return strconv.FormatFloat(f, 'g', -1, 64), true
}

// canonical appends to b the canonical form of the JSON value v for
// IDKey: no whitespace, object members sorted by decoded name, strings
// quoted by strconv.Quote after decoding, numbers by numberKey.
func canonical(b, v []byte) ([]byte, error) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return nil, syntaxError(0, "a value")
	}
	switch c := v[0]; {
	case c == '"':
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return nil, err
		}
		return strconv.AppendQuote(b, s), nil
	case c == '-' || c >= '0' && c <= '9':
		n, ok := numberKey(v)
		if !ok {
			return nil, syntaxError(0, "a number")
		}
		return append(b, n...), nil
	case c == '[':
		elems, err := Elements(v)
		if err != nil {
			return nil, err
		}
		b = append(b, '[')
		for i, e := range elems {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = canonical(b, e); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	case c == '{':
		members, err := Members(v)
		if err != nil {
			return nil, err
		}
		type kv struct{ key, val string }
		kvs := make([]kv, len(members))
		for i, m := range members {
			key, err := m.Key()
			if err != nil {
				return nil, err
			}
			val, err := canonical(nil, m.Value)
			if err != nil {
				return nil, err
			}
			kvs[i] = kv{key, string(val)}
		}
		slices.SortStableFunc(kvs, func(x, y kv) int { return cmp.Or(strings.Compare(x.key, y.key), strings.Compare(x.val, y.val)) })
		b = append(b, '{')
		for i, m := range kvs {
			if i > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendQuote(b, m.key)
			b = append(b, ':')
			b = append(b, m.val...)
		}
		return append(b, '}'), nil
	}
	switch string(v) {
	case "true", "false", "null":
		return append(b, v...), nil
	}
	return nil, syntaxError(0, "a value")
}

// Key returns the member's name with its escapes decoded.
func (m Member) Key() (string, error) {
	name, err := memberName(m.Name)
	return string(name), err
}
