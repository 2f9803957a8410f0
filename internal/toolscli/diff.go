package toolscli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mcpwrap/mcpwrap/internal/policy"
)

// diffContext is the number of unchanged lines shown around a change.
const diffContext = 3

func (c *cli) diff(ctx context.Context, server, tool string) error {
	v, err := c.load(ctx, server)
	if err != nil {
		return err
	}
	ref := toolRef(server, tool)
	current, inCatalog := v.catalogTool(tool)
	approval, approved := v.user.Approval(tool)
	switch {
	case !inCatalog && !approved:
		return &unknownToolError{server: server, tools: []string{tool}, catalog: v.user.Catalog}
	case !inCatalog:
		fmt.Fprintf(c.stdout, "%s: %s; it was approved at %s.\n", ref, v.missing(), stamp(approval.ApprovedAt))
		return nil
	case !approved:
		fmt.Fprintf(c.stdout, "%s: never approved. Its current definition (seen %s):\n", ref, stamp(v.user.Catalog.SeenAt))
		for _, line := range current.lines() {
			fmt.Fprintln(c.stdout, line)
		}
		return nil
	}
	script := diffLines(prettyLines(approval.Definition), current.lines())
	if !changed(script) {
		fmt.Fprintf(c.stdout, "%s: no change since it was approved at %s.\n", ref, stamp(approval.ApprovedAt))
		return nil
	}
	writeUnified(c.stdout,
		fmt.Sprintf("%s approved %s", ref, stamp(approval.ApprovedAt)),
		fmt.Sprintf("%s current %s", ref, stamp(v.user.Catalog.SeenAt)),
		script, diffContext)
	switch {
	case current.refused != nil:
		fmt.Fprintf(c.stdout, "The current definition is refused (%v): a sidecar never lets the tool be called, and it cannot be approved.\n", current.refused)
	case approval.Hash == current.tool.Hash:
		fmt.Fprintln(c.stdout, "Only members the approval does not cover changed (such as annotations or title): the approval still holds.")
	default:
		fmt.Fprintf(c.stdout, "To approve the current definition: mcpwrap tools approve %s %s\n", shellWord(server), shellWord(tool))
	}
	return nil
}

// lines renders the tool's definition for a diff: pretty, unless the
// definition is refused, whose every member (a duplicate a decoder would
// drop included) is shown as written.
func (info toolInfo) lines() []string {
	if info.refused != nil {
		return strings.Split(string(info.definition), "\n")
	}
	return prettyLines(info.definition)
}

// prettyLines renders a definition as indented JSON with sorted keys, one
// string per line, so that equal definitions render alike. A definition
// that is not valid JSON is shown as is.
func prettyLines(def json.RawMessage) []string {
	dec := json.NewDecoder(bytes.NewReader(def))
	dec.UseNumber() // keep numbers as written
	var v any
	var buf bytes.Buffer
	if err := dec.Decode(&v); err == nil {
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if enc.Encode(v) != nil {
			buf.Reset()
		}
	}
	if buf.Len() == 0 {
		buf.Write(def)
	}
	return strings.Split(strings.TrimRight(buf.String(), "\n"), "\n")
}

// cliRemedy tells the user at the terminal how to unlock a tool.
func cliRemedy(s policy.Status, server, tool string) string {
	switch s {
	case policy.DisabledByUser:
		return fmt.Sprintf("enable it with: mcpwrap tools enable %s %s", shellWord(server), shellWord(tool))
	case policy.PendingApproval:
		return fmt.Sprintf("review it with 'mcpwrap tools diff %[1]s %[2]s', then approve it with: mcpwrap tools approve %[1]s %[2]s",
			shellWord(server), shellWord(tool))
	}
	return policy.RemediationFor(s, server, tool)
}

func shellWord(name string) string { return policy.ShellWord(name) }
