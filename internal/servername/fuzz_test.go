package servername

import (
	"strings"
	"testing"
)

// FuzzDerive: any command line or URL gets a non-empty name made of name
// characters, and its description never holds an argument after the one
// that identifies the server.
func FuzzDerive(f *testing.F) {
	f.Add("npx\x00-y\x00@modelcontextprotocol/server-filesystem@1.0\x00/home", "")
	f.Add("docker\x00run\x00-i\x00--rm\x00-e\x00K\x00ghcr.io/a/b:1", "")
	f.Add("uv\x00--directory\x00/w\x00run\x00main.py", "")
	f.Add("", "http://[::1]:8080/mcp")
	f.Fuzz(func(t *testing.T, cmdline, rawURL string) {
		var command []string
		if cmdline != "" {
			command = strings.Split(cmdline, "\x00")
		}
		name := Derive(command, rawURL)
		if name == "" || strings.ContainsAny(name, " \t\n/\\\"'") {
			t.Fatalf("Derive(%q, %q) = %q", command, rawURL, name)
		}
		_ = Identify(command, rawURL).Describe()
	})
}
