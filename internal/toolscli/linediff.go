package toolscli

import (
	"fmt"
	"io"
)

// editKind is what an edit does to one line.
type editKind byte

const (
	keep   editKind = ' '
	remove editKind = '-'
	insert editKind = '+'
)

// edit is one line of an edit script.
type edit struct {
	kind editKind
	text string
}

// maxLCSCells bounds the table of the LCS search (4 bytes a cell), so two
// huge definitions cannot exhaust memory: beyond it the differing middle is
// shown as removed and re-inserted, which is correct, only less minimal.
const maxLCSCells = 4 << 20

// diffLines returns a shortest edit script turning a into b, from a longest
// common subsequence of lines. Where there is a choice, removals come before
// insertions, as in diff(1).
func diffLines(a, b []string) []edit {
	prefix := 0
	for prefix < len(a) && prefix < len(b) && a[prefix] == b[prefix] {
		prefix++
	}
	suffix := 0
	for suffix < len(a)-prefix && suffix < len(b)-prefix && a[len(a)-1-suffix] == b[len(b)-1-suffix] {
		suffix++
	}
	script := make([]edit, 0, len(a)+len(b)-prefix-suffix)
	for _, line := range a[:prefix] {
		script = append(script, edit{keep, line})
	}
	script = append(script, lcsScript(a[prefix:len(a)-suffix], b[prefix:len(b)-suffix])...)
	for _, line := range a[len(a)-suffix:] {
		script = append(script, edit{keep, line})
	}
	return script
}

// lcsScript is diffLines without the shortcut for a common prefix and suffix.
func lcsScript(a, b []string) []edit {
	n, m := len(a), len(b)
	var script []edit
	if (n+1)*(m+1) > maxLCSCells {
		for _, line := range a {
			script = append(script, edit{remove, line})
		}
		for _, line := range b {
			script = append(script, edit{insert, line})
		}
		return script
	}
	// lcs[i*(m+1)+j] is the length of a longest common subsequence of a[i:]
	// and b[j:].
	w := m + 1
	lcs := make([]int32, (n+1)*w)
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i*w+j] = lcs[(i+1)*w+j+1] + 1
			} else {
				lcs[i*w+j] = max(lcs[(i+1)*w+j], lcs[i*w+j+1])
			}
		}
	}
	i, j := 0, 0
	for i < n && j < m {
		switch {
		case a[i] == b[j]:
			script = append(script, edit{keep, a[i]})
			i++
			j++
		case lcs[(i+1)*w+j] >= lcs[i*w+j+1]:
			script = append(script, edit{remove, a[i]})
			i++
		default:
			script = append(script, edit{insert, b[j]})
			j++
		}
	}
	for ; i < n; i++ {
		script = append(script, edit{remove, a[i]})
	}
	for ; j < m; j++ {
		script = append(script, edit{insert, b[j]})
	}
	return script
}

// changed reports whether the script changes anything.
func changed(script []edit) bool {
	for _, e := range script {
		if e.kind != keep {
			return true
		}
	}
	return false
}

// writeUnified writes script as a unified diff with the given number of
// context lines around each change, under ---/+++ headers naming the two
// sides. Changes closer than twice the context share a hunk.
func writeUnified(w io.Writer, from, to string, script []edit, context int) {
	fmt.Fprintf(w, "--- %s\n+++ %s\n", from, to)
	// aLine[k] and bLine[k] count the lines of each side before script[k].
	aLine := make([]int, len(script)+1)
	bLine := make([]int, len(script)+1)
	for k, e := range script {
		aLine[k+1], bLine[k+1] = aLine[k], bLine[k]
		if e.kind != insert {
			aLine[k+1]++
		}
		if e.kind != remove {
			bLine[k+1]++
		}
	}
	for k := 0; k < len(script); {
		if script[k].kind == keep {
			k++
			continue
		}
		start := max(0, k-context)
		end := k // one past the hunk's last change
		for next := k; next < len(script) && next <= end+2*context; next++ {
			if script[next].kind != keep {
				end = next + 1
			}
		}
		end = min(len(script), end+context)
		fmt.Fprintf(w, "@@ -%s +%s @@\n",
			hunkRange(aLine[start], aLine[end]-aLine[start]),
			hunkRange(bLine[start], bLine[end]-bLine[start]))
		for _, e := range script[start:end] {
			fmt.Fprintf(w, "%c%s\n", e.kind, e.text)
		}
		k = end
	}
}

// hunkRange formats one side of a hunk header as diff(1) does: 1-based
// start, count omitted when 1, and an empty range placed after its line.
func hunkRange(before, count int) string {
	switch count {
	case 0:
		return fmt.Sprintf("%d,0", before)
	case 1:
		return fmt.Sprintf("%d", before+1)
	}
	return fmt.Sprintf("%d,%d", before+1, count)
}
