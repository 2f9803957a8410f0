package policy

// Options configure an Evaluator. The zero Options describe an enabled server
// with every tool on, no allow-list and tofu approval.
type Options struct {
	// ServerDisabled is true when the server is `enabled: false` in config.
	ServerDisabled bool
	// Rules is the operator policy for the server's tools.
	Rules Rules
	// Allow is the per-run allow-list; the zero AllowList allows every tool.
	Allow AllowList
	// Approval is the pinning mode; "" means ApprovalTOFU.
	Approval ApprovalMode
	// ConfigErr, when set, says why the operator's config cannot be used.
	// Operator policy is then unknown, so every in-scope tool is
	// disabled_unknown (the allow-list still applies) and no tofu baseline
	// is recorded: nothing is unlocked on a guess. Rules and Approval are
	// ignored.
	ConfigErr error
}

// UserState is the user's state-store view of one server, as read by the
// caller. Implementations must be safe for concurrent use if the same value
// is evaluated from several goroutines.
type UserState interface {
	// Disabled reports whether the user disabled the tool.
	Disabled(tool string) bool
	// ApprovedHash returns the approved definition hash of the tool, or ""
	// when it was never approved.
	ApprovedHash(tool string) string
	// Baseline reports whether an approval baseline was recorded for the server.
	Baseline() bool
}

// noUserState is the state of a server nobody has touched.
type noUserState struct{}

func (noUserState) Disabled(string) bool       { return false }
func (noUserState) ApprovedHash(string) string { return "" }
func (noUserState) Baseline() bool             { return false }

// Evaluator classifies the tools of one server under its compiled operator
// policy, allow-list and approval mode. It is immutable and safe for
// concurrent use; build a new one when the config or allow-list changes.
type Evaluator struct {
	serverEnabled bool
	rules         compiledRules
	allow         AllowList
	approval      ApprovalMode
	configErr     error
}

// NewEvaluator validates and compiles o. The error matches ErrInvalid.
func NewEvaluator(o Options) (*Evaluator, error) {
	if o.ConfigErr != nil {
		return &Evaluator{serverEnabled: true, allow: o.Allow, approval: ApprovalManual, configErr: o.ConfigErr}, nil
	}
	rules, err := o.Rules.compile()
	if err != nil {
		return nil, err
	}
	mode, err := ParseApprovalMode(string(o.Approval))
	if err != nil {
		return nil, err
	}
	return &Evaluator{serverEnabled: !o.ServerDisabled, rules: rules, allow: o.Allow, approval: mode}, nil
}

// ServerDisabled reports whether the server is `enabled: false`: it is
// not started at all (every tool is ServerDisabled).
func (e *Evaluator) ServerDisabled() bool { return e.configErr == nil && !e.serverEnabled }

// ConfigErr returns the Options.ConfigErr the evaluator was built with.
func (e *Evaluator) ConfigErr() error { return e.configErr }

// InScope reports whether the allow-list admits the tool. Out-of-scope tools
// have no status: leave them out of listings, counts and discovery.
func (e *Evaluator) InScope(name string) bool { return e.allow.Allows(name) }

// Approval returns the server's approval mode, never "".
func (e *Evaluator) Approval() ApprovalMode { return e.approval }

// inScope is InScope for a parsed tool: a refused one has no name the
// allow-list could judge, and is kept in scope so that it is counted (as
// disabled_unknown) rather than silently dropped.
func (e *Evaluator) inScope(t Tool) bool { return t.Refused || e.allow.Allows(t.Name) }

// ConfigAllows reports whether operator policy turns the tool on, ignoring
// the server switch, the allow-list and user state. The CLI uses it to refuse
// `mcpwrap tools enable` on a config-denied tool.
func (e *Evaluator) ConfigAllows(t Tool) bool {
	return e.configErr == nil && e.rules.allows(t.Name, t.ReadOnly)
}

// Facts gathers the facts about t from the config and from user, the state
// read from the store (nil means an empty state) or userErr, the error that
// prevented reading it. It consults user only for facts that can still
// affect the status.
func (e *Evaluator) Facts(t Tool, user UserState, userErr error) Facts {
	user, baseline := e.user(user, userErr)
	return e.facts(t, user, baseline, userErr)
}

// user returns the state to consult (never nil) and whether it has a tofu
// baseline, asked once per evaluation rather than once per tool.
func (e *Evaluator) user(user UserState, userErr error) (UserState, bool) {
	if user == nil {
		user = noUserState{}
	}
	return user, userErr == nil && e.approval == ApprovalTOFU && user.Baseline()
}

