package clientconfig

import (
	"regexp"
	"strings"
)

// clientRefPattern matches the references a client expands in a server's
// url and headers, as Claude Code does: ${VAR} and ${VAR:-default}.
var clientRefPattern = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}`)

// MovedValues returns the getenv a wrapped entry's mcpwrap reads its --url
// and --header references with. [Install] moves a remote entry's URL and
// header values into env variables of its own (MCPWRAP_URL_*,
// MCPWRAP_HDR_*), and a value may hold references among other text
// ("Bearer ${TOKEN}") that the client expanded in the url or headers
// field. A client that expands env values too (Claude Code) hands mcpwrap
// the expanded value; one that passes env as written (mcpwrap doctor, a
// client that expands nothing) hands it the references, which MovedValues
// then expands with getenv as the client would have: ${VAR}, or
// ${VAR:-default}, and a reference to an unset or empty variable without a
// default left as written. Either way the entry sends the bytes the
// original entry sent. Every other variable is getenv's own.
//
// The getenv returned is safe for concurrent use if getenv is.
func MovedValues(getenv func(string) string) func(string) string {
	return func(name string) string {
		v := getenv(name)
		if !movedVariable(name) || !strings.Contains(v, "${") {
			return v
		}
		return clientRefPattern.ReplaceAllStringFunc(v, func(ref string) string {
			m := clientRefPattern.FindStringSubmatch(ref)
			if value := getenv(m[1]); value != "" {
				return value
			}
			if strings.Contains(ref, ":-") {
				return m[2]
			}
			return ref
		})
	}
}

// movedVariable reports whether name is one Install moves a URL or a
// header value into.
func movedVariable(name string) bool {
	return strings.HasPrefix(name, urlEnvPrefix) || strings.HasPrefix(name, headerEnvPrefix)
}
