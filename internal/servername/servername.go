// Package servername derives a wrapped server's default name from what
// identifies it, and a short description of it that carries no secret.
//
// A name keys the server's operator policy, tool approvals and toggles, so
// two different servers must not share one: `node …/server-filesystem/dist/
// index.js` and `node …/server-memory/dist/index.js` are "filesystem" and
// "memory", not both "index". The identifying part is the npm or PyPI
// package a launcher (npx, bunx, pnpm dlx, uvx, pipx run) runs, the package
// directory of a script whose file name says nothing (index.js, main.py),
// the image of `docker run`, or the host of a URL.
package servername

import (
	"crypto/sha256"
	"encoding/hex"
	"net"
	"net/url"
	"path"
	"regexp"
	"strings"

	"github.com/mcpwrap/mcpwrap/internal/redact"
)

// Fallback is the name of a server nothing identifies.
const Fallback = "server"

// Source is what identifies one server.
type Source struct {
	// Program is the base name of the command run ("npx", "docker"); ""
	// for a remote server.
	Program string
	// Subject is the part that says which server it is: a package, a
	// script's path, an image, a module, a host; "" when there is none.
	Subject string
}

// Describe returns the source as "npx @scope/pkg", "docker ghcr.io/o/img",
// "https://mcp.example.com": short, and without the arguments, environment
// or URL parts that may hold secrets: a URL, a remote server's or a
// package's (uvx --from git+https://…), is shown as its origin
// (redact.Text).
// A file system path is cut to its last two elements ("node
// …/@modelcontextprotocol/server-memory"): enough to tell servers apart in
// a table.
func (s Source) Describe() string {
	subject := redact.Text(s.Subject)
	if isPath(subject) {
		p := strings.ReplaceAll(subject, `\`, "/")
		if parts := strings.Split(strings.Trim(p, "/"), "/"); len(parts) > 2 {
			subject = "…/" + strings.Join(parts[len(parts)-2:], "/")
		}
	}
	return strings.TrimSpace(s.Program + " " + subject)
}

// isPath reports whether a subject is a file system path rather than a
// package, image or URL.
func isPath(s string) bool {
	return strings.HasPrefix(s, "/") || strings.HasPrefix(s, ".") || strings.HasPrefix(s, "~") ||
		strings.Contains(s, `\`) || len(s) > 2 && s[1] == ':' && !strings.Contains(s, "://")
}

// Derive returns the default name of the server run by command, or of the
// remote server at rawURL when command is empty.
func Derive(command []string, rawURL string) string {
	return Name(Identify(command, rawURL))
}

// Identify finds what identifies the server run by command, or at rawURL
// when command is empty.
func Identify(command []string, rawURL string) Source {
	if len(command) == 0 {
		return remote(rawURL)
	}
	prog := program(command[0])
	args := command[1:]
	switch prog {
	case "cmd": // Windows: cmd /c npx ...
		if len(args) > 1 && strings.EqualFold(args[0], "/c") {
			return Identify(args[1:], "")
		}
	case "npx", "bunx", "uvx":
		return Source{Program: prog, Subject: launched(args, "-p", "--package", "--from")}
	case "npm", "pnpm", "yarn", "bun":
		if len(args) > 0 && (args[0] == "exec" || args[0] == "dlx" || args[0] == "x") {
			return Source{Program: prog, Subject: launched(args[1:], "-p", "--package")}
		}
		if prog == "bun" && len(args) > 0 && args[0] == "run" {
			args = args[1:]
		}
		return Source{Program: prog, Subject: script(firstOperand(args, nil))}
	case "pipx":
		if len(args) > 0 && args[0] == "run" {
			return Source{Program: prog, Subject: launched(args[1:], "--spec")}
		}
	case "uv":
		if i := indexOf(args, "run"); i >= 0 {
			return Source{Program: prog, Subject: uvRun(args[:i], args[i+1:])}
		}
	case "docker", "podman", "nerdctl":
		if i := indexOf(args, "run"); i >= 0 {
			return Source{Program: prog, Subject: firstOperand(args[i+1:], dockerBoolFlags)}
		}
	case "node", "deno", "tsx", "ts-node":
		if len(args) > 0 && args[0] == "run" { // deno run
			args = args[1:]
		}
		return Source{Program: prog, Subject: script(firstOperand(args, nil))}
	}
	if strings.HasPrefix(prog, "python") {
		if i := indexOf(args, "-m"); i >= 0 && i+1 < len(args) {
			return Source{Program: prog, Subject: args[i+1]}
		}
		return Source{Program: prog, Subject: script(firstOperand(args, nil))}
	}
	return Source{Program: prog}
}

// Name turns a source into a server name: the package, module, image,
// script or program name without version, scope, file extension or the
// words that every MCP server's name carries ("mcp", "server").
func Name(s Source) string {
	subject := s.Subject
	if subject == "" {
		subject = s.Program
	}
	if s.Program == "" { // a remote server
		return cleanHost(subject)
	}
	if n := tidy(subject); n != "" {
		return n
	}
	if n := tidy(s.Program); n != "" {
		return n
	}
	return Fallback
}

// Digest is a fingerprint of the whole command line or URL, to tell whether
// two sidecars run the same server without storing what may hold secrets.
func Digest(command []string, rawURL string) string {
	h := sha256.New()
	if len(command) == 0 {
		h.Write([]byte("url\x00" + rawURL))
	}
	for _, a := range command {
		h.Write([]byte(a + "\x00"))
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// program returns a command's base name, without a Windows extension.
func program(cmd string) string {
	base := cmd[strings.LastIndexAny(cmd, `/\`)+1:]
	lower := strings.ToLower(base)
	for _, ext := range []string{".exe", ".cmd", ".bat", ".ps1"} {
		if strings.HasSuffix(lower, ext) {
			return base[:len(base)-len(ext)]
		}
	}
	return base
}

// launched returns the package a launcher runs: the value of one of its
// package flags, else its first operand.
func launched(args []string, packageFlags ...string) string {
	for i, a := range args {
		if a == "--" {
			break
		}
		for _, f := range packageFlags {
			if a == f && i+1 < len(args) {
				return args[i+1]
			}
			if v, ok := strings.CutPrefix(a, f+"="); ok && strings.HasPrefix(f, "--") {
				return v
			}
		}
	}
	return firstOperand(args, nil)
}

// uvRun returns what `uv [global] run [opts] TARGET` runs: a --with or
// --from package, else the script, else the --directory it runs in.
func uvRun(global, args []string) string {
	dir := ""
	all := append(append([]string(nil), global...), args...)
	for i := 0; i+1 < len(all); i++ {
		switch all[i] {
		case "--directory", "--project":
			dir = all[i+1]
		}
	}
	for i := 0; i+1 < len(args); i++ {
		switch args[i] {
		case "--from", "--with":
			return args[i+1]
		}
	}
	target := script(firstOperand(args, uvBoolFlags))
	if (target == "" || generic(tidy(target))) && dir != "" {
		return dir
	}
	return target
}

// firstOperand returns the first argument that is not an option or an
// option's value, "" if there is none. Options take a value unless they
// carry it (--k=v), start with a single dash and one letter cluster in
// bools, or are listed in bools.
func firstOperand(args []string, bools map[string]bool) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			if i+1 < len(args) {
				return args[i+1]
			}
			return ""
		case !strings.HasPrefix(a, "-") || a == "-":
			return a
		case bools == nil, strings.Contains(a, "="), bools[a]:
			// launchers' flags (-y, --yes) take no value
		default:
			i++ // the option's value
		}
	}
	return ""
}

// dockerBoolFlags are the `docker run` options that take no value.
var dockerBoolFlags = set("-i", "-t", "-it", "-ti", "-d", "--rm", "--init", "--interactive", "--tty",
	"--detach", "--privileged", "--read-only", "-q", "--quiet", "-P", "--publish-all", "--no-healthcheck")

// uvBoolFlags are the `uv run` options that take no value.
var uvBoolFlags = set("-q", "--quiet", "-v", "--verbose", "--no-project", "--isolated", "--frozen",
	"--locked", "--no-sync", "--offline", "--active", "--no-dev", "--all-extras", "--script", "-s", "-m", "--module")

func set(keys ...string) map[string]bool {
	m := make(map[string]bool, len(keys))
	for _, k := range keys {
		m[k] = true
	}
	return m
}

func indexOf(args []string, s string) int {
	for i, a := range args {
		if a == s {
			return i
		}
	}
	return -1
}

// genericFiles are script names that say nothing about the server; the
// directories above them do.
var genericFiles = set("index", "main", "server", "cli", "app", "run", "start", "__main__", "mcp", "stdio", "bin")

// buildDirs are directories between a package and its entry point.
var buildDirs = set("dist", "build", "lib", "src", "bin", "out", "esm", "cjs", "cli", "js", "node_modules")

// script returns what identifies a script path: the path itself when its
// file name says something, else the package directory above it.
func script(p string) string {
	p = strings.ReplaceAll(p, `\`, "/")
	if p == "" || !generic(tidy(path.Base(p))) {
		return p
	}
	dir := path.Dir(p)
	for dir != "." && dir != "/" && dir != "" {
		base := path.Base(dir)
		if !buildDirs[strings.ToLower(base)] && !generic(tidy(base)) {
			return dir
		}
		dir = path.Dir(dir)
	}
	return p
}

// generic reports whether a tidied name identifies nothing.
func generic(name string) bool { return name == "" || genericFiles[name] }

var (
	versionSuffix = regexp.MustCompile(`(==|>=|<=|~=|!=|[<>@\[~;]).*$`)
	invalid       = regexp.MustCompile(`[^A-Za-z0-9._-]+`)
)

// tidy reduces a package, module, image or path to a bare name:
// "@modelcontextprotocol/server-filesystem@1.2.0" → "filesystem",
// "ghcr.io/github/github-mcp-server:v1" → "github", "mcp_server_git" →
// "git", ".../weather/server.py" → "server" (script decides on paths).
func tidy(s string) string {
	s = strings.TrimSpace(strings.ReplaceAll(s, `\`, "/"))
	scope := ""
	if strings.HasPrefix(s, "@") { // npm scope: @scope/name@version
		rest := s[1:]
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			scope, s = rest[:i], rest[i+1:]
		}
	}
	if strings.Contains(s, "://") { // git+https://…/repo.git
		s = strings.TrimSuffix(s, "/")
	}
	s = strings.TrimSuffix(s, "/")
	s = path.Base(s)
	if i := strings.IndexAny(s, "@"); i > 0 {
		s = s[:i] // name@version, image@sha256:…
	}
	if i := strings.LastIndexByte(s, ':'); i > 0 {
		s = s[:i] // image:tag
	}
	s = versionSuffix.ReplaceAllString(s, "")
	for _, ext := range []string{".js", ".mjs", ".cjs", ".ts", ".mts", ".py", ".git", ".jar", ".exe", ".cmd", ".sh"} {
		s = strings.TrimSuffix(s, ext)
	}
	name := strip(s)
	if name == "" || generic(strings.ToLower(name)) {
		if scope != "" {
			return strip(scope)
		}
	}
	return name
}

// strip removes the words every MCP server's name carries and characters
// that do not belong in a name.
func strip(s string) string {
	s = invalid.ReplaceAllString(s, "-")
	lower := strings.ToLower(s)
	for _, p := range []string{"mcp-server-", "mcp_server_", "server-mcp-", "server-", "mcp-", "mcp_"} {
		if strings.HasPrefix(lower, p) && len(s) > len(p) {
			s, lower = s[len(p):], lower[len(p):]
			break
		}
	}
	for _, x := range []string{"-mcp-server", "_mcp_server", "-mcp", "_mcp", "-server"} {
		if strings.HasSuffix(lower, x) && len(s) > len(x) {
			s = s[:len(s)-len(x)]
			break
		}
	}
	return strings.Trim(s, "-._")
}

// remote identifies a remote server by its URL's host, with the port when
// the host is a loopback one (two local servers differ only by port).
func remote(rawURL string) Source {
	u, err := url.Parse(rawURL)
	if err != nil || u.Hostname() == "" {
		return Source{Subject: "remote"} // a URL shown would be redacted to "remote:"
	}
	host := u.Hostname()
	if u.Port() != "" && isLocal(host) {
		host = net.JoinHostPort(host, u.Port())
	}
	return Source{Subject: u.Scheme + "://" + host}
}

func isLocal(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && (ip.IsLoopback() || ip.IsUnspecified())
}

// cleanHost names a remote server after its host: "https://mcp.linear.app"
// → "mcp.linear.app", "http://127.0.0.1:8931" → "127.0.0.1-8931".
func cleanHost(subject string) string {
	_, host, _ := strings.Cut(subject, "://")
	host = strings.TrimPrefix(host, "www.")
	host = strings.NewReplacer("[", "", "]", "", ":", "-").Replace(host)
	host = strings.Trim(invalid.ReplaceAllString(host, "-"), "-._")
	if host == "" {
		return "remote"
	}
	return host
}
