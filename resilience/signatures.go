package resilience

import (
	"strings"

	"github.com/mcpwrap/mcpwrap/internal/jsonrpc"
)

// This file is the only place in mcpwrap that looks inside error text.
// Everything else classifies with errors.Is and errors.As. Signatures are
// matched case-insensitively. In stderr, status codes and the bare word
// "timeout" count only as tokens of their own (see containsAnyToken), so
// that "port 4031", "index.js:401:13", "line 503", "v1.429.0",
// "Timeout._onTimeout" and "--timeout" are not signatures.

// gatewayTimeoutSignatures in a 401/403 body mean an authorization gateway
// timed out talking to its policy or upstream service: an outage reported
// with a denial status. They are deliberately specific: an ambiguous
// 401/403 stays a denial (never retried) rather than a silent retry.
var gatewayTimeoutSignatures = []string{
	"upstream call timeout",
	"upstream request timeout",
	"upstream connect error",
	"upstream timed out",
	"authorization service timeout",
}

// extAuthzSignature together with any timeoutSignatures entry is Envoy's
// external authorization filter timing out.
const extAuthzSignature = "ext_authz"

// timeoutSignatures mark a timeout in free text.
var timeoutSignatures = []string{"timeout", "timed out", "deadline exceeded", "etimedout"}

// In stderr, which also carries stack traces and usage texts, "timeout"
// must be a token of its own; the other timeout signatures are phrases
// that only a timeout prints.
var (
	stderrTimeoutTokens  = []string{"timeout"}
	stderrTimeoutPhrases = []string{"timed out", "deadline exceeded", "etimedout"}
)

// transientStderrSignatures in the last stderr lines of a server that
// exited during start-up mean it gave up on something that may come back.
var transientStderrSignatures = []string{
	"econnreset", "connection reset", "socket hang up",
	"service unavailable", "bad gateway", "gateway timeout",
	"temporarily", "temporary failure", "try again", "eai_again",
	"rate limit", "too many requests",
}

// transientStatusWords are HTTP statuses quoted in stderr that mean
// "try again later".
var transientStatusWords = []string{"408", "429", "502", "503", "504"}

// denialSignatures in stderr lines or JSON-RPC error messages mean the
// server refused its credentials.
var denialSignatures = []string{
	"unauthorized", "unauthorised", "forbidden",
	"invalid token", "invalid_token", "invalid api key", "invalid_api_key",
	"authentication failed", "authentication required", "not authenticated",
	"access denied", "token expired", "expired token",
}

// denialStatusWords are HTTP statuses quoted in stderr or used as JSON-RPC
// error codes by servers that mean "unauthorized".
var denialStatusWords = []string{"401", "403"}

// textSignatures recognise the Go runtime's and common libraries' wording
// for transport failures whose error type was lost (formatted with %v).
var textSignatures = []struct {
	text   string
	signal signal
}{
	{"connection refused", signalRefused},
	{"econnrefused", signalRefused},
	{"connection reset", signalReset},
	{"econnreset", signalReset},
	{"broken pipe", signalReset},
	{"connection aborted", signalReset},
	{"connection closed", signalReset},
	{"unexpected eof", signalReset},
	{"no such host", signalDNS},
	{"enotfound", signalDNS},
	// Timeouts before TLS: "TLS handshake timeout" is worth a retry.
	{"timeout", signalTimeout},
	{"timed out", signalTimeout},
	{"deadline exceeded", signalTimeout},
	// net/http replaces tls.RecordHeaderError with this text.
	{"server gave http response to https client", signalNotTLS},
	{"x509: ", signalTLS},
	{"tls: ", signalTLS},
	{"network is unreachable", signalUnreachable},
	{"no route to host", signalUnreachable},
}

// hasGatewayTimeout reports whether a 401/403 response body carries a
// gateway timeout signature.
func hasGatewayTimeout(body string) bool {
	body = strings.ToLower(body)
	if containsAny(body, gatewayTimeoutSignatures) {
		return true
	}
	return strings.Contains(body, extAuthzSignature) && containsAny(body, timeoutSignatures)
}

// stderrSignature classifies the last stderr lines of a server that exited
// before completing the handshake: [Transient] or [Denied] when a signature
// matches, else [Permanent]. A timeout beats a denial, as for HTTP 401/403.
func stderrSignature(lines []string) Class {
	text := strings.ToLower(strings.Join(lines, "\n"))
	switch {
	case containsAnyToken(text, stderrTimeoutTokens, nil),
		containsAny(text, stderrTimeoutPhrases),
		containsAny(text, transientStderrSignatures),
		containsAnyToken(text, transientStatusWords, afterLocationMark):
		return Transient
	case containsAny(text, denialSignatures), containsAnyToken(text, denialStatusWords, afterLocationMark):
		return Denied
	}
	return Permanent
}

// rpcSignature classifies a JSON-RPC error answered to a load request:
// [Transient] for timeouts, [Denied] for authorization failures, else
// [Permanent].
func rpcSignature(code int, message string) Class {
	message = strings.ToLower(message)
	switch {
	case containsAny(message, timeoutSignatures):
		return Transient
	case containsAny(message, denialSignatures), code == 401, code == 403:
		return Denied
	case code == jsonrpc.CodeRequestTimeout: // the TypeScript SDK's, and its servers'
		return Transient
	}
	return Permanent
}

