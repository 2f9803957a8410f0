package clientconfig

import (
	"bytes"
	"slices"
)

// Options select what [Install] and [Uninstall] act on.
type Options struct {
	// Mcpwrap is the absolute path of the mcpwrap binary, written as the
	// command of wrapped entries. Install requires it; Uninstall ignores it.
	Mcpwrap string
	// Servers are the entry keys to act on; nil or empty means every entry.
	// Entries not selected are left out of the plan.
	Servers []string
	// LogDir, when set, gives every entry Install wraps its own log file,
	// --log-file LOGDIR/<server>.log, instead of the client's log of the
	// server's stderr. Uninstall ignores it: it drops --log-file anyway.
	LogDir string
	// KeepMCPRemote makes Install wrap entries running mcp-remote as stdio
	// children, as any other command, instead of converting them to native
	// --url entries that sign in through mcpwrap.
	KeepMCPRemote bool
}

func (o Options) selects(server string) bool {
	return len(o.Servers) == 0 || slices.Contains(o.Servers, server)
}

// server is one entry of an mcpServers object, as handed to a rewriteFunc.
type server struct {
	name    string // the entry's key, decoded
	rawName []byte // the entry's key as written
	entry   object
}

// rewriteFunc rewrites one entry. It returns the new entry and the change;
// the entry is written back only when the action is not Skip.
type rewriteFunc func(server) (object, Change)

// edit replaces data[start:end].
type edit struct {
	start, end int
	text       []byte
}

// rewrite applies fn to every selected entry of the file's mcpServers and,
// for Claude Code's ~/.claude.json, of every projects.<path>.mcpServers.
// Only the entries fn changes are rewritten; every other byte of data is
// kept.
func rewrite(data []byte, opts Options, fn rewriteFunc) ([]byte, []Change, error) {
	if err := validate(data); err != nil {
		return nil, nil, err
	}
	top, ok := members(data, 0)
	if !ok {
		return nil, nil, parseErrorAt(data, skipSpace(data, 0), "the file is not a JSON object", nil)
	}
	r := rewriter{data: data, opts: opts, fn: fn, layout: detectLayout(data)}
	for _, m := range top {
		var err error
		switch m.key {
		case "mcpServers":
			err = r.servers("", m)
		case "projects":
			err = r.projects(m)
		}
		if err != nil {
			return nil, nil, err
		}
	}
	if len(r.edits) == 0 {
		return data, r.plan, nil
	}
	var out bytes.Buffer
	last := 0
	for _, e := range r.edits { // in file order: the walk never goes back
		out.Write(data[last:e.start])
		out.Write(e.text)
		last = e.end
	}
	out.Write(data[last:])
	return out.Bytes(), r.plan, nil
}

// rewriter walks one file, collecting edits and the plan.
type rewriter struct {
	data   []byte
	opts   Options
	fn     rewriteFunc
	layout layout
	edits  []edit
	plan   []Change
}

// projects visits Claude Code's per-project servers. Anything there not
// shaped like a project is Claude Code's business, not ours: it is skipped.
func (r *rewriter) projects(m member) error {
	projects, _ := members(r.data, m.valueStart)
	for _, p := range projects {
		fields, _ := members(r.data, p.valueStart)
		for _, f := range fields {
			if f.key == "mcpServers" {
				if err := r.servers(p.key, f); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// servers visits the entries of one mcpServers object.
func (r *rewriter) servers(project string, m member) error {
	if bytes.Equal(r.data[m.valueStart:m.valueEnd], []byte("null")) {
		return nil
	}
	entries, ok := members(r.data, m.valueStart)
	if !ok {
		return parseErrorAt(r.data, m.valueStart, `"mcpServers" is not an object`, nil)
	}
	for _, e := range entries {
		if !r.opts.selects(e.key) {
			continue
		}
		raw := r.data[e.valueStart:e.valueEnd]
		entry, ok := parseObject(raw)
		var change Change
		if ok {
			entry, change = r.fn(server{
				name:    e.key,
				rawName: r.data[e.keyStart:stringEnd(r.data, e.keyStart)],
				entry:   entry,
			})
		} else {
			change = Change{Action: Skip, Detail: "not a JSON object"}
		}
		change.Project, change.Server = project, e.key
		r.plan = append(r.plan, change)
		if change.Action != Skip {
			text := r.layout.restyle(raw, entry.marshal(), linePrefix(r.data, e.keyStart), r.layout.indent != "")
			r.edits = append(r.edits, edit{start: e.valueStart, end: e.valueEnd, text: text})
		}
	}
	return nil
}
