package auth

import (
	"sync"
	"time"
)

// Defaults of a launchBound.
const (
	// DefaultMaxStepUps is how many step-up sign-ins a server may have
	// opened in the browser within DefaultStepUpWindow.
	DefaultMaxStepUps = 3
	// DefaultStepUpWindow is the window DefaultMaxStepUps counts in.
	DefaultStepUpWindow = 10 * time.Minute
)

// launchBound bounds the sign-in pages one server opens in the browser by
// itself: at most max in any window, so that a server which invents a new
// scope set for every call gets a few tabs, not one per call. The zero
// value allows [DefaultMaxStepUps] in [DefaultStepUpWindow] on the real
// clock. It is safe for concurrent use; set its fields before first use.
type launchBound struct {
	max    int
	window time.Duration
	now    func() time.Time // nil: time.Now

	mu     sync.Mutex
	recent []time.Time // launches within the window, oldest first
}

// take counts a launch and reports true when one may happen now. When
// not, it reports when the next may.
func (b *launchBound) take() (ok bool, next time.Time) {
	limit, window := b.limits()
	t := time.Now()
	if b.now != nil {
		t = b.now()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for len(b.recent) > 0 && !b.recent[0].Add(window).After(t) {
		b.recent = b.recent[1:]
	}
	if len(b.recent) >= limit {
		return false, b.recent[0].Add(window)
	}
	b.recent = append(b.recent, t)
	return true, time.Time{}
}

// limits returns the bound's launches and window, defaults applied.
func (b *launchBound) limits() (int, time.Duration) {
	limit, window := b.max, b.window
	if limit <= 0 {
		limit = DefaultMaxStepUps
	}
	if window <= 0 {
		window = DefaultStepUpWindow
	}
	return limit, window
}
