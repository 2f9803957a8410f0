package policy

import (
	"fmt"
	"regexp"
	"strings"
)

// NotCallable is the sentence every non-config rejection carries, kept
// verbatim because agents and tests already look for it.
const NotCallable = "Tool is disabled and not callable."

// Remediation returns who can unlock a tool with status s and how, with
// SERVER and TOOL as placeholders; "" for Callable. See RemediationFor.
func Remediation(s Status) string { return RemediationFor(s, "", "") }

// RemediationFor returns who can unlock a tool with status s and how, naming
// the server and tool in the CLI commands it suggests; an empty name becomes
// the placeholder SERVER or TOOL. It returns "" for Callable, and the
// disabled_unknown text for an invalid status. A config lock is never given
// user-toggle advice.
func RemediationFor(s Status, server, tool string) string {
	server, tool = shellWord(server, "SERVER"), shellWord(tool, "TOOL")
	switch s {
	case Callable:
		return ""
	case ServerDisabled:
		return "An operator must first enable the server in mcpwrap's config (servers." + server + ".enabled: true)."
	case DisabledByConfig:
		return "Operator policy is not user-overridable: only an operator can change it, by editing mcpwrap's config (servers." + server + ".tools)."
	case DisabledByUser:
		return "Ask the user to re-enable it: `mcpwrap tools enable " + server + " " + tool + "`; " + PanelCommand("enable") + "."
	case PendingApproval:
		return "Ask the user to review and approve it: `mcpwrap tools approve " + server + " " + tool + "`; " + PanelCommand("approve") + "."
	}
	return "The reason is undetermined; check mcpwrap's log."
}

// Panel is the command that opens mcpwrap's control panel, where the user
// (and only the user: nothing reachable over MCP can) approves and enables
// tools.
const Panel = "mcpwrap ui"

// PanelCommand says that the user can do verb (approve, enable) to the tool
// in the control panel, as the agent is told beside the CLI command.
func PanelCommand(verb string) string {
	return "the user can " + verb + " it in mcpwrap's panel: `" + Panel + "`"
}

// PendingNotice is what every discovery answer says while tools are locked
// pending approval: how many, their names (already shortened by the
// caller), and how the user reviews and approves them.
func PendingNotice(count int, names, server string) string {
	server = shellWord(server, "SERVER")
	return fmt.Sprintf("%d tool(s) are locked pending approval, new or changed since the user approved them: %s. "+
		"Only the user can approve them, outside MCP: 'mcpwrap tools diff %s TOOL' shows what changed, "+
		"'mcpwrap tools approve %s TOOL' approves it, and %s (a side-by-side diff and an approve button).",
		count, names, server, server, strings.Replace(PanelCommand("approve"), "approve it", "approve them", 1))
}

// RejectionText returns the text of the isError result mcpwrap answers a
// tools/call of a locked tool with: the status-specific reason,
// the remediation, then a pointer to the discovery tool discoveryTool, or
// none when discoveryTool is "" (the discovery tool is not listed: a text
// must not send the agent to a tool it cannot see). Every wording but the
// operator-policy one starts with NotCallable. It returns "" for Callable;
// an invalid status gets the disabled_unknown wording.
func RejectionText(s Status, server, tool, discoveryTool string) string {
	if s == Callable {
		return ""
	}
	var b strings.Builder
	if s != DisabledByConfig {
		b.WriteString(NotCallable + " ")
	}
	b.WriteString(reason(s, quoteName(server), quoteName(tool)))
	b.WriteString(" ")
	b.WriteString(RemediationFor(s, server, tool))
	b.WriteString(pointer(discoveryTool))
	return b.String()
}

// pointer is the sentence that ends a rejection, sending the agent to the
// discovery tool discoveryTool; "" when there is none to send it to.
func pointer(discoveryTool string) string {
	if discoveryTool == "" {
		return ""
	}
	return " Call " + discoveryTool + " with include_disabled:true to see locked tools and remediation."
}

// reason states why a tool is locked, without saying who can fix it.
func reason(s Status, server, tool string) string {
	switch s {
	case ServerDisabled:
		return "Server " + server + " is disabled in mcpwrap's config, so tool " + tool + " is locked."
	case DisabledByConfig:
		return "Tool " + tool + " on server " + server + " is disabled by operator policy."
	case DisabledByUser:
		return "The user disabled tool " + tool + " on server " + server + "."
	case PendingApproval:
		return "Tool " + tool + " on server " + server + " is awaiting approval: it is new, or its definition changed since it was last approved."
	}
	return "mcpwrap could not determine whether tool " + tool + " on server " + server + " may be called."
}

func quoteName(name string) string {
	if name == "" {
		return "(unnamed)"
	}
	return "'" + name + "'"
}

var plainWord = regexp.MustCompile(`^[A-Za-z0-9_.:@/+=-]+$`)

// shellWord returns name quoted for a POSIX shell when it needs quoting, or
// placeholder when name is empty, so a suggested command can be pasted as is.
func shellWord(name, placeholder string) string {
	if name == "" {
		return placeholder
	}
	return ShellWord(name)
}

// ShellWord quotes name for a POSIX shell when it needs it, so that a
// suggested command can be pasted as it is.
func ShellWord(name string) string {
	if plainWord.MatchString(name) {
		return name
	}
	return "'" + strings.ReplaceAll(name, "'", `'\''`) + "'"
}

// ConfigErrorRemediation is the remediation of every tool while the
// operator's config cannot be used: err, which names the file and where in
// it the problem is, and the promise that fixing it is enough.
func ConfigErrorRemediation(err error) string {
	return "mcpwrap's config file has an error: " + err.Error() + "; fix it and the tools will appear."
}

// StoreErrorRemediation is the remediation of every tool the unreadable
// state store locks (disabled_unknown): err, which names the file and what
// is wrong with it, and that only the user can fix it, outside MCP. The
// user's toggles and approvals are unknown until then, so nothing is
// unlocked on a guess; fixing the store brings the tools back without a
// restart.
func StoreErrorRemediation(err error) string {
	return "mcpwrap cannot read the user's tool toggles and approvals (its state store): " + strings.TrimSuffix(err.Error(), ".") +
		". Only the user can fix this, outside MCP; once the store can be read, the tools come back without a restart."
}

// StoreErrorRejection is the text a tools/call of a tool the unreadable
// state store locks is answered with (see StoreErrorRemediation).
func StoreErrorRejection(err error, discoveryTool string) string {
	return NotCallable + " " + StoreErrorRemediation(err) + pointer(discoveryTool)
}

// ConfigErrorRejection is the text a tools/call is answered with while the
// operator's config cannot be used (see ConfigErrorRemediation), pointing
// to the discovery tool as RejectionText does.
func ConfigErrorRejection(err error, discoveryTool string) string {
	return NotCallable + " " + ConfigErrorRemediation(err) + pointer(discoveryTool)
}
