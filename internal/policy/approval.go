package policy

import "fmt"

// ApprovalMode is a server's tool-definition pinning mode. The zero value
// means ApprovalTOFU, the default.
type ApprovalMode string

// The approval modes.
const (
	// ApprovalTOFU trusts the first catalog ever seen (the baseline); a tool
	// added or changed later needs approval.
	ApprovalTOFU ApprovalMode = "tofu"
	// ApprovalManual requires every tool to be approved.
	ApprovalManual ApprovalMode = "manual"
	// ApprovalOff disables pinning.
	ApprovalOff ApprovalMode = "off"
)

// ParseApprovalMode parses "tofu", "manual" or "off"; the empty string is
// ApprovalTOFU. Any other value is an error matching ErrInvalid.
func ParseApprovalMode(s string) (ApprovalMode, error) {
	switch m := ApprovalMode(s); m {
	case "":
		return ApprovalTOFU, nil
	case ApprovalTOFU, ApprovalManual, ApprovalOff:
		return m, nil
	}
	return "", &invalidError{msg: fmt.Sprintf("unknown approval mode %q (want tofu, manual or off)", s)}
}

// ApprovalState is a tool's pinning state. The zero value is ApprovalPending,
// so a forgotten field fails closed.
type ApprovalState uint8

// The approval states.
const (
	// ApprovalPending: the tool is new or changed since it was approved.
	ApprovalPending ApprovalState = iota
	// ApprovalGranted: the tool's current definition is the approved one.
	ApprovalGranted
	// ApprovalNotRequired: the server does not pin tool definitions.
	ApprovalNotRequired
)

// String returns "pending", "granted", "not_required" or "unknown".
func (a ApprovalState) String() string {
	switch a {
	case ApprovalPending:
		return "pending"
	case ApprovalGranted:
		return "granted"
	case ApprovalNotRequired:
		return "not_required"
	}
	return "unknown"
}

// ApprovalFor returns the approval state of a tool whose current definition
// hash is current (see Hash), given the server's mode, whether an approval
// baseline exists for the server, and the tool's approved hash ("" when it was
// never approved).
//
//   - off: always ApprovalNotRequired.
//   - tofu: without a baseline the current catalog is about to become the
//     baseline, so every tool is ApprovalGranted; with one, only a tool whose
//     approved hash equals its current hash is granted.
//   - manual: only a tool whose approved hash equals its current hash is granted.
//
// An unknown mode yields ApprovalPending (fail closed). An empty hash never
// matches, so a tool whose hash could not be computed stays pending.
func ApprovalFor(mode ApprovalMode, baseline bool, approved, current string) ApprovalState {
	switch mode {
	case ApprovalOff:
		return ApprovalNotRequired
	case ApprovalTOFU, "":
		if !baseline {
			return ApprovalGranted
		}
	case ApprovalManual:
	default:
		return ApprovalPending
	}
	if approved != "" && approved == current {
		return ApprovalGranted
	}
	return ApprovalPending
}
