package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mcpwrap/mcpwrap/internal/clientconfig"
	"github.com/mcpwrap/mcpwrap/internal/config"
)

const installUsage = `Usage: mcpwrap %[1]s (--client C | --config-path FILE) [--server NAME]... [--dry-run]

%[2]s

Every file written is backed up first, beside it (FILE%[3]s<time>,
mode 0600: it may hold secrets); the 3 newest backups of each file are kept.
A file its client saves meanwhile is read and planned again, never
overwritten (FILE.lock, Claude Code's lock, is waited for).
Restart the client afterwards. Exit codes: 0 done, 1 a file could not be
read or written (or a --server is in no file), 2 bad flags.

Flags:
`

const installAbout = `Puts mcpwrap in front of the MCP servers of Claude Desktop, Claude Code or
Cursor: each stdio entry runs "mcpwrap --name NAME -- COMMAND ARGS..." and
each remote entry "mcpwrap --name NAME --url '${VAR}'", its URL and header
values moved into the entry's env (no secret on a command line). A remote
entry without an Authorization header signs in through mcpwrap (the plan
says so: run "mcpwrap login NAME" once). Entries running mcp-remote become
native --url entries with their options mapped, unless --keep-mcp-remote or
an option mcpwrap cannot carry over keeps them stdio children. Entries
already wrapped are left alone.`

const uninstallAbout = `Restores the MCP server entries that mcpwrap install wrapped, exactly as
they were.`

// runInstall is `mcpwrap install` and, with uninstall set, `mcpwrap uninstall`.
func runInstall(ctx context.Context, args []string, uninstall bool, stdout, stderr io.Writer) int {
	cmd, about := "install", installAbout
	if uninstall {
		cmd, about = "uninstall", uninstallAbout
	}
	fs := flag.NewFlagSet("mcpwrap "+cmd, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), installUsage, cmd, about, clientconfig.BackupSuffix)
		fs.PrintDefaults()
	}
	client := fs.String("client", "", "whose config to change: claude-desktop, claude-code, cursor or all (required unless --config-path)")
	path := fs.String("config-path", "", "change this client config file instead (any file with \"mcpServers\")")
	var servers listFlag
	fs.Var(&servers, "server", "only this server entry; repeatable (default: every entry)")
	dryRun := fs.Bool("dry-run", false, "print the plan, write nothing")
	logDir := new(string)
	var keepMCPRemote *bool
	if !uninstall {
		fs.StringVar(logDir, "log-dir", "", `where each wrapped server logs, in <server>.log (default: <state dir>/logs; "none": to the client's own log of the server's stderr)`)
		keepMCPRemote = fs.Bool("keep-mcp-remote", false, "keep entries that run mcp-remote as stdio children instead of converting them to native --url entries")
	}
	if err := parseFlags(fs, args, stdout); err != nil {
		if errors.Is(err, errHelp) {
			return exitOK
		}
		return usageFailed(stderr, "mcpwrap "+cmd, err)
	}
	if fs.NArg() > 0 {
		return usageFailed(stderr, "mcpwrap "+cmd, fmt.Errorf("unexpected arguments %q (name servers with --server)", fs.Args()))
	}
	if (*path == "") == (*client == "") {
		return usageFailed(stderr, "mcpwrap "+cmd, errors.New("give either --client (claude-desktop, claude-code, cursor or all) or --config-path"))
	}
	opts := clientconfig.Options{Servers: servers}
	if !uninstall {
		self, err := mcpwrapPath()
		if err != nil {
			fmt.Fprintf(stderr, "mcpwrap %s: cannot tell where mcpwrap is: %v\n", cmd, err)
			return exitError
		}
		opts.Mcpwrap = self
		opts.KeepMCPRemote = *keepMCPRemote
		if opts.LogDir, err = installLogDir(*logDir); err != nil {
			fmt.Fprintf(stderr, "mcpwrap %s: %v\n", cmd, err)
			return exitUsage
		}
	}
	files, err := clientFiles(*client, *path)
	if err != nil {
		fmt.Fprintf(stderr, "mcpwrap %s: %v\n", cmd, err)
		return exitUsage
	}

	apply := clientconfig.Install
	if uninstall {
		apply = clientconfig.Uninstall
	}
	code, changed := exitOK, false
	var planned []string
	for _, f := range files {
		plan, written, err := rewriteFile(ctx, f, apply, opts, *dryRun, stdout)
		for _, c := range plan {
			planned = append(planned, c.Server)
		}
		if err != nil {
			fmt.Fprintf(stderr, "mcpwrap %s: %v\n", cmd, err)
			code = exitError
		}
		changed = changed || written
	}
	for _, name := range servers {
		if !slices.Contains(planned, name) {
			fmt.Fprintf(stderr, "mcpwrap %s: no server %q in %s\n", cmd, name, fileList(files))
			code = exitError
		}
	}
	if changed {
		fmt.Fprintln(stdout, "\nRestart the client to apply the change.")
		if !uninstall {
			fmt.Fprintln(stdout, "Then `mcpwrap doctor` checks every server, and `mcpwrap status` shows the running ones.")
		}
	}
	return code
}

