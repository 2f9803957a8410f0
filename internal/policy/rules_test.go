package policy

import (
	"path"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRulesAllow(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		rules    Rules
		tool     string
		readOnly bool
		want     bool
	}{
		{name: "zero rules turn everything on", rules: Rules{}, tool: "write_file", want: true},
		{name: "all", rules: Rules{Default: DefaultAll}, tool: "write_file", want: true},
		{name: "read_only keeps a read-only tool", rules: Rules{Default: DefaultReadOnly}, tool: "read_file", readOnly: true, want: true},
		{name: "read_only drops a mutating tool", rules: Rules{Default: DefaultReadOnly}, tool: "write_file", want: false},
		{name: "none", rules: Rules{Default: DefaultNone}, tool: "read_file", readOnly: true, want: false},
		{
			name:  "override true switches on a default-off tool under read_only",
			rules: Rules{Default: DefaultReadOnly, Overrides: map[string]bool{"write_file": true}},
			tool:  "write_file", want: true,
		},
		{
			name:  "override true switches on a tool under none",
			rules: Rules{Default: DefaultNone, Overrides: map[string]bool{"read_*": true}},
			tool:  "read_file", want: true,
		},
		{
			name:  "an exact name with brackets beats a longer glob",
			rules: Rules{Default: DefaultNone, Overrides: map[string]bool{"x[1]": true, "x[[]*]*": false}},
			tool:  "x[1]", want: true,
		},
		{
			name:  "an exact name with a star beats a longer glob",
			rules: Rules{Overrides: map[string]bool{"a*b": true, "a*b*": false, "a**b": false}},
			tool:  "a*b", want: true,
		},
		{
			name:  "an exact name with a question mark applies to itself",
			rules: Rules{Default: DefaultNone, Overrides: map[string]bool{"what?": true}},
			tool:  "what?", want: true,
		},
		{
			name:  "an exact name with a backslash applies to itself",
			rules: Rules{Overrides: map[string]bool{`a\b`: false}},
			tool:  `a\b`, want: false,
		},
		{
			name:  "a key with glob metacharacters still matches as a glob",
			rules: Rules{Default: DefaultNone, Overrides: map[string]bool{"x[1]": true}},
			tool:  "x1", want: true,
		},
		{
			name:  "star does not match a slash",
			rules: Rules{Overrides: map[string]bool{"fs_*": false}},
			tool:  "fs_dir/read", want: true,
		},
		{
			name:  "star matches dots and dashes",
			rules: Rules{Overrides: map[string]bool{"fs_*": false}},
			tool:  "fs_a.b-c", want: false,
		},
		{
			name:  "none leaves unmatched tools off",
			rules: Rules{Default: DefaultNone, Overrides: map[string]bool{"read_*": true}},
			tool:  "write_file", readOnly: true, want: false,
		},
		{
			name:  "override false switches off a read-only tool",
			rules: Rules{Default: DefaultReadOnly, Overrides: map[string]bool{"read_file": false}},
			tool:  "read_file", readOnly: true, want: false,
		},
		{
			name:  "exact name beats a glob (on)",
			rules: Rules{Overrides: map[string]bool{"write_file": true, "write_*": false}},
			tool:  "write_file", want: true,
		},
		{
			name:  "exact name beats a longer glob (off)",
			rules: Rules{Overrides: map[string]bool{"move": false, "mo*e*******": true}},
			tool:  "move", want: false,
		},
		{
			name:  "glob applies to other names",
			rules: Rules{Overrides: map[string]bool{"write_file": true, "write_*": false}},
			tool:  "write_dir", want: false,
		},
		{
			name:  "longer glob beats shorter",
			rules: Rules{Overrides: map[string]bool{"write_*": false, "write_safe_*": true}},
			tool:  "write_safe_note", want: true,
		},
		{
			name:  "shorter glob still applies where the longer does not match",
			rules: Rules{Overrides: map[string]bool{"write_*": false, "write_safe_*": true}},
			tool:  "write_note", want: false,
		},
		{
			name:  "equally long globs: off wins the tie",
			rules: Rules{Overrides: map[string]bool{"a*": true, "*b": false}},
			tool:  "ab", want: false,
		},
		{
			name:  "question mark glob",
			rules: Rules{Default: DefaultNone, Overrides: map[string]bool{"tool_?": true}},
			tool:  "tool_7", want: true,
		},
		{
			name:  "character class glob",
			rules: Rules{Overrides: map[string]bool{"v[12]_*": false}},
			tool:  "v2_delete", want: false,
		},
		{
			name:  "star does not cross a slash",
			rules: Rules{Overrides: map[string]bool{"fs_*": false}},
			tool:  "fs_a/b", want: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			compiled, err := tt.rules.compile()
			require.NoError(t, err)
			assert.Equal(t, tt.want, compiled.allows(tt.tool, tt.readOnly))
		})
	}
}

// TestRulesTieIsDeterministic compiles the same rules many times: map
// iteration order differs between runs, the verdict must not.
func TestRulesTieIsDeterministic(t *testing.T) {
	t.Parallel()
	rules := Rules{Overrides: map[string]bool{"x*": true, "*y": true, "?y": false, "x?": true}}
	for range 50 {
		compiled, err := rules.compile()
		require.NoError(t, err)
		require.False(t, compiled.allows("xy", false))
	}
}

func TestRulesCompileErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		rules   Rules
		wantMsg string
	}{
		{name: "unknown default", rules: Rules{Default: "some"}, wantMsg: `unknown tool default "some"`},
		{name: "malformed glob", rules: Rules{Overrides: map[string]bool{"write_[": false}}, wantMsg: `malformed tool name pattern "write_["`},
		{name: "trailing escape", rules: Rules{Overrides: map[string]bool{`a\`: false}}, wantMsg: "malformed tool name pattern"},
		{name: "empty pattern", rules: Rules{Overrides: map[string]bool{"": true}}, wantMsg: "empty tool name pattern"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := tt.rules.compile()
			require.ErrorIs(t, err, ErrInvalid)
			assert.Contains(t, err.Error(), tt.wantMsg)
		})
	}
}

func TestParseToolDefault(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    ToolDefault
		wantErr bool
	}{
		{in: "", want: DefaultAll},
		{in: "all", want: DefaultAll},
		{in: "read_only", want: DefaultReadOnly},
		{in: "none", want: DefaultNone},
		{in: "readonly", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := ParseToolDefault(tt.in)
			if tt.wantErr {
				require.ErrorIs(t, err, ErrInvalid)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

// TestGlobMatchesLikePathMatch checks the star-only fast path against
// path.Match over every pattern and name of a small alphabet.
func TestGlobMatchesLikePathMatch(t *testing.T) {
	t.Parallel()
	patterns := words([]string{"a", "b", "*"}, 5)
	names := words([]string{"a", "b", "/"}, 5)
	for _, p := range patterns {
		if !isGlob(p) {
			continue
		}
		g := newGlob(p, true)
		for _, name := range names {
			want, err := path.Match(p, name)
			require.NoError(t, err)
			require.Equal(t, want, g.match(name), "pattern %q name %q", p, name)
		}
	}
}

// words returns every string of up to n symbols.
func words(symbols []string, n int) []string {
	all := []string{""}
	level := []string{""}
	for range n {
		var next []string
		for _, w := range level {
			for _, s := range symbols {
				next = append(next, w+s)
			}
		}
		all = append(all, next...)
		level = next
	}
	return all
}
