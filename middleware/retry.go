package middleware

import "github.com/mcpwrap/mcpwrap/resilience"

// Retry asks the session to load an upstream that failed permanently or
// was denied again now, without waiting for a call to reconnect it: for
// example once the user has signed in to it. It is the only way a denied
// upstream is loaded again: a call does not reload it (see
// docs/DESIGN.md, Resilience). It does nothing while the
// upstream is available, retried anyway (transient) or idle (it starts
// when the client asks for it, see OnDemand). Safe for concurrent use; the
// client is told of the tools with tools/list_changed once the load
// succeeds.
func (s *Session) Retry() {
	switch s.Status().Class {
	case resilience.Available, resilience.Transient, resilience.Idle:
		return
	}
	select {
	case s.kick <- struct{}{}:
	default:
	}
}