func (e *Evaluator) facts(t Tool, user UserState, baseline bool, userErr error) Facts {
	f := Facts{ServerEnabled: e.serverEnabled, StoreErr: userErr, ConfigErr: e.configErr, Refused: t.Refused}
	if !f.ServerEnabled || f.ConfigErr != nil || f.Refused {
		return f
	}
	if f.ConfigAllowed = e.rules.allows(t.Name, t.ReadOnly); !f.ConfigAllowed || userErr != nil {
		return f
	}
	if f.UserDisabled = user.Disabled(t.Name); f.UserDisabled {
		return f
	}
	approved := ""
	if e.approval != ApprovalOff && (e.approval != ApprovalTOFU || baseline) {
		approved = user.ApprovedHash(t.Name)
	}
	f.Approval = ApprovalFor(e.approval, baseline, approved, t.Hash)
	return f
}

// Unapproved reports whether approval applies to t and its current
// definition is not one the user approved (or the state store cannot tell),
// whatever its status: what it says of itself may be what nobody approved.
// See Facts for user and userErr.
func (e *Evaluator) Unapproved(t Tool, user UserState, userErr error) bool {
	user, baseline := e.user(user, userErr)
	switch {
	case e.approval == ApprovalOff:
		return false
	case userErr != nil || t.Refused:
		return true
	case e.approval == ApprovalTOFU && !baseline:
		return false // the first catalog is the baseline
	}
	return t.Hash == "" || user.ApprovedHash(t.Name) != t.Hash
}

// Status returns the status of one tool, for gating a tools/call; inScope is
// false (and s meaningless) when the allow-list excludes the tool. A refused
// tool is always in scope. See Facts for user and userErr.
func (e *Evaluator) Status(t Tool, user UserState, userErr error) (s Status, inScope bool) {
	if !e.inScope(t) {
		return "", false
	}
	return Classify(e.Facts(t, user, userErr)), true
}

// Entry is the verdict on one in-scope tool of an evaluated catalog.
type Entry struct {
	// Index is the tool's position in the evaluated catalog.
	Index int
	// Status is the tool's availability.
	Status Status
}

// Evaluation is the verdict on a whole catalog.
type Evaluation struct {
	// Entries holds one entry per in-scope tool, in catalog order.
	Entries []Entry
	// Counts tallies Entries by status.
	Counts Counts
	// RecordBaseline is true when the server uses tofu approval, the state
	// was readable, no baseline exists yet, the server is enabled and the
	// catalog is not empty: the caller should now record every tool of the
	// catalog (in scope or not) as approved, making it the baseline. Until it
	// does, tofu grants every tool.
	RecordBaseline bool
}

// Evaluate classifies every tool of a catalog (the hot path of tools/list and
// discovery). See Facts for user and userErr.
func (e *Evaluator) Evaluate(catalog []Tool, user UserState, userErr error) Evaluation {
	user, baseline := e.user(user, userErr)
	ev := Evaluation{
		Entries: make([]Entry, 0, len(catalog)),
		RecordBaseline: e.approval == ApprovalTOFU && userErr == nil && e.configErr == nil && !baseline &&
			e.serverEnabled && len(catalog) > 0,
	}
	for i, t := range catalog {
		if !e.inScope(t) {
			continue
		}
		s := Classify(e.facts(t, user, baseline, userErr))
		ev.Entries = append(ev.Entries, Entry{Index: i, Status: s})
		ev.Counts.Add(s)
	}
	return ev
}

// Counts tallies in-scope tools by status. Its JSON form is the `counts`
// block of the discovery answer: callable always present, zero reasons omitted. Whether
// to emit the block at all (only when Locked() > 0) is the caller's choice.
type Counts struct {
	Callable         int `json:"callable"`
	DisabledByConfig int `json:"disabled_by_config,omitempty"`
	DisabledByUser   int `json:"disabled_by_user,omitempty"`
	PendingApproval  int `json:"pending_approval,omitempty"`
	ServerDisabled   int `json:"server_disabled,omitempty"`
	DisabledUnknown  int `json:"disabled_unknown,omitempty"`
}

// Add counts one tool with status s; an invalid status counts as
// DisabledUnknown, matching how it is treated everywhere else.
func (c *Counts) Add(s Status) {
	switch s {
	case Callable:
		c.Callable++
	case DisabledByConfig:
		c.DisabledByConfig++
	case DisabledByUser:
		c.DisabledByUser++
	case PendingApproval:
		c.PendingApproval++
	case ServerDisabled:
		c.ServerDisabled++
	default:
		c.DisabledUnknown++
	}
}

// Locked returns the number of locked tools.
func (c Counts) Locked() int {
	return c.DisabledByConfig + c.DisabledByUser + c.PendingApproval + c.ServerDisabled + c.DisabledUnknown
}

// Total returns the number of in-scope tools.
func (c Counts) Total() int { return c.Callable + c.Locked() }
