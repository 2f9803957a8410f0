package policy

import (
	"sort"
	"strings"
)

// AllowList is a per-run allow-list of tool names and globs (`--allow-tools`).
// It can only narrow: tools outside it are out of scope, absent everywhere
// rather than locked. The zero AllowList allows every tool. An AllowList is
// immutable and safe for concurrent use.
type AllowList struct {
	set *patternSet // nil: everything allowed
}

// ParseAllowList parses a comma-separated list of exact tool names and
// path.Match globs ("read_file,list_*"), matched as Rules.Overrides keys
// are: an entry equal to a tool's name admits it even when it contains glob
// metacharacters. Blanks around entries are ignored.
// An empty or all-blank string yields the zero AllowList (no restriction);
// a list with an empty or malformed entry ("a,,b", "a,") is an error matching
// ErrInvalid, since silently widening a typo'd list would be unsafe.
func ParseAllowList(s string) (AllowList, error) {
	if strings.TrimSpace(s) == "" {
		return AllowList{}, nil
	}
	entries := make(map[string]bool)
	for _, e := range strings.Split(s, ",") {
		e = strings.TrimSpace(e)
		if err := ValidatePattern(e); err != nil {
			return AllowList{}, err
		}
		entries[e] = true
	}
	set, err := compilePatterns(entries)
	if err != nil {
		return AllowList{}, err
	}
	return AllowList{set: &set}, nil
}

// Allows reports whether the tool is in scope for this run.
func (a AllowList) Allows(name string) bool {
	if a.set == nil {
		return true
	}
	_, ok := a.set.lookup(name)
	return ok
}

// IsZero reports whether the allow-list allows every tool.
func (a AllowList) IsZero() bool { return a.set == nil }

// String returns the entries, sorted and comma-separated ("" for the zero
// AllowList), in the syntax ParseAllowList accepts.
func (a AllowList) String() string {
	if a.set == nil {
		return ""
	}
	entries := make([]string, 0, len(a.set.exact))
	for pattern := range a.set.exact { // every entry, globs included
		entries = append(entries, pattern)
	}
	sort.Strings(entries)
	return strings.Join(entries, ",")
}
