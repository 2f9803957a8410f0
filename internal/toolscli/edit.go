package toolscli

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/mcpwrap/mcpwrap/internal/audit"
	"github.com/mcpwrap/mcpwrap/internal/gate"
	"github.com/mcpwrap/mcpwrap/internal/policy"
	"github.com/mcpwrap/mcpwrap/internal/state"
)

// Outcome is what a change has to say. It is made only once the change is
// saved, so nothing claims a change that was not written.
type Outcome struct {
	// Results says what was done to each tool (stdout for the CLI).
	Results []string
	// Warnings are what was done anyway, with a doubt (a tool missing from
	// the last catalog, say).
	Warnings []string
	// Refusals are what operator policy forbade; nothing was written for
	// those tools.
	Refusals []string

	audit []audit.Record // the decisions made, written to the audit log once saved
}

// decided records a decision for the audit log, written once the update is.
func (o *Outcome) decided(event, server, tool, action string) {
	o.audit = append(o.audit, audit.Record{Event: event, Server: server, Tool: tool, Action: action})
}

// Refused reports whether some of the work was refused.
func (o *Outcome) Refused() bool { return len(o.Refusals) > 0 }

func (o *Outcome) resultf(format string, args ...any) {
	o.Results = append(o.Results, fmt.Sprintf(format, args...))
}

func (o *Outcome) warnf(format string, args ...any) {
	o.Warnings = append(o.Warnings, fmt.Sprintf(format, args...))
}

// print writes the Outcome and returns errRefused if something was refused.
func (c *cli) print(cmd string, o *Outcome, err error) error {
	if err != nil {
		return err
	}
	for _, w := range o.Warnings {
		fmt.Fprintf(c.stderr, "mcpwrap tools %s: warning: %s\n", cmd, w)
	}
	for _, r := range o.Results {
		fmt.Fprintln(c.stdout, r)
	}
	for _, r := range o.Refusals {
		fmt.Fprintf(c.stderr, "mcpwrap tools %s: %s\n", cmd, r)
	}
	if o.Refused() {
		return errRefused
	}
	return nil
}

// update runs fn on the named server's view inside one store update. fn
// starts from a fresh Outcome each time it runs.
func (c *Tools) update(ctx context.Context, server string, fn func(v *serverView, o *Outcome) error) (*Outcome, error) {
	var o *Outcome
	err := c.store.Update(ctx, server, func(srv *state.Server) error {
		o = &Outcome{}
		v, err := c.view(server, srv)
		if err != nil {
			return err
		}
		return fn(v, o)
	})
	if err == nil {
		for _, r := range o.audit {
			if err := c.audit.Write(r); err != nil {
				o.warnf("cannot write the audit log: %v", err)
			}
		}
	}
	return o, c.withKnown(ctx, err)
}