// textSignal recognises a transport failure from error text, or returns
// signalNone.
func textSignal(text string) signal {
	text = strings.ToLower(text)
	for _, sig := range textSignatures {
		if strings.Contains(text, sig.text) {
			return sig.signal
		}
	}
	return signalNone
}

func containsAny(text string, signatures []string) bool {
	for _, s := range signatures {
		if strings.Contains(text, s) {
			return true
		}
	}
	return false
}

// containsAnyToken reports whether one of tokens occurs in text as a token
// of its own: not inside an identifier, option name, dotted name, version
// or source location. The byte before it must not be alphanumeric, '-',
// '_' or '.'; the bytes after it must not continue it (alphanumeric, '-',
// '_', or '.' or ':' followed by an alphanumeric or '_'). reject, when not
// nil, vetoes an occurrence by the text before it.
func containsAnyToken(text string, tokens []string, reject func(before string) bool) bool {
	for _, tok := range tokens {
		for i := 0; ; {
			j := strings.Index(text[i:], tok)
			if j < 0 {
				break
			}
			start, end := i+j, i+j+len(tok)
			if (start == 0 || !isTokenByte(text[start-1])) && !continuesToken(text[end:]) &&
				(reject == nil || !reject(text[:start])) {
				return true
			}
			i = start + 1
		}
	}
	return false
}

func isTokenByte(b byte) bool { return isAlnum(b) || b == '-' || b == '_' || b == '.' }

func continuesToken(rest string) bool {
	switch {
	case rest == "":
		return false
	case isAlnum(rest[0]) || rest[0] == '-' || rest[0] == '_':
		return true
	case rest[0] == '.' || rest[0] == ':':
		return len(rest) > 1 && (isAlnum(rest[1]) || rest[1] == '_')
	}
	return false
}

// afterLocationMark reports a number that is a line in a stack trace
// ("index.js:401)", `File "x.py", line 503`) or a port ("host:503"),
// not an HTTP status.
func afterLocationMark(before string) bool {
	return strings.HasSuffix(before, ":") || strings.HasSuffix(before, "line ")
}

func isAlnum(b byte) bool {
	return b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

// explanatorySignatures mark a stderr line that says why a server failed,
// as opposed to its configuration dump, banner or a package manager's
// notice. Matched case-insensitively anywhere in the line.
var explanatorySignatures = []string{
	"error", "exception", "refused", "not found", "no such", "denied", "forbidden",
	"unauthorized", "unauthorised", "traceback", "fatal", "failed", "failure", "cannot",
	"can't", "could not", "couldn't", "unable to", "invalid", "missing", "required",
	"permission", "panic", "enoent", "eacces", "eaddrinuse", "econnrefused", "timed out",
	"unknown option", "unknown argument", "usage:",
}

// stackHeaders start a stack trace: the lines right after one say what
// went wrong when the header itself does not.
var stackHeaders = []string{
	"traceback (most recent call last)", "stack trace:", "stacktrace:", "goroutine ",
	"exception in thread", "caused by:",
}

// stderrNoisePrefixes start lines that never explain a failure: package
// manager notices and update nags.
var stderrNoisePrefixes = []string{
	"npm notice", "npm warn", "npm http", "npm timing", "npm verb", "npm info",
	"(node:", "debugger attached", "waiting for the debugger",
	"╭", "│", "╰", "update available", "new major version", "changelog:", "run `npm",
}

// explainsFailure reports whether a stderr line says why the server
// failed (see explanatorySignatures). Noise never does.
func explainsFailure(line string) bool {
	l := strings.ToLower(line)
	return !isStderrNoise(l) && containsAny(l, explanatorySignatures)
}

// isStackHeader reports whether a stderr line starts a stack trace.
func isStackHeader(line string) bool {
	l := strings.ToLower(strings.TrimSpace(line))
	for _, h := range stackHeaders {
		if strings.HasPrefix(l, h) {
			return true
		}
	}
	return false
}

// isStderrNoise reports whether a stderr line carries nothing for
// diagnosis: a package manager's notice, or punctuation alone (the closing
// brace of a dumped object).
func isStderrNoise(line string) bool {
	l := strings.ToLower(strings.TrimSpace(line))
	for _, p := range stderrNoisePrefixes {
		if strings.HasPrefix(l, p) {
			return true
		}
	}
	return strings.TrimFunc(l, func(r rune) bool { return strings.ContainsRune("{}[]()<>,;:^~-=*#.'\"`", r) }) == ""
}

// secretFlagWords in a command-line option's name mean its value is a
// secret (--api-key, --token, -password=...).
var secretFlagWords = []string{"token", "secret", "password", "passwd", "apikey", "api-key", "api_key", "key", "auth", "credential", "bearer", "cookie", "session"}

// isSecretFlag reports whether a command-line option (with its dashes,
// and maybe "=VALUE") names a secret.
func isSecretFlag(opt string) bool {
	name, _, _ := strings.Cut(opt, "=")
	if !strings.HasPrefix(name, "-") {
		return false
	}
	return containsAny(strings.ToLower(strings.TrimLeft(name, "-")), secretFlagWords)
}

// looksSecret reports whether a bare argument looks like a credential: a
// bearer header, or a known token prefix.
func looksSecret(arg string) bool {
	l := strings.ToLower(arg)
	for _, p := range []string{"bearer ", "basic ", "ghp_", "gho_", "github_pat_", "sk-", "xoxb-", "xoxp-", "glpat-", "aiza"} {
		if strings.HasPrefix(l, p) {
			return true
		}
	}
	return strings.Contains(l, "authorization:")
}
