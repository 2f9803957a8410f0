package resilience_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/resilience"
)

var (
	errUnavailable = &resilience.HTTPStatusError{StatusCode: 503}
	errForbidden   = &resilience.HTTPStatusError{StatusCode: 403}
	errNotFound    = &resilience.HTTPStatusError{StatusCode: 404}
)

func TestLoadAttempts(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name         string
		policy       resilience.Policy
		errs         []error
		wantClass    resilience.Class
		wantAttempts int
		wantWaits    []time.Duration
	}{
		{name: "success at once adds no delay", wantClass: resilience.Available, wantAttempts: 1},
		{name: "transient then success", errs: []error{errUnavailable}, wantClass: resilience.Available, wantAttempts: 2, wantWaits: []time.Duration{250 * ms}},
		{name: "permanent is not retried", errs: []error{errNotFound}, wantClass: resilience.Permanent, wantAttempts: 1},
		{name: "denied is not retried", errs: []error{errForbidden}, wantClass: resilience.Denied, wantAttempts: 1},
		{name: "transient turning permanent stops", errs: []error{errUnavailable, errNotFound}, wantClass: resilience.Permanent, wantAttempts: 2, wantWaits: []time.Duration{250 * ms}},
		{
			name: "transient exhausts the default budget", errs: repeat(errUnavailable, 100),
			wantClass: resilience.Transient, wantAttempts: 6,
			wantWaits: []time.Duration{250 * ms, 500 * ms, time.Second, 2 * time.Second, 4 * time.Second},
		},
		{
			name: "configured attempts", policy: resilience.Policy{MaxAttempts: 3}, errs: repeat(errUnavailable, 100),
			wantClass: resilience.Transient, wantAttempts: 3, wantWaits: []time.Duration{250 * ms, 500 * ms},
		},
		{
			name: "max interval caps the delay", policy: resilience.Policy{Initial: time.Second, MaxInterval: 2 * time.Second, Multiplier: 3, MaxAttempts: 4},
			errs: repeat(errUnavailable, 100), wantClass: resilience.Transient, wantAttempts: 4,
			wantWaits: []time.Duration{time.Second, 2 * time.Second, 2 * time.Second},
		},
		{
			// 0.25+0.5+1 = 1.75s elapsed; 1.75+2 would pass 3s.
			name: "elapsed budget", policy: resilience.Policy{MaxAttempts: -1, MaxElapsed: 3 * time.Second}, errs: repeat(errUnavailable, 100),
			wantClass: resilience.Transient, wantAttempts: 4, wantWaits: []time.Duration{250 * ms, 500 * ms, time.Second},
		},
		{
			name: "Retry-After longer than the delay wins", errs: []error{&resilience.HTTPStatusError{StatusCode: 429, RetryAfter: 3 * time.Second}},
			wantClass: resilience.Available, wantAttempts: 2, wantWaits: []time.Duration{3 * time.Second},
		},
		{
			name: "Retry-After shorter than the delay is ignored", errs: []error{&resilience.HTTPStatusError{StatusCode: 429, RetryAfter: 100 * ms}},
			wantClass: resilience.Available, wantAttempts: 2, wantWaits: []time.Duration{250 * ms},
		},
		{
			name: "Retry-After beyond the elapsed budget ends the load", errs: []error{&resilience.HTTPStatusError{StatusCode: 503, RetryAfter: time.Minute}},
			wantClass: resilience.Transient, wantAttempts: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, timers := newRetrier()
			r.Policy.MaxAttempts, r.Policy.MaxElapsed = tt.policy.MaxAttempts, tt.policy.MaxElapsed
			r.Policy.Initial, r.Policy.MaxInterval, r.Policy.Multiplier = tt.policy.Initial, tt.policy.MaxInterval, tt.policy.Multiplier
			op := &script{errs: tt.errs}
			var outcomes []resilience.Outcome
			r.OnOutcome = func(o resilience.Outcome) { outcomes = append(outcomes, o) }

			out := r.Load(t.Context(), "srv", op.Op)

			assert.Equal(t, []resilience.Outcome{out}, outcomes, "OnOutcome sees the load's outcome once")
			assert.Equal(t, tt.wantClass, out.Class)
			assert.Equal(t, tt.wantAttempts, out.Attempts)
			assert.Equal(t, tt.wantWaits, timers.Waits())
			assert.Equal(t, sum(tt.wantWaits), out.Elapsed, "the load took its waits (the attempts take no time on the fake clock)")
			assert.Equal(t, "srv", out.Server)
			assert.Len(t, op.attempts, tt.wantAttempts)
			if tt.wantClass == resilience.Available {
				assert.Nil(t, out.Err)
			} else {
				require.NotNil(t, out.Err)
				assert.Equal(t, tt.wantClass, out.Err.Class)
			}
		})
	}
}

