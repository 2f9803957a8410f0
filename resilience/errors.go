package resilience

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The typed inputs below are what the rest of mcpwrap produces when a load
// fails, so that [Classify] works with errors.Is and errors.As instead of
// matching message text.

// Sentinel errors that callers wrap (fmt.Errorf("...: %w", ErrConfig)) or
// return as is.
var (
	// ErrConfig marks a malformed configuration: permanent.
	ErrConfig = errors.New("invalid configuration")
	// ErrStateDir marks a state directory mcpwrap cannot use (create, read
	// or write), such as where a remote server's sign-ins are kept:
	// permanent, with a hint naming how to choose another.
	ErrStateDir = errors.New("the state directory cannot be used")
	// ErrHandshakeTimeout marks an upstream that did not complete the MCP
	// handshake in time: transient. context.DeadlineExceeded is classified
	// the same way.
	ErrHandshakeTimeout = errors.New("handshake timed out")
	// ErrCrashLoop marks an upstream that crashed more often than its
	// [CrashBudget] allows: permanent. [*CrashLoopError] matches it.
	ErrCrashLoop = errors.New("crash loop")
)

// Codes of an [Error], for failures that need their own words.
const (
	// CodeLoginRequired marks a remote server that wants the user to sign
	// in (OAuth): class [Denied], never retried automatically. The Error's
	// Hint says what is being done about it (a browser window opened) and
	// how the user signs in.
	CodeLoginRequired = "login_required"
	// CodeServerDisabled marks a server the operator's config turns off
	// (`enabled: false`): it is not started, class [Permanent]. Its word
	// is the tool status every tool of such a server has.
	CodeServerDisabled = "server_disabled"
)

// maxBodyBytes bounds how much of an error response body
// [NewHTTPStatusError] keeps: enough for a gateway's signature, never a
// whole page.
const maxBodyBytes = 4 << 10

// HTTPStatusError is a non-success HTTP status from a remote upstream.
//
// The remote adapter decides when a status is an error (it reads 404/405
// itself for the SSE fallback) and then returns one of these, usually
// built by [NewHTTPStatusError].
type HTTPStatusError struct {
	// StatusCode is the numeric status, e.g. 503.
	StatusCode int
	// Status is the status line as received, e.g. "503 Service Unavailable".
	// Empty means the standard text for StatusCode.
	Status string
	// RetryAfter is the delay the server asked for (Retry-After header), or
	// zero.
	RetryAfter time.Duration
	// Body is the start of the response body (at most 4 KiB). It is used
	// for signatures, such as a gateway reporting its own timeout as a 403,
	// and never shown to users or logged.
	Body string
}

// NewHTTPStatusError builds an [HTTPStatusError] from resp. It reads at
// most 4 KiB of the body and parses Retry-After as delay-seconds or as an
// HTTP-date (relative to the response's Date header when present, else to
// the current time). It does not close resp.Body: the caller still owns it.
// A nil resp yields nil.
func NewHTTPStatusError(resp *http.Response) *HTTPStatusError {
	if resp == nil {
		return nil
	}
	e := &HTTPStatusError{StatusCode: resp.StatusCode, Status: resp.Status}
	e.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), resp.Header.Get("Date"), time.Now)
	if resp.Body != nil {
		// A short read is fine: the body only feeds signatures.
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxBodyBytes))
		e.Body = strings.ToValidUTF8(string(body), "\uFFFD")
	}
	return e
}

// Error returns "HTTP " and the status line, e.g. "HTTP 403 Forbidden".
// The body is deliberately left out: it may echo request details.
func (e *HTTPStatusError) Error() string {
	return "HTTP " + e.statusLine()
}

func (e *HTTPStatusError) statusLine() string {
	if e.Status != "" {
		return e.Status
	}
	if text := http.StatusText(e.StatusCode); text != "" {
		return strconv.Itoa(e.StatusCode) + " " + text
	}
	return strconv.Itoa(e.StatusCode)
}

