package policy

import (
	"encoding/json"
)

// Tool is what the classifier needs to know about one tool of a catalog.
// Build it once per catalog refresh (ParseTool), not per evaluation.
type Tool struct {
	// Name is the tool's name.
	Name string
	// ReadOnly reports whether the tool is annotated readOnlyHint: true.
	ReadOnly bool
	// Hash is the tool's definition hash (see Hash); "" when unknown, in
	// which case the tool can never match an approved hash.
	Hash string
}

// ParseTool extracts a Tool from one MCP tool object of a tools/list result.
// The error matches ErrInvalid when raw is not a JSON object with a string
// name; a malformed annotations member counts as not read-only.
func ParseTool(raw json.RawMessage) (Tool, error) {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil || members == nil {
		return Tool{}, &invalidError{"tool definition is not a JSON object"}
	}
	hash, err := hashMembers(members)
	if err != nil {
		return Tool{}, err
	}
	var t Tool
	_ = json.Unmarshal(members["name"], &t.Name) // validated by hashMembers
	t.Hash = hash
	var annotations struct {
		ReadOnlyHint bool `json:"readOnlyHint"`
	}
	if json.Unmarshal(members["annotations"], &annotations) == nil {
		t.ReadOnly = annotations.ReadOnlyHint
	}
	return t, nil
}
