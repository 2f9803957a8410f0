package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/mcpwrap/mcpwrap/internal/demo"
)

const demoUsage = `Usage: mcpwrap demo

A narrated, self-contained showcase in five acts: real MCP clients talk
through mcpwrap to its built-in demo server while each step is explained.
1. A perfect wire: everything passes through byte for byte.
2. A flaky server: failed starts retried, a crash recovered.
3. Which tools may be called, and why not: policy, discovery, the tools CLI.
4. A server that needs you to sign in.
5. What it did: a tool call's trace, client -> mcpwrap -> server.
Everything it writes lives in a temporary directory, removed at the end.

Exit codes: 0 the demo ran, 1 it failed, 2 bad arguments.
`

func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcpwrap demo", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(fs.Output(), demoUsage) }
	if err := parseFlags(fs, args, stdout); err != nil {
		if errors.Is(err, errHelp) {
			return exitOK
		}
		return usageFailed(stderr, "mcpwrap demo", err)
	}
	if fs.NArg() > 0 {
		return usageFailed(stderr, "mcpwrap demo", fmt.Errorf("unexpected arguments %q", fs.Args()))
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(stderr, "mcpwrap demo:", err)
		return exitUsage
	}
	if err := demo.Run(ctx, self, stdout); err != nil {
		fmt.Fprintln(stderr, "mcpwrap demo:", err)
		return exitError
	}
	return exitOK
}
