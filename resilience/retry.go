package resilience

import (
	"context"
	"log/slog"
	"time"

	"github.com/cenkalti/backoff/v4"
)

// A Timer is what a [Retrier] waits on between attempts: a one-shot timer
// that Start arms for a duration, whose channel C receives once it fires,
// and that Stop disarms. A Timer is used by one goroutine at a time and
// may be started again after it fired or was stopped. Tests supply one
// through [Retrier.NewTimer] to run retry loops without waiting.
type Timer interface {
	Start(d time.Duration)
	Stop()
	C() <-chan time.Time
}

// Op is one attempt to load an upstream: start or connect, handshake and
// first catalog. attempt counts from 1 and keeps counting across
// [Retrier.Background]. Op returns nil once the upstream is ready, else an
// error that [Classifier.Classify] understands. It should return promptly
// when ctx is done.
type Op func(ctx context.Context, attempt int) error

// Retrier loads upstreams, retrying transient failures with jittered
// exponential backoff. Permanent and denied failures end the load at once.
// The success path adds no delay.
//
// The zero value is ready to use with the documented defaults. A Retrier
// may be used by several goroutines at once as long as its fields are not
// changed; OnRetry, NewTimer and Now are then called concurrently too.
type Retrier struct {
	// Policy is the budget of [Retrier.Load]. Zero fields take those of
	// [DefaultLoadPolicy]: initial 250ms, multiplier 2, jitter 0.5, max
	// interval 5s, 6 attempts, 30s elapsed.
	Policy Policy
	// BackgroundPolicy is the slow cadence of [Retrier.Background]. Zero
	// fields take those of [DefaultBackgroundPolicy]: initial 30s,
	// multiplier 2, jitter 0.5, max interval 5m, no attempt or time limit.
	BackgroundPolicy Policy
	// Classifier classifies each attempt's error.
	Classifier Classifier
	// OnRetry, if set, is called on the calling goroutine after each failed
	// attempt that will be retried, with a transient snapshot whose RetryIn
	// is the coming delay: callers publish it as the server's status.
	OnRetry func(Outcome)
	// OnOutcome, if set, is called on the calling goroutine with the
	// outcome of each [Retrier.Load] and [Retrier.Background] that ended,
	// not one stopped because its context was done: telemetry counts
	// loads by class.
	OnOutcome func(Outcome)
	// NewTimer, if set, makes the timer each retry loop (and
	// [Retrier.Sleep]) waits on; tests inject one that fires at once. Nil
	// means real timers.
	NewTimer func() Timer
	// Now, if set, is the clock for the elapsed-time budget. Nil means
	// time.Now.
	Now func() time.Time
	// Rand, if set, returns the uniform random numbers in [0, 1) that
	// jitter delays; tests inject one. Nil means math/rand/v2's Float64.
	Rand func() float64
	// Logger receives each retry at info (keys server, attempt, delay_ms,
	// class, error) and the final outcome: info when available, warn when
	// still transient, error when permanent or denied. Nil discards.
	Logger *slog.Logger
}

// Load runs op until it succeeds, fails with a non-transient error, or the
// budget of r.Policy is spent, and returns the outcome. A transient
// outcome means the budget ran out; pass it to [Retrier.Background] to
// keep trying slowly. Retry-After delays from the upstream are honoured
// when longer than the computed delay, up to the background cadence's
// maximum interval (5 min by default) and within the budget. When ctx is done
// the outcome of the last attempt is returned.
func (r *Retrier) Load(ctx context.Context, server string, op Op) Outcome {
	p := r.Policy.withDefaults(DefaultLoadPolicy())
	return r.run(ctx, p, Outcome{Server: server}, op, false)
}

// Background continues a load whose budget ran out: it waits, then calls
// op again at the slow cadence of r.BackgroundPolicy until op succeeds,
// op fails with a non-transient error (permanent and denied are not
// retried automatically), the policy's limits (none by default) are
// reached, or ctx is done. op's attempt numbers continue from
// from.Attempts; the outcomes keep from's Attempts and MaxAttempts and
// count the background attempts in Background. An outcome that is not
// [Transient] is returned unchanged.
func (r *Retrier) Background(ctx context.Context, from Outcome, op Op) Outcome {
	if from.Class != Transient {
		return from
	}
	p := r.BackgroundPolicy.withDefaults(DefaultBackgroundPolicy())
	return r.run(ctx, p, from, op, true)
}

