package toolscli

import (
	"context"
	"flag"
	"fmt"
	"io"
)

// action runs a command once its flags are parsed and its operands counted.
type action func(ctx context.Context, c *cli, operands []string) error

// command is one `mcpwrap tools` subcommand.
type command struct {
	name     string
	synopsis string // operands and the command's own flags
	help     string // what it does, for --help
	// minArgs and maxArgs bound the operand count; maxArgs < 0 is unbounded.
	minArgs, maxArgs int
	// bind defines the command's own flags on fs and returns its action,
	// which reads them once they are parsed.
	bind func(fs *flag.FlagSet) action
}

var commands = []*command{
	{
		name:     "list",
		synopsis: "[SERVER] [--json]",
		help: `Lists every known tool of SERVER, or of every server, with its status as a
running sidecar computes it: callable, or why it is locked (server_disabled,
disabled_by_config, disabled_by_user, pending_approval, disabled_unknown).
Tools are known from the last catalog a sidecar recorded, plus tools that
are only named in the user's approvals or disabled list.`,
		maxArgs: 1,
		bind: func(fs *flag.FlagSet) action {
			asJSON := fs.Bool("json", false, "print a JSON array of {server, tool, status, read_only, description, in_catalog}")
			return func(ctx context.Context, c *cli, operands []string) error {
				return c.list(ctx, operands, *asJSON)
			}
		},
	},
	{
		name:     "enable",
		synopsis: "SERVER TOOL...",
		help: `Removes the user's disabling of the tools. A tool that operator policy turns
off (the config's tools default or overrides, or the server being disabled)
cannot be enabled: the command refuses it, writes nothing for it, and exits 3.
Tools missing from the last catalog are enabled with a warning.`,
		minArgs: 2, maxArgs: -1,
		bind: func(*flag.FlagSet) action {
			return func(ctx context.Context, c *cli, operands []string) error {
				return c.enable(ctx, operands[0], operands[1:])
			}
		},
	},
	{
		name:     "disable",
		synopsis: "SERVER TOOL...",
		help: `Disables the tools for every client of the server until they are enabled
again. Tools missing from the last catalog are disabled with a warning, so a
tool can be disabled before it first appears.`,
		minArgs: 2, maxArgs: -1,
		bind: func(*flag.FlagSet) action {
			return func(ctx context.Context, c *cli, operands []string) error {
				return c.disable(ctx, operands[0], operands[1:])
			}
		},
	},
	{
		name:     "approve",
		synopsis: "SERVER (TOOL...|--all)",
		help: `Approves the current definition of the tools, as found in the last catalog a
sidecar recorded, so that they stop being pending_approval. Review changes
first with 'mcpwrap tools diff'. A tool missing from the last catalog is an
error and nothing is approved.`,
		minArgs: 1, maxArgs: -1,
		bind: func(fs *flag.FlagSet) action {
			all := fs.Bool("all", false, "approve every tool of the last catalog")
			return func(ctx context.Context, c *cli, operands []string) error {
				switch tools := operands[1:]; {
				case *all && len(tools) > 0:
					return &usageError{"give either tool names or --all, not both"}
				case !*all && len(tools) == 0:
					return &usageError{"name the tools to approve, or use --all"}
				}
				return c.approve(ctx, operands[0], operands[1:], *all)
			}
		},
	},
	{
		name:     "diff",
		synopsis: "SERVER TOOL",
		help: `Shows how the tool's definition in the last catalog differs from the one the
user approved, as a unified diff of the two definitions pretty-printed with
sorted keys; or says that nothing changed, that the tool was never approved,
or that it is not in the last catalog.`,
		minArgs: 2, maxArgs: 2,
		bind: func(*flag.FlagSet) action {
			return func(ctx context.Context, c *cli, operands []string) error {
				return c.diff(ctx, operands[0], operands[1])
			}
		},
	},
}

// lookup returns the named command, or nil.
func lookup(name string) *command {
	for _, cmd := range commands {
		if cmd.name == name {
			return cmd
		}
	}
	return nil
}

// checkArity reports a wrong number of operands as a usage error.
func (cmd *command) checkArity(operands []string) error {
	n := len(operands)
	if n < cmd.minArgs || (cmd.maxArgs >= 0 && n > cmd.maxArgs) {
		return &usageError{fmt.Sprintf("usage: mcpwrap tools %s %s", cmd.name, cmd.synopsis)}
	}
	return nil
}

// printHelp writes the command's --help text.
func (cmd *command) printHelp(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintf(w, "Usage: mcpwrap tools %s %s [flags]\n\n%s\n\nFlags:\n", cmd.name, cmd.synopsis, cmd.help)
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
	fmt.Fprint(w, exitCodesHelp)
}
