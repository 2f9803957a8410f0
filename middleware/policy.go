package middleware

import (
	"encoding/json"

	"github.com/mcpwrap/mcpwrap/resilience"
)

// Availability is what a [ToolPolicy] says about one upstream tool.
type Availability struct {
	// InScope is false for a tool outside the per-run allow-list. Such a
	// tool is absent everywhere: not listed, not discoverable, not counted,
	// and a call to it is answered as a call to an unknown tool.
	InScope bool
	// Status is "" for a callable tool, else the one reason it is locked,
	// such as "disabled_by_config" or "pending_approval".
	Status string
	// Pinned reports that the tool may only be called once its definition
	// is approved (approval is on for its server). A tool the upstream does
	// not list has no definition to approve, so a call to it is answered as
	// one to an unknown tool and never forwarded when the policy's verdict
	// on its bare name is Pinned. When false, the zero value, such a call
	// is forwarded if that verdict is callable, and the upstream answers it.
	Pinned bool
	// Unapproved reports that the tool's current definition is not one the
	// user approved while approval is on (see Pinned): what it says of
	// itself may be what nobody approved, so a locked one's description is
	// withheld from discovery, and its entry says so. A tool locked
	// otherwise (disabled by the user or by config) whose definition is the
	// approved one is described as approved.
	Unapproved bool
}

// Callable reports whether the tool may be called.
func (a Availability) Callable() bool { return a.InScope && a.Status == "" }

// A ToolPolicy decides which upstream tools the client may see and call.
// It judges definitions the Session can name; a definition the Session
// cannot trust under one name (it spells a member that names or defines the
// tool twice, in another letter case or escaped, or another definition
// claims its name too) is listed nowhere, counted as "disabled_unknown" and
// never called, whatever Evaluate says of it.
// Implementations must be safe for concurrent use; Evaluate is on the hot
// path of every tools/list, and of every tools/call unless the policy is a
// [VersionedPolicy], and should not block.
type ToolPolicy interface {
	// Evaluate returns the availability of each tool, in order. Each tool
	// is a raw tool definition as the upstream sent it in tools/list.
	Evaluate(tools []json.RawMessage) []Availability
	// Remediation says who can unlock a tool locked with status, and how.
	Remediation(status, tool string) string
	// Rejection is the text a call to a tool locked with status is answered
	// with; it points to the discovery tool discoveryTool, or to none when
	// discoveryTool is "" (it is not listed: see [DiscoveryNever]).
	Rejection(status, tool, discoveryTool string) string
}

// A VersionedPolicy is a [ToolPolicy] that tells when its verdicts may
// change. A Session then evaluates its catalog once per catalog and version,
// when the catalog changes and on [Session.ReevaluateTools], and judges each
// tools/call from those verdicts without a lock or an allocation while the
// version stays the same; a call made after the version moved and before
// the next evaluation is judged by Evaluate, as with any ToolPolicy.
type VersionedPolicy interface {
	ToolPolicy
	// Version returns a number that changes whenever Evaluate may answer
	// differently for the same definitions, and changes before Evaluate
	// answers by the new state. It must be safe for concurrent use and
	// must not block: it is read on every tools/call.
	Version() uint64
}

// A PolicyNotifier is a [ToolPolicy] that may have something to say about
// every tool at once, such as "the operator's config file has an error".
// When Notice returns a non-empty text, every answer of the discovery tool
// carries it in its notice. Notice must be safe for concurrent use.
type PolicyNotifier interface {
	Notice() string
}

// UpstreamState is the upstream's load status as the agent is told it.
type UpstreamState struct {
	Status   resilience.Class // the load class; its text is "available", "transient", "permanent", "denied" or "idle"
	Attempts int              // load attempts made
	Error    string           // user-safe reason when not available
	Message  string           // the full agent-facing explanation when not available
}

// Available reports whether the upstream is loaded and serving.
func (u UpstreamState) Available() bool { return u.Status == resilience.Available }

// DiscoveryMode says when the discovery tool is listed in tools/list.
type DiscoveryMode string

// Discovery modes for [Session.Discovery].
const (
	DiscoveryAuto   DiscoveryMode = "auto"   // the discovery tool is listed when a tool is locked or the upstream is not available
	DiscoveryAlways DiscoveryMode = "always" // always listed
	DiscoveryNever  DiscoveryMode = "never"  // never listed (a call to it still answers)
)

// DefaultDiscoveryTool is the discovery tool's name unless
// [Session.DiscoveryTool] says otherwise.
const DefaultDiscoveryTool = "discover_tools"
