package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/mcpwrap/mcpwrap/internal/demo"
)

func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprintln(stderr, "usage: mcpwrap demo")
		return exitUsage
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
