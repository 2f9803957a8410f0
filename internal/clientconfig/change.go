package clientconfig

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// Action is what [Install] or [Uninstall] did to one server entry.
type Action string

// The actions, as a plan prints them.
const (
	Wrap   Action = "wrap"   // Install put mcpwrap in front of the server
	Unwrap Action = "unwrap" // Uninstall restored the original entry
	Skip   Action = "skip"   // the entry was left as it is; the Detail says why
)

// Change is one line of the plan: what happened to one server entry. It
// holds no header or env value, and URLs lose their user info and query;
// a stdio server's command line is shown as the config has it.
type Change struct {
	// Project is the project directory for Claude Code's per-project entries
	// (projects.<path>.mcpServers in ~/.claude.json); "" for the file's own
	// mcpServers.
	Project string
	// Server is the entry's key.
	Server string
	Action Action
	// Detail describes the server as the client will run it without mcpwrap
	// (its command line, or its URL and header names), or why it was skipped.
	Detail string
}

// String formats the change as a line of a printed plan.
func (c Change) String() string {
	name := c.Server
	if c.Project != "" {
		name += " (project " + c.Project + ")"
	}
	return fmt.Sprintf("%-6s %s: %s", c.Action, name, c.Detail)
}

// commandLine describes a stdio server, quoting what a shell would need.
func commandLine(command string, args []string) string {
	words := make([]string, 0, 1+len(args))
	for _, w := range append([]string{command}, args...) {
		if w == "" || strings.ContainsAny(w, " \t\n\"'\\$`") {
			w = strconv.Quote(w)
		}
		words = append(words, w)
	}
	return strings.Join(words, " ")
}

// redactURL drops the parts of a URL that may carry credentials: the user
// info and the query. A reference to an env variable is kept as it is.
func redactURL(raw string) string {
	if envRefPattern.MatchString(raw) {
		return raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	query := u.RawQuery != ""
	u.User, u.RawQuery, u.ForceQuery, u.Fragment = nil, "", false, ""
	if query {
		return u.String() + "?…"
	}
	return u.String()
}
