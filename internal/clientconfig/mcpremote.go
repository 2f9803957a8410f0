package clientconfig

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The mcpwrap flags a converted mcp-remote entry uses beyond those of a
// remote entry, and the env variables it adds.
const (
	flagOAuthClientID        = "--oauth-client-id"
	flagOAuthSecretEnv       = "--oauth-client-secret-env"
	flagOAuthClientMetadata  = "--oauth-client-metadata-url"
	flagOAuthRedirectPort    = "--oauth-redirect-port"
	oauthSecretEnvPrefix     = "MCPWRAP_OAUTH_SECRET_"
	mcpRemoteOriginalEnvName = "MCPWRAP_MCP_REMOTE_"
)

// mcpRemote is what an mcp-remote command line asks for, in the terms of
// mcpwrap's own flags.
type mcpRemote struct {
	url          string     // the server's URL, decoded
	headers      [][]string // name, value (decoded), in order
	transport    string     // "http" or "sse"; "" when mcp-remote picks
	redirectPort string     // the OAuth callback port, "" when derived
	clientID     string     // from --static-oauth-client-info
	clientSecret string     // likewise; may be a ${VAR} reference
	metadataURL  string     // --client-metadata-url
}

// mcpRemoteNoOps are mcp-remote flags with nothing to carry over: mcpwrap
// accepts plain HTTP, logs as configured, and bounds its own sign-in wait.
var mcpRemoteNoOps = map[string]bool{"--allow-http": false, "--debug": false, "--silent": false, "--auth-timeout": true}

// parseMCPRemote reads the arguments that follow the mcp-remote package in
// a stdio entry (the URL, an optional callback port, then flags) as
// mcp-remote 0.1 reads them. It fails, naming the option, for anything
// mcpwrap cannot do the same way, so that such an entry stays an mcp-remote
// child rather than silently losing an option.
func parseMCPRemote(args []string) (mcpRemote, error) {
	var r mcpRemote
	var positional []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "--") {
			positional = append(positional, a)
			continue
		}
		takesValue, noOp := mcpRemoteNoOps[a]
		value := func() (string, error) {
			if i+1 >= len(args) {
				return "", fmt.Errorf("mcp-remote option %s has no value", a)
			}
			i++
			return args[i], nil
		}
		switch {
		case noOp:
			if takesValue {
				if _, err := value(); err != nil {
					return r, err
				}
			}
		case a == "--header":
			v, err := value()
			if err != nil {
				return r, err
			}
			name, hv, ok := strings.Cut(v, ":")
			if !ok || !validHeaderName(name) {
				return r, fmt.Errorf("an mcp-remote --header is not Name:Value")
			}
			r.headers = append(r.headers, []string{name, strings.TrimLeft(hv, " \t")})
		case a == "--transport":
			v, err := value()
			if err != nil {
				return r, err
			}
			switch v {
			case "http-first", "http-only":
				r.transport = "http"
			case "sse-first", "sse-only":
				r.transport = "sse"
			default:
				return r, fmt.Errorf("mcp-remote --transport %q is not one mcpwrap knows", v)
			}
		case a == "--static-oauth-client-info":
			v, err := value()
			if err != nil {
				return r, err
			}
			if err := r.clientInfo(v); err != nil {
				return r, err
			}
		case a == "--client-metadata-url":
			v, err := value()
			if err != nil {
				return r, err
			}
			r.metadataURL = strings.TrimSpace(v)
		default:
			return r, fmt.Errorf("mcp-remote option %s has no mcpwrap equivalent", a)
		}
	}
	switch len(positional) {
	case 2:
		if p, err := strconv.Atoi(positional[1]); err != nil || p <= 0 || p > 65535 {
			return r, fmt.Errorf("mcp-remote argument %q is not a callback port", positional[1])
		}
		r.redirectPort = positional[1]
		fallthrough
	case 1:
		r.url = positional[0]
	case 0:
		return r, fmt.Errorf("mcp-remote has no server URL")
	default:
		return r, fmt.Errorf("mcp-remote has more arguments than a URL and a callback port")
	}
	if !strings.HasPrefix(r.url, "https://") && !strings.HasPrefix(r.url, "http://") {
		return r, fmt.Errorf("the mcp-remote server URL is not http(s)")
	}
	return r, nil
}

