// Package toolscli implements `mcpwrap tools`: the out-of-band commands with
// which a user lists the tools of the wrapped servers and enables, disables,
// approves and diffs them (docs/DESIGN.md, Tool availability).
//
// The commands read the config file and edit the user state store shared
// with every running sidecar, which notices a change within about a second.
// They are the only way to enable or approve a tool: nothing reachable over
// MCP can. Statuses are computed exactly as a sidecar computes them, from
// the config and the last catalog each sidecar recorded in the store.
package toolscli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/mcpwrap/mcpwrap/internal/config"
	"github.com/mcpwrap/mcpwrap/internal/state"
	"github.com/mcpwrap/mcpwrap/internal/stores"
)

// Exit codes of Run.
const (
	// ExitOK: the command did what was asked.
	ExitOK = 0
	// ExitError: the config or the state store could not be used, or a
	// server or tool is unknown.
	ExitError = 1
	// ExitUsage: bad command, flags or arguments.
	ExitUsage = 2
	// ExitRefused: enabling a tool was refused because operator policy (the
	// config) turns it off, which no user command can override.
	ExitRefused = 3
)

// Env is the process environment Run consults. The zero Env is an empty
// environment with the real clock.
type Env struct {
	// Getenv looks up an environment variable (os.Getenv); nil means none
	// is set. It locates the config file and the state directory.
	Getenv func(string) string
	// Now returns the current time (time.Now when nil); approvals are
	// stamped with it.
	Now func() time.Time
}

const overview = `Usage: mcpwrap tools COMMAND [flags] [ARGS...]

List the tools of the wrapped servers and change which of them may be called.
Changes go to the user state store shared by every mcpwrap sidecar; running
sidecars pick them up within about a second. Operator policy (the config file)
always wins: a tool it turns off cannot be enabled here.

Commands:
  list [SERVER] [--json]            every known tool with its status
  enable SERVER TOOL...             undo the user's disabling of tools
  disable SERVER TOOL...            disable tools for every client of a server
  approve SERVER (TOOL...|--all)    approve the current definition of tools
  diff SERVER TOOL                  how a tool changed since it was approved

Flags of every command:
  --config FILE     config file (default: $MCPWRAP_CONFIG, else <user config dir>/mcpwrap/config.json)
  --state-dir DIR   user state directory (default: $MCPWRAP_STATE_DIR, else the OS per-user state dir)
  --store LOCATION  the state store: file (the state directory) or a postgres:// URL, its password in
                    $PGPASSWORD or $PGPASSFILE (default: $MCPWRAP_STORE, else the config file's store, else file)
  --help            show the command's help
` + exitCodesHelp

const exitCodesHelp = `
Exit codes:
  0  ok
  1  error: unusable config or state store, unknown server or tool
  2  usage: bad command, flags or arguments
  3  refused by operator policy: the config turns the tool off
`

// Run executes `mcpwrap tools ARGS...` and returns the exit code. Results go
// to stdout; warnings, errors and refusals to stderr. Run may be called
// concurrently, also by several processes: the store serialises the writes.
func Run(ctx context.Context, args []string, env Env, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, overview)
		return ExitUsage
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, overview)
		return ExitOK
	}
	cmd := lookup(args[0])
	if cmd == nil {
		fmt.Fprintf(stderr, "mcpwrap tools: unknown command %q; run 'mcpwrap tools --help' for the commands\n", args[0])
		return ExitUsage
	}
	prefix := "mcpwrap tools " + cmd.name + ": "

	fs := flag.NewFlagSet("mcpwrap tools "+cmd.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // Run reports parse errors and help itself
	var configFlag, stateDirFlag, storeFlag string
	fs.StringVar(&configFlag, "config", "", "config file (default: $MCPWRAP_CONFIG, else <user config dir>/mcpwrap/config.json)")
	fs.StringVar(&stateDirFlag, "state-dir", "", "user state directory (default: $MCPWRAP_STATE_DIR, else the OS per-user state dir)")
	fs.StringVar(&storeFlag, "store", "", "the state store: file or a postgres:// URL (default: $MCPWRAP_STORE, else the config file's store, else file)")
	act := cmd.bind(fs)
	operands, err := parseInterspersed(fs, args[1:])
	if errors.Is(err, flag.ErrHelp) {
		cmd.printHelp(stdout, fs)
		return ExitOK
	}
	if err == nil {
		err = cmd.checkArity(operands)
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s%v\nRun 'mcpwrap tools %s --help' for usage.\n", prefix, err, cmd.name)
		return ExitUsage
	}

	c, err := open(configFlag, stateDirFlag, storeFlag, env, stdout, stderr)
	if err == nil {
		defer c.stores.Close()
		err = act(ctx, c, operands)
	}
	return report(stderr, prefix, err)
}

// report prints err, if it has anything to say, and returns its exit code.
func report(stderr io.Writer, prefix string, err error) int {
	var usage *usageError
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, errRefused):
		return ExitRefused // each refusal was explained as it happened
	case errors.As(err, &usage):
		fmt.Fprintf(stderr, "%s%v\n", prefix, err)
		return ExitUsage
	}
	fmt.Fprintf(stderr, "%s%v\n", prefix, err)
	return ExitError
}

// errRefused is returned by a command that refused some of its work because
// operator policy forbids it, after explaining each refusal on stderr.
var errRefused = errors.New("refused by operator policy")

// usageError is a command line that does not make sense.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// cli is what a command works with: the loaded config, the state store and
// the output streams.
type cli struct {
	config *config.File
	store  state.Store
	stores stores.Set // what store was opened, closed when the command ends
	now    func() time.Time
	stdout io.Writer
	stderr io.Writer
}

// open resolves and loads the config file and opens the state store, as the
// wrap command does.
func open(configFlag, stateDirFlag, storeFlag string, env Env, stdout, stderr io.Writer) (*cli, error) {
	getenv := env.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	now := env.Now
	if now == nil {
		now = time.Now
	}
	file, err := config.Open(configFlag, getenv)
	if err != nil {
		return nil, err // names the file and the problem
	}
	dir, err := config.StateDir(stateDirFlag, getenv)
	if err != nil {
		return nil, fmt.Errorf("state directory: %w (use --state-dir or $%s)", err, config.EnvStateDir)
	}
	c := &cli{config: file, now: now, stdout: stdout, stderr: stderr}
	location, from := config.StoreLocation(storeFlag, getenv, file)
	if c.store, err = c.stores.Open(location, from, dir, nil); err != nil {
		return nil, err
	}
	return c, nil
}

// parseInterspersed parses fs's flags wherever they appear among the
// operands, as in `list SERVER --json`, and returns the operands in order.
// Everything after a `--` is an operand, so a tool whose name starts with a
// dash can still be named.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var operands []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(operands, rest...), nil // flag.Parse stopped at the terminator
		}
		if len(rest) == 0 {
			return operands, nil
		}
		operands = append(operands, rest[0])
		args = rest[1:]
	}
}

// toolRef names a tool of a server in messages.
func toolRef(server, tool string) string { return server + "/" + tool }

// quoteList renders names as a readable comma-separated list.
func quoteList(names []string) string {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(quoted, ", ")
}
