package resilience

import (
	"sync"
	"time"
)

// DefaultThrottleInterval is a zero [Throttle]'s interval, the "reconnect
// on use" spacing: a permanent or denied upstream is retried when the agent
// uses it, at most this often.
const DefaultThrottleInterval = 30 * time.Second

// Throttle paces "reconnect on use": a tool or discovery call on an
// upstream that failed permanently (or was denied) may trigger one new
// load attempt, at most once per Interval.
//
// The zero value allows one attempt every 30 s on the real clock. A
// Throttle is safe for concurrent use; set its fields before first use and
// do not copy it afterwards.
type Throttle struct {
	// Interval is the minimum spacing of allowed attempts. Zero means
	// [DefaultThrottleInterval].
	Interval time.Duration
	// Now is the clock. Nil means time.Now.
	Now func() time.Time

	mu      sync.Mutex
	last    time.Time
	allowed bool // an attempt has been allowed since the last Reset
}

// Allow reports whether an attempt may start now, and if so records it:
// of several concurrent callers, only one is allowed per Interval.
func (t *Throttle) Allow() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	if t.allowed && now.Sub(t.last) < t.interval() {
		return false
	}
	t.last, t.allowed = now, true
	return true
}

// Reset forgets the last allowed attempt, so the next Allow succeeds. Call
// it when the upstream becomes available again.
func (t *Throttle) Reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.last, t.allowed = time.Time{}, false
}

func (t *Throttle) interval() time.Duration {
	if t.Interval > 0 {
		return t.Interval
	}
	return DefaultThrottleInterval
}

func (t *Throttle) now() time.Time {
	if t.Now != nil {
		return t.Now()
	}
	return time.Now()
}
