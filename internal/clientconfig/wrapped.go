package clientconfig

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode"
)

// The mcpwrap command line a wrapped entry runs; see the package doc.
const (
	flagName      = "--name"
	flagURL       = "--url"
	flagHeader    = "--header"
	flagTransport = "--transport"
	flagLogFile   = "--log-file"
	endOfFlags    = "--"

	// headerEnvPrefix starts the env variables that carry header values,
	// urlEnvPrefix the one that carries a remote server's URL.
	headerEnvPrefix = "MCPWRAP_HDR_"
	urlEnvPrefix    = "MCPWRAP_URL_"
)

// errNotWrapped says that args run mcpwrap in no form Uninstall can undo.
var errNotWrapped = errors.New("neither a command after -- nor --url")

// isMcpwrap reports whether command runs mcpwrap, whatever the OS of the
// config's path.
func isMcpwrap(command string) bool {
	base := command[strings.LastIndexAny(command, `/\`)+1:]
	return strings.EqualFold(base, "mcpwrap") || strings.EqualFold(base, "mcpwrap.exe")
}

// wrapped is the meaning of a wrapped entry's args.
type wrapped struct {
	command   [][]byte // stdio: the server's command and its args, raw, after "--"
	url       []byte   // remote: the URL, a raw JSON string
	transport string   // remote: the --transport value, if any
	headers   []string // remote: the --header values, in order
	secretEnv string   // remote: the --oauth-client-secret-env value, if any
	dropped   []string // other mcpwrap flags, which the original entry cannot hold
}

// parseWrapped reads mcpwrap's args (each raw and decoded) as mcpwrap's
// flag parser does: flags, then "--" and the server's command, unless
// --url names a remote server. Flags may start with one or two dashes and
// take their value after "=" or as the next argument.
func parseWrapped(raw [][]byte, args []string) (wrapped, error) {
	var w wrapped
	for i := 0; i < len(args); i++ {
		if args[i] == endOfFlags {
			switch {
			case w.url != nil:
				return w, errors.New("both --url and a command after --")
			case i+1 == len(args):
				return w, errors.New("no command after --")
			}
			w.command = raw[i+1:]
			return w, nil
		}
		name, value, hasValue, ok := splitFlag(args[i])
		if !ok {
			return w, errors.New("an argument before -- is not a flag")
		}
		rawValue := encodeString(value)
		known := name == "name" || name == "url" || name == "header" || name == "transport" || name == "log-file" ||
			strings.HasPrefix(name, "oauth-")
		switch {
		case hasValue:
		case known && i+1 < len(args):
			i++
			value, rawValue = args[i], raw[i]
		case known:
			return w, fmt.Errorf("flag --%s has no value", name)
		case i+1 < len(args) && !strings.HasPrefix(args[i+1], "-"):
			i++ // the value of a flag this package does not know
		}
		switch name {
		case "url":
			w.url = rawValue
		case "header":
			w.headers = append(w.headers, value)
		case "transport":
			w.transport = value
		case "name", "log-file": // Install's own: nothing of the original entry
		case "oauth-client-secret-env":
			w.secretEnv = value
			w.dropped = append(w.dropped, "--"+name)
		default:
			w.dropped = append(w.dropped, "--"+name)
		}
	}
	if w.url == nil {
		return w, errNotWrapped
	}
	return w, nil
}

// splitFlag splits "-name", "--name" or "--name=value" as Go's flag package
// does; ok is false for anything else.
func splitFlag(arg string) (name, value string, hasValue, ok bool) {
	name, found := strings.CutPrefix(arg, "-")
	if !found {
		return "", "", false, false
	}
	name = strings.TrimPrefix(name, "-")
	if name == "" || name[0] == '-' || name[0] == '=' {
		return "", "", false, false
	}
	name, value, hasValue = strings.Cut(name, "=")
	return name, value, hasValue, true
}

// envRefPattern matches a header value that is only a reference to an env
// variable, as Install writes it.
var envRefPattern = regexp.MustCompile(`^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$`)

// envRef returns a reference to env variable v, as mcpwrap expands it in
// --url and --header values.
func envRef(v string) string { return "${" + v + "}" }

// headerFlag returns the --header value that sends header name with the
// value of env variable v.
func headerFlag(name, v string) string { return name + ": " + envRef(v) }

// parseHeaderFlag splits a --header value into the header's name and value;
// ref names the env variable when the value is only a reference to one.
func parseHeaderFlag(h string) (name, value, ref string, ok bool) {
	name, value, ok = strings.Cut(h, ":")
	name, value = strings.TrimSpace(name), strings.TrimSpace(value)
	if !ok || name == "" {
		return "", "", "", false
	}
	if m := envRefPattern.FindStringSubmatch(value); m != nil {
		ref = m[1]
	}
	return name, value, ref, true
}

// validHeaderName reports whether a header's name survives the round trip
// through a --header flag: no colon, no surrounding or inner space.
func validHeaderName(name string) bool {
	return name != "" && !strings.ContainsFunc(name, func(r rune) bool {
		return r == ':' || unicode.IsSpace(r) || unicode.IsControl(r)
	})
}

// headerEnvName returns a name for the env variable carrying the value of
// header in server's entry, one that is not yet taken.
func headerEnvName(server, header string, taken func(string) bool) string {
	return freeEnvName(headerEnvPrefix+envWord(server)+"_"+envWord(header), taken)
}

// urlEnvName returns a name for the env variable carrying the URL of
// server's entry, one that is not yet taken.
func urlEnvName(server string, taken func(string) bool) string {
	return freeEnvName(urlEnvPrefix+envWord(server), taken)
}

// freeEnvName returns base, or base_2, base_3... if it is taken.
func freeEnvName(base string, taken func(string) bool) string {
	name := base
	for n := 2; taken(name); n++ {
		name = fmt.Sprintf("%s_%d", base, n)
	}
	return name
}

// envWord upper-cases s and replaces what an env variable name cannot hold.
func envWord(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z':
			return r - 'a' + 'A'
		case r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			return r
		default:
			return '_'
		}
	}, s)
}

// runsMCPRemote reports whether a stdio server is mcp-remote, the bridge
// that gives stdio-only clients a remote server and does its OAuth.
func runsMCPRemote(command string, args []string) bool {
	_, ok := mcpRemoteArgs(command, args)
	return ok
}

// isMCPRemoteWord reports whether a command's base name or an argument
// names the mcp-remote package, possibly versioned (mcp-remote@0.1.2).
func isMCPRemoteWord(w string) bool {
	w = strings.TrimSuffix(strings.TrimSuffix(strings.ToLower(w), ".cmd"), ".exe")
	return w == "mcp-remote" || strings.HasPrefix(w, "mcp-remote@")
}
