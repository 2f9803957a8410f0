package toolscli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/mcpwrap/mcpwrap/internal/config"
	"github.com/mcpwrap/mcpwrap/internal/gate"
	"github.com/mcpwrap/mcpwrap/internal/policy"
	"github.com/mcpwrap/mcpwrap/internal/state"
	"github.com/mcpwrap/mcpwrap/internal/tooldef"
)

// serverView is one server as its sidecar judges it: the effective config,
// the evaluator built from it (without an allow-list, which is per run) and
// the user's state.
type serverView struct {
	name   string
	config config.Server
	eval   *policy.Evaluator
	user   *state.Server // never nil; part of the snapshot it came from
	cache  *DefinitionCache
}

// view returns the named server's view over its state srv. A server is
// known when the config file has an entry for it or the store has state for
// it. The error about an unknown server does not list the known ones yet
// (see withKnown): view runs inside store updates, which must not read the
// store.
func (c *Tools) view(name string, srv *state.Server) (*serverView, error) {
	if !c.config.Has(name) && srv.Empty() {
		return nil, &unknownServerError{name: name, configPath: c.config.Path, configFound: c.config.Found}
	}
	cfg := c.config.Server(name)
	eval, err := policy.NewEvaluator(policy.Options{
		ServerDisabled: !cfg.Enabled,
		Rules:          cfg.Tools,
		Approval:       cfg.Approval,
	})
	if err != nil {
		return nil, fmt.Errorf("%s: servers.%s: %w", c.config.Path, name, err)
	}
	return &serverView{name: name, config: cfg, eval: eval, user: srv, cache: c.cache}, nil
}

// load returns the named server's view over its state in the store.
func (c *Tools) load(ctx context.Context, name string) (*serverView, error) {
	srv, err := c.store.Load(ctx, name)
	if err != nil {
		return nil, err
	}
	v, err := c.view(name, srv)
	return v, c.withKnown(ctx, err)
}

// knownServers returns the servers the config or the store knows, sorted.
func (c *Tools) knownServers(ctx context.Context) ([]string, error) {
	stored, err := c.store.Servers(ctx)
	if err != nil {
		return nil, err
	}
	names := append(c.config.Names(), stored...)
	slices.Sort(names)
	return slices.Compact(names), nil
}

// withKnown completes an error about an unknown server with the servers
// that are known, when they can be read.
func (c *Tools) withKnown(ctx context.Context, err error) error {
	var unknown *unknownServerError
	if errors.As(err, &unknown) {
		unknown.known, _ = c.knownServers(ctx)
	}
	return err
}

// unknownServerError is a server neither the config nor the store knows.
type unknownServerError struct {
	name        string
	configPath  string
	configFound bool
	known       []string
}

func (e *unknownServerError) Error() string {
	where := "the config file " + e.configPath + " has no entry for it"
	if !e.configFound {
		where = "there is no config file at " + e.configPath
	}
	msg := fmt.Sprintf("unknown server %q: %s and no sidecar recorded it in the state store", e.name, where)
	if len(e.known) == 0 {
		return msg + "; no server is known yet"
	}
	return msg + "; known servers: " + quoteList(e.known)
}

// toolInfo is what is known about one tool of a server.
type toolInfo struct {
	name string
	// tool is the parsed definition; only the name is set when the
	// definition is unknown (its empty hash never matches an approval, as in
	// a sidecar), and Refused too when the definition is refused.
	tool        policy.Tool
	definition  json.RawMessage // nil when unknown
	description string
	inCatalog   bool
	// refused says why the definition was refused, as a sidecar refuses it
	// (ambiguous, malformed, or naming another tool); nil otherwise.
	refused error
}

