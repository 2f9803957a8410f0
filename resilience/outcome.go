package resilience

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Outcome is the result of loading one upstream (start or connect,
// handshake, first catalog), or a snapshot of a load still retrying.
// The zero value is a permanent failure with no reason; it is safe to copy.
type Outcome struct {
	// Server is the server's configured name.
	Server string
	// Class is the load's status.
	Class Class
	// Err is the classified failure of the last attempt; nil when Class is
	// [Available].
	Err *Error
	// Attempts counts the attempts made so far: 1 on the success path.
	Attempts int
	// MaxAttempts is the attempt budget of the load, or 0 when unknown.
	// Attempts never passes it: what follows a spent budget counts in
	// Background.
	MaxAttempts int
	// Background counts the attempts made in the background
	// ([Retrier.Background]) after the load's budget was spent, at a slow
	// cadence; 0 when none.
	Background int
	// RetryIn is the delay before the next automatic attempt, or 0 when
	// none is scheduled.
	RetryIn time.Duration
	// Restart is set while the load restarts an upstream that crashed after
	// it had been ready: which restart it is within the crash budget's
	// window, counting from 1. It is 0 for any other load.
	Restart int
	// MaxRestarts is the crash budget's restarts per window, or 0 when
	// unknown; set with Restart.
	MaxRestarts int
	// Elapsed is how long the load has taken: from the start of its first
	// attempt to this outcome, so an [Available] outcome's is the server's
	// load time. An outcome of [Retrier.Background] counts from the start
	// of the load it continues (from's Elapsed earlier). Zero when unknown.
	Elapsed time.Duration
	// Tools is the catalog when Class is [Available]. [Retrier] leaves it
	// nil: the operation that fetched the catalog fills it in.
	Tools []json.RawMessage
}

// Message returns the agent-facing sentence for the outcome, used as
// tool-result text and as handshake instructions, e.g.
//
//	Server 'linear' is still starting up (attempt 3 of 6, retrying in 2s); its tools will appear shortly. Retry in a few seconds.
//	Server 'fs' is restarting after a crash (restart 2 of 5, attempt 1); its tools will be back shortly. Retry in a few seconds.
//	Server 'fs' failed to load and needs attention: cannot start "npx": command not found. Use a full path to the command; GUI apps get a minimal PATH.
//	Server 'linear' denied access (HTTP 403 Forbidden). Check the credentials configured for it; retrying will not help.
//	Server 'fs' is not started yet; it starts on the first request that needs it.
func (o Outcome) Message() string {
	switch o.Class {
	case Available:
		return fmt.Sprintf("Server '%s' is available with %s.", o.Server, plural(len(o.Tools), "tool"))
	case Idle:
		return fmt.Sprintf("Server '%s' is not started yet; it starts on the first request that needs it.", o.Server)
	case Transient:
		if o.Restart > 0 && o.RetryIn <= slowRetry {
			return fmt.Sprintf("Server '%s' is restarting after a crash%s; its tools will be back shortly. Retry in a few seconds.%s",
				o.Server, o.progress(), o.lastError())
		}
		if o.RetryIn > slowRetry {
			// Past the load budget, retries come slowly: "a few seconds" would mislead.
			return fmt.Sprintf("Server '%s' is still not available%s; mcpwrap keeps retrying in the background. Retry later, or ask the user to check the server.%s",
				o.Server, o.progress(), o.lastError())
		}
		return fmt.Sprintf("Server '%s' is still starting up%s; its tools will appear shortly. Retry in a few seconds.%s",
			o.Server, o.progress(), o.lastError())
	case Denied:
		if o.Err != nil && o.Err.Code == CodeLoginRequired {
			return fmt.Sprintf("Server '%s' needs you to sign in. %s. Its tools will appear once you have signed in.",
				o.Server, strings.TrimSuffix(o.Err.Hint, "."))
		}
		return fmt.Sprintf("Server '%s' denied access (%s). Check the credentials configured for it; retrying will not help.",
			o.Server, o.reason())
	default:
		if o.Err != nil && o.Err.Code == CodeServerDisabled {
			return fmt.Sprintf("Server '%s' is disabled in mcpwrap's config, so it is not started. %s; retrying will not help.",
				o.Server, strings.TrimSuffix(o.Err.Hint, "."))
		}
		msg := fmt.Sprintf("Server '%s' failed to load and needs attention: %s.", o.Server, o.reason())
		if o.Err != nil && o.Err.Hint != "" {
			msg += " " + strings.TrimSuffix(o.Err.Hint, ".") + "."
		}
		return msg
	}
}

// progress renders " (attempt 3 of 6, retrying in 2s)", with a restart
// " (restart 2 of 5, attempt 1, retrying in 2s)", in the background
// " (attempt 6 of 6, background retry 2, retrying in 1m)", leaving out
// what is unknown.
func (o Outcome) progress() string {
	var parts []string
	if o.Restart > 0 {
		parts = append(parts, "restart "+ofMax(o.Restart, o.MaxRestarts))
	}
	if o.Attempts > 0 {
		parts = append(parts, "attempt "+ofMax(o.Attempts, o.MaxAttempts))
		if o.Background > 0 {
			parts = append(parts, "background retry "+strconv.Itoa(o.Background))
		}
		if o.RetryIn > 0 {
			parts = append(parts, "retrying in "+formatDuration(o.RetryIn))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// ofMax renders "3 of 6", or "3" when the maximum is unknown.
func ofMax(n, limit int) string {
	if limit > 0 {
		return fmt.Sprintf("%d of %d", n, limit)
	}
	return strconv.Itoa(n)
}

// lastError renders " Last error: REASON." for a failure that is being
// retried, so that the agent (and the user it asks) learns the cause, not
// only that waiting helps; "" before any failure.
func (o Outcome) lastError() string {
	if o.Err == nil {
		return ""
	}
	return " Last error: " + o.reason() + "."
}

func (o Outcome) reason() string {
	if o.Err == nil {
		return "unknown error"
	}
	return strings.TrimSuffix(o.Err.Error(), ".")
}

// slowRetry is the delay past which a transient outcome is described as a
// slow background retry rather than a server starting up.
const slowRetry = 10 * time.Second

// Meta is the machine-readable companion of [Outcome.Message], sent as
// `_meta` on every status result.
//
// Status and Class carry the same word here. Both exist because `status`
// is the key every locked-tool result uses (where it holds a policy status
// such as "disabled_by_user"), so a client reads one key for both kinds of
// answer, while `class` always holds the load class.
type Meta struct {
	Status    string `json:"status"`
	Class     Class  `json:"class"`
	Attempts  int    `json:"attempts"`
	Retryable bool   `json:"retryable"`
	// Restart is [Outcome.Restart]: which restart after a crash is under
	// way, omitted when none.
	Restart int `json:"restart,omitempty"`
	// Background is [Outcome.Background]: the background retries made
	// after the load's budget was spent, omitted when none.
	Background int `json:"background,omitempty"`
	// Reason is the failure's [Error.Code], such as "login_required", or
	// empty.
	Reason string `json:"reason,omitempty"`
}

// Meta returns the outcome's `_meta` fields.
func (o Outcome) Meta() Meta {
	return Meta{
		Status:     o.Class.String(),
		Class:      o.Class,
		Attempts:   o.Attempts,
		Retryable:  o.Class.Retryable(),
		Restart:    o.Restart,
		Background: o.Background,
		Reason:     o.code(),
	}
}

func (o Outcome) code() string {
	if o.Err == nil || o.Class == Available {
		return ""
	}
	return o.Err.Code
}

// formatDuration renders d the way people say it: "250ms", "2s", "1m30s",
// "5m". Sub-second precision is dropped above one second: jittered delays
// are approximate anyway.
func formatDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return "0s"
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	}
	s := d.Round(time.Second).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
