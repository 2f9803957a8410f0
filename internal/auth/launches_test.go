package auth

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestLaunchBound: at most max launches in any window; a refused launch
// is not counted and learns when the next may happen.
func TestLaunchBound(t *testing.T) {
	start := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	var now time.Time
	b := &launchBound{max: 2, window: time.Minute, now: func() time.Time { return now }}
	steps := []struct {
		at       time.Duration
		wantOK   bool
		wantNext time.Duration // from start, when refused
	}{
		{at: 0, wantOK: true},
		{at: 10 * time.Second, wantOK: true},
		{at: 20 * time.Second, wantOK: false, wantNext: time.Minute},
		{at: 59 * time.Second, wantOK: false, wantNext: time.Minute},
		{at: time.Minute, wantOK: true},
		{at: 61 * time.Second, wantOK: false, wantNext: 70 * time.Second},
		{at: 10 * time.Minute, wantOK: true},
	}
	for _, s := range steps {
		now = start.Add(s.at)
		ok, next := b.take()
		assert.Equal(t, s.wantOK, ok, "at %s", s.at)
		if !s.wantOK {
			assert.Equal(t, start.Add(s.wantNext), next, "at %s", s.at)
		}
	}
}

func TestLaunchBoundZeroValue(t *testing.T) {
	var b launchBound
	for i := range DefaultMaxStepUps {
		ok, _ := b.take()
		assert.True(t, ok, "launch %d", i+1)
	}
	ok, next := b.take()
	assert.False(t, ok)
	assert.WithinDuration(t, time.Now().Add(DefaultStepUpWindow), next, time.Minute)
}