// parseRetryAfter reads a Retry-After value (RFC 9110 §10.2.3): either
// delay-seconds or an HTTP-date. A date is taken relative to the response's
// Date header when it parses, because both come from the server's clock.
// Anything unparsable or in the past yields zero.
func parseRetryAfter(value, date string, now func() time.Time) time.Duration {
	value = strings.TrimSpace(value)
	if value == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(value, 10, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		// Clamp instead of overflowing: a year is "a very long time" already.
		const maxSecs = int64(365 * 24 * time.Hour / time.Second)
		return time.Duration(min(secs, maxSecs)) * time.Second
	}
	at, err := http.ParseTime(value)
	if err != nil {
		return 0
	}
	base, err := http.ParseTime(date)
	if err != nil {
		base = now()
	}
	if d := at.Sub(base); d > 0 {
		return d
	}
	return 0
}

// ExitError is a stdio upstream that exited.
type ExitError struct {
	// Code is the exit code, or -1 when the process was killed by a signal.
	Code int
	// Signal names the signal that killed the process (e.g. "killed"), or
	// is empty.
	Signal string
	// Ready reports whether the upstream had completed the handshake before
	// it exited: a crash of a ready server is transient, an exit during
	// start-up usually is not.
	Ready bool
	// Stderr holds the last lines the process wrote to stderr, oldest first.
	Stderr []string
	// Command is the command line that was run (program and arguments), or
	// nil. [Classify] suggests running it by hand, with the values that look
	// like secrets hidden; Error leaves it out.
	Command []string
}

// Error describes the exit, e.g. "exited with code 1" or "killed by
// signal killed". Stderr is left out; [Classify] quotes it in the reason.
func (e *ExitError) Error() string {
	var b strings.Builder
	if e.Signal != "" {
		b.WriteString("killed by signal " + e.Signal)
	} else {
		b.WriteString("exited with code " + strconv.Itoa(e.Code))
	}
	if e.Ready {
		b.WriteString(" after it was ready")
	} else {
		b.WriteString(" before completing the handshake")
	}
	return b.String()
}

// SpawnError is a stdio upstream command that could not be started at all.
// Err is the cause from os/exec, typically wrapping exec.ErrNotFound,
// fs.ErrNotExist, fs.ErrPermission or syscall.ENOEXEC.
type SpawnError struct {
	// Command is the program as configured (argv[0]); arguments are left
	// out because they may carry secrets.
	Command string
	// Err is the cause.
	Err error
	// NotInstalled reports that a bare program name was looked up on the
	// user's login shell's PATH too, and was not there either: it is not
	// installed, rather than hidden by a GUI app's minimal PATH.
	NotInstalled bool
}

// Error returns `start "COMMAND": CAUSE`.
func (e *SpawnError) Error() string {
	return fmt.Sprintf("start %q: %v", e.Command, e.Err)
}

// Unwrap returns the cause.
func (e *SpawnError) Unwrap() error { return e.Err }

// RPCError is a JSON-RPC error response from the upstream to one of the
// load requests (initialize, tools/list).
type RPCError struct {
	Code    int
	Message string
}

// Error returns "JSON-RPC error CODE: MESSAGE".
func (e *RPCError) Error() string {
	return "JSON-RPC error " + strconv.Itoa(e.Code) + ": " + e.Message
}

// CrashLoopError reports that an upstream crashed more often than its
// [CrashBudget] allows. It matches [ErrCrashLoop] with errors.Is.
type CrashLoopError struct {
	// Restarts is how many restarts the budget allowed within Window.
	Restarts int
	// Window is the budget's time window.
	Window time.Duration
	// Err is the crash that exhausted the budget, or nil.
	Err error
}

// Error returns "crash loop: N restarts in WINDOW" and the last crash.
func (e *CrashLoopError) Error() string {
	msg := fmt.Sprintf("crash loop: %d restarts in %s", e.Restarts, formatDuration(e.Window))
	if e.Err != nil {
		msg += "; last: " + e.Err.Error()
	}
	return msg
}

// Is reports whether target is [ErrCrashLoop].
func (e *CrashLoopError) Is(target error) bool { return target == ErrCrashLoop }

// Unwrap returns the crash that exhausted the budget.
func (e *CrashLoopError) Unwrap() error { return e.Err }
