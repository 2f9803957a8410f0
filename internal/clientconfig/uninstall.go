package clientconfig

import (
	"cmp"
	"slices"
	"strings"
)

// Uninstall restores the original entry of every selected server that runs
// mcpwrap, from the wrapped command line, and returns the new file and the
// plan: one [Change] per selected entry. Entries not wrapped are skipped;
// when nothing changes, out is data itself. opts.Mcpwrap is not used: any
// mcpwrap binary counts.
//
// Uninstall is a pure function, safe for concurrent use. It fails with a
// [*ParseError].
func Uninstall(data []byte, opts Options) (out []byte, plan []Change, err error) {
	return rewrite(data, opts, unwrap)
}

// unwrap undoes [wrap] on one entry.
func unwrap(s server) (object, Change) {
	e := s.entry
	if key, dup := e.duplicate(); dup {
		return nil, skip("key %q appears twice", key)
	}
	cmdAt := e.index("command")
	if cmdAt < 0 || !isMcpwrap(decodeString(e[cmdAt].value)) {
		return nil, skip("not wrapped")
	}
	raw, args, ok := stringArray(e, "args")
	if !ok {
		return nil, skip("args is not an array of strings")
	}
	w, err := parseWrapped(raw, args)
	if err != nil {
		return nil, skip("runs mcpwrap, but not wrapped: %v", err)
	}
	if restored, change, ok := unwrapMCPRemote(e, w); ok && w.command == nil {
		return restored, change
	}
	var change Change
	if w.command != nil {
		e, change = unwrapStdio(e, w)
	} else {
		e, change = unwrapRemote(e, w)
	}
	if len(w.dropped) > 0 {
		change.Detail += "; dropped mcpwrap flags " + strings.Join(w.dropped, ", ")
	}
	return e, change
}

// unwrapStdio puts back the command and its args. Args just before the
// command and now empty were added by Install: they go.
func unwrapStdio(e object, w wrapped) (object, Change) {
	e = slices.Clone(e)
	cmdAt, argsAt := e.index("command"), e.index("args")
	e[cmdAt].value = w.command[0]
	if rest := w.command[1:]; len(rest) == 0 && argsAt == cmdAt-1 {
		e = slices.Delete(e, argsAt, argsAt+1)
	} else {
		e[argsAt].value = array(rest)
	}
	strs := make([]string, len(w.command))
	for i, r := range w.command {
		strs[i] = decodeString(r)
	}
	return e, Change{Action: Unwrap, Detail: commandLine(strs[0], strs[1:])}
}

// unwrapRemote puts back url, type and headers, taking the URL and the
// header values back out of env. Args just before the command with no
// header were added by Install, and so was an env right after the later of
// args and the command that is now empty: they go.
func unwrapRemote(e object, w wrapped) (object, Change) {
	if e.index("url") >= 0 || e.index("headers") >= 0 {
		return nil, skip("runs mcpwrap, but has url or headers already")
	}
	e = slices.Clone(e)
	cmdAt, argsAt, envAt := e.index("command"), e.index("args"), e.index("env")
	var env object
	if envAt >= 0 {
		env, _ = parseObject(e[envAt].value)
	}
	movedBack := false
	// fromEnv returns the raw value of env variable ref and takes it out of
	// env; ok is false when env has no such string.
	fromEnv := func(ref string) (raw []byte, ok bool) {
		v := env.index(ref)
		if ref == "" || v < 0 || !isString(env[v].value) {
			return nil, false
		}
		raw = env[v].value
		env = slices.Delete(env, v, v+1)
		movedBack = true
		return raw, true
	}

	url := w.url
	if m := envRefPattern.FindStringSubmatch(decodeString(w.url)); m != nil {
		if raw, ok := fromEnv(m[1]); ok {
			url = raw
		}
	}
	var headers object
	for _, h := range w.headers {
		name, value, ref, ok := parseHeaderFlag(h)
		if !ok {
			return nil, skip("runs mcpwrap, but a --header is not NAME: VALUE")
		}
		raw, ok := fromEnv(ref)
		if !ok {
			raw = encodeString(value)
		}
		headers = append(headers, newField(name, raw))
	}

	if t := e.index("type"); t >= 0 {
		e[t].value = encodeString(cmp.Or(w.transport, "http"))
	}
	e[cmdAt] = newField("url", url)
	e[argsAt] = newField("headers", headers.marshal())
	// Deletions last, from the end, so that the indexes above stay valid.
	if movedBack {
		if len(env) == 0 && envAt == max(argsAt, cmdAt)+1 {
			e = slices.Delete(e, envAt, envAt+1)
		} else {
			e[envAt].value = env.marshal()
		}
	}
	if len(headers) == 0 && argsAt == cmdAt-1 {
		e = slices.Delete(e, argsAt, argsAt+1)
	}
	return e, Change{Action: Unwrap, Detail: describeRemote(decodeString(url), w.transport, headers)}
}
