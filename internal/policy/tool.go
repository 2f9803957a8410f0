package policy

import (
	"encoding/json"

	"github.com/mcpwrap/mcpwrap/internal/tooldef"
)

// Tool is what the classifier needs to know about one tool of a catalog.
// Build it once per catalog refresh (ParseTool), not per evaluation.
type Tool struct {
	// Name is the tool's name.
	Name string
	// ReadOnly reports whether the tool is annotated readOnlyHint: true.
	ReadOnly bool
	// Hash is the tool's definition hash (see tooldef.Def.Hash); "" when
	// unknown, in which case the tool can never match an approved hash.
	Hash string
	// Refused marks a definition tooldef refuses (ambiguous or malformed):
	// it has no name anyone can trust, so whatever Name holds it is in
	// scope and disabled_unknown unless its server is disabled.
	Refused bool
}

// ParseTool extracts a Tool from one MCP tool object of a tools/list result,
// reading it with tooldef.Parse. When the definition is refused, the error
// matches ErrInvalid and the tooldef sentinel (tooldef.ErrInvalid or
// tooldef.ErrAmbiguous), and the Tool returned is the refused tool
// (Refused set), which callers evaluate as such.
func ParseTool(raw json.RawMessage) (Tool, error) {
	d, err := tooldef.Parse(raw)
	if err != nil {
		return Tool{Refused: true}, &invalidError{msg: "tool definition refused: " + err.Error(), err: err}
	}
	return ToolOf(d), nil
}

// ToolOf is the Tool of a definition tooldef.Parse accepted.
func ToolOf(d tooldef.Def) Tool { return Tool{Name: d.Name, ReadOnly: d.ReadOnly, Hash: d.Hash} }
