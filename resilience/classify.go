package resilience

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpwrap/mcpwrap/internal/redact"
)

// Error is a classified load failure: what [Classify] returns.
//
// Reason and Hint are safe to show to users and agents: they are built from
// typed fields (status codes, host names, exit codes, the command name) and
// never carry header values, environment values or URL credentials; from
// Classify, each is one line, never a raw page. Err keeps the original
// error for logs and errors.Is/As.
type Error struct {
	// Class decides whether the failure is retried.
	Class Class
	// Reason says what went wrong, e.g. "HTTP 403 Forbidden" or
	// `cannot start "npx": command not found`. No trailing period.
	Reason string
	// Hint says how to fix it, as a sentence without a trailing period, or
	// is empty when there is nothing to fix (transient failures).
	Hint string
	// Code is a machine-readable reason, sent to the agent as
	// `_meta.reason`, or empty. See [CodeLoginRequired].
	Code string
	// RetryAfter is a delay the upstream asked for (HTTP Retry-After), or
	// zero. The retrier waits at least this long before the next attempt.
	RetryAfter time.Duration
	// Err is the error that was classified.
	Err error
}

// Error returns the reason.
func (e *Error) Error() string {
	if e.Reason != "" {
		return e.Reason
	}
	if e.Err != nil {
		return e.Err.Error()
	}
	return e.Class.String() + " failure"
}

// Unwrap returns the error that was classified.
func (e *Error) Unwrap() error { return e.Err }

// Classifier classifies load failures. The zero value is the default
// classification (connection refused is permanent); a Classifier is safe
// for concurrent use.
type Classifier struct {
	// RetryRefused makes "connection refused" transient instead of
	// permanent, for local backends that start slowly (config
	// retry_refused). Default false.
	RetryRefused bool
}

// Classify classifies err with the zero [Classifier].
func Classify(err error) *Error { return Classifier{}.Classify(err) }

// Classify maps err to a failure class (transient, permanent or denied)
// with a user-safe reason and a fix hint, each one line (a server's page
// or multi-line message is summarised). It returns nil for a nil err, and the *Error already in
// err's chain if there is one (a copy, if its texts needed summarising).
// Typed errors are recognised through errors.Is and errors.As however
// deeply they are wrapped; anything unrecognised is [Permanent], so no
// failure is reported as "starting up" forever.
func (c Classifier) Classify(err error) *Error {
	if err == nil {
		return nil
	}
	if already, ok := errors.AsType[*Error](err); ok {
		return already.summarised()
	}
	e := c.classify(err)
	e.Err = err
	return e.summarised()
}

// classify checks the most specific evidence first: a typed error the
// rest of mcpwrap produced beats a socket error it may wrap.
func (c Classifier) classify(err error) *Error {
	if errors.Is(err, ErrConfig) {
		return &Error{Class: Permanent, Reason: truncate(redact.Text(err.Error()), maxReasonRunes), Hint: "Fix the configuration file"}
	}
	if errors.Is(err, ErrStateDir) {
		return &Error{Class: Permanent, Reason: truncate(redact.Text(err.Error()), maxReasonRunes),
			Hint: "Make the state directory writable, or choose another with --state-dir or MCPWRAP_STATE_DIR"}
	}
	if loop, ok := errors.AsType[*CrashLoopError](err); ok {
		return crashLoop(loop)
	}
	if errors.Is(err, ErrCrashLoop) {
		return &Error{Class: Permanent, Reason: "crash loop", Hint: crashLoopHint}
	}
	if spawn, ok := errors.AsType[*SpawnError](err); ok {
		return c.spawn(spawn)
	}
	if exit, ok := errors.AsType[*ExitError](err); ok {
		return exited(exit)
	}
	if status, ok := errors.AsType[*HTTPStatusError](err); ok {
		return httpStatus(status)
	}
	if rpc, ok := errors.AsType[*RPCError](err); ok {
		return rpcError(rpc)
	}
	if dns, ok := errors.AsType[*net.DNSError](err); ok {
		return dnsFailure(dns)
	}
	if e := tlsFailure(err); e != nil {
		return e
	}
	if e := c.socket(err); e != nil {
		return e
	}
	if errors.Is(err, context.Canceled) {
		return &Error{Class: Permanent, Reason: "load canceled"}
	}
	// Last resort: errors whose type was lost on the way (formatted with %v
	// by a library) still carry the runtime's standard wording.
	if e := c.fromSignal(textSignal(err.Error())); e != nil {
		return e
	}
	return &Error{
		Class:  Permanent,
		Reason: truncate(redact.Text(err.Error()), maxReasonRunes),
		Hint:   "Check mcpwrap's log and the server's own output",
	}
}

