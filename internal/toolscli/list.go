package toolscli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"unicode"

	"github.com/mcpwrap/mcpwrap/internal/policy"
)

// listedTool is one row of `mcpwrap tools list`, and its --json form.
type listedTool struct {
	Server      string        `json:"server"`
	Tool        string        `json:"tool"`
	Status      policy.Status `json:"status"`
	ReadOnly    bool          `json:"read_only"`
	Description string        `json:"description"`
	// InCatalog is false for a tool only named in the user's approvals or
	// disabled list; its status is what it would be if it came back.
	InCatalog bool `json:"in_catalog"`

	// definitionKnown is false when neither the catalog nor an approval
	// holds the tool's definition, so ReadOnly is unknown.
	definitionKnown bool
	// refused is set when a sidecar refuses the tool's definition.
	refused bool
}

// maxDescription bounds the description column of the table, in runes.
const maxDescription = 60

func (c *cli) list(ctx context.Context, operands []string, asJSON bool) error {
	servers := operands
	if len(servers) == 0 {
		var err error
		if servers, err = c.knownServers(ctx); err != nil {
			return err
		}
	}
	rows := []listedTool{}
	for _, name := range servers {
		tools, err := c.List(ctx, name)
		if err != nil {
			return err
		}
		for _, t := range tools {
			rows = append(rows, listedTool{
				Server:      name,
				Tool:        t.Name,
				Status:      t.Status,
				ReadOnly:    t.ReadOnly,
				Description: t.Description,
				InCatalog:   t.InCatalog,

				definitionKnown: t.DefinitionKnown,
				refused:         t.Refused != "",
			})
		}
	}
	if asJSON {
		enc := json.NewEncoder(c.stdout)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	if len(rows) == 0 {
		fmt.Fprintln(c.stderr, "No tools known yet: a server's tools are recorded when a sidecar first loads it.")
		return nil
	}
	return writeTable(c.stdout, rows)
}

func writeTable(w io.Writer, rows []listedTool) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tTOOL\tSTATUS\tREAD-ONLY\tDESCRIPTION")
	for _, r := range rows {
		readOnly, desc := "no", summary(r.Description)
		if r.ReadOnly {
			readOnly = "yes"
		}
		if !r.definitionKnown {
			readOnly = "?"
		}
		switch {
		case !r.InCatalog:
			desc = "(not in the last catalog)"
		case r.refused:
			desc = "(definition refused as ambiguous or malformed; see tools diff)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", cell(r.Server), cell(r.Tool), r.Status, readOnly, desc)
	}
	return tw.Flush()
}

// summary is the first line of a description, shortened for the table.
func summary(desc string) string {
	desc, _, _ = strings.Cut(strings.TrimSpace(desc), "\n")
	desc = cell(strings.TrimSpace(desc))
	if r := []rune(desc); len(r) > maxDescription {
		return strings.TrimSpace(string(r[:maxDescription-1])) + "…"
	}
	return desc
}

// cell replaces the control characters that would break a table row.
func cell(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
}
