package panel

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/mcpwrap/mcpwrap/internal/policy"
	"github.com/mcpwrap/mcpwrap/internal/runstatus"
	"github.com/mcpwrap/mcpwrap/internal/toolscli"
)

// ClientFile is one client config file (Claude Desktop, Claude Code,
// Cursor...) with its MCP server entries.
type ClientFile struct {
	Path    string
	Client  string // its client's name ("claude-desktop"), "" for a file given by path
	Entries []ClientEntry
	// Err says why the file's entries cannot be read; "" when they can.
	Err string
}

// ClientEntry is one MCP server entry of a client config file.
type ClientEntry struct {
	// Name is the entry's key; Server the --name its sidecar runs as (the
	// key when it is not wrapped).
	Name, Server string
	Project      string // the project directory of a per-project entry
	Wrapped      bool
	Remote       bool
}

// Change is one line of an install or uninstall plan.
type Change struct {
	Server, Action, Detail string
}

// Clients reads and changes the client config files: the same plans as
// `mcpwrap install` and `uninstall`. Implementations are safe for
// concurrent use.
type Clients interface {
	// Files lists the client config files that exist, with their entries.
	Files(ctx context.Context) ([]ClientFile, error)
	// Plan returns what installing (or, with uninstall, uninstalling) the
	// entry of the file at path would do, writing nothing (the dry run).
	Plan(ctx context.Context, path, entry string, uninstall bool) ([]Change, error)
	// Apply does it, after backing the file up, and returns the backup's
	// path ("" when nothing changed).
	Apply(ctx context.Context, path, entry string, uninstall bool) (plan []Change, backup string, err error)
}

// SignIn is one remote server's sign-in, never with a token.
type SignIn struct {
	Server string // the --name
	Origin string // the server's URL reduced to its origin
	// SignedIn, Expiry and Refreshable as auth.Status has them.
	SignedIn    bool
	Expiry      time.Time
	Refreshable bool
	Err         string // why the state cannot be read; "" when it can
}

// SignIns reads and runs the sign-ins of remote servers: the same flows as
// `mcpwrap login` and `logout`. Implementations are safe for concurrent
// use.
type SignIns interface {
	// List returns the remote servers of the client configs and the stored
	// sign-ins, each once.
	List(ctx context.Context) ([]SignIn, error)
	// Login signs in to the server: show receives the authorization URL
	// before the browser is opened on it, and Login returns once the user
	// signed in, or ctx is done.
	Login(ctx context.Context, server string, show func(url string)) error
	// Logout forgets the server's tokens and reports whether there were
	// any.
	Logout(ctx context.Context, server string) (bool, error)
}

// model is one snapshot of everything the pages show.
type model struct {
	Taken    time.Time
	Servers  []serverRow
	Pending  int    // tools pending approval, over every server
	ToolsErr string // why the config or the store cannot be read
	SignIns  []SignIn
	SignErr  string
	Files    []ClientFile
	FilesErr string
}

// serverRow is one server as the servers page shows it.
type serverRow struct {
	Name    string
	Clients []string // "claude-desktop", ... the files naming it
	Wrapped bool     // some client entry runs it through mcpwrap
	// Running is false when no sidecar publishes a status file for it.
	Running bool
	runstatus.Status
	Uptime   time.Duration
	Tools    []toolscli.Tool // pending approval first, then by name
	Counts   policy.Counts
	Err      string // why its tools cannot be listed
	Disabled bool   // enabled: false in the config
}

// pending returns the server's tools pending approval.
func (s serverRow) pending() []toolscli.Tool {
	var out []toolscli.Tool
	for _, t := range s.Tools {
		if t.Status == policy.PendingApproval {
			out = append(out, t)
		}
	}
	return out
}

// build reads every source into a model. A source that fails leaves its
// part empty with the reason; the others are shown.
func (p *Panel) build(ctx context.Context) *model {
	m := &model{Taken: p.now()}
	rows := map[string]*serverRow{}
	row := func(name string) *serverRow {
		r, ok := rows[name]
		if !ok {
			r = &serverRow{Name: name}
			rows[name] = r
		}
		return r
	}
	if p.Clients != nil {
		files, err := p.Clients.Files(ctx)
		if err != nil {
			m.FilesErr = err.Error()
		}
		m.Files = files
		for _, f := range files {
			for _, e := range f.Entries {
				r := row(e.Server)
				r.Clients = appendOnce(r.Clients, cmp.Or(f.Client, f.Path))
				r.Wrapped = r.Wrapped || e.Wrapped
			}
		}
	}
	if p.StatusDir != "" {
		list, _ := runstatus.List(p.StatusDir, p.Alive)
		for _, st := range list {
			r := row(st.Server)
			if r.Running && st.StartedAt.After(r.StartedAt) {
				continue // the oldest sidecar of a name stands for it
			}
			r.Running, r.Status, r.Uptime = true, st, m.Taken.Sub(st.StartedAt).Round(time.Second)
		}
	}
	tools, err := p.Tools(ctx)
	if err != nil {
		m.ToolsErr = err.Error()
	} else {
		names, err := tools.Servers(ctx)
		if err != nil {
			m.ToolsErr = err.Error()
		}
		for _, name := range names {
			row(name)
		}
		for name, r := range rows {
			r.Disabled = !tools.Config().Server(name).Enabled
			list, err := tools.List(ctx, name)
			if err != nil {
				r.Err = err.Error()
				continue
			}
			slices.SortStableFunc(list, func(a, b toolscli.Tool) int {
				return cmpBool(a.Status == policy.PendingApproval, b.Status == policy.PendingApproval)
			})
			r.Tools = list
			for _, t := range list {
				r.Counts.Add(t.Status)
			}
			m.Pending += r.Counts.PendingApproval
		}
	}
	if p.SignIns != nil {
		list, err := p.SignIns.List(ctx)
		if err != nil {
			m.SignErr = err.Error()
		}
		m.SignIns = list
	}
	for _, r := range rows {
		m.Servers = append(m.Servers, *r)
	}
	slices.SortFunc(m.Servers, func(a, b serverRow) int { return cmp.Compare(a.Name, b.Name) })
	return m
}

// server returns the named server's row.
func (m *model) server(name string) (serverRow, bool) {
	i, ok := slices.BinarySearchFunc(m.Servers, name, func(r serverRow, n string) int { return cmp.Compare(r.Name, n) })
	if !ok {
		return serverRow{}, false
	}
	return m.Servers[i], true
}

// cmpBool orders true first.
func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return -1
	}
	return 1
}

func appendOnce(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}