// clientInfo reads --static-oauth-client-info given inline (mcp-remote also
// takes @FILE, which the entry cannot carry over: refused).
func (r *mcpRemote) clientInfo(v string) error {
	if strings.HasPrefix(v, "@") {
		return fmt.Errorf("mcp-remote --static-oauth-client-info from a file has no mcpwrap equivalent")
	}
	var info struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	if err := json.Unmarshal([]byte(v), &info); err != nil || info.ClientID == "" {
		return fmt.Errorf("mcp-remote --static-oauth-client-info is not an object with a client_id")
	}
	r.clientID, r.clientSecret = info.ClientID, info.ClientSecret
	return nil
}

// mcpRemoteArgs returns the arguments of an mcp-remote command line that
// follow its package word, and whether command and args run mcp-remote.
func mcpRemoteArgs(command string, args []string) ([]string, bool) {
	if isMCPRemoteWord(command[strings.LastIndexAny(command, `/\`)+1:]) {
		return args, true
	}
	if i := slices.IndexFunc(args, isMCPRemoteWord); i >= 0 {
		return args[i+1:], true
	}
	return nil, false
}

// wrapMCPRemote converts a stdio entry running mcp-remote into a native
// `mcpwrap --url` one: the URL and literal header values move into env as
// for a remote entry, and the original command line is kept whole in env
// (MCPWRAP_MCP_REMOTE_<KEY>) for Uninstall to give back exactly.
func wrapMCPRemote(s server, r mcpRemote, mcpwrap []byte, flags [][]byte, original [][]byte) (object, Change) {
	e := slices.Clone(s.entry)
	cmdAt, argsAt, envAt := e.index("command"), e.index("args"), e.index("env")
	var env object
	if envAt >= 0 {
		var ok bool
		if env, ok = parseObject(e[envAt].value); !ok {
			return nil, skip("env is not an object")
		}
		if len(env) == 0 && envAt == max(argsAt, cmdAt)+1 {
			return nil, skip(`its empty "env" just after %q could not be restored; remove it`, e[max(argsAt, cmdAt)].key)
		}
	}
	taken := func(name string) bool { return env.index(name) >= 0 }
	addEnv := func(name string, value []byte) {
		env = append(env, field{key: name, rawKey: encodeString(name), value: value})
	}

	args := slices.Clone(flags)
	if r.transport != "" {
		args = append(args, encodeString(flagTransport), encodeString(r.transport))
	}
	urlVar := urlEnvName(s.name, taken)
	addEnv(urlVar, encodeString(r.url))
	args = append(args, encodeString(flagURL), encodeString(envRef(urlVar)))
	auth := false
	for _, h := range r.headers {
		name, value := h[0], h[1]
		auth = auth || strings.EqualFold(name, "Authorization")
		if !strings.Contains(value, "${") { // a literal value is a secret: into env
			v := headerEnvName(s.name, name, taken)
			addEnv(v, encodeString(value))
			value = envRef(v)
		}
		args = append(args, encodeString(flagHeader), encodeString(name+": "+value))
	}
	if r.clientID != "" {
		args = append(args, encodeString(flagOAuthClientID), encodeString(r.clientID))
	}
	if r.clientSecret != "" {
		secretVar := ""
		if m := envRefPattern.FindStringSubmatch(r.clientSecret); m != nil {
			secretVar = m[1]
		} else {
			secretVar = freeEnvName(oauthSecretEnvPrefix+envWord(s.name), taken)
			addEnv(secretVar, encodeString(r.clientSecret))
		}
		args = append(args, encodeString(flagOAuthSecretEnv), encodeString(secretVar))
	}
	if r.metadataURL != "" {
		args = append(args, encodeString(flagOAuthClientMetadata), encodeString(r.metadataURL))
	}
	if r.redirectPort != "" {
		args = append(args, encodeString(flagOAuthRedirectPort), encodeString(r.redirectPort))
	}
	origVar := freeEnvName(mcpRemoteOriginalEnvName+envWord(s.name), taken)
	addEnv(origVar, encodeString(string(array(original))))

	e[cmdAt].value = mcpwrap
	e[argsAt].value = array(args)
	if envAt >= 0 {
		e[envAt].value = env.marshal()
	} else {
		e = slices.Insert(e, max(argsAt, cmdAt)+1, newField("env", env.marshal()))
	}

	var names []string
	for _, h := range r.headers {
		names = append(names, h[0])
	}
	detail := "mcp-remote converted to native --url: " + redactURL(r.url)
	if r.transport != "" {
		detail += " over " + r.transport
	}
	if len(names) > 0 {
		detail += " with headers " + strings.Join(names, ", ")
	}
	if !auth {
		detail += signInNote(s.name)
	}
	return e, Change{Action: Wrap, Detail: detail}
}

// signInNote is the plan's note on a remote server that sends no
// Authorization header: it signs in through mcpwrap.
func signInNote(server string) string {
	return "; if it asks for a sign-in: `mcpwrap login " + server + "` once"
}

// unwrapMCPRemote undoes [wrapMCPRemote] when env keeps an original
// mcp-remote command line; ok is false when it does not.
func unwrapMCPRemote(e object, w wrapped) (_ object, _ Change, ok bool) {
	envAt := e.index("env")
	if envAt < 0 {
		return nil, Change{}, false
	}
	env, _ := parseObject(e[envAt].value)
	origAt := slices.IndexFunc(env, func(f field) bool {
		return strings.HasPrefix(f.key, mcpRemoteOriginalEnvName) && isString(f.value)
	})
	if origAt < 0 {
		return nil, Change{}, false
	}
	original, ok := elements([]byte(decodeString(env[origAt].value)), 0)
	if !ok || len(original) == 0 {
		return nil, Change{}, false
	}
	strs := make([]string, len(original))
	for i, r := range original {
		if !isString(r) {
			return nil, Change{}, false
		}
		strs[i] = decodeString(r)
	}
	if _, ok := mcpRemoteArgs(strs[0], strs[1:]); !ok {
		return nil, Change{}, false
	}

	// The variables Install added: the original, and those the flags name
	// under mcpwrap's own prefixes.
	added := map[string]bool{env[origAt].key: true}
	refs := []string{decodeString(w.url)}
	for _, h := range w.headers {
		if _, _, ref, ok := parseHeaderFlag(h); ok {
			refs = append(refs, envRef(ref))
		}
	}
	for _, ref := range refs {
		if m := envRefPattern.FindStringSubmatch(ref); m != nil {
			added[m[1]] = true
		}
	}
	if w.secretEnv != "" {
		added[w.secretEnv] = true
	}
	env = slices.DeleteFunc(env, func(f field) bool {
		return added[f.key] && (strings.HasPrefix(f.key, urlEnvPrefix) || strings.HasPrefix(f.key, headerEnvPrefix) ||
			strings.HasPrefix(f.key, oauthSecretEnvPrefix) || strings.HasPrefix(f.key, mcpRemoteOriginalEnvName))
	})

	e = slices.Clone(e)
	cmdAt, argsAt := e.index("command"), e.index("args")
	e[cmdAt].value = original[0]
	e[argsAt].value = array(original[1:])
	if len(env) == 0 && envAt == max(argsAt, cmdAt)+1 {
		e = slices.Delete(e, envAt, envAt+1)
	} else {
		e[envAt].value = env.marshal()
	}
	return e, Change{Action: Unwrap, Detail: commandLine(strs[0], strs[1:])}, true
}
