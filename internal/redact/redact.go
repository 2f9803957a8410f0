// Package redact is mcpwrap's one redaction of URLs for people and agents:
// every URL mcpwrap prints, logs or tells an agent (a server's endpoint, an
// issuer, a URL quoted inside a library's error) is shown as its origin,
// scheme and host, because the user info, path, query and fragment may
// each carry a credential (?api_key=…, …/sk-…/mcp, user:password@).
//
// Text is applied where text leaves mcpwrap: the logger passes every error
// value of a record through it, the resilience classifier every reason, and
// the sign-in client every error it reports to the agent.
package redact

import (
	"net/url"
	"strings"
)

// Unparsable replaces a URL that does not parse: its parts cannot be told
// apart, so none of it is shown.
const Unparsable = "<url>"

// URL renders raw as its origin: "https://user:pw@h:8443/sk-1/mcp?k=v#f" is
// "https://h:8443". A URL that does not parse, or has no scheme, is
// [Unparsable].
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		return Unparsable
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host}).String()
}

// Text returns s with every URL in it (a scheme followed by "://", up to a
// quote, space or angle bracket) reduced by [URL]. Text outside URLs is
// kept.
func Text(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "://")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		start := i
		for start > 0 && isSchemeByte(s[start-1]) {
			start--
		}
		end := i + len("://")
		for end < len(s) && !isTerminator(s[end]) {
			end++
		}
		b.WriteString(s[:start])
		b.WriteString(URL(s[start:end]))
		s = s[end:]
	}
}

func isSchemeByte(b byte) bool {
	return b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b == '+' || b == '-' || b == '.'
}

// isTerminator reports the bytes that end a URL embedded in text, such as
// `Get "https://host/x": EOF`.
func isTerminator(b byte) bool {
	return b == '"' || b == '\'' || b == ' ' || b == '\t' || b == '\n' || b == '\r' || b == '<' || b == '>' || b == '`'
}
