package main

import (
	"bytes"
	"context"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestCLI: every subcommand reports a bad flag or value the same way, on
// stderr with exit code 2; help goes to stdout with exit code 0.
func TestCLI(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		args      []string
		code      int
		stdout    string // a substring; "" means empty
		stderr    string // the first line exactly; "" means empty
		notStdout string
	}{
		{name: "duration without a unit", args: []string{"--ready-timeout", "5", "--", "srv"}, code: exitUsage,
			stderr: `mcpwrap: --ready-timeout: "5" needs a unit, e.g. 5s`},
		{name: "not a duration", args: []string{"--ready-timeout=soon", "--", "srv"}, code: exitUsage,
			stderr: `mcpwrap: --ready-timeout: "soon" is not a duration, e.g. 500ms, 5s or 2m`},
		{name: "call timeout without a unit", args: []string{"--call-timeout", "30", "--", "srv"}, code: exitUsage,
			stderr: `mcpwrap: --call-timeout: "30" needs a unit, e.g. 30s`},
		{name: "negative call timeout", args: []string{"--call-timeout", "-1s", "--", "srv"}, code: exitUsage,
			stderr: `mcpwrap: --call-timeout: "-1s" is negative; 0 means no timeout`},
		{name: "not a number", args: []string{"--max-line-bytes", "1MiB", "--", "srv"}, code: exitUsage,
			stderr: `mcpwrap: --max-line-bytes: "1MiB" is not a whole number`},
		{name: "unknown flag", args: []string{"--nmae", "x", "--", "srv"}, code: exitUsage, stderr: "mcpwrap: unknown flag --nmae"},
		{name: "flag without its value", args: []string{"--url"}, code: exitUsage, stderr: "mcpwrap: --url needs a value"},
		{name: "no server", args: []string{"--name", "x"}, code: exitUsage,
			stderr: "mcpwrap: no server: put its command after --, as in: mcpwrap -- npx -y @modelcontextprotocol/server-everything, or give --url"},
		{name: "doctor bad duration", args: []string{"doctor", "--timeout", "10"}, code: exitUsage,
			stderr: `mcpwrap doctor: --timeout: "10" needs a unit, e.g. 10s`},
		{name: "status unknown flag", args: []string{"status", "--jsn"}, code: exitUsage, stderr: "mcpwrap status: unknown flag --jsn"},
		{name: "status bad bool", args: []string{"status", "--json=maybe"}, code: exitUsage,
			stderr: `mcpwrap status: --json: "maybe" is not true or false`},
		{name: "uninstall has no --log-dir", args: []string{"uninstall", "--log-dir", "/tmp"}, code: exitUsage,
			stderr: "mcpwrap uninstall: unknown flag --log-dir"},
		{name: "uninstall help lists no install-only flag", args: []string{"uninstall", "--help"}, stdout: "Usage: mcpwrap uninstall", notStdout: "log-dir"},
		{name: "install help", args: []string{"install", "-h"}, stdout: "-log-dir"},
		{name: "demo help", args: []string{"demo", "--help"}, stdout: "Usage: mcpwrap demo"},
		{name: "demo extra argument", args: []string{"demo", "now"}, code: exitUsage, stderr: `mcpwrap demo: unexpected arguments ["now"]`},
		{name: "help", args: []string{"help"}, stdout: "mcpwrap help [COMMAND]"},
		{name: "help of a command", args: []string{"help", "doctor"}, stdout: "Usage: mcpwrap doctor"},
		{name: "help of tools", args: []string{"help", "tools"}, stdout: "mcpwrap tools"},
		{name: "help of an unknown command", args: []string{"help", "doctr"}, code: exitUsage,
			stderr: `mcpwrap help: unknown command "doctr"; the commands are tools, doctor, status, login, logout, install, uninstall, ui, demo, version`},
		{name: "login without a name", args: []string{"login"}, code: exitUsage, stderr: "mcpwrap login: give the server's name, as in: mcpwrap login linear"},
		{name: "login bad url", args: []string{"login", "api", "--url", "ws://h/mcp"}, code: exitUsage,
			stderr: `mcpwrap login: invalid configuration: --url: scheme "ws": want an http or https URL`},
		{name: "help of login", args: []string{"help", "login"}, stdout: "Usage: mcpwrap login NAME"},
		{name: "--help", args: []string{"--help"}, stdout: "Exit codes:"},
		{name: "--version", args: []string{"--version"}, stdout: "mcpwrap "},
		{name: "version", args: []string{"version"}, stdout: "mcpwrap "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tt.args, strings.NewReader(""), &stdout, &stderr)
			assert.Equal(t, tt.code, code, "stderr: %s", stderr.String())
			if tt.stdout == "" {
				assert.Empty(t, stdout.String())
			} else {
				assert.Contains(t, stdout.String(), tt.stdout)
			}
			if tt.notStdout != "" {
				assert.NotContains(t, stdout.String(), tt.notStdout)
			}
			if tt.stderr == "" {
				assert.Empty(t, stderr.String())
			} else {
				first, rest, _ := strings.Cut(stderr.String(), "\n")
				assert.Equal(t, tt.stderr, first)
				assert.Contains(t, rest, "--help' for usage.")
			}
		})
	}
}

func TestVersionOf(t *testing.T) {
	vcs := func(rev, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
	}
	tests := []struct {
		name    string
		info    *debug.BuildInfo
		stamped string
		want    string
	}{
		{name: "a release", info: &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, want: "v1.2.3 (commit unknown: built without VCS information; build with make)"},
		{name: "a release with its commit", info: &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}, Settings: vcs("0123456789abcdef0123", "false")}, want: "v1.2.3 (commit 0123456789ab)"},
		{name: "a modified checkout", info: &debug.BuildInfo{Settings: vcs("0123456789abcdef", "true")}, want: "(devel) (commit 0123456789ab, modified)"},
		{name: "-buildvcs=false, stamped by make", info: &debug.BuildInfo{}, stamped: "fedcba9876543210", want: "(devel) (commit fedcba987654)"},
		{name: "stamped from a modified tree", info: &debug.BuildInfo{}, stamped: "fedcba9876543210-modified", want: "(devel) (commit fedcba987654, modified)"},
		{name: "the toolchain's record wins", info: &debug.BuildInfo{Settings: vcs("0123456789abcdef", "false")}, stamped: "fedcba9876543210", want: "(devel) (commit 0123456789ab)"},
		{name: "no build info", stamped: "abc", want: "(devel) (commit abc)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, versionOf(tt.info, tt.stamped))
		})
	}
}
