package doctor

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Entry is one MCP server of a client config file (Claude Desktop, Claude
// Code, Cursor: the "mcpServers" object), as the client would start it.
type Entry struct {
	// Name is the entry's key.
	Name string
	// Project is the project directory of a Claude Code per-project entry,
	// "" for the file's own servers.
	Project string
	// Command and Args start a stdio server.
	Command string
	Args    []string
	// Env is what the client adds to the environment of the process it
	// starts (for a remote entry, what its header values may refer to).
	Env map[string]string
	// URL is a remote server's endpoint; "" for a stdio server.
	URL string
	// Type is the entry's "type" ("stdio", "http", "sse"), if any.
	Type string
	// Headers are a remote server's HTTP headers.
	Headers map[string]string
}

// Remote reports whether the client connects to the server over HTTP.
func (e Entry) Remote() bool { return e.Command == "" && e.URL != "" }

// Wrapped reports whether the entry runs the mcpwrap sidecar, whose
// command line (Args) then says what it wraps: mcpwrap flags, then "--"
// and a command, or --url. Another mcpwrap subcommand is not wrapped.
func (e Entry) Wrapped() bool {
	base := e.Command[strings.LastIndexAny(e.Command, `/\`)+1:]
	if !strings.EqualFold(base, "mcpwrap") && !strings.EqualFold(base, "mcpwrap.exe") {
		return false
	}
	if len(e.Args) == 0 || !strings.HasPrefix(e.Args[0], "-") {
		return false
	}
	for _, a := range e.Args {
		flag, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if a == "--" || strings.HasPrefix(a, "-") && flag == "url" {
			return true
		}
	}
	return false
}

// ErrNoServers is returned by [ReadEntries] for a file with no
// "mcpServers" object.
var ErrNoServers = errors.New(`no "mcpServers" in the file`)

// rawEntry is an entry as clients write it.
type rawEntry struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
	URL     string            `json:"url"`
	Type    string            `json:"type"`
	Headers map[string]string `json:"headers"`
}

// ReadEntries returns the servers of a client config file, in file order:
// its "mcpServers" and, for Claude Code's ~/.claude.json, those of the
// project at projectDir ("" for none) in "projects". An entry that is
// neither a stdio nor a remote server is an error naming it.
func ReadEntries(data []byte, projectDir string) ([]Entry, error) {
	var file struct {
		MCPServers json.RawMessage `json:"mcpServers"`
		Projects   map[string]struct {
			MCPServers json.RawMessage `json:"mcpServers"`
		} `json:"projects"`
	}
	if err := json.Unmarshal(data, &file); err != nil {
		return nil, err
	}
	var project json.RawMessage
	if p, ok := file.Projects[projectDir]; ok && projectDir != "" {
		project = p.MCPServers
	}
	if isNull(file.MCPServers) && isNull(project) {
		return nil, ErrNoServers
	}
	entries, err := readServers(file.MCPServers, "")
	if err != nil {
		return nil, err
	}
	more, err := readServers(project, projectDir)
	if err != nil {
		return nil, err
	}
	return append(entries, more...), nil
}

func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || bytes.Equal(raw, []byte("null"))
}

// readServers decodes one mcpServers object, keeping its keys' order.
func readServers(raw json.RawMessage, project string) ([]Entry, error) {
	if isNull(raw) {
		return nil, nil
	}
	names, err := objectKeys(raw)
	if err != nil {
		return nil, fmt.Errorf(`"mcpServers": %w`, err)
	}
	var servers map[string]rawEntry
	if err := json.Unmarshal(raw, &servers); err != nil {
		return nil, fmt.Errorf(`"mcpServers": %w`, err)
	}
	var out []Entry
	for _, name := range names {
		r := servers[name]
		e := Entry{Name: name, Project: project, Command: r.Command, Args: r.Args, Env: r.Env,
			URL: r.URL, Type: r.Type, Headers: r.Headers}
		if e.Command == "" && e.URL == "" {
			return nil, fmt.Errorf("server %q has neither command nor url", name)
		}
		out = append(out, e)
	}
	return out, nil
}

// objectKeys returns the keys of a JSON object in order, each once.
func objectKeys(raw json.RawMessage) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("not an object")
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := tok.(string)
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, err
		}
		if !slices.Contains(keys, key) {
			keys = append(keys, key)
		}
	}
	return keys, nil
}