// run is the retry loop shared by Load and Background. With resume, the
// first call replays the failure that ended the previous loop instead of
// calling op, so the first new attempt comes after a full delay.
func (r *Retrier) run(ctx context.Context, p Policy, start Outcome, op Op, resume bool) Outcome {
	log := r.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	now := r.Now
	if now == nil {
		now = time.Now
	}
	// What the agent is told of the attempts: a load's, within its budget;
	// in the background, the load's (its budget spent) and, apart, how many
	// background retries followed: attempts never pass the load's maximum.
	maxAttempts := max(p.MaxAttempts, 0)
	attempt, last := start.Attempts, start.Err
	began := now()
	if resume {
		began = began.Add(-start.Elapsed) // one load, however many loops
	}
	report := func(out *Outcome) {
		out.Attempts, out.MaxAttempts = attempt, maxAttempts
		out.Elapsed = now().Sub(began)
		if resume {
			out.Attempts, out.MaxAttempts = start.Attempts, start.MaxAttempts
			out.Background = attempt - start.Attempts
		}
	}
	// However long an upstream asks us to wait, the background cadence's
	// cap is the longest mcpwrap ever waits: a hostile or confused
	// Retry-After of a day must not park a server for a day.
	retryAfterCap := r.BackgroundPolicy.withDefaults(DefaultBackgroundPolicy()).MaxInterval
	sched := newSchedule(p, now, retryAfterCap, r.uniform())
	if resume && sched.maxRetries >= 0 {
		sched.maxRetries++ // the replayed failure consumes one delay
	}

	if resume && last == nil {
		last = &Error{Class: Transient, Reason: "still starting up"}
	}
	replay := resume
	operation := func() error {
		if replay {
			replay = false
			sched.retryAfter = last.RetryAfter
			return last
		}
		attempt++
		err := op(ctx, attempt)
		if err == nil {
			last = nil
			return nil
		}
		last = r.Classifier.Classify(err)
		sched.retryAfter = last.RetryAfter
		if !last.Class.Retryable() {
			return backoff.Permanent(last)
		}
		return last
	}
	notify := func(_ error, delay time.Duration) {
		log.Info("upstream load failed; retrying",
			"server", start.Server, "attempt", attempt, "delay_ms", delay.Milliseconds(),
			"class", last.Class.String(), "error", last.Reason)
		if r.OnRetry != nil {
			o := Outcome{Server: start.Server, Class: Transient, Err: last, RetryIn: delay}
			report(&o)
			r.OnRetry(o)
		}
	}

	var timer backoff.Timer // nil: backoff's real timer
	if r.NewTimer != nil {
		timer = r.NewTimer()
	}
	err := backoff.RetryNotifyWithTimer(operation, backoff.WithContext(sched, ctx), notify, timer)

	out := Outcome{Server: start.Server}
	report(&out)
	switch {
	case err == nil:
		out.Class = Available
		log.Info("upstream loaded", "server", out.Server, "attempts", attempt, "duration_ms", out.Elapsed.Milliseconds())
		r.ended(out)
		return out
	case last != nil:
		out.Class, out.Err = last.Class, last
	default:
		// Unreachable in practice: op always runs once before ctx is
		// consulted. Classify whatever ended the loop.
		out.Err = r.Classifier.Classify(err)
		out.Class = out.Err.Class
	}
	attrs := []any{"server", out.Server, "attempts", attempt, "class", out.Class.String(), "error", out.Err.Reason}
	switch {
	case ctx.Err() != nil:
		// Shutting down: nothing failed, so nothing reads like a failure.
		log.Debug("upstream load stopped: shutting down", "server", out.Server, "attempts", attempt)
	case out.Class == Transient:
		log.Warn("upstream still unavailable; retry budget spent", attrs...)
		r.ended(out)
	default:
		log.Error("upstream failed to load", append(attrs, "hint", out.Err.Hint)...)
		r.ended(out)
	}
	return out
}

// ended reports a load's outcome to OnOutcome.
func (r *Retrier) ended(out Outcome) {
	if r.OnOutcome != nil {
		r.OnOutcome(out)
	}
}
