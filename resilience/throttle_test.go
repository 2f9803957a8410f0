package resilience_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/mcpwrap/mcpwrap/resilience"
)

func TestThrottle(t *testing.T) {
	clock := newFakeClock()
	th := &resilience.Throttle{Now: clock.Now}

	assert.True(t, th.Allow(), "the first re-attempt is immediate")
	assert.False(t, th.Allow())
	clock.Advance(29 * time.Second)
	assert.False(t, th.Allow(), "at most one re-attempt every 30s")
	clock.Advance(time.Second)
	assert.True(t, th.Allow())
	assert.False(t, th.Allow())

	th.Reset()
	assert.True(t, th.Allow(), "Reset clears the last attempt")
}

func TestThrottleInterval(t *testing.T) {
	clock := newFakeClock()
	th := &resilience.Throttle{Interval: 5 * time.Second, Now: clock.Now}

	assert.True(t, th.Allow())
	clock.Advance(5 * time.Second)
	assert.True(t, th.Allow())
}

func TestThrottleZeroValue(t *testing.T) {
	var th resilience.Throttle
	assert.True(t, th.Allow())
	assert.False(t, th.Allow())
}

func TestThrottleConcurrent(t *testing.T) {
	clock := newFakeClock()
	th := &resilience.Throttle{Now: clock.Now}
	var allowed atomic.Int32
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			if th.Allow() {
				allowed.Add(1)
			}
		})
	}
	wg.Wait()
	assert.EqualValues(t, 1, allowed.Load(), "one re-attempt among concurrent callers")
}
