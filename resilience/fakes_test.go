package resilience_test

import (
	"context"
	"sync"
	"time"

	"github.com/mcpwrap/mcpwrap/resilience"
)

// fakeClock is a settable clock, safe for concurrent use.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 11, 22, 5, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// fakeTimers makes resilience.Timers that fire at once, advance the clock by
// the requested duration (so elapsed-time budgets still apply) and record
// every requested wait.
type fakeTimers struct {
	clock *fakeClock
	mu    sync.Mutex
	waits []time.Duration
}

func (f *fakeTimers) New() resilience.Timer {
	return &fakeTimer{timers: f, c: make(chan time.Time, 1)}
}

func (f *fakeTimers) Waits() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Duration(nil), f.waits...)
}

type fakeTimer struct {
	timers *fakeTimers
	c      chan time.Time
}

func (t *fakeTimer) Start(d time.Duration) {
	t.timers.mu.Lock()
	t.timers.waits = append(t.timers.waits, d)
	t.timers.mu.Unlock()
	t.timers.clock.Advance(d)
	t.c <- t.timers.clock.Now()
}

func (t *fakeTimer) Stop()               {}
func (t *fakeTimer) C() <-chan time.Time { return t.c }

// stuckTimer never fires: the loop can only leave through its context.
type stuckTimer struct{ c chan time.Time }

func (t stuckTimer) Start(time.Duration) {}
func (t stuckTimer) Stop()               {}
func (t stuckTimer) C() <-chan time.Time { return t.c }

// script is an Op that returns its errors in order, then nil, and records
// the attempt numbers it was called with.
type script struct {
	errs     []error
	attempts []int
}

func (s *script) Op(_ context.Context, attempt int) error {
	s.attempts = append(s.attempts, attempt)
	if n := len(s.attempts); n <= len(s.errs) {
		return s.errs[n-1]
	}
	return nil
}

// repeat returns n copies of err.
func repeat(err error, n int) []error {
	errs := make([]error, n)
	for i := range errs {
		errs[i] = err
	}
	return errs
}

// newRetrier returns a Retrier on a fake clock and timers, without jitter
// so that delays are exact.
func newRetrier() (*resilience.Retrier, *fakeTimers) {
	clock := newFakeClock()
	timers := &fakeTimers{clock: clock}
	return &resilience.Retrier{
		Policy:           resilience.Policy{Jitter: -1},
		BackgroundPolicy: resilience.Policy{Jitter: -1},
		NewTimer:         timers.New,
		Now:              clock.Now,
	}, timers
}