func TestLoadDefaultJitterStaysInRange(t *testing.T) {
	clock := newFakeClock()
	timers := &fakeTimers{clock: clock}
	r := &resilience.Retrier{NewTimer: timers.New, Now: clock.Now}

	out := r.Load(t.Context(), "srv", (&script{errs: repeat(errUnavailable, 100)}).Op)

	require.Equal(t, 6, out.Attempts)
	base := []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second}
	waits := timers.Waits()
	require.Len(t, waits, len(base))
	for i, w := range waits {
		assert.GreaterOrEqual(t, w, base[i]/2, "wait %d", i)
		assert.LessOrEqual(t, w, base[i]*3/2, "wait %d", i)
	}
}

func TestLoadOnRetrySnapshots(t *testing.T) {
	r, _ := newRetrier()
	var snapshots []resilience.Outcome
	r.OnRetry = func(o resilience.Outcome) { snapshots = append(snapshots, o) }

	out := r.Load(t.Context(), "linear", (&script{errs: repeat(errUnavailable, 2)}).Op)

	require.Equal(t, resilience.Available, out.Class)
	require.Len(t, snapshots, 2)
	assert.Equal(t, "Server 'linear' is still starting up (attempt 1 of 6, retrying in 250ms); its tools will appear shortly. Retry in a few seconds. Last error: HTTP 503 Service Unavailable.", snapshots[0].Message())
	assert.Equal(t, "Server 'linear' is still starting up (attempt 2 of 6, retrying in 500ms); its tools will appear shortly. Retry in a few seconds. Last error: HTTP 503 Service Unavailable.", snapshots[1].Message())
	assert.Equal(t, resilience.Transient, snapshots[1].Class)
	assert.Equal(t, errUnavailable, snapshots[1].Err.Err)
}

func TestLoadPassesContextAndAttempt(t *testing.T) {
	r, _ := newRetrier()
	type key struct{}
	ctx := context.WithValue(t.Context(), key{}, "v")
	var seen []int
	out := r.Load(ctx, "srv", func(ctx context.Context, attempt int) error {
		assert.Equal(t, "v", ctx.Value(key{}))
		seen = append(seen, attempt)
		if attempt < 3 {
			return syscall.ECONNRESET
		}
		return nil
	})
	assert.Equal(t, resilience.Available, out.Class)
	assert.Equal(t, []int{1, 2, 3}, seen)
}

func TestLoadRetryRefusedClassifier(t *testing.T) {
	r, _ := newRetrier()
	op := &script{errs: []error{dialErr(syscall.ECONNREFUSED)}}
	assert.Equal(t, resilience.Permanent, r.Load(t.Context(), "srv", op.Op).Class)

	r.Classifier.RetryRefused = true
	op = &script{errs: []error{dialErr(syscall.ECONNREFUSED)}}
	out := r.Load(t.Context(), "srv", op.Op)
	assert.Equal(t, resilience.Available, out.Class)
	assert.Equal(t, 2, out.Attempts)
}

