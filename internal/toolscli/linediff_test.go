package toolscli

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestUnifiedDiff(t *testing.T) {
	tests := []struct {
		name string
		a, b string // lines separated by spaces
		want string
	}{
		{
			name: "one line replaced",
			a:    "1 2 3 4 5 6 7 8 9",
			b:    "1 2 3 4 X 6 7 8 9",
			want: "@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+X\n 6\n 7\n 8\n",
		},
		{
			name: "insertion at the start",
			a:    "1 2 3 4 5",
			b:    "0 1 2 3 4 5",
			want: "@@ -1,3 +1,4 @@\n+0\n 1\n 2\n 3\n",
		},
		{
			name: "deletion at the end",
			a:    "1 2 3 4 5",
			b:    "1 2 3 4",
			want: "@@ -2,4 +2,3 @@\n 2\n 3\n 4\n-5\n",
		},
		{
			name: "changes six lines apart share a hunk",
			a:    "a 1 2 3 4 5 6 b",
			b:    "A 1 2 3 4 5 6 B",
			want: "@@ -1,8 +1,8 @@\n-a\n+A\n 1\n 2\n 3\n 4\n 5\n 6\n-b\n+B\n",
		},
		{
			name: "changes seven lines apart get two hunks",
			a:    "a 1 2 3 4 5 6 7 b",
			b:    "A 1 2 3 4 5 6 7 B",
			want: "@@ -1,4 +1,4 @@\n-a\n+A\n 1\n 2\n 3\n@@ -6,4 +6,4 @@\n 5\n 6\n 7\n-b\n+B\n",
		},
		{
			name: "from nothing",
			a:    "",
			b:    "1 2",
			want: "@@ -0,0 +1,2 @@\n+1\n+2\n",
		},
		{
			name: "removals before insertions",
			a:    "x a b y",
			b:    "x c d y",
			want: "@@ -1,4 +1,4 @@\n x\n-a\n-b\n+c\n+d\n y\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			writeUnified(&out, "A", "B", diffLines(strings.Fields(tt.a), strings.Fields(tt.b)), 3)
			assert.Equal(t, "--- A\n+++ B\n"+tt.want, out.String())
		})
	}
}

// Every script rebuilds both sides and is as short as a longest common
// subsequence allows, also past the size where the search gives up.
func TestDiffLinesProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	lines := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = string(rune('a' + r.IntN(4)))
		}
		return out
	}
	for range 300 {
		a, b := lines(r.IntN(30)), lines(r.IntN(30))
		script := diffLines(a, b)
		gotA, gotB := rebuild(script)
		require.Equal(t, a, gotA)
		require.Equal(t, b, gotB)
		assert.Equal(t, len(a)+len(b)-2*lcsLength(a, b), edits(script), "%v -> %v", a, b)
	}

	huge := lines(3000)
	other := lines(3000)
	script := diffLines(huge, other)
	gotA, gotB := rebuild(script)
	assert.Equal(t, huge, gotA)
	assert.Equal(t, other, gotB)
}

func rebuild(script []edit) (a, b []string) {
	a, b = []string{}, []string{}
	for _, e := range script {
		if e.kind != insert {
			a = append(a, e.text)
		}
		if e.kind != remove {
			b = append(b, e.text)
		}
	}
	return a, b
}

func edits(script []edit) int {
	n := 0
	for _, e := range script {
		if e.kind != keep {
			n++
		}
	}
	return n
}

// lcsLength is the textbook recursion, memoised: an independent check.
func lcsLength(a, b []string) int {
	memo := map[[2]int]int{}
	var rec func(i, j int) int
	rec = func(i, j int) int {
		if i == len(a) || j == len(b) {
			return 0
		}
		k := [2]int{i, j}
		if v, ok := memo[k]; ok {
			return v
		}
		v := max(rec(i+1, j), rec(i, j+1))
		if a[i] == b[j] {
			v = max(v, 1+rec(i+1, j+1))
		}
		memo[k] = v
		return v
	}
	return rec(0, 0)
}