// describe builds the toolInfo of the named tool from its definition, read
// as a sidecar reads it (policy.ParseTool, through tooldef). A definition
// the store keeps under another name than its own is refused too.
func describe(name string, def json.RawMessage, inCatalog bool) toolInfo {
	info := toolInfo{name: name, tool: policy.Tool{Name: name}, definition: def, inCatalog: inCatalog}
	if def == nil {
		return info
	}
	d, err := tooldef.Parse(def)
	switch {
	case err != nil:
		info.refused = err
	case d.Name != name:
		info.refused = fmt.Errorf("the definition names tool %q", d.Name)
	default:
		info.tool, info.description = policy.ToolOf(d), d.Description
		return info
	}
	info.tool.Refused = true
	return info
}

// catalogTool returns the tool as the last catalog shows it.
func (v *serverView) catalogTool(name string) (toolInfo, bool) {
	if v.user.Catalog == nil {
		return toolInfo{}, false
	}
	t, ok := v.user.Catalog.Tools[name]
	if !ok {
		return toolInfo{}, false
	}
	return v.cache.describe(name, t.Definition, true), true
}

// tool returns what is known about the named tool: its catalog entry, else
// its approved definition, else only its name.
func (v *serverView) tool(name string) toolInfo {
	if info, ok := v.catalogTool(name); ok {
		return info
	}
	if a, ok := v.user.Approval(name); ok {
		return v.cache.describe(name, a.Definition, false)
	}
	return describe(name, nil, false)
}

// known returns every tool of the server: those of the last catalog sorted
// by name, then those only named in the user's approvals or disabled list.
func (v *serverView) known() []toolInfo {
	others := make(map[string]bool)
	for name := range v.user.Approvals {
		others[name] = true
	}
	for _, name := range v.user.Disabled {
		others[name] = true
	}
	var names []string
	if c := v.user.Catalog; c != nil {
		names = slices.Sorted(maps.Keys(c.Tools))
		for name := range c.Tools {
			delete(others, name)
		}
	}
	names = append(names, slices.Sorted(maps.Keys(others))...)
	tools := make([]toolInfo, len(names))
	for i, name := range names {
		tools[i] = v.tool(name)
	}
	return tools
}

// statuses evaluates the tools as a sidecar evaluates its catalog.
func (v *serverView) statuses(tools []toolInfo) []policy.Status {
	catalog := make([]policy.Tool, len(tools))
	for i, t := range tools {
		catalog[i] = t.tool
	}
	out := make([]policy.Status, len(tools))
	for _, e := range v.eval.Evaluate(catalog, gate.UserState(v.user), nil).Entries {
		out[e.Index] = e.Status
	}
	return out
}

// status returns the status of one tool. A tool's status depends on no
// other tool, so it needs no catalog around it.
func (v *serverView) status(name string) policy.Status {
	return v.statuses([]toolInfo{v.tool(name)})[0]
}

// operatorLock returns the status operator policy locks the tool with
// (ServerDisabled or DisabledByConfig), or "" when it lets the tool be on.
// When the definition is unknown and the verdict hangs on its readOnlyHint,
// the tool is let on and undecided is true.
func (v *serverView) operatorLock(info toolInfo) (lock policy.Status, undecided bool) {
	if !v.config.Enabled {
		return policy.ServerDisabled, false
	}
	if info.definition != nil {
		if v.eval.ConfigAllows(info.tool) {
			return "", false
		}
		return policy.DisabledByConfig, false
	}
	switch {
	case v.eval.ConfigAllows(policy.Tool{Name: info.name}):
		return "", false
	case v.eval.ConfigAllows(policy.Tool{Name: info.name, ReadOnly: true}):
		return "", true
	}
	return policy.DisabledByConfig, false
}

// missing says why a tool is not in the server's last catalog.
func (v *serverView) missing() string {
	if v.user.Catalog == nil {
		return noCatalog(v.name)
	}
	return fmt.Sprintf("not in the last catalog of server %q (seen %s)", v.name, stamp(v.user.Catalog.SeenAt))
}

// noCatalog says that no catalog of the server was recorded.
func noCatalog(server string) string {
	return fmt.Sprintf("no catalog of server %q was recorded yet (a sidecar records it when it first loads the server)", server)
}

// stamp formats a time for messages.
func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }
