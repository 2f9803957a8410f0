package resilience

import (
	"time"

	"github.com/cenkalti/backoff/v4"
)

// Policy is a retry schedule: exponential backoff with jitter, bounded by
// attempts and elapsed time. Zero fields take the defaults of the schedule
// the policy is used for (see [Retrier]); a negative MaxAttempts or
// MaxElapsed means "no limit" and a negative Jitter means "no jitter".
type Policy struct {
	// Initial is the delay before the first retry.
	Initial time.Duration
	// MaxInterval caps the delay before jitter is applied.
	MaxInterval time.Duration
	// Multiplier grows the delay after each retry; values below 1 count as 1.
	Multiplier float64
	// Jitter is the randomisation factor: each delay is drawn from
	// [d*(1-Jitter), d*(1+Jitter)]. Values above 1 count as 1.
	Jitter float64
	// MaxAttempts bounds the attempts, the first one included.
	MaxAttempts int
	// MaxElapsed bounds the time from the first attempt to the start of the
	// last one.
	MaxElapsed time.Duration
}

// Load budget defaults: 250 ms doubling to 5 s, jitter 0.5, 6 attempts or
// 30 s per load.
var defaultLoadPolicy = Policy{
	Initial:     250 * time.Millisecond,
	MaxInterval: 5 * time.Second,
	Multiplier:  2,
	Jitter:      0.5,
	MaxAttempts: 6,
	MaxElapsed:  30 * time.Second,
}

// Background cadence defaults: slow enough not to hammer a server that is
// down, unbounded so it self-heals.
var defaultBackgroundPolicy = Policy{
	Initial:     30 * time.Second,
	MaxInterval: 5 * time.Minute,
	Multiplier:  2,
	Jitter:      0.5,
	MaxAttempts: -1,
	MaxElapsed:  -1,
}

// withDefaults fills zero fields from def and clamps out-of-range ones.
func (p Policy) withDefaults(def Policy) Policy {
	if p.Initial <= 0 {
		p.Initial = def.Initial
	}
	if p.MaxInterval <= 0 {
		p.MaxInterval = def.MaxInterval
	}
	p.MaxInterval = max(p.MaxInterval, p.Initial)
	switch {
	case p.Multiplier == 0:
		p.Multiplier = def.Multiplier
	case p.Multiplier < 1:
		p.Multiplier = 1
	}
	switch {
	case p.Jitter == 0:
		p.Jitter = def.Jitter
	case p.Jitter < 0:
		p.Jitter = 0
	case p.Jitter > 1:
		p.Jitter = 1
	}
	if p.MaxAttempts == 0 {
		p.MaxAttempts = def.MaxAttempts
	}
	if p.MaxElapsed == 0 {
		p.MaxElapsed = def.MaxElapsed
	}
	return p
}

// schedule is the backoff.BackOff of one retry loop: the policy's
// exponential delays, raised to the upstream's Retry-After when that is
// longer, and stopped by the attempt and elapsed-time budgets. Not safe for
// concurrent use; each loop owns one.
type schedule struct {
	expo       *backoff.ExponentialBackOff
	maxRetries int           // negative: unlimited
	maxElapsed time.Duration // zero or negative: unlimited
	retries    int
	// retryAfter is the delay the last failure asked for; the loop sets it
	// before the backoff asks for the next delay.
	retryAfter time.Duration
}

func newSchedule(p Policy, now func() time.Time) *schedule {
	expo := &backoff.ExponentialBackOff{
		InitialInterval:     p.Initial,
		RandomizationFactor: p.Jitter,
		Multiplier:          p.Multiplier,
		MaxInterval:         p.MaxInterval,
		MaxElapsedTime:      0, // enforced below, after Retry-After
		Stop:                backoff.Stop,
		Clock:               clockFunc(now),
	}
	s := &schedule{expo: expo, maxRetries: p.MaxAttempts - 1, maxElapsed: p.MaxElapsed}
	if p.MaxAttempts < 0 {
		s.maxRetries = -1
	}
	s.Reset()
	return s
}

// Reset implements backoff.BackOff.
func (s *schedule) Reset() {
	s.expo.Reset()
	s.retries = 0
}

// NextBackOff implements backoff.BackOff.
func (s *schedule) NextBackOff() time.Duration {
	if s.maxRetries >= 0 && s.retries >= s.maxRetries {
		return backoff.Stop
	}
	s.retries++
	next := max(s.expo.NextBackOff(), s.retryAfter)
	if s.maxElapsed > 0 && s.expo.GetElapsedTime()+next > s.maxElapsed {
		return backoff.Stop
	}
	return next
}

// clockFunc adapts a now function to backoff.Clock.
type clockFunc func() time.Time

func (f clockFunc) Now() time.Time { return f() }
