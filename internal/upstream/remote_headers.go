package upstream

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/mcpwrap/mcpwrap/resilience"
)

// ErrUnsetVariable is wrapped by the error [ExpandHeaders] returns when a
// header refers to an environment variable that is unset or empty.
var ErrUnsetVariable = errors.New("environment variable is unset or empty")

// ExpandHeaders parses header specs of the form "Name: value", as given to
// --header, and expands ${VAR} references in their values with getenv (nil
// means no variable is set). A name given several times gets several values.
//
// Only the ${VAR} form expands (VAR is letters, digits and underscores, not
// starting with a digit); a "$" in any other position is literal, so tokens
// containing "$" survive. A variable that is unset or empty is an error
// wrapping [ErrUnsetVariable]: sending an empty credential would only turn
// into a confusing 401 later.
//
// Every error wraps [resilience.ErrConfig] and names the header and the
// variable, never a value: header values are secrets.
func ExpandHeaders(specs []string, getenv func(string) string) (http.Header, error) {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	header := make(http.Header, len(specs))
	for i, spec := range specs {
		name, raw, found := strings.Cut(spec, ":")
		name = strings.TrimSpace(name)
		if !found || !validHeaderName(name) {
			// Do not echo the spec: a misplaced colon can put a token in "name".
			return nil, fmt.Errorf("%w: header #%d: want \"Name: value\" with a valid header name", resilience.ErrConfig, i+1)
		}
		value, err := expandVars(strings.TrimSpace(raw), getenv)
		if err != nil {
			return nil, fmt.Errorf("%w: header %q: %w", resilience.ErrConfig, name, err)
		}
		if !validHeaderValue(value) {
			return nil, fmt.Errorf("%w: header %q: the value contains a control character (a trailing newline in a variable?)", resilience.ErrConfig, name)
		}
		header.Add(name, value)
	}
	return header, nil
}

// ExpandURL expands ${VAR} references in a --url value with getenv, as
// [ExpandHeaders] does in header values: mcpwrap install moves a remote
// entry's URL into the entry's env, since a URL may carry a secret in its
// query, user info or path, and passes --url '${VAR}'. Every error wraps
// [resilience.ErrConfig] and names at most the variable, never the URL.
func ExpandURL(raw string, getenv func(string) string) (string, error) {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	u, err := expandVars(raw, getenv)
	if err != nil {
		return "", fmt.Errorf("%w: --url: %w", resilience.ErrConfig, err)
	}
	return u, nil
}

// expandVars replaces every ${VAR} in s with getenv(VAR).
func expandVars(s string, getenv func(string) string) (string, error) {
	var b strings.Builder
	for {
		start := strings.Index(s, "${")
		if start < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		end := strings.IndexByte(s[start:], '}')
		if end < 0 {
			return "", errors.New(`"${" without a closing "}"`)
		}
		name := s[start+2 : start+end]
		if !validVariableName(name) {
			// Not echoed: what sits between the braces may be a pasted token.
			return "", errors.New("a ${...} reference holds no valid variable name")
		}
		value := getenv(name)
		if value == "" {
			return "", fmt.Errorf("${%s}: %w", name, ErrUnsetVariable)
		}
		b.WriteString(s[:start])
		b.WriteString(value)
		s = s[start+end+1:]
	}
}

func validVariableName(name string) bool {
	for i, c := range name {
		switch {
		case c == '_', c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return name != ""
}

// validHeaderName reports whether name is an HTTP token (RFC 9110 §5.6.2).
func validHeaderName(name string) bool {
	for _, c := range name {
		switch {
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case strings.ContainsRune("!#$%&'*+-.^_`|~", c):
		default:
			return false
		}
	}
	return name != ""
}
