package policy

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseAllowList(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		allowed []string
		denied  []string
		zero    bool
		wantErr string
	}{
		{name: "empty allows everything", in: "", allowed: []string{"a", "anything"}, zero: true},
		{name: "blank allows everything", in: "  ", allowed: []string{"a"}, zero: true},
		{name: "exact names", in: "a,b", allowed: []string{"a", "b"}, denied: []string{"c", "ab"}},
		{name: "blanks trimmed", in: " a , b ", allowed: []string{"a", "b"}, denied: []string{" a"}},
		{name: "glob", in: "read_*,list_?", allowed: []string{"read_file", "list_x"}, denied: []string{"write_file", "list_xy"}},
		{name: "exact names with glob metacharacters", in: "x[1],a*b,q?", allowed: []string{"x[1]", "x1", "a*b", "q?"}, denied: []string{"x2", "x[2]"}},
		{name: "exact name with a backslash", in: `a\b`, allowed: []string{`a\b`, "ab"}, denied: []string{"a"}},
		{name: "glob star stops at a slash", in: "fs_*", allowed: []string{"fs_a.b-c"}, denied: []string{"fs_dir/read"}},
		{name: "empty entry", in: "a,,b", wantErr: "empty tool name pattern"},
		{name: "trailing comma", in: "a,", wantErr: "empty tool name pattern"},
		{name: "only commas", in: ",", wantErr: "empty tool name pattern"},
		{name: "malformed glob", in: "a,[", wantErr: "malformed tool name pattern"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			list, err := ParseAllowList(tt.in)
			if tt.wantErr != "" {
				require.ErrorIs(t, err, ErrInvalid)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.zero, list.IsZero())
			for _, name := range tt.allowed {
				assert.True(t, list.Allows(name), "should allow %q", name)
			}
			for _, name := range tt.denied {
				assert.False(t, list.Allows(name), "should not allow %q", name)
			}
		})
	}
}

func TestAllowListZeroValue(t *testing.T) {
	t.Parallel()
	var list AllowList
	assert.True(t, list.IsZero())
	assert.True(t, list.Allows("anything"))
	assert.Empty(t, list.String())
}

func TestAllowListString(t *testing.T) {
	t.Parallel()
	list, err := ParseAllowList(" read_*, b ,a")
	require.NoError(t, err)
	assert.Equal(t, "a,b,read_*", list.String(), "each entry once, globs included")
	again, err := ParseAllowList(list.String())
	require.NoError(t, err)
	assert.Equal(t, list.String(), again.String())
}
