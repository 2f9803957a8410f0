package middleware

import (
	"encoding/json"

	"github.com/mcpwrap/mcpwrap/internal/framing"
	"github.com/mcpwrap/mcpwrap/resilience"
)

// RewriteToolsList exposes the tools/list rewrite to the external
// benchmark, which needs the real policy (internal/gate imports this
// package).
func (s *Session) RewriteToolsList(msg []byte) []byte {
	s.once.Do(s.init)
	env, _ := framing.Peek(msg)
	return s.rewriteToolsList(msg, env)
}

// catalogLoadIdle reports whether the catalog is loaded, no load is under
// way and no refresh is pending: a refresh's load ends a moment before the
// refresh does, and a call in between would start a load of its own.
func (s *Session) catalogLoadIdle() bool {
	return s.cat.idle()
}

// LoadCatalog sets the catalog as a load does and evaluates it, for the
// external benchmarks.
func (s *Session) LoadCatalog(tools []json.RawMessage) {
	s.once.Do(s.init)
	s.cat.set(tools)
	s.view()
}

// CallVerdict exposes callVerdict to the external benchmarks.
func (s *Session) CallVerdict(name string) (a Availability, known bool) {
	a, known, _ = s.callVerdict(name)
	return a, known
}

// MarkAvailable records the upstream as loaded and serving, as a handshake
// does, for the external benchmarks.
func (s *Session) MarkAvailable() {
	s.once.Do(s.init)
	s.publishStatus(resilience.Outcome{Class: resilience.Available})
}
