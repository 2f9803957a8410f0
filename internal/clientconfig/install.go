package clientconfig

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"unicode"
)

// Install puts mcpwrap in front of every selected server of a client's
// config file and returns the new file and the plan: one [Change] per
// selected entry. Entries already wrapped, and entries it could not restore
// exactly, are skipped; when nothing changes, out is data itself.
//
// Install is a pure function, safe for concurrent use. It fails with
// [ErrMcpwrapPath] or a [*ParseError].
func Install(data []byte, opts Options) (out []byte, plan []Change, err error) {
	if !filepath.IsAbs(opts.Mcpwrap) {
		return nil, nil, fmt.Errorf("%w: %q", ErrMcpwrapPath, opts.Mcpwrap)
	}
	mcpwrap := encodeString(opts.Mcpwrap)
	return rewrite(data, opts, func(s server) (object, Change) {
		flags := [][]byte{encodeString(flagName), s.rawName}
		if opts.LogDir != "" {
			flags = append(flags, encodeString(flagLogFile), encodeString(logFile(opts.LogDir, s.name)))
		}
		return wrap(s, mcpwrap, flags, opts.KeepMCPRemote)
	})
}

// logFile is the log file of server in dir: its name, with what a file
// name cannot hold replaced, and ".log".
func logFile(dir, server string) string {
	name := strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r == '.' || unicode.IsLetter(r) || unicode.IsDigit(r) {
			return r
		}
		return '_'
	}, server)
	if strings.Trim(name, ".") == "" {
		name = "server" + name
	}
	return filepath.Join(dir, name+".log")
}

// skip is the change of an entry left as it is.
func skip(format string, a ...any) Change {
	return Change{Action: Skip, Detail: fmt.Sprintf(format, a...)}
}

// wrap rewrites one entry to run mcpwrap (a raw JSON string) with the
// given leading flags (raw JSON strings, --name first).
func wrap(s server, mcpwrap []byte, flags [][]byte, keepMCPRemote bool) (object, Change) {
	e := s.entry
	if key, dup := e.duplicate(); dup {
		return nil, skip("key %q appears twice", key)
	}
	hasCommand, hasURL := e.index("command") >= 0, e.index("url") >= 0
	switch {
	case hasCommand && hasURL:
		return nil, skip("has both command and url")
	case hasCommand:
		return wrapStdio(s, mcpwrap, flags, keepMCPRemote)
	case hasURL:
		return wrapRemote(s, mcpwrap, flags)
	default:
		return nil, skip("has neither command nor url")
	}
}

// wrapStdio turns {command, args} into
// {command: mcpwrap, args: [--name, KEY, flags..., --, command, args...]}. The command
// and args keep their places; args missing from the original are added just
// before the command, which is how Uninstall knows to leave them out again.
func wrapStdio(s server, mcpwrap []byte, flags [][]byte, keepMCPRemote bool) (object, Change) {
	e := slices.Clone(s.entry)
	cmdAt := e.index("command")
	if !isString(e[cmdAt].value) {
		return nil, skip("command is not a string")
	}
	command := decodeString(e[cmdAt].value)
	if isMcpwrap(command) {
		if raw, args, ok := stringArray(e, "args"); ok {
			if _, err := parseWrapped(raw, args); err == nil {
				return nil, skip("already wrapped")
			}
		}
		return nil, skip("runs mcpwrap itself")
	}
	if t := e.index("type"); t >= 0 && decodeString(e[t].value) != "stdio" {
		return nil, skip("type %s does not go with a command", e[t].value)
	}
	rawArgs, args, ok := stringArray(e, "args")
	if !ok {
		return nil, skip("args is not an array of strings")
	}
	argsAt := e.index("args")
	if argsAt >= 0 && argsAt == cmdAt-1 && len(args) == 0 {
		return nil, skip(`its empty "args" just before "command" could not be restored; ` +
			`remove it or move it after "command"`)
	}

	// mcp-remote becomes a native --url entry unless asked to stay, or
	// unless it uses an option mcpwrap cannot carry over.
	stays := "it keeps its OAuth role (--keep-mcp-remote)"
	if remoteArgs, ok := mcpRemoteArgs(command, args); ok && !keepMCPRemote {
		r, err := parseMCPRemote(remoteArgs)
		if err == nil {
			return wrapMCPRemote(s, r, mcpwrap, flags, slices.Concat([][]byte{e[cmdAt].value}, rawArgs))
		}
		stays = err.Error()
	}

	wrappedArgs := array(slices.Concat(flags, [][]byte{encodeString(endOfFlags), e[cmdAt].value}, rawArgs))
	e[cmdAt].value = mcpwrap
	if argsAt >= 0 {
		e[argsAt].value = wrappedArgs
	} else {
		e = slices.Insert(e, cmdAt, newField("args", wrappedArgs))
	}

	detail := commandLine(command, args)
	if runsMCPRemote(command, args) {
		detail += " (mcp-remote stays a stdio child: " + stays + ")"
	}
	return e, Change{Action: Wrap, Detail: detail}
}

