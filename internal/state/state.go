// Package state is the per-user state store shared by every mcpwrap process
// (one sidecar per wrapped server, possibly dozens) and the `mcpwrap tools`
// CLI: which tools the user disabled, which tool definitions the user
// approved, and the last catalog each server showed.
//
// The store is one human-readable JSON file (pretty-printed, sorted keys, a
// version field) in a state directory. [Store.Update] serialises writers
// across processes with a lock file and replaces the file atomically, so
// concurrent writers never lose an update and a crash never leaves a torn
// file. A file that cannot be parsed is reported as a [*CorruptError] and
// never overwritten.
package state

import (
	"encoding/json"
	"slices"
	"time"
)

// State is a snapshot of the whole store. It is a plain value: [Store.Load]
// returns a private copy the caller owns, and [Store.Update] hands one to its
// callback to modify. The zero value is an empty state, ready to use.
//
// A State is not safe for concurrent mutation.
type State struct {
	// Servers maps the server name (mcpwrap's --name) to its state.
	Servers map[string]*Server
}

// Server returns the state of the named server, adding an empty entry when
// there is none, so the result is never nil. Empty entries are not written
// to disk.
func (s *State) Server(name string) *Server {
	if srv, ok := s.Servers[name]; ok && srv != nil {
		return srv
	}
	if s.Servers == nil {
		s.Servers = make(map[string]*Server)
	}
	srv := &Server{}
	s.Servers[name] = srv
	return srv
}

// ServerNames returns the names of the servers that have state, sorted.
func (s *State) ServerNames() []string {
	names := make([]string, 0, len(s.Servers))
	for name, srv := range s.Servers {
		if srv != nil && !srv.isEmpty() {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// Server is the user's state for one wrapped server. The zero value is an
// empty state. Fields may be set directly; the methods are conveniences that
// keep Disabled sorted and free of duplicates, and the store restores that
// order before writing in any case.
//
// Fields are declared in the order of their JSON keys, which are sorted.
type Server struct {
	// Approvals maps a tool name to the definition the user approved.
	Approvals map[string]Approval `json:"approvals,omitempty"`
	// Catalog is the last tools/list the sidecar saw, so the CLI can list
	// and diff tools without a running server. Nil if never seen.
	Catalog *Catalog `json:"catalog,omitempty"`
	// Disabled holds the names of the tools the user disabled, sorted.
	Disabled []string `json:"disabled,omitempty"`
}

// Approval records that the user approved one definition of a tool.
type Approval struct {
	// ApprovedAt is when the user approved it.
	ApprovedAt time.Time `json:"approved_at"`
	// Definition is the approved tool definition as the upstream sent it,
	// kept so a later change can be shown as a diff.
	Definition json.RawMessage `json:"definition"`
	// Hash identifies the approved definition (see docs/DESIGN.md, Tool
	// availability: the SHA-256 of its canonical name, description and schemas).
	Hash string `json:"hash"`
}

// Catalog is the tool catalog a server showed at one moment.
type Catalog struct {
	// SeenAt is when the catalog was seen.
	SeenAt time.Time `json:"seen_at"`
	// Tools maps a tool name to its definition.
	Tools map[string]CatalogTool `json:"tools"`
}

// CatalogTool is one tool of a [Catalog].
type CatalogTool struct {
	// Definition is the tool definition as the upstream sent it.
	Definition json.RawMessage `json:"definition"`
	// Hash identifies the definition, computed like [Approval.Hash].
	Hash string `json:"hash"`
}

// IsDisabled reports whether the user disabled the tool.
func (s *Server) IsDisabled(tool string) bool {
	return slices.Contains(s.Disabled, tool)
}

// Disable marks the tool disabled by the user. It reports whether that
// changed anything.
func (s *Server) Disable(tool string) bool {
	if s.IsDisabled(tool) {
		return false
	}
	s.Disabled = append(s.Disabled, tool)
	slices.Sort(s.Disabled)
	return true
}

// Enable removes the user's disabling of the tool. It reports whether that
// changed anything.
func (s *Server) Enable(tool string) bool {
	n := len(s.Disabled)
	s.Disabled = slices.DeleteFunc(s.Disabled, func(t string) bool { return t == tool })
	return len(s.Disabled) != n
}

// Approve records the user's approval of a tool definition, replacing any
// earlier approval of the tool.
func (s *Server) Approve(tool string, a Approval) {
	if s.Approvals == nil {
		s.Approvals = make(map[string]Approval)
	}
	s.Approvals[tool] = a
}

// Approval returns the user's approval of the tool, if any.
func (s *Server) Approval(tool string) (Approval, bool) {
	a, ok := s.Approvals[tool]
	return a, ok
}

// Revoke forgets the user's approval of the tool. It reports whether there
// was one.
func (s *Server) Revoke(tool string) bool {
	if _, ok := s.Approvals[tool]; !ok {
		return false
	}
	delete(s.Approvals, tool)
	return true
}

func (s *Server) isEmpty() bool {
	return len(s.Approvals) == 0 && s.Catalog == nil && len(s.Disabled) == 0
}

// normalize restores the invariants the methods keep, for states built or
// edited by hand: Disabled sorted and deduplicated, empty servers dropped.
func (s *State) normalize() {
	for name, srv := range s.Servers {
		if srv == nil || srv.isEmpty() {
			delete(s.Servers, name)
			continue
		}
		slices.Sort(srv.Disabled)
		srv.Disabled = slices.Compact(srv.Disabled)
		if srv.Catalog != nil && srv.Catalog.Tools == nil {
			srv.Catalog.Tools = map[string]CatalogTool{}
		}
	}
}