// socket classifies transport-level errors: refused, reset, closed,
// timeouts, unreachable networks.
func (c Classifier) socket(err error) *Error {
	switch {
	case isErrno(err, refusedErrnos):
		return c.fromSignal(signalRefused)
	case isErrno(err, resetErrnos),
		errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, io.EOF),
		errors.Is(err, net.ErrClosed),
		errors.Is(err, mcp.ErrConnectionClosed),
		errors.Is(err, mcp.ErrSessionMissing):
		return c.fromSignal(signalReset)
	case errors.Is(err, ErrHandshakeTimeout):
		return &Error{Class: Transient, Reason: "the MCP handshake timed out"}
	case isTimeout(err):
		return c.fromSignal(signalTimeout)
	case isErrno(err, unreachableErrnos):
		return c.fromSignal(signalUnreachable)
	}
	return nil
}

func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	netErr, ok := errors.AsType[net.Error](err)
	return ok && netErr.Timeout()
}

func isErrno(err error, errnos []error) bool {
	for _, target := range errnos {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// signal is a transport condition recognised either from a typed error or,
// as a last resort, from an error's text.
type signal int

const (
	signalNone signal = iota
	signalRefused
	signalReset
	signalTimeout
	signalUnreachable
	signalDNS
	signalTLS
	signalNotTLS
)

func (c Classifier) fromSignal(s signal) *Error {
	switch s {
	case signalRefused:
		e := &Error{Class: Permanent, Reason: "connection refused: nothing is listening",
			Hint: "Start the server or check the host and port; for a local backend that starts slowly set retry_refused: true"}
		if c.RetryRefused {
			e.Class, e.Hint = Transient, ""
		}
		return e
	case signalReset:
		return &Error{Class: Transient, Reason: "connection reset or closed mid-stream"}
	case signalTimeout:
		return &Error{Class: Transient, Reason: "timed out"}
	case signalUnreachable:
		return &Error{Class: Permanent, Reason: "network or host unreachable",
			Hint: "Check the network connection, VPN or proxy"}
	case signalDNS:
		return &Error{Class: Permanent, Reason: "cannot resolve the host name", Hint: dnsHint}
	case signalTLS:
		return &Error{Class: Permanent, Reason: "TLS handshake failed", Hint: tlsHint}
	case signalNotTLS:
		return &Error{Class: Permanent, Reason: "the server did not answer with TLS",
			Hint: "Check the URL scheme: the server may expect http:// rather than https://"}
	}
	return nil
}

const (
	dnsHint        = "Check the host name in the URL and the network's DNS"
	tlsHint        = "Check the server's certificate, or make its CA trusted (SSL_CERT_FILE)"
	credentialHint = "Check the credentials configured for it"
	crashLoopHint  = "Check the server's stderr in mcpwrap's log; mcpwrap retries when a tool is called"
	maxReasonRunes = 300
)

func dnsFailure(dns *net.DNSError) *Error {
	if dns.IsTimeout || dns.IsTemporary {
		return &Error{Class: Transient, Reason: fmt.Sprintf("DNS lookup of %q failed temporarily", dns.Name)}
	}
	return &Error{Class: Permanent, Reason: fmt.Sprintf("cannot resolve host %q", dns.Name), Hint: dnsHint}
}

// tlsFailure recognises certificate and TLS protocol errors, which no
// retry can fix.
func tlsFailure(err error) *Error {
	if _, ok := errors.AsType[tls.RecordHeaderError](err); ok {
		return Classifier{}.fromSignal(signalNotTLS)
	}
	var cause error
	if verify, ok := errors.AsType[*tls.CertificateVerificationError](err); ok {
		cause = verify.Err
	} else if e, ok := errors.AsType[x509.UnknownAuthorityError](err); ok {
		cause = e
	} else if e, ok := errors.AsType[x509.HostnameError](err); ok {
		cause = e
	} else if e, ok := errors.AsType[x509.CertificateInvalidError](err); ok {
		cause = e
	} else if e, ok := errors.AsType[x509.SystemRootsError](err); ok {
		cause = e
	} else if e, ok := errors.AsType[tls.AlertError](err); ok {
		return &Error{Class: Permanent, Reason: "TLS handshake failed: " + e.Error(), Hint: tlsHint}
	} else {
		return nil
	}
	reason := "TLS certificate not accepted"
	if cause != nil {
		reason += ": " + cause.Error()
	}
	return &Error{Class: Permanent, Reason: truncate(reason, maxReasonRunes), Hint: tlsHint}
}

func httpStatus(e *HTTPStatusError) *Error {
	reason := e.Error()
	switch code := e.StatusCode; {
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		// An authorization gateway that cannot reach its policy service in
		// time answers 401/403 too; that is an outage, not a decision.
		if hasGatewayTimeout(e.Body) {
			return &Error{Class: Transient, Reason: reason + " caused by a gateway timeout", RetryAfter: e.RetryAfter}
		}
		return &Error{Class: Denied, Reason: reason, Hint: credentialHint}
	case code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500 && code <= 599:
		return &Error{Class: Transient, Reason: reason, RetryAfter: e.RetryAfter}
	case code == http.StatusNotFound || code == http.StatusMethodNotAllowed:
		return &Error{Class: Permanent, Reason: reason,
			Hint: "Check the URL path; MCP endpoints usually end in /mcp (streamable HTTP) or /sse (legacy)"}
	default:
		return &Error{Class: Permanent, Reason: reason, Hint: "Check the URL and the headers configured for it"}
	}
}

func rpcError(e *RPCError) *Error {
	reason := truncate(redact.Text(e.Error()), maxReasonRunes)
	switch rpcSignature(e.Code, e.Message) {
	case Denied:
		return &Error{Class: Denied, Reason: reason, Hint: credentialHint}
	case Transient:
		return &Error{Class: Transient, Reason: reason}
	default:
		return &Error{Class: Permanent, Reason: reason,
			Hint: "The server rejected a load request; check its version and its own log"}
	}
}

func (c Classifier) spawn(e *SpawnError) *Error {
	prefix := fmt.Sprintf("cannot start %q: ", e.Command)
	switch {
	case (errors.Is(e.Err, exec.ErrNotFound) || errors.Is(e.Err, fs.ErrNotExist)) && strings.ContainsAny(e.Command, `/\`):
		return &Error{Class: Permanent, Reason: prefix + "command not found",
			Hint: "Check that the file exists (and, for a script, the interpreter on its #! line)"}
	case (errors.Is(e.Err, exec.ErrNotFound) || errors.Is(e.Err, fs.ErrNotExist)) && e.NotInstalled:
		return &Error{Class: Permanent, Reason: prefix + "command not found",
			Hint: fmt.Sprintf("%s is not installed: it is on neither mcpwrap's PATH nor your login shell's; install it, or use the full path to it", e.Command)}
	case errors.Is(e.Err, exec.ErrNotFound), errors.Is(e.Err, fs.ErrNotExist):
		return &Error{Class: Permanent, Reason: prefix + "command not found",
			Hint: "Use a full path to the command; GUI apps get a minimal PATH"}
	case errors.Is(e.Err, exec.ErrDot):
		return &Error{Class: Permanent, Reason: prefix + "it resolves to the current directory",
			Hint: "Use an absolute path to the command"}
	case errors.Is(e.Err, fs.ErrPermission):
		return &Error{Class: Permanent, Reason: prefix + "permission denied",
			Hint: "Make the file executable (chmod +x) and check its directory's permissions"}
	case isErrno(e.Err, execFormatErrnos):
		return &Error{Class: Permanent, Reason: prefix + "exec format error",
			Hint: "The file is not a program for this platform; a script needs a #! line"}
	}
	reason := prefix + "unknown error"
	if e.Err != nil {
		reason = prefix + redact.Text(e.Err.Error())
	}
	return &Error{Class: Permanent, Reason: truncate(reason, maxReasonRunes), Hint: "Check the command configured for it"}
}

func exited(e *ExitError) *Error {
	reason := "the server " + e.Error() + quoteStderr(e.Stderr)
	if e.Ready {
		// A crash of a server that was working: restart it, within the
		// crash budget enforced by the caller.
		return &Error{Class: Transient, Reason: reason}
	}
	switch stderrSignature(e.Stderr) {
	case Transient:
		return &Error{Class: Transient, Reason: reason}
	case Denied:
		return &Error{Class: Denied, Reason: reason,
			Hint: "Check the credentials (environment variables, tokens) configured for it"}
	default:
		hint := "Run the command by hand to see why it exits"
		if len(e.Command) > 0 {
			hint = "Run it by hand to see why it exits: " + commandLine(e.Command)
		}
		return &Error{Class: Permanent, Reason: reason, Hint: hint}
	}
}

func crashLoop(loop *CrashLoopError) *Error {
	reason := fmt.Sprintf("crash loop: %d restarts in %s", loop.Restarts, formatDuration(loop.Window))
	if exit, ok := errors.AsType[*ExitError](loop.Err); ok {
		reason += "; last: " + exited(exit).Reason
	}
	return &Error{Class: Permanent, Reason: reason, Hint: crashLoopHint}
}

// Stderr quoting bounds: enough to recognise the cause in a status line.
const (
	quotedStderrLines = 3
	maxStderrRunes    = 200
)

// quoteStderr renders the stderr lines that explain a failure as
// `; stderr: "a" | "b"`, or "" when there are none (see explainingLines).
func quoteStderr(lines []string) string {
	var quoted []string
	for _, line := range explainingLines(lines, quotedStderrLines) {
		quoted = append(quoted, fmt.Sprintf("%q", truncate(line, maxStderrRunes)))
	}
	if len(quoted) == 0 {
		return ""
	}
	return "; stderr: " + strings.Join(quoted, " | ")
}

// explainingLines picks at most n stderr lines, in order, that say why a
// server failed: the first lines that read like an error (error,
// exception, refused, not found, denied, a traceback...); else the first
// lines after a stack header; else the last lines that are not noise (a
// package manager's notice, a lone brace). A configuration dump's last
// lines explain nothing.
func explainingLines(lines []string, n int) []string {
	var out []string
	for _, line := range lines {
		if line = strings.TrimSpace(line); line != "" && explainsFailure(line) && len(out) < n {
			out = append(out, line)
		}
	}
	if len(out) > 0 {
		return out
	}
	for i, line := range lines {
		if !isStackHeader(line) {
			continue
		}
		for _, next := range lines[i+1:] {
			if next = strings.TrimSpace(next); next != "" && !isStderrNoise(next) && len(out) < n {
				out = append(out, next)
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	for i := len(lines) - 1; i >= 0 && len(out) < n; i-- {
		if line := strings.TrimSpace(lines[i]); line != "" && !isStderrNoise(line) {
			out = append(out, line)
		}
	}
	slices.Reverse(out)
	return out
}

// commandLine renders argv as a POSIX shell command line to paste, with
// the values of options that name a secret (--token X, --api-key=X) and
// arguments that look like credentials replaced by '***', and URLs reduced
// to their scheme and host.
func commandLine(argv []string) string {
	words := make([]string, len(argv))
	hideNext := false
	for i, a := range argv {
		switch {
		case hideNext:
			a, hideNext = "***", false
		case isSecretFlag(a) && !strings.Contains(a, "="):
			hideNext = true
		case isSecretFlag(a):
			name, _, _ := strings.Cut(a, "=")
			words[i] = shellWord(name+"=") + shellWord("***")
			continue
		case looksSecret(a):
			a = "***"
		case strings.Contains(a, "://"):
			a = redact.Text(a)
		}
		words[i] = shellWord(a)
	}
	return strings.Join(words, " ")
}

// shellWord quotes s for a POSIX shell when it needs quoting.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// truncate shortens s to at most n runes, marking the cut with "…".
func truncate(s string, n int) string {
	runes := []rune(s)
	if len(runes) <= n {
		return s
	}
	return string(runes[:n-1]) + "…"
}