// wrapRemote turns {type, url, headers} into {type: "stdio", command:
// mcpwrap, args: [--name, KEY, flags..., --transport, TYPE, --url,
// "${VAR}", --header, "NAME: ${VAR}"...], env: {VAR: value...}}: the URL and
// the header values move into env, so that the command line carries no
// secret (a URL may hold one in its user info, query or path). The command
// takes the place of url and args the place of headers (or, without
// headers, just before the command); a new env goes right after the later
// of args and the command.
func wrapRemote(s server, mcpwrap []byte, flags [][]byte) (object, Change) {
	e := slices.Clone(s.entry)
	urlAt := e.index("url")
	if !isString(e[urlAt].value) {
		return nil, skip("url is not a string")
	}
	var transport string
	if t := e.index("type"); t >= 0 {
		transport = decodeString(e[t].value)
		if transport != "http" && transport != "sse" {
			return nil, skip("type %s is not http or sse", e[t].value)
		}
	}
	if e.index("args") >= 0 {
		return nil, skip("has args but no command")
	}
	hdrsAt := e.index("headers")
	var headers object
	if hdrsAt >= 0 {
		var ok bool
		if headers, ok = parseObject(e[hdrsAt].value); !ok {
			return nil, skip("headers is not an object")
		}
		if len(headers) == 0 && hdrsAt == urlAt-1 {
			return nil, skip(`its empty "headers" just before "url" could not be restored; ` +
				`remove it or move it after "url"`)
		}
	}
	for _, h := range headers {
		if !validHeaderName(h.key) || !isString(h.value) {
			return nil, skip("header %q is not a name with a string value", h.key)
		}
	}
	envAt := e.index("env")
	var env object
	if envAt >= 0 {
		var ok bool
		if env, ok = parseObject(e[envAt].value); !ok {
			return nil, skip("env is not an object")
		}
		// Uninstall removes an env that is empty once the values go back,
		// when it sits where Install puts a new one.
		if last := max(urlAt, hdrsAt); len(env) == 0 && envAt == last+1 {
			return nil, skip(`its empty "env" just after %q could not be restored; remove it`, e[last].key)
		}
	}

	taken := func(name string) bool { return env.index(name) >= 0 }
	urlVar := urlEnvName(s.name, taken)
	env = append(env, field{key: urlVar, rawKey: encodeString(urlVar), value: e[urlAt].value})
	args := slices.Clone(flags)
	if transport != "" {
		args = append(args, encodeString(flagTransport), encodeString(transport))
	}
	args = append(args, encodeString(flagURL), encodeString(envRef(urlVar)))
	var moved []string
	for _, h := range headers {
		v := headerEnvName(s.name, h.key, taken)
		args = append(args, encodeString(flagHeader), encodeString(headerFlag(h.key, v)))
		env = append(env, field{key: v, rawKey: encodeString(v), value: h.value})
		moved = append(moved, v)
	}

	if t := e.index("type"); t >= 0 {
		e[t].value = encodeString("stdio")
	}
	e[urlAt] = newField("command", mcpwrap)
	if hdrsAt >= 0 {
		e[hdrsAt] = newField("args", array(args))
	} else {
		e = slices.Insert(e, urlAt, newField("args", array(args)))
	}
	if envAt >= 0 {
		e[e.index("env")].value = env.marshal()
	} else {
		e = slices.Insert(e, max(e.index("args"), e.index("command"))+1, newField("env", env.marshal()))
	}

	detail := describeRemote(decodeString(s.entry[urlAt].value), transport, headers) +
		"; URL moved to env " + urlVar
	if len(moved) > 0 {
		detail += ", header values to " + strings.Join(moved, ", ")
	}
	if !slices.ContainsFunc(headers, func(h field) bool { return strings.EqualFold(h.key, "Authorization") }) {
		detail += signInNote(s.name)
	}
	return e, Change{Action: Wrap, Detail: detail}
}

// describeRemote describes a remote server without its secrets.
func describeRemote(url, transport string, headers object) string {
	d := redactURL(url)
	if transport != "" {
		d += " over " + transport
	}
	if len(headers) > 0 {
		names := make([]string, len(headers))
		for i, h := range headers {
			names[i] = h.key
		}
		d += " with headers " + strings.Join(names, ", ")
	}
	return d
}

// stringArray returns the elements, raw and decoded, of e[key]; ok is false
// when it is present and not an array of strings.
func stringArray(e object, key string) (raw [][]byte, strs []string, ok bool) {
	i := e.index(key)
	if i < 0 {
		return nil, nil, true
	}
	raw, ok = elements(e[i].value, 0)
	if !ok {
		return nil, nil, false
	}
	strs = make([]string, len(raw))
	for j, r := range raw {
		if !isString(r) {
			return nil, nil, false
		}
		strs[j] = decodeString(r)
	}
	return raw, strs, true
}
