// Package resilience classifies upstream load failures and retries the
// transient ones with bounded, jittered backoff.
//
// Every load ends in one of four classes (see [Class]): available,
// transient, permanent or denied; a load not begun yet, its upstream
// started when first needed, is idle. Only transient failures are retried.
// Classification happens in exactly one place, [Classify], so that callers
// branch on typed values with errors.Is and errors.As and never match
// strings themselves.
//
// The rest of mcpwrap reports failures as typed errors: [HTTPStatusError]
// (built with [NewHTTPStatusError]), [ExitError], [SpawnError],
// [RPCError], [CrashLoopError] and the sentinels [ErrConfig],
// [ErrHandshakeTimeout] and [ErrCrashLoop]. Standard library errors
// (timeouts, *net.DNSError, TLS and x509 errors, ECONNREFUSED,
// ECONNRESET, io.ErrUnexpectedEOF) are recognised as they are.
// [Classify] turns any of them, however wrapped, into an [*Error] with a
// user-safe reason and a fix hint.
//
// A [Retrier] loads an upstream within a budget ([Retrier.Load]) and then,
// if the failure is still transient, keeps trying at a slow cadence until
// it heals ([Retrier.Background]). Each load ends in an [Outcome], whose
// [Outcome.Message] is the sentence shown to the agent and whose
// [Outcome.Meta] is the machine-readable `_meta`. A [Throttle] paces
// "reconnect on use" after permanent failures, and a [CrashBudget] turns
// repeated crashes into a permanent crash loop.
//
// The package starts no processes and opens no connections; it logs only
// through the *slog.Logger it is given.
package resilience
