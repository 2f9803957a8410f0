// Package state is the per-user state store shared by every mcpwrap process
// (one sidecar per wrapped server, possibly dozens) and the `mcpwrap tools`
// CLI: which tools the user disabled, which tool definitions the user
// approved, and the last catalog each server showed.
//
// [Store] is the store as its users take it: one server's state at a time,
// so a sidecar reads, writes and watches only its own server's state.
// [FileStore] keeps it as one human-readable JSON file per server
// (indented, a version field) in a state directory. Its Update serialises
// writers across processes with a lock file per server and replaces the
// server's file atomically, so concurrent writers never lose an update and a
// crash never leaves a torn file. A file that cannot be parsed is reported as
// a [*CorruptError] and never overwritten.
package state

import (
	"context"
	"encoding/json"
	"slices"
	"time"
)

// Store is the user state store, one server's state at a time. The file
// store ([Open]) is one implementation, the PostgreSQL store
// (internal/pgstore) another, and storetest.Memory a trivial one for tests;
// storetest.Run is the conformance suite every implementation passes.
//
// Implementations are safe for concurrent use, and an update by one user of
// the store (another process included) is seen by the others' Load and
// reported to their Watch and WatchAll.
type Store interface {
	// Load returns a snapshot of the server's state that the caller owns,
	// never nil: a server with no state has an empty one. A store that
	// cannot be read yields an error (a [*CorruptError] for one that cannot
	// be parsed, one matching [ErrUnavailable] for one that cannot be
	// reached for now); callers fail closed.
	Load(ctx context.Context, server string) (*Server, error)
	// Update applies fn to the server's current state and saves the result
	// atomically; no concurrent update is lost. If fn returns an error,
	// nothing is written and Update returns that error unchanged. fn must
	// not call the store.
	Update(ctx context.Context, server string, fn func(*Server) error) error
	// Watch calls onChange whenever the server's state may have changed, by
	// any user of the store, until ctx is done, then returns. The first call
	// comes once the watch has begun, so a caller that loaded the state
	// before may look again. Calls are never concurrent with each other;
	// onChange may use the store.
	Watch(ctx context.Context, server string, onChange func())
	// WatchAll is Watch of every server at once, those without state yet
	// included, for a user that shows them all: it calls onChange whenever
	// any server's state may have changed, by any user of the store, until
	// ctx is done, then returns. Its calls are Watch's (a first one once
	// the watch has begun, never concurrent, onChange may use the store);
	// they do not say which server changed, so the caller looks again at
	// those it shows. Whatever the number of servers, it costs the store
	// one watch, not one per server.
	WatchAll(ctx context.Context, onChange func())
	// Servers returns the names of the servers that have state, sorted.
	Servers(ctx context.Context) ([]string, error)
}

// Server is the user's state for one wrapped server. The zero value is an
// empty state, ready to use; a Server is not safe for concurrent mutation. Fields may be set directly; the methods are conveniences that
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
	// Upstream is what the server said of itself in its last successful
	// load; nil if it never loaded.
	Upstream *Upstream `json:"upstream,omitempty"`
}

// Approval records that the user approved one definition of a tool.
type Approval struct {
	// ApprovedAt is when the user approved it.
	ApprovedAt time.Time `json:"approved_at"`
	// Definition is the approved tool definition as the upstream sent it,
	// kept so a later change can be shown as a diff; nil when unknown. The
	// file store keeps one copy of it: none of its own while the last
	// catalog holds the same definition under the tool's name.
	Definition json.RawMessage `json:"definition,omitempty"`
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

// Empty reports whether the server has no state: no approval, no catalog,
// no disabled tool and nothing remembered of it. The store keeps nothing
// for an empty server.
func (s *Server) Empty() bool {
	return len(s.Approvals) == 0 && s.Catalog == nil && len(s.Disabled) == 0 && s.Upstream == nil
}

// normalize restores the invariants the methods keep, for states built or
// edited by hand: Disabled sorted and deduplicated, a catalog's tools never
// nil.
func (s *Server) normalize() {
	slices.Sort(s.Disabled)
	s.Disabled = slices.Compact(s.Disabled)
	if s.Catalog != nil && s.Catalog.Tools == nil {
		s.Catalog.Tools = map[string]CatalogTool{}
	}
}