// unknownTools returns the named tools that the server's recorded catalog
// lacks and the user's state does not name (as disabled): tools nobody can
// know of, a typo as likely as not. Before any catalog was recorded no tool
// is unknown: a tool may be disabled before its server first loads.
func (v *serverView) unknownTools(names []string) error {
	if v.user.Catalog == nil {
		return nil
	}
	var unknown []string
	for _, name := range names {
		if !v.tool(name).inCatalog && !v.user.IsDisabled(name) {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	return &unknownToolError{server: v.name, tools: unknown, catalog: v.user.Catalog}
}

func (c *cli) enable(ctx context.Context, server string, tools []string) error {
	o, err := c.Tools.Enable(ctx, server, tools)
	return c.print("enable", o, err)
}

func (c *Tools) Enable(ctx context.Context, server string, tools []string) (*Outcome, error) {
	o, err := c.update(ctx, server, func(v *serverView, o *Outcome) error {
		if err := v.unknownTools(tools); err != nil {
			return err // nothing written
		}
		var enabled []string
		for _, name := range tools {
			info := v.tool(name)
			ref := toolRef(server, name)
			lock, undecided := v.operatorLock(info)
			if lock != "" {
				o.Refusals = append(o.Refusals, c.refusal(v, lock, name))
				continue // nothing written for this tool
			}
			if !info.inCatalog {
				o.warnf("%s: %s; enabling it anyway", ref, v.missing())
			}
			if undecided {
				o.warnf("%s: operator policy lets this tool on only if it is annotated read-only (readOnlyHint), which its unknown definition does not tell", ref)
			}
			if v.user.Enable(name) {
				o.resultf("%s: enabled", ref)
				o.decided(audit.EventToggle, server, name, "enable")
			} else {
				o.resultf("%s: was not disabled", ref)
			}
			enabled = append(enabled, name)
		}
		v.noteStillLocked(o, enabled)
		return nil
	})
	return o, err
}

// refusal explains why enabling the tool is refused and who can change that.
func (c *Tools) refusal(v *serverView, lock policy.Status, tool string) string {
	why := fmt.Sprintf("operator policy in the config file %s turns it off", c.config.Path)
	if lock == policy.ServerDisabled {
		why = fmt.Sprintf("the server is disabled in the config file %s", c.config.Path)
	}
	return fmt.Sprintf("refused to enable %s: %s. %s", toolRef(v.name, tool), why, policy.RemediationFor(lock, v.name, tool))
}

func (c *cli) disable(ctx context.Context, server string, tools []string) error {
	o, err := c.Tools.Disable(ctx, server, tools)
	return c.print("disable", o, err)
}

func (c *Tools) Disable(ctx context.Context, server string, tools []string) (*Outcome, error) {
	o, err := c.update(ctx, server, func(v *serverView, o *Outcome) error {
		if err := v.unknownTools(tools); err != nil {
			return err // nothing written
		}
		for _, name := range tools {
			ref := toolRef(server, name)
			if !v.tool(name).inCatalog {
				o.warnf("%s: %s; disabling it anyway", ref, v.missing())
			}
			if v.user.Disable(name) {
				o.resultf("%s: disabled", ref)
				o.decided(audit.EventToggle, server, name, "disable")
			} else {
				o.resultf("%s: was already disabled", ref)
			}
		}
		return nil
	})
	return o, err
}

func (c *cli) approve(ctx context.Context, server string, tools []string, all bool) error {
	o, err := c.Tools.Approve(ctx, server, tools, all)
	return c.print("approve", o, err)
}

func (c *Tools) Approve(ctx context.Context, server string, tools []string, all bool) (*Outcome, error) {
	now := c.now().UTC()
	o, err := c.update(ctx, server, func(v *serverView, o *Outcome) error {
		catalog := v.user.Catalog
		if catalog == nil {
			return fmt.Errorf("nothing to approve: %s", v.missing())
		}
		names := tools
		if all {
			names = slices.Sorted(maps.Keys(catalog.Tools))
		}
		var missing []string
		for _, name := range names {
			if _, ok := catalog.Tools[name]; !ok {
				missing = append(missing, name)
			}
		}
		if len(missing) > 0 {
			return &unknownToolError{server: server, tools: missing, catalog: catalog}
		}
		if len(names) == 0 {
			o.resultf("%s: the last catalog has no tools; nothing to approve", server)
			return nil
		}
		if v.config.Approval == policy.ApprovalOff {
			o.warnf("server %q has approval off: its tools need no approval; recording it anyway", server)
		}
		recorded := false
		if v.config.Approval == policy.ApprovalTOFU && !gate.UserState(v.user).Baseline() {
			// Without a baseline a tofu sidecar grants every tool and records
			// the catalog as the baseline; approving only some tools would
			// instead make the rest pending. Record the baseline first.
			for name, t := range catalog.Tools {
				if info := describe(name, t.Definition, true); info.tool.Hash != "" {
					v.user.Approve(name, state.Approval{ApprovedAt: now, Definition: t.Definition, Hash: info.tool.Hash})
				}
			}
			recorded = true
			o.warnf("server %q had no approval baseline: recorded all %d tools of its last catalog as the baseline, as a sidecar does on first load",
				server, len(catalog.Tools))
		}
		for _, name := range names {
			ref := toolRef(server, name)
			def := catalog.Tools[name].Definition
			info := describe(name, def, true)
			if info.tool.Hash == "" {
				return fmt.Errorf("cannot approve %s: its definition in the last catalog is refused (%v); a sidecar never lets it be called", ref, info.refused)
			}
			if a, ok := v.user.Approval(name); ok && a.Hash == info.tool.Hash && !recorded {
				o.resultf("%s: already approved (%s)", ref, stamp(a.ApprovedAt))
				continue
			}
			v.user.Approve(name, state.Approval{ApprovedAt: now, Definition: def, Hash: info.tool.Hash})
			o.resultf("%s: approved", ref)
			o.decided(audit.EventApprove, server, name, "approve")
		}
		v.noteStillLocked(o, names)
		return nil
	})
	return o, err
}

// noteStillLocked tells, for each named tool the command meant to unlock,
// whether something else still locks it and who can change that. Tools whose
// definition is unknown are skipped: their status would be a guess.
func (v *serverView) noteStillLocked(o *Outcome, names []string) {
	for _, name := range names {
		if v.tool(name).definition == nil {
			continue
		}
		if s := v.status(name); s.Locked() {
			o.resultf("%s: still locked (%s): %s", toolRef(v.name, name), s, cliRemedy(s, v.name, name))
		}
	}
}

// unknownToolError names tools a command needs from the last catalog of a
// server but that are not in it.
type unknownToolError struct {
	server  string
	tools   []string
	catalog *state.Catalog // nil if none was recorded
}

func (e *unknownToolError) Error() string {
	noun := "tool"
	if len(e.tools) > 1 {
		noun = "tools"
	}
	if e.catalog == nil {
		return fmt.Sprintf("unknown %s %s: %s", noun, quoteList(e.tools), noCatalog(e.server))
	}
	return fmt.Sprintf("server %q has no %s %s in its last catalog (seen %s)", e.server, noun, quoteList(e.tools), stamp(e.catalog.SeenAt))
}