func TestLoadStopsWhenContextIsDone(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	r := &resilience.Retrier{
		NewTimer: func() resilience.Timer { return stuckTimer{c: make(chan time.Time)} },
		OnRetry:  func(resilience.Outcome) { cancel() }, // give up while waiting
		OnOutcome: func(o resilience.Outcome) {
			t.Errorf("a load stopped by its context has no outcome to report: %+v", o)
		},
	}

	out := r.Load(ctx, "srv", (&script{errs: repeat(errUnavailable, 100)}).Op)

	assert.Equal(t, resilience.Transient, out.Class, "the last attempt's class, not the cancellation's")
	assert.Equal(t, 1, out.Attempts)
	assert.Equal(t, errUnavailable, out.Err.Err)
}

// TestLoadThenBackgroundSelfHeals: a transient fault outlasts the load
// budget, the background cadence keeps trying slowly, and the server
// heals once the fault clears.
func TestLoadThenBackgroundSelfHeals(t *testing.T) {
	r, timers := newRetrier()
	var snapshots []resilience.Outcome
	r.OnRetry = func(o resilience.Outcome) { snapshots = append(snapshots, o) }
	op := &script{errs: repeat(errUnavailable, 9)} // clears at attempt 10

	out := r.Load(t.Context(), "srv", op.Op)
	require.Equal(t, resilience.Transient, out.Class)
	require.Equal(t, 6, out.Attempts)
	loadWaits := len(timers.Waits())

	healed := r.Background(t.Context(), out, op.Op)

	assert.Equal(t, resilience.Available, healed.Class)
	assert.Equal(t, 6, healed.Attempts, "the load's attempts")
	assert.Equal(t, 4, healed.Background, "then the background's")
	assert.Nil(t, healed.Err)
	assert.Equal(t, []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, op.attempts)
	assert.Equal(t, sum(timers.Waits()), healed.Elapsed, "the load time counts from the first attempt of the load, not of the background loop")
	assert.Equal(t, []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute, 4 * time.Minute},
		timers.Waits()[loadWaits:], "30s doubling; the first background attempt waits a full delay")
	for _, o := range snapshots {
		assert.LessOrEqual(t, o.Attempts, 6, "attempts never pass the load's maximum: %+v", o)
		assert.Equal(t, 6, o.MaxAttempts)
	}
	last := snapshots[len(snapshots)-1]
	assert.Equal(t, "Server 'srv' is still not available (attempt 6 of 6, background retry 3, retrying in 4m); mcpwrap keeps retrying in the background. Retry later, or ask the user to check the server. Last error: HTTP 503 Service Unavailable.", last.Message())
	assert.Equal(t, 3, last.Meta().Background)
	assert.Equal(t, sum(timers.Waits()[:len(timers.Waits())-1]), last.Elapsed, "a snapshot's elapsed time is up to its failed attempt")
}

// sum adds ds up.
func sum(ds []time.Duration) time.Duration {
	var total time.Duration
	for _, d := range ds {
		total += d
	}
	return total
}

