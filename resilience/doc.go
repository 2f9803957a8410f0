// Package resilience classifies upstream load failures and retries the
// transient ones with bounded, jittered backoff.
//
// Every failure is one of four classes (see [Class]): available,
// transient, permanent or denied. Only transient failures are retried.
// Classification happens in exactly one place, [Classify], so that callers
// branch on typed values with errors.Is and errors.As and never match
// strings themselves.
package resilience
