package resilience

import (
	"sync"
	"time"
)

// Crash budget defaults: 5 restarts in 5 minutes, then a crash loop.
const (
	// DefaultCrashRestarts is the restarts a zero [CrashBudget] allows
	// within its window.
	DefaultCrashRestarts = 5
	// DefaultCrashWindow is a zero [CrashBudget]'s sliding window.
	DefaultCrashWindow = 5 * time.Minute
)

// CrashBudget bounds restarts after crashes: an upstream that crashes more
// than Restarts times within Window is in a crash loop and is no longer
// restarted automatically.
//
// The zero value allows 5 restarts in 5 minutes on the real clock. A
// CrashBudget is safe for concurrent use; set its fields before first use
// and do not copy it afterwards.
type CrashBudget struct {
	// Restarts is how many restarts are allowed within Window. Zero means
	// [DefaultCrashRestarts].
	Restarts int
	// Window is the sliding time window. Zero means [DefaultCrashWindow].
	Window time.Duration
	// Now is the clock. Nil means time.Now.
	Now func() time.Time

	mu      sync.Mutex
	crashes []time.Time // within the window, oldest first
}

// Crash records a crash of a ready upstream. It returns nil when a restart
// is within the budget, or a [*CrashLoopError] (matching [ErrCrashLoop];
// [Classify] makes it permanent) when this crash exceeds it. cause is the
// crash itself, typically an [*ExitError], kept for the reason text.
func (b *CrashBudget) Crash(cause error) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	window := b.window()
	kept := b.crashes[:0]
	for _, at := range b.crashes {
		if now.Sub(at) < window {
			kept = append(kept, at)
		}
	}
	b.crashes = append(kept, now)
	if restarts := b.restarts(); len(b.crashes) > restarts {
		return &CrashLoopError{Restarts: restarts, Window: window, Err: cause}
	}
	return nil
}

// Reset forgets past crashes. Call it when a person restarts the upstream
// deliberately, e.g. after fixing its configuration.
func (b *CrashBudget) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.crashes = nil
}

func (b *CrashBudget) restarts() int {
	if b.Restarts > 0 {
		return b.Restarts
	}
	return DefaultCrashRestarts
}

func (b *CrashBudget) window() time.Duration {
	if b.Window > 0 {
		return b.Window
	}
	return DefaultCrashWindow
}

func (b *CrashBudget) now() time.Time {
	if b.Now != nil {
		return b.Now()
	}
	return time.Now()
}

// Limit returns how many restarts the budget allows within its window.
func (b *CrashBudget) Limit() int { return b.restarts() }

// Recent returns how many crashes fall within the window, as of the last
// call to Crash.
func (b *CrashBudget) Recent() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.crashes)
}
