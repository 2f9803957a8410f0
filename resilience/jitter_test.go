package resilience_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/resilience"
)

// TestRetryAfterIsCapped: however long an upstream asks mcpwrap to wait,
// it waits at most the background cadence's maximum interval.
func TestRetryAfterIsCapped(t *testing.T) {
	day := 86400 * time.Second
	tests := []struct {
		name       string
		background resilience.Policy
		load       bool
		retryAfter time.Duration
		wantWait   time.Duration
	}{
		{name: "a day in the background waits the default 5 min cap", retryAfter: day, wantWait: 5 * time.Minute},
		{name: "a day under a configured cap waits that cap", background: resilience.Policy{MaxInterval: time.Minute}, retryAfter: day, wantWait: time.Minute},
		{name: "below the cap it is honoured", retryAfter: 4 * time.Minute, wantWait: 4 * time.Minute},
		{name: "a day during an unbounded load waits the background cap", load: true, retryAfter: day, wantWait: 5 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, timers := newRetrier()
			r.BackgroundPolicy.MaxInterval = tt.background.MaxInterval
			throttled := &resilience.HTTPStatusError{StatusCode: 429, RetryAfter: tt.retryAfter}
			op := &script{errs: []error{throttled}}

			var out resilience.Outcome
			if tt.load {
				r.Policy.MaxAttempts, r.Policy.MaxElapsed = -1, -1
				out = r.Load(t.Context(), "srv", op.Op)
			} else {
				from := resilience.Outcome{Server: "srv", Class: resilience.Transient, Attempts: 6, Err: resilience.Classify(throttled)}
				op.errs = nil
				out = r.Background(t.Context(), from, op.Op)
			}

			assert.Equal(t, resilience.Available, out.Class)
			assert.Equal(t, []time.Duration{tt.wantWait}, timers.Waits())
		})
	}
}

// uniformSources are the random sources the jitter tests draw from: both
// ends of [0, 1) and many seeded generators.
func uniformSources() map[string]func() float64 {
	sources := map[string]func() float64{
		"lowest":  func() float64 { return 0 },
		"highest": func() float64 { return 0.9999999999 },
	}
	for seed := range uint64(100) {
		sources[fmt.Sprintf("seed %d", seed)] = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)).Float64
	}
	return sources
}

// TestJitterNeverPassesTheCap: for the load and background schedules and
// restart delays, a jittered delay stays in [d*(1-jitter), cap] for every
// random source.
func TestJitterNeverPassesTheCap(t *testing.T) {
	tests := []struct {
		name       string
		policy     resilience.Policy
		background bool
		cap        time.Duration
		floor      time.Duration // the least delay of the capped steps
	}{
		{name: "default load policy", policy: resilience.Policy{MaxAttempts: 20, MaxElapsed: -1}, cap: 5 * time.Second, floor: 2500 * time.Millisecond},
		{name: "max interval 5s, full jitter", policy: resilience.Policy{MaxInterval: 5 * time.Second, Jitter: 1, MaxAttempts: 20, MaxElapsed: -1}, cap: 5 * time.Second},
		{name: "background cadence", background: true, policy: resilience.Policy{MaxAttempts: 12}, cap: 5 * time.Minute, floor: 150 * time.Second},
	}
	for _, tt := range tests {
		for src, uniform := range uniformSources() {
			t.Run(tt.name+"/"+src, func(t *testing.T) {
				clock := newFakeClock()
				timers := &fakeTimers{clock: clock}
				r := &resilience.Retrier{NewTimer: timers.New, Now: clock.Now, Rand: uniform}
				op := &script{errs: repeat(errUnavailable, 100)}
				if tt.background {
					r.BackgroundPolicy = tt.policy
					r.Background(t.Context(), resilience.Outcome{Class: resilience.Transient, Attempts: 1}, op.Op)
				} else {
					r.Policy = tt.policy
					r.Load(t.Context(), "srv", op.Op)
					for n := 1; n <= 20; n++ {
						assert.LessOrEqual(t, r.RestartDelay(n), tt.cap, "restart %d", n)
					}
				}

				waits := timers.Waits()
				require.NotEmpty(t, waits)
				for i, w := range waits {
					assert.LessOrEqual(t, w, tt.cap, "wait %d", i)
				}
				assert.GreaterOrEqual(t, waits[len(waits)-1], tt.floor, "a capped delay keeps its lower spread")
			})
		}
	}
}