func TestBackgroundCadence(t *testing.T) {
	tests := []struct {
		name      string
		policy    resilience.Policy
		from      resilience.Outcome
		errs      []error
		wantClass resilience.Class
		// wantBackground is the background attempts; Attempts stays from's.
		wantBackground int
		wantWaits      []time.Duration
	}{
		{
			name: "caps at 5 minutes", from: resilience.Outcome{Class: resilience.Transient, Attempts: 6}, errs: repeat(errUnavailable, 6),
			wantClass: resilience.Available, wantBackground: 7,
			wantWaits: []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute, 4 * time.Minute, 5 * time.Minute, 5 * time.Minute, 5 * time.Minute},
		},
		{
			name: "stops on a permanent failure", from: resilience.Outcome{Class: resilience.Transient, Attempts: 6}, errs: []error{errUnavailable, errNotFound},
			wantClass: resilience.Permanent, wantBackground: 2, wantWaits: []time.Duration{30 * time.Second, time.Minute},
		},
		{
			name: "stops when denied", from: resilience.Outcome{Class: resilience.Transient, Attempts: 6}, errs: []error{errForbidden},
			wantClass: resilience.Denied, wantBackground: 1, wantWaits: []time.Duration{30 * time.Second},
		},
		{
			name: "configured attempt limit", policy: resilience.Policy{MaxAttempts: 2}, from: resilience.Outcome{Class: resilience.Transient, Attempts: 6},
			errs: repeat(errUnavailable, 100), wantClass: resilience.Transient, wantBackground: 2, wantWaits: []time.Duration{30 * time.Second, time.Minute},
		},
		{
			name:      "honours the Retry-After of the failure that ended the load",
			from:      resilience.Outcome{Class: resilience.Transient, Attempts: 6, Err: resilience.Classify(&resilience.HTTPStatusError{StatusCode: 503, RetryAfter: 2 * time.Minute})},
			wantClass: resilience.Available, wantBackground: 1, wantWaits: []time.Duration{2 * time.Minute},
		},
		{name: "available is returned unchanged", from: resilience.Outcome{Class: resilience.Available, Attempts: 1}, wantClass: resilience.Available},
		{name: "permanent is not retried", from: resilience.Outcome{Class: resilience.Permanent, Attempts: 1}, wantClass: resilience.Permanent},
		{name: "denied is not retried", from: resilience.Outcome{Class: resilience.Denied, Attempts: 1}, wantClass: resilience.Denied},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, timers := newRetrier()
			r.BackgroundPolicy.MaxAttempts = tt.policy.MaxAttempts
			op := &script{errs: tt.errs}

			out := r.Background(t.Context(), tt.from, op.Op)

			assert.Equal(t, tt.wantClass, out.Class)
			assert.Equal(t, tt.from.Attempts, out.Attempts, "the load's attempts")
			assert.Equal(t, tt.wantBackground, out.Background)
			assert.Equal(t, tt.wantWaits, timers.Waits())
		})
	}
}

func TestBackgroundStopsWhenContextIsDone(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	r := &resilience.Retrier{
		NewTimer: func() resilience.Timer { return stuckTimer{c: make(chan time.Time)} },
		OnRetry:  func(resilience.Outcome) { cancel() },
	}
	from := resilience.Outcome{Server: "srv", Class: resilience.Transient, Attempts: 6, Err: resilience.Classify(errUnavailable)}
	op := &script{}

	out := r.Background(ctx, from, op.Op)

	assert.Equal(t, resilience.Transient, out.Class)
	assert.Equal(t, 6, out.Attempts)
	assert.Empty(t, op.attempts, "no attempt once the context is done")
}

func TestLoadLogs(t *testing.T) {
	var buf bytes.Buffer
	r, _ := newRetrier()
	r.Logger = slog.New(slog.NewJSONHandler(&buf, nil))

	r.Load(t.Context(), "srv", (&script{errs: []error{errUnavailable, errNotFound}}).Op)

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 2)
	var retry, final map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &retry))
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &final))
	assert.Equal(t, "INFO", retry["level"])
	assert.Equal(t, "srv", retry["server"])
	assert.EqualValues(t, 1, retry["attempt"])
	assert.EqualValues(t, 250, retry["delay_ms"])
	assert.Equal(t, "transient", retry["class"])
	assert.Equal(t, "HTTP 503 Service Unavailable", retry["error"])
	assert.Equal(t, "ERROR", final["level"])
	assert.Equal(t, "permanent", final["class"])
	assert.EqualValues(t, 2, final["attempts"])
}

// TestLoadStoppedLogsNoFailure: a load cut short by shutdown logs nothing
// that reads like a failure (no class, no "load canceled"), at info level
// or above.
func TestLoadStoppedLogsNoFailure(t *testing.T) {
	var buf bytes.Buffer
	ctx, cancel := context.WithCancel(t.Context())
	r := &resilience.Retrier{Logger: slog.New(slog.NewJSONHandler(&buf, nil))}

	out := r.Load(ctx, "srv", func(ctx context.Context, _ int) error {
		cancel() // shutdown while the upstream is starting
		<-ctx.Done()
		return ctx.Err()
	})

	assert.Equal(t, 1, out.Attempts)
	assert.Empty(t, buf.String())
}
