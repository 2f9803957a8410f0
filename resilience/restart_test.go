package resilience_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/resilience"
)

func TestRestartDelay(t *testing.T) {
	tests := []struct {
		name   string
		policy resilience.Policy
		n      int
		min    time.Duration
		max    time.Duration
	}{
		{name: "first crash waits the initial delay", policy: resilience.Policy{Jitter: -1}, n: 1, min: 250 * time.Millisecond, max: 250 * time.Millisecond},
		{name: "it doubles", policy: resilience.Policy{Jitter: -1}, n: 3, min: time.Second, max: time.Second},
		{name: "capped at the max interval", policy: resilience.Policy{Jitter: -1}, n: 5, min: 4 * time.Second, max: 4 * time.Second},
		{name: "never past the cap", policy: resilience.Policy{Jitter: -1}, n: 50, min: 5 * time.Second, max: 5 * time.Second},
		{name: "configured schedule", policy: resilience.Policy{Initial: 10 * time.Millisecond, MaxInterval: 50 * time.Millisecond, Jitter: -1}, n: 4, min: 50 * time.Millisecond, max: 50 * time.Millisecond},
		{name: "default jitter spreads it by half", n: 1, min: 125 * time.Millisecond, max: 375 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &resilience.Retrier{Policy: tt.policy}
			for range 20 {
				d := r.RestartDelay(tt.n)
				assert.GreaterOrEqual(t, d, tt.min)
				assert.LessOrEqual(t, d, tt.max)
			}
		})
	}
}

func TestSleepUsesTheInjectedTimer(t *testing.T) {
	r, timers := newRetrier()
	require.NoError(t, r.Sleep(context.Background(), 3*time.Second))
	assert.Equal(t, []time.Duration{3 * time.Second}, timers.Waits())

	stuck := &resilience.Retrier{NewTimer: func() resilience.Timer { return stuckTimer{c: make(chan time.Time)} }}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.ErrorIs(t, stuck.Sleep(ctx, time.Hour), context.Canceled)
}

func TestCrashBudgetRecent(t *testing.T) {
	clock := newFakeClock()
	b := &resilience.CrashBudget{Restarts: 5, Window: time.Minute, Now: clock.Now}
	assert.Equal(t, 0, b.Recent())
	require.NoError(t, b.Crash(nil))
	require.NoError(t, b.Crash(nil))
	assert.Equal(t, 2, b.Recent())
	clock.Advance(2 * time.Minute)
	require.NoError(t, b.Crash(nil))
	assert.Equal(t, 1, b.Recent(), "crashes past the window no longer count")
}
