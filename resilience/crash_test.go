package resilience_test

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/resilience"
)

func TestCrashBudget(t *testing.T) {
	clock := newFakeClock()
	b := &resilience.CrashBudget{Now: clock.Now}
	crash := &resilience.ExitError{Code: 1, Ready: true, Stderr: []string{"panic: nil map"}}

	assert.Equal(t, 5, b.Limit())
	for i := range 5 {
		require.NoError(t, b.Crash(crash), "restart %d is within the budget", i+1)
		assert.Equal(t, i+1, b.Recent(), "the restart's number within the window")
		clock.Advance(10 * time.Second)
	}
	err := b.Crash(crash)
	require.ErrorIs(t, err, resilience.ErrCrashLoop)
	var loop *resilience.CrashLoopError
	require.ErrorAs(t, err, &loop)
	assert.Equal(t, 5, loop.Restarts)
	assert.Equal(t, 5*time.Minute, loop.Window)
	assert.Same(t, crash, loop.Err)

	got := resilience.Classify(err)
	assert.Equal(t, resilience.Permanent, got.Class)
	assert.Equal(t, `crash loop: 5 restarts in 5m; last: the server exited with code 1 after it was ready; stderr: "panic: nil map"`, got.Reason)

	b.Reset()
	assert.NoError(t, b.Crash(crash), "Reset forgets past crashes")
}

func TestCrashBudgetWindowSlides(t *testing.T) {
	clock := newFakeClock()
	b := &resilience.CrashBudget{Now: clock.Now}

	// One crash a minute never puts six in a five-minute window.
	for i := range 20 {
		require.NoError(t, b.Crash(nil), "crash %d", i+1)
		clock.Advance(time.Minute)
	}
}

func TestCrashBudgetConfigured(t *testing.T) {
	clock := newFakeClock()
	b := &resilience.CrashBudget{Restarts: 1, Window: time.Minute, Now: clock.Now}

	require.NoError(t, b.Crash(nil))
	clock.Advance(59 * time.Second)
	err := b.Crash(nil)
	require.ErrorIs(t, err, resilience.ErrCrashLoop)
	assert.Equal(t, "crash loop: 1 restarts in 1m", err.Error())

	clock.Advance(2 * time.Minute)
	assert.NoError(t, b.Crash(nil))
}

func TestCrashBudgetConcurrent(t *testing.T) {
	b := &resilience.CrashBudget{Now: newFakeClock().Now}
	var loops atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if err := b.Crash(nil); errors.Is(err, resilience.ErrCrashLoop) {
				loops.Add(1)
			}
		})
	}
	wg.Wait()
	assert.EqualValues(t, 3, loops.Load(), "crashes 6, 7 and 8 exceed a budget of 5")
}
