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
	// MaxInterval caps the delay, jitter included: jitter never pushes a
	// delay past it.
	MaxInterval time.Duration
	// Multiplier grows the delay after each retry; values below 1 count as 1.
	Multiplier float64
	// Jitter is the randomisation factor: each delay is drawn uniformly
	// from [d*(1-Jitter), min(d*(1+Jitter), MaxInterval)]. Values above 1
	// count as 1.
	Jitter float64
	// MaxAttempts bounds the attempts, the first one included.
	MaxAttempts int
	// MaxElapsed bounds the time from the first attempt to the start of the
	// last one.
	MaxElapsed time.Duration
}

// DefaultLoadPolicy returns the budget of [Retrier.Load] that a zero
// [Retrier.Policy] stands for: 250 ms initial delay doubling up to 5 s,
// jitter 0.5, at most 6 attempts or 30 s per load.
func DefaultLoadPolicy() Policy {
	return Policy{
		Initial:     250 * time.Millisecond,
		MaxInterval: 5 * time.Second,
		Multiplier:  2,
		Jitter:      0.5,
		MaxAttempts: 6,
		MaxElapsed:  30 * time.Second,
	}
}

// DefaultMaxRequestedDelay is the longest wait an upstream can ask of
// mcpwrap and get (HTTP Retry-After; an SSE stream's retry field, before a
// response stream is resumed): the default background cadence's maximum
// interval. However long a hostile or confused server asks for, mcpwrap
// never waits longer than it would between two background attempts.
// [Retrier] caps Retry-After at its BackgroundPolicy's MaxInterval, which
// is this by default.
const DefaultMaxRequestedDelay = 5 * time.Minute

// DefaultBackgroundPolicy returns the cadence of [Retrier.Background] that
// a zero [Retrier.BackgroundPolicy] stands for: slow enough not to hammer a
// server that is down (30 s initial delay doubling up to 5 min, jitter
// 0.5), unbounded so that it self-heals.
func DefaultBackgroundPolicy() Policy {
	return Policy{
		Initial:     30 * time.Second,
		MaxInterval: DefaultMaxRequestedDelay,
		Multiplier:  2,
		Jitter:      0.5,
		MaxAttempts: -1,
		MaxElapsed:  -1,
	}
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
// exponential delays, jittered within MaxInterval, raised to the upstream's
// Retry-After (itself capped at retryAfterCap) when that is longer, and
// stopped by the attempt and elapsed-time budgets. Not safe for concurrent
// use; each loop owns one.
type schedule struct {
	// expo computes the unjittered delays: backoff.ExponentialBackOff
	// would jitter after its cap, so a 5 s cap could yield 7.5 s.
	expo          *backoff.ExponentialBackOff
	maxInterval   time.Duration
	jitter        float64
	rand          func() float64
	maxRetries    int           // negative: unlimited
	maxElapsed    time.Duration // zero or negative: unlimited
	retryAfterCap time.Duration
	retries       int
	// retryAfter is the delay the last failure asked for; the loop sets it
	// before the backoff asks for the next delay.
	retryAfter time.Duration
}

// newSchedule returns the schedule of p. retryAfterCap bounds the delay an
// upstream may ask for with Retry-After; rand returns uniform numbers in
// [0, 1) for the jitter.
func newSchedule(p Policy, now func() time.Time, retryAfterCap time.Duration, rand func() float64) *schedule {
	expo := &backoff.ExponentialBackOff{
		InitialInterval:     p.Initial,
		RandomizationFactor: 0, // applied by NextBackOff, within the cap
		Multiplier:          p.Multiplier,
		MaxInterval:         p.MaxInterval,
		MaxElapsedTime:      0, // enforced below, after Retry-After
		Stop:                backoff.Stop,
		Clock:               clockFunc(now),
	}
	s := &schedule{
		expo: expo, maxInterval: p.MaxInterval, jitter: p.Jitter, rand: rand,
		maxRetries: p.MaxAttempts - 1, maxElapsed: p.MaxElapsed, retryAfterCap: retryAfterCap,
	}
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
	next := jitter(s.expo.NextBackOff(), s.maxInterval, s.jitter, s.rand())
	next = max(next, min(s.retryAfter, s.retryAfterCap))
	if s.maxElapsed > 0 && s.expo.GetElapsedTime()+next > s.maxElapsed {
		return backoff.Stop
	}
	return next
}

// jitter spreads d uniformly over [d*(1-factor), d*(1+factor)] cut at
// limit, so that jitter never pushes a delay past its cap; u is a uniform
// random number in [0, 1).
func jitter(d, limit time.Duration, factor, u float64) time.Duration {
	lo := float64(d) * (1 - factor)
	hi := max(min(float64(d)*(1+factor), float64(limit)), lo)
	return time.Duration(lo + u*(hi-lo))
}

// clockFunc adapts a now function to backoff.Clock.
type clockFunc func() time.Time

func (f clockFunc) Now() time.Time { return f() }
