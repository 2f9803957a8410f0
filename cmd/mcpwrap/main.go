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
	"os/signal"
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
		case "demo":
			return runDemo(ctx, args[1:], stdout, stderr)
		case "tools":
			return toolscli.Run(ctx, args[1:], toolscli.Env{Getenv: os.Getenv, Now: time.Now}, stdout, stderr)
		case "doctor":
			return runDoctor(ctx, args[1:], stdout, stderr)
		case "status":
			return runStatus(args[1:], stdout, stderr)
		case "login", "logout":
			return runLogin(ctx, args[0], args[1:], stdout, stderr)
		case "install", "uninstall":
			return runInstall(args[1:], args[0] == "uninstall", stdout, stderr)
		case "demo-browser": // hidden: the demo's headless stand-in for a browser
			return demo.Browse(args[1:], stderr)
		case "demo-server": // hidden: the built-in server the demo and tests wrap
			return testserver.Main(args[1:], stdin, stdout, stderr)
		case "version":
			fmt.Fprintln(stdout, "mcpwrap", version())
			return exitOK
		}
	}
	return runWrap(ctx, args, stdin, stdout, stderr)
}
