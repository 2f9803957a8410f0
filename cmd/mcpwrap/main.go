// Command mcpwrap wraps an MCP server for any MCP client: resilient loading,
// tool availability policy and disabled-tool discovery, with everything else
// passed through byte for byte.
//
//	mcpwrap [flags] -- COMMAND [ARGS...]   wrap a stdio server
//	mcpwrap demo                           a narrated, self-contained showcase
//
// Run `mcpwrap --help` for the flags and exit codes.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/mcpwrap/mcpwrap/internal/demo"
	"github.com/mcpwrap/mcpwrap/internal/testserver"
	"github.com/mcpwrap/mcpwrap/internal/toolscli"
	"github.com/mcpwrap/mcpwrap/internal/upstream"
)

// Exit codes.
const (
	exitOK    = 0 // clean shutdown
	exitError = 1 // the session or command ended with an error
	exitUsage = 2 // bad flags, config or arguments
)

func main() {
	upstream.RunGuardianIfRequested() // exits here when this process is a child's guardian
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run dispatches to a subcommand and returns the exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "help":
			return runHelp(ctx, args[1:], stdout, stderr)
		case "--version", "-version":
			fmt.Fprintln(stdout, "mcpwrap", version())
			return exitOK
		case "demo":
			return runDemo(ctx, args[1:], stdout, stderr)
		case "tools":
			return toolscli.Run(ctx, args[1:], toolscli.Env{Getenv: os.Getenv, Now: time.Now}, stdout, stderr)
		case "doctor":
			return runDoctor(ctx, args[1:], stdout, stderr)
		case "status":
			return runStatus(ctx, args[1:], stdout, stderr)
		case "login", "logout":
			return runLogin(ctx, args[0], args[1:], stdout, stderr)
		case "install", "uninstall":
			return runInstall(ctx, args[1:], args[0] == "uninstall", stdout, stderr)
		case "demo-browser": // hidden: the demo's headless stand-in for a browser
			return demo.Browse(args[1:], stderr)
		case "demo-server": // hidden: the built-in server the demo and tests wrap
			return testserver.Main(args[1:], stdin, stdout, stderr)
		case "version":
			if len(args) > 1 {
				return usageFailed(stderr, "mcpwrap version", fmt.Errorf("unexpected arguments %q", args[1:]))
			}
			fmt.Fprintln(stdout, "mcpwrap", version())
			return exitOK
		}
	}
	if len(args) > 0 {
		if c := misspeltCommand(args[0], exec.LookPath); c != "" {
			return usageFailed(stderr, "mcpwrap", fmt.Errorf("unknown command %q; did you mean %q? (to wrap a program of that name, put -- before it)", args[0], c))
		}
	}
	return runWrap(ctx, args, stdin, stdout, stderr)
}

// commands are the subcommands `mcpwrap help COMMAND` knows; each prints
// its usage when given --help.
var commands = []string{"tools", "doctor", "status", "login", "logout", "install", "uninstall", "demo", "version"}

// runHelp is `mcpwrap help [COMMAND]`: the usage of mcpwrap or of one
// subcommand, on stdout.
func runHelp(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	switch {
	case len(args) == 0:
		return runWrap(ctx, []string{"--help"}, nil, stdout, stderr)
	case len(args) > 1:
		return usageFailed(stderr, "mcpwrap help", fmt.Errorf("unexpected arguments %q; give one command", args[1:]))
	case args[0] == "version":
		fmt.Fprintln(stdout, "Usage: mcpwrap version (or mcpwrap --version)\n\nPrints the module version and the commit mcpwrap was built from.")
		return exitOK
	case slices.Contains(commands, args[0]):
		return run(ctx, []string{args[0], "--help"}, nil, stdout, stderr)
	}
	return usageFailed(stderr, "mcpwrap help", fmt.Errorf("unknown command %q; the commands are %s", args[0], strings.Join(commands, ", ")))
}
