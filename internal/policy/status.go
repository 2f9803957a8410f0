// Package policy decides whether a tool of the wrapped server may be called and
// explains, in words an agent can act on, why not (docs/DESIGN.md, Tool
// availability and Discovery).
//
// Everything here is pure and read-only: the classifier is a total function of
// the facts it is given (server switch, operator rules, per-run allow-list, the
// user's toggles and approvals), so every function and every compiled value is
// safe for concurrent use. Reading or writing the state store is the caller's job.
package policy

import "errors"

// Status is the availability of one in-scope tool: Callable, or the single
// reason it is locked. Tools outside the per-run allow-list have no Status at
// all: they are out of scope, absent everywhere.
//
// The zero Status is not a valid status; Locked reports true for it, so an
// uninitialised value fails closed.
type Status string

// The statuses, in precedence order after Callable (first match wins).
const (
	Callable         Status = "callable"
	ServerDisabled   Status = "server_disabled"
	DisabledByConfig Status = "disabled_by_config"
	DisabledByUser   Status = "disabled_by_user"
	PendingApproval  Status = "pending_approval"
	DisabledUnknown  Status = "disabled_unknown"
)

// Locked reports whether a tool with status s must not be called.
func (s Status) Locked() bool { return s != Callable }

// ErrInvalid is matched (errors.Is) by every error this package returns about
// a malformed tool default, approval mode, name pattern, allow-list or tool
// definition.
var ErrInvalid = errors.New("invalid tool policy")

// invalidError is an error message that matches ErrInvalid without repeating
// its text, so callers can embed it in their own positioned messages.
type invalidError struct {
	msg string
	err error // the cause, if any
}

func (e *invalidError) Error() string        { return e.msg }
func (e *invalidError) Is(target error) bool { return target == ErrInvalid }
func (e *invalidError) Unwrap() error        { return e.err }

// Facts is everything the classifier needs to know about one in-scope tool.
// The zero Facts describe a tool of a disabled server, so a forgotten field
// fails closed.
type Facts struct {
	// ConfigErr is the error that makes the operator's config unusable, if
	// any. When set, every other fact is unknown and ignored.
	ConfigErr error
	// ServerEnabled is false when the server is `enabled: false` in config.
	ServerEnabled bool
	// Refused reports that the tool's definition is ambiguous or malformed
	// (see Tool.Refused): nothing else about it can be trusted.
	Refused bool
	// ConfigAllowed reports whether operator policy lets the tool be on.
	ConfigAllowed bool
	// UserDisabled reports whether the user disabled the tool in the state store.
	UserDisabled bool
	// Approval is the tool's pinning state (see ApprovalFor).
	Approval ApprovalState
	// StoreErr is the error that prevented reading the state store, if any.
	// When set, UserDisabled and Approval are unknown and ignored.
	StoreErr error
}

// Classify returns the status of a tool from its facts. Precedence, first
// match wins: (config unusable) disabled_unknown, server_disabled, then
// (refused definition) disabled_unknown, disabled_by_config, then (state
// store unreadable) disabled_unknown, disabled_by_user, pending_approval,
// callable.
// Anything indeterminate, such as an unknown approval state, is
// disabled_unknown: the function is total and fails closed.
func Classify(f Facts) Status {
	switch {
	case f.ConfigErr != nil:
		// Operator policy is unknown: nothing is unlocked on a guess.
		return DisabledUnknown
	case !f.ServerEnabled:
		return ServerDisabled
	case f.Refused:
		// No trusted name, so no rule, toggle or approval applies to it.
		return DisabledUnknown
	case !f.ConfigAllowed:
		return DisabledByConfig
	case f.StoreErr != nil:
		// The user's toggles and approvals are unknown: fail closed.
		return DisabledUnknown
	case f.UserDisabled:
		return DisabledByUser
	}
	switch f.Approval {
	case ApprovalGranted, ApprovalNotRequired:
		return Callable
	case ApprovalPending:
		return PendingApproval
	default:
		return DisabledUnknown
	}
}
