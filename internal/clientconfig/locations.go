package clientconfig

import (
	"cmp"
	"fmt"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
)

// The clients whose config files this package knows, as --client spells them.
// ClaudeCodeProject and CursorProject name only the working directory's
// project files (.mcp.json, .cursor/mcp.json), which ClaudeCode and Cursor
// include too.
const (
	ClaudeDesktop     = "claude-desktop"
	ClaudeCode        = "claude-code"
	ClaudeCodeProject = "claude-code-project"
	Cursor            = "cursor"
	CursorProject     = "cursor-project"
	AllClients        = "all"
)

// clients lists the clients Locations knows, in the order it returns them;
// AllClients means the first three, which include the project files.
var clients = []string{ClaudeDesktop, ClaudeCode, Cursor, ClaudeCodeProject, CursorProject}

// Location is one config file a client reads MCP servers from.
type Location struct {
	// Client is ClaudeDesktop, ClaudeCode or Cursor for a user's own file,
	// ClaudeCodeProject or CursorProject for a project's.
	Client string
	Path   string
}

// Project reports whether the file is the working directory's project
// config. A cloned repository writes it, so whatever its entries would run
// is untrusted: nothing may start them unless the user names them (Claude
// Code itself asks before starting a project's servers).
func (l Location) Project() bool { return l.Client == ClaudeCodeProject || l.Client == CursorProject }

// Platform is the machine whose client configs [Locations] finds. Its zero
// value finds nothing.
type Platform struct {
	// GOOS is the operating system, as runtime.GOOS; "" means this one.
	GOOS string
	// Home is the user's home directory; "" leaves out the files under it.
	Home string
	// Dir is the working directory, whose project configs count; "" leaves
	// them out.
	Dir string
	// Getenv reads the environment (APPDATA, XDG_CONFIG_HOME,
	// CLAUDE_CONFIG_DIR); nil means an empty one.
	Getenv func(string) string
}

// Locations returns the config files client may read MCP servers from,
// whether or not they exist: the caller checks. client is one of the
// constants above; AllClients or "" means every one. It fails with
// [ErrUnknownClient].
//
// Claude Desktop: claude_desktop_config.json in the OS's app data directory.
// Claude Code: ~/.claude.json (or $CLAUDE_CONFIG_DIR/.claude.json), whose
// user-level and per-project servers [Install] both handles, and the
// project's .mcp.json. Cursor: ~/.cursor/mcp.json and the project's
// .cursor/mcp.json.
func Locations(client string, p Platform) ([]Location, error) {
	wanted := []string{client}
	switch {
	case client == "" || client == AllClients:
		wanted = clients[:3]
	case !slices.Contains(clients, client):
		return nil, fmt.Errorf("%w %q: want one of %s or %s",
			ErrUnknownClient, client, strings.Join(clients, ", "), AllClients)
	}
	p.GOOS = cmp.Or(p.GOOS, runtime.GOOS)
	if p.Getenv == nil {
		p.Getenv = func(string) string { return "" }
	}
	var locs []Location
	add := func(client string, dir string, elem ...string) {
		if dir == "" {
			return
		}
		loc := Location{Client: client, Path: p.join(dir, elem...)}
		if slices.ContainsFunc(locs, func(l Location) bool { return l.Path == loc.Path }) {
			return // the project may be the home directory: its file is the user's own
		}
		locs = append(locs, loc)
	}
	for _, c := range wanted {
		switch c {
		case ClaudeDesktop:
			add(c, p.appDataDir(), "Claude", "claude_desktop_config.json")
		case ClaudeCode:
			if dir := p.Getenv("CLAUDE_CONFIG_DIR"); dir != "" {
				add(c, dir, ".claude.json")
			} else {
				add(c, p.Home, ".claude.json")
			}
			add(ClaudeCodeProject, p.Dir, ".mcp.json")
		case ClaudeCodeProject:
			add(c, p.Dir, ".mcp.json")
		case Cursor:
			add(c, p.Home, ".cursor", "mcp.json")
			add(CursorProject, p.Dir, ".cursor", "mcp.json")
		case CursorProject:
			add(c, p.Dir, ".cursor", "mcp.json")
		}
	}
	return locs, nil
}

// appDataDir is where Electron apps such as Claude Desktop keep their
// per-user data directory.
func (p Platform) appDataDir() string {
	switch p.GOOS {
	case "darwin":
		return p.join(p.Home, "Library", "Application Support")
	case "windows":
		if dir := p.Getenv("APPDATA"); dir != "" {
			return dir
		}
		return p.join(p.Home, "AppData", "Roaming")
	default:
		if dir := p.Getenv("XDG_CONFIG_HOME"); dir != "" {
			return dir
		}
		return p.join(p.Home, ".config")
	}
}

// join joins path elements with the separator of p's OS, which need not be
// the OS this runs on.
func (p Platform) join(dir string, elem ...string) string {
	if dir == "" {
		return ""
	}
	if p.GOOS == runtime.GOOS {
		return filepath.Join(append([]string{dir}, elem...)...)
	}
	joined := path.Join(append([]string{filepath.ToSlash(dir)}, elem...)...)
	if p.GOOS == "windows" {
		return strings.ReplaceAll(joined, "/", `\`)
	}
	return joined
}
