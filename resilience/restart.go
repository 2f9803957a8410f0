package resilience

import (
	"context"
	"math/rand/v2"
	"time"
)

// RestartDelay returns how long to wait before restarting an upstream after
// its n-th crash within the crash budget's window (n counts from 1): the
// delay r.Policy puts before its n-th retry, Initial × Multiplier^(n-1)
// capped at MaxInterval, jittered within that cap. Spaced restarts give a fault that
// outlives one crash (a backend that restarts too) time to clear before
// the crash budget is spent.
func (r *Retrier) RestartDelay(n int) time.Duration {
	p := r.Policy.withDefaults(DefaultLoadPolicy())
	d := float64(p.Initial)
	for i := 1; i < n && d < float64(p.MaxInterval); i++ {
		d *= p.Multiplier
	}
	d = min(d, float64(p.MaxInterval))
	return jitter(time.Duration(d), p.MaxInterval, p.Jitter, r.uniform()())
}

// uniform returns r.Rand, or math/rand/v2's Float64 when nil.
func (r *Retrier) uniform() func() float64 {
	if r.Rand != nil {
		return r.Rand
	}
	return rand.Float64
}

// Sleep waits d on a timer of r.NewTimer (a real one when nil), or until
// ctx is done, and then returns ctx's error.
func (r *Retrier) Sleep(ctx context.Context, d time.Duration) error {
	var t Timer = &realTimer{}
	if r.NewTimer != nil {
		t = r.NewTimer()
	}
	t.Start(d)
	defer t.Stop()
	select {
	case <-t.C():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// realTimer is a Timer on a time.Timer.
type realTimer struct{ t *time.Timer }

func (r *realTimer) Start(d time.Duration) { r.t = time.NewTimer(d) }
func (r *realTimer) Stop()                 { r.t.Stop() }
func (r *realTimer) C() <-chan time.Time   { return r.t.C }
