package panel

import (
	"bytes"
	"encoding/json"
	"regexp"
	"slices"

	"github.com/mcpwrap/mcpwrap/internal/tooldef"
)

// diffRow is one member of a tool definition, approved beside current,
// split into words with the changed ones marked.
type diffRow struct {
	Member            string
	Approved, Current []word
	Changed           bool
}

// word is a run of text; Changed marks it as removed (on the approved
// side) or added (on the current side).
type word struct {
	Text    string
	Changed bool
}

// diffMembers are the members of a definition the diff shows, in order:
// those the approval hash covers, then the annotations and title, whose
// change alone keeps the approval.
var diffMembers = []string{"description", "inputSchema", "outputSchema", "annotations", "title"}

// maxDiffCells bounds the word diff's table (words × words); past it a
// changed member is marked as a whole.
const maxDiffCells = 1 << 20

// definitionDiff compares the approved and the current definition member
// by member. An approved definition that is nil (never approved, or not
// kept) shows the current one as all new. Members absent from both are
// left out.
func definitionDiff(approved, current json.RawMessage) []diffRow {
	a, b := members(approved), members(current)
	var rows []diffRow
	for _, name := range diffMembers {
		x, y := a[name], b[name]
		if x == "" && y == "" {
			continue
		}
		rows = append(rows, wordDiff(name, x, y))
	}
	return rows
}

// members renders each member of a definition for reading: a string as
// its text, anything else as indented JSON with sorted keys.
func members(def json.RawMessage) map[string]string {
	out := map[string]string{}
	if def == nil {
		return out
	}
	var m map[string]json.RawMessage
	if _, err := tooldef.Identify(def); err != nil || json.Unmarshal(def, &m) != nil {
		out["description"] = string(def) // shown as written: it cannot be read
		return out
	}
	for k, raw := range m {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			out[k] = s
			continue
		}
		out[k] = pretty(raw)
	}
	return out
}

// pretty indents raw with sorted keys, numbers as written.
func pretty(raw json.RawMessage) string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return string(raw)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // html/template escapes it
	enc.SetIndent("", "  ")
	if enc.Encode(v) != nil {
		return string(raw)
	}
	return string(bytes.TrimRight(buf.Bytes(), "\n"))
}

// tokens splits text into words, runs of spaces and single punctuation
// marks, so that a diff marks words, not characters.
var tokens = regexp.MustCompile(`[\p{L}\p{N}_]+|\s+|.`)

// wordDiff marks the words of x that are not in y's and those of y that are
// not in x's, along their longest common subsequence.
func wordDiff(member, x, y string) diffRow {
	r := diffRow{Member: member, Changed: x != y}
	xs, ys := tokens.FindAllString(x, -1), tokens.FindAllString(y, -1)
	if !r.Changed {
		r.Approved = []word{{Text: x}}
		r.Current = []word{{Text: y}}
		return r
	}
	if len(xs)*len(ys) > maxDiffCells {
		r.Approved = []word{{Text: x, Changed: x != ""}}
		r.Current = []word{{Text: y, Changed: y != ""}}
		return r
	}
	// lcs[i][j] is the length of the common subsequence of xs[i:], ys[j:].
	n, m := len(xs), len(ys)
	lcs := make([]int32, (n+1)*(m+1))
	at := func(i, j int) *int32 { return &lcs[i*(m+1)+j] }
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if xs[i] == ys[j] {
				*at(i, j) = *at(i+1, j+1) + 1
			} else {
				*at(i, j) = max(*at(i+1, j), *at(i, j+1))
			}
		}
	}
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && xs[i] == ys[j]:
			r.Approved = appendWord(r.Approved, xs[i], false)
			r.Current = appendWord(r.Current, ys[j], false)
			i++
			j++
		case j < m && (i == n || *at(i, j+1) >= *at(i+1, j)):
			r.Current = appendWord(r.Current, ys[j], true)
			j++
		default:
			r.Approved = appendWord(r.Approved, xs[i], true)
			i++
		}
	}
	return r
}

// appendWord adds text to the last word when it is marked alike, so that
// the page has few elements.
func appendWord(ws []word, text string, changed bool) []word {
	if n := len(ws); n > 0 && ws[n-1].Changed == changed {
		ws[n-1].Text += text
		return ws
	}
	return append(ws, word{Text: text, Changed: changed})
}

// changedMembers names the members that differ, for a summary.
func changedMembers(rows []diffRow) []string {
	var out []string
	for _, r := range rows {
		if r.Changed {
			out = append(out, r.Member)
		}
	}
	return slices.Clip(out)
}
