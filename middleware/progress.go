package middleware

import (
	"sync"
	"sync/atomic"
	"time"
)

// This file holds the progress a load logs while it waits on the
// upstream: a server that takes long to answer its handshake (an npx or
// uvx cold install fetching packages) would otherwise look like a hang
// between "server started" and "upstream loaded" (docs/DESIGN.md,
// Observability).

// progressInterval is how often a load still waiting on the upstream's
// handshake or tool list logs so, at info.
const progressInterval = 5 * time.Second

// armFunc arms a timer that calls f after d, as time.AfterFunc does.
type armFunc func(d time.Duration, f func()) interface{ Stop() bool }

// progressTimers, when set, arms the timers of every Session's progress
// instead of time.AfterFunc: a test seam, set before the Sessions it
// concerns start (as net/http's testHook variables are), atomic so that a
// Session of another test still running reads it without a race.
var progressTimers atomic.Pointer[armFunc]

// waitProgress logs at info, every progressInterval until the returned stop
// is called, that the load's attempt is still waiting for the upstream's
// answer (what: "handshake", "tool list"), and for how long. stop waits
// for a log line being written, so none follows it.
func (s *Session) waitProgress(what string, attempt int) (stop func()) {
	after := armFunc(func(d time.Duration, f func()) interface{ Stop() bool } { return time.AfterFunc(d, f) })
	if f := progressTimers.Load(); f != nil {
		after = *f
	}
	var (
		mu      sync.Mutex
		timer   interface{ Stop() bool }
		stopped bool
		waited  time.Duration
		tick    func()
	)
	tick = func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		waited += progressInterval
		s.log.Info("still waiting for the server's "+what, "waited_ms", waited.Milliseconds(), "attempt", attempt)
		timer = after(progressInterval, tick)
	}
	mu.Lock()
	timer = after(progressInterval, tick)
	mu.Unlock()
	return func() {
		mu.Lock()
		defer mu.Unlock()
		stopped = true
		timer.Stop()
	}
}
