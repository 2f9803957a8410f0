package policy

import (
	"fmt"
	"path"
	"sort"
	"strings"
)

// ToolDefault is whether a server's tools are on when no override names them.
// The zero value means DefaultAll, the default.
type ToolDefault string

// The tool defaults.
const (
	// DefaultAll turns every tool on.
	DefaultAll ToolDefault = "all"
	// DefaultReadOnly turns on the tools annotated readOnlyHint: true.
	DefaultReadOnly ToolDefault = "read_only"
	// DefaultNone turns every tool off.
	DefaultNone ToolDefault = "none"
)

// ParseToolDefault parses "all", "read_only" or "none"; the empty string is
// DefaultAll. Any other value is an error matching ErrInvalid.
func ParseToolDefault(s string) (ToolDefault, error) {
	switch d := ToolDefault(s); d {
	case "":
		return DefaultAll, nil
	case DefaultAll, DefaultReadOnly, DefaultNone:
		return d, nil
	}
	return "", &invalidError{msg: fmt.Sprintf("unknown tool default %q (want all, read_only or none)", s)}
}

// Rules is the operator policy of one server, as written in the config file.
// The zero Rules turn every tool on.
type Rules struct {
	// Default applies to tools no override names; "" means DefaultAll.
	Default ToolDefault
	// Overrides maps exact tool names or path.Match globs to on/off. In a
	// glob `*` matches any run of characters but `/`, `?` any one character
	// but `/`, `[...]` one character of its class (`/` too, if listed), and
	// `\` escapes the next one; every other character, `.`, `-` and `_`
	// included, matches only itself. An override replaces the default, so it can switch on a tool
	// the default leaves off. A key equal to the tool's name applies first,
	// even when it contains glob metacharacters (`x[1]` names the tool
	// "x[1]", and as a glob also matches "x1"); then a longer glob beats a
	// shorter one, and between equally long matching globs off beats on,
	// then the lexically smaller pattern wins.
	Overrides map[string]bool
}

// compiledRules is Rules with its default validated and its globs ordered
// once, so deciding a tool costs a map lookup plus the matching globs.
type compiledRules struct {
	def       ToolDefault
	overrides patternSet
}

func (r Rules) compile() (compiledRules, error) {
	def, err := ParseToolDefault(string(r.Default))
	if err != nil {
		return compiledRules{}, err
	}
	set, err := compilePatterns(r.Overrides)
	if err != nil {
		return compiledRules{}, err
	}
	return compiledRules{def: def, overrides: set}, nil
}

// allows reports whether operator policy turns the tool on.
func (r *compiledRules) allows(name string, readOnly bool) bool {
	if on, ok := r.overrides.lookup(name); ok {
		return on
	}
	switch r.def {
	case DefaultAll:
		return true
	case DefaultReadOnly:
		return readOnly
	}
	return false
}

// Decision returns the override that decides the named tool (the pattern
// as written, as [Rules.Overrides] applies them), or "" and false when no
// override names it and the default decides. Rules that do not compile
// name none.
func (r Rules) Decision(name string) (pattern string, override bool) {
	set, err := compilePatterns(r.Overrides)
	if err != nil {
		return "", false
	}
	if _, ok := set.exact[name]; ok {
		return name, true
	}
	for i := range set.globs {
		if set.globs[i].match(name) {
			return set.globs[i].pattern, true
		}
	}
	return "", false
}

// ValidatePattern reports whether pattern is a usable tool name or glob: not
// empty and well-formed for path.Match. The error matches ErrInvalid.
func ValidatePattern(pattern string) error {
	if pattern == "" {
		return &invalidError{msg: "empty tool name pattern"}
	}
	if _, err := path.Match(pattern, ""); err != nil {
		return &invalidError{msg: fmt.Sprintf("malformed tool name pattern %q: %v", pattern, err)}
	}
	return nil
}

// isGlob reports whether pattern uses path.Match syntax; anything else
// matches only the tool of that exact name.
func isGlob(pattern string) bool { return strings.ContainsAny(pattern, `*?[\`) }

// patternSet maps exact names and globs to values with the precedence
// documented on Rules.Overrides. The zero patternSet matches nothing.
type patternSet struct {
	exact map[string]bool // every pattern, as the exact name it also is
	globs []glob          // the patterns that are globs, most specific first
}

type glob struct {
	pattern string
	value   bool
	// stars is pattern split at '*' when '*' is its only metacharacter, the
	// common case, which then matches without path.Match; nil otherwise.
	stars []string
}

func newGlob(pattern string, value bool) glob {
	g := glob{pattern: pattern, value: value}
	if !strings.ContainsAny(pattern, `?[\`) {
		g.stars = strings.Split(pattern, "*")
	}
	return g
}

// match reports whether name matches the glob with path.Match semantics.
func (g *glob) match(name string) bool {
	// '*' must not match '/': leave such names to path.Match.
	if g.stars == nil || strings.IndexByte(name, '/') >= 0 {
		// The pattern was validated at compile time, so Match cannot fail.
		matched, _ := path.Match(g.pattern, name)
		return matched
	}
	first, last := g.stars[0], g.stars[len(g.stars)-1]
	if len(name) < len(first)+len(last) || !strings.HasPrefix(name, first) || !strings.HasSuffix(name, last) {
		return false
	}
	// Leftmost matching of the literals between stars is exact.
	middle := name[len(first) : len(name)-len(last)]
	for _, lit := range g.stars[1 : len(g.stars)-1] {
		i := strings.Index(middle, lit)
		if i < 0 {
			return false
		}
		middle = middle[i+len(lit):]
	}
	return true
}

func compilePatterns(m map[string]bool) (patternSet, error) {
	var set patternSet
	for p, v := range m {
		if err := ValidatePattern(p); err != nil {
			return patternSet{}, err
		}
		// Every pattern is first the exact name it spells: a tool may be
		// named "x[1]" or "a*b", and its own entry must apply to it.
		if set.exact == nil {
			set.exact = make(map[string]bool)
		}
		set.exact[p] = v
		if isGlob(p) {
			set.globs = append(set.globs, newGlob(p, v))
		}
	}
	sort.Slice(set.globs, func(i, j int) bool {
		a, b := set.globs[i], set.globs[j]
		if len(a.pattern) != len(b.pattern) {
			return len(a.pattern) > len(b.pattern)
		}
		if a.value != b.value {
			return !a.value // off first: the conservative choice on a tie
		}
		return a.pattern < b.pattern
	})
	return set, nil
}

// lookup returns the value of the most specific pattern matching name.
func (s *patternSet) lookup(name string) (value, ok bool) {
	if v, ok := s.exact[name]; ok {
		return v, true
	}
	for i := range s.globs {
		if s.globs[i].match(name) {
			return s.globs[i].value, true
		}
	}
	return false, false
}