// maxReplans bounds how often one file is read and planned again because
// its client saved it while it was being written.
const maxReplans = 3

// rewriteFile plans apply's change to one file, prints the plan, and
// writes the file unless dryRun; written says whether it did. When the
// file's client saves it meanwhile, the save is kept: the file is read and
// planned again, up to maxReplans times. Errors name the file.
func rewriteFile(ctx context.Context, f clientFile, apply func([]byte, clientconfig.Options) ([]byte, []clientconfig.Change, error),
	opts clientconfig.Options, dryRun bool, stdout io.Writer) (plan []clientconfig.Change, written bool, err error) {
	waiting := func(lock string) { fmt.Fprintf(stdout, "  waiting for %s: a client is saving the file\n", lock) }
	for replans := 0; ; replans++ {
		out, plan, err := apply(f.Data, opts)
		if err != nil {
			return nil, false, fmt.Errorf("%s: %w", f.Path, err)
		}
		if len(plan) == 0 {
			return nil, false, nil
		}
		if replans == 0 {
			fmt.Fprintf(stdout, "%s (%s):\n", f.Path, f.label())
		}
		for _, c := range plan {
			fmt.Fprintf(stdout, "  %s\n", c)
		}
		switch {
		case bytes.Equal(out, f.Data):
			fmt.Fprintln(stdout, "  nothing to change")
			return plan, false, nil
		case dryRun:
			fmt.Fprintln(stdout, "  dry run: nothing written")
			return plan, false, nil
		}
		backup, err := clientconfig.WriteWithBackup(ctx, f.Path, f.Data, out, clientconfig.WriteOptions{Waiting: waiting})
		switch {
		case errors.Is(err, clientconfig.ErrChanged) && replans < maxReplans:
			fmt.Fprintln(stdout, "  changed since it was read (its client saved it): nothing written; reading it again")
			if f.Data, err = os.ReadFile(f.Path); err != nil {
				return plan, false, err
			}
			continue
		case errors.Is(err, clientconfig.ErrChanged):
			return plan, false, fmt.Errorf("%w, each of the %d times it was read: nothing written; try again when its client is idle", err, replans+1)
		case err != nil:
			return plan, false, err
		}
		fmt.Fprintf(stdout, "  written; backup: %s\n", backup)
		return plan, true, nil
	}
}

// installLogDir is where installed sidecars log: flag, unless "none", else
// the logs directory in the state directory. It is made absolute: clients
// start servers in a directory of their choosing.
func installLogDir(flag string) (string, error) {
	switch flag {
	case "none":
		return "", nil
	case "":
		dir, err := config.StateDir("", os.Getenv)
		if err != nil {
			return "", err
		}
		flag = filepath.Join(dir, "logs")
	}
	return filepath.Abs(flag)
}

// listFlag collects a repeated string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ", ") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// mcpwrapPath is the path of this binary as the user invoked it, made
// absolute (GUI apps start servers with a minimal PATH) but with its
// symbolic links kept: a package manager's stable link (Homebrew's
// bin/mcpwrap) outlives the versioned file it points to
// (Cellar/mcpwrap/1.0/bin/mcpwrap), which an upgrade removes. When argv[0]
// does not lead to this binary, it is the executable's own path.
func mcpwrapPath() (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	if invoked, ok := invokedPath(os.Args[0], self, exec.LookPath); ok {
		return invoked, nil
	}
	return self, nil
}

// invokedPath returns arg0 as an absolute path, found on PATH by lookPath
// when it is a bare name, resolving only a relative path against the
// working directory; ok is false unless that path is the file self.
func invokedPath(arg0, self string, lookPath func(string) (string, error)) (path string, ok bool) {
	if filepath.Base(arg0) == arg0 { // a bare name, looked up as the shell did
		found, err := lookPath(arg0)
		if err != nil {
			return "", false
		}
		arg0 = found
	}
	path, err := filepath.Abs(arg0)
	if err != nil {
		return "", false
	}
	invoked, err := os.Stat(path)
	if err != nil {
		return "", false
	}
	exe, err := os.Stat(self)
	return path, err == nil && os.SameFile(invoked, exe)
}

func fileList(files []clientFile) string {
	paths := make([]string, len(files))
	for i, f := range files {
		paths[i] = f.Path
	}
	return strings.Join(paths, ", ")
}
