package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/mcpwrap/mcpwrap/internal/clientconfig"
	"github.com/mcpwrap/mcpwrap/internal/config"
	"github.com/mcpwrap/mcpwrap/internal/doctor"
	"github.com/mcpwrap/mcpwrap/internal/servername"
	"github.com/mcpwrap/mcpwrap/internal/stores"
	"github.com/mcpwrap/mcpwrap/resilience"
)

const doctorUsage = `Usage: mcpwrap doctor [--client C | --config-path FILE] [--json] [SERVER...]

Loads every MCP server of the client's config (or only the SERVERs named)
the way the mcpwrap sidecar would, all at once, and prints one line per
server: its status (available, transient, permanent or denied), load
attempts, load time and tools (callable, and locked by policy), then what
went wrong and how to fix it. Servers already wrapped by mcpwrap are checked
as they are wrapped: their mcpwrap flags apply. Nothing is written: no
catalog is recorded and no tool approved. The servers of the working
directory's project config (.mcp.json, .cursor/mcp.json), which a cloned
repository writes, are listed as skipped and not started, unless named
with --client claude-code-project, --client cursor-project or --config-path.

Exit codes: 0 every server checked is available, 1 some server is not, 2
bad flags or no config file.

Flags:
`

// doctorOptions are the flags of the doctor command.
type doctorOptions struct {
	client     string
	configPath string // the client's config file
	asJSON     bool
	mcpwrapCfg string // mcpwrap's own --config
	stateDir   string
	store      string
	timeout    time.Duration
	logLevel   string
	servers    []string
}

func runDoctor(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var d doctorOptions
	fs := flag.NewFlagSet("mcpwrap doctor", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), doctorUsage)
		fs.PrintDefaults()
	}
	fs.StringVar(&d.client, "client", clientconfig.AllClients, "whose config to read: claude-desktop, claude-code, cursor or all; the working directory's project servers (a repository's .mcp.json, .cursor/mcp.json) are started only with claude-code-project or cursor-project")
	fs.StringVar(&d.configPath, "config-path", "", "read this client config file instead (any file with \"mcpServers\")")
	fs.BoolVar(&d.asJSON, "json", false, "print a JSON array of objects (name, status, attempts, load_ms, tools, locked, error, hint...)")
	fs.StringVar(&d.mcpwrapCfg, "config", "", "mcpwrap's config file, as for the wrap command (default: the entry's, else $MCPWRAP_CONFIG, else the user's)")
	fs.StringVar(&d.stateDir, "state-dir", "", "user state directory, as for the wrap command (default: the entry's, else $MCPWRAP_STATE_DIR, else the user's)")
	fs.StringVar(&d.store, "store", "", "the state store, as for the wrap command (default: the entry's, else $MCPWRAP_STORE, else the config file's, else file)")
	fs.DurationVar(&d.timeout, "timeout", 0, "bound on each server's check (default: its ready_timeout or retry budget, whichever is longer, plus 10s)")
	fs.StringVar(&d.logLevel, "log-level", "", "log the loads on stderr at this level: debug, info, warn or error (default: no log)")
	if err := parseFlags(fs, args, stdout); err != nil {
		if errors.Is(err, errHelp) {
			return exitOK
		}
		return usageFailed(stderr, "mcpwrap doctor", err)
	}
	d.servers = fs.Args()
	if d.configPath != "" && d.client != clientconfig.AllClients {
		return usageFailed(stderr, "mcpwrap doctor", errors.New("give --client or --config-path, not both"))
	}
	logger := slog.New(slog.DiscardHandler)
	childStderr := io.Discard
	if d.logLevel != "" {
		l, closer, err := newLogger(logOptions{level: d.logLevel, format: "text"}, stderr)
		if err != nil {
			fmt.Fprintln(stderr, "mcpwrap doctor:", err)
			return exitUsage
		}
		defer closer.Close()
		logger, childStderr = l, stderr
	}

	files, err := clientFiles(d.client, d.configPath)
	if err != nil {
		fmt.Fprintln(stderr, "mcpwrap doctor:", err)
		return exitUsage
	}
	var opened stores.Set
	defer opened.Close()
	cwd, _ := os.Getwd()
	var targets []doctor.Target
	var uses []serverUse
	seen := map[string]bool{}
	for _, f := range files {
		entries, err := doctor.ReadEntries(f.Data, cwd)
		if errors.Is(err, doctor.ErrNoServers) {
			continue
		}
		if err != nil {
			fmt.Fprintf(stderr, "mcpwrap doctor: %s: %v\n", f.Path, err)
			return exitUsage
		}
		for _, e := range entries {
			if len(d.servers) > 0 && !slices.Contains(d.servers, e.Name) {
				continue
			}
			seen[e.Name] = true
			if f.Project() && !slices.Contains(projectClients, d.client) {
				targets = append(targets, skippedTarget(e, f))
				continue
			}
			targets = append(targets, doctorTarget(ctx, d, e, f.label(), &opened, childStderr, logger))
			if o, err := entryOptions(e); err == nil {
				uses = append(uses, serverUse{name: o.name, client: f.label(), command: o.command, url: o.url})
			}
		}
	}
	for _, name := range d.servers {
		if !seen[name] {
			fmt.Fprintf(stderr, "mcpwrap doctor: no server %q in the client config\n", name)
			return exitUsage
		}
	}

	for _, w := range nameClashes(uses) {
		fmt.Fprintln(stderr, "mcpwrap doctor: warning:", w)
	}
	results := doctor.Run(ctx, targets)
	if d.asJSON {
		err = doctor.WriteJSON(stdout, results)
	} else {
		err = doctor.WriteTable(stdout, results)
		if dir, derr := config.StateDir(d.stateDir, os.Getenv); derr == nil {
			writeStore(ctx, stdout, d.mcpwrapCfg, d.store, dir, &opened)
			writeSignIns(ctx, stdout, d.mcpwrapCfg, d.store, dir, &opened, time.Now())
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "mcpwrap doctor:", err)
		return exitError
	}
	for _, r := range results {
		if !r.Available() && !r.Skipped() {
			return exitError
		}
	}
	return exitOK
}

// projectClients are the --client names that ask doctor to check the
// working directory's project config, whose servers it otherwise skips.
var projectClients = []string{clientconfig.ClaudeCodeProject, clientconfig.CursorProject}

// skippedTarget is an entry of a project's config that doctor does not
// start: a cloned repository wrote it, so it runs only when named.
func skippedTarget(e doctor.Entry, f clientFile) doctor.Target {
	t := doctor.Target{Name: e.Name, Client: f.label(), Transport: doctor.TransportStdio,
		Skip: fmt.Sprintf("it comes from the project's %s, which a repository can write, so it was not started; to check it, run `mcpwrap doctor --client %s`", f.Path, f.Client)}
	if o, err := entryOptions(e); err == nil {
		t.Name = o.name
		if o.url != "" {
			t.Transport = doctor.TransportHTTP
		}
	}
	return t
}

// doctorTarget builds the check of one client config entry: the Session
// the sidecar would run for it. A problem with the entry or mcpwrap's
// config becomes the target's Err, reported like a failed load.
func doctorTarget(ctx context.Context, d doctorOptions, e doctor.Entry, client string, opened *stores.Set, childStderr io.Writer, base *slog.Logger) doctor.Target {
	t := doctor.Target{Name: e.Name, Client: client, Transport: doctor.TransportStdio}
	o, err := entryOptions(e)
	if err != nil {
		t.Err = fmt.Errorf("%w: the client's entry: %v", resilience.ErrConfig, err)
		return t
	}
	t.Name = o.name
	if o.url != "" {
		t.Transport = doctor.TransportHTTP
	}
	// Where the sidecar would find its config and state: the entry's flags,
	// then the entry's env, then mcpwrap's; doctor's own flags win.
	o.configPath = cmp.Or(d.mcpwrapCfg, o.configPath, e.Env[config.EnvConfig])
	o.stateDir = cmp.Or(d.stateDir, o.stateDir, e.Env[config.EnvStateDir])
	o.store = cmp.Or(d.store, o.store, e.Env[config.EnvStore])

	logger := base.With("server", o.name)
	srv, tools, err := loadPolicy(ctx, o, opened, logger)
	if err == nil {
		err = tools.ConfigErr() // the sidecar would lock every tool
	}
	if err != nil {
		t.Err = fmt.Errorf("%w: %v", resilience.ErrConfig, err)
		return t
	}
	if o.url != "" {
		// The stored sign-in is used; a server that wants one is reported
		// as "sign-in required", without opening a browser.
		if o.signIn, err = signIn(o, srv, opened, childStderr, logger, false); err != nil {
			t.Err = fmt.Errorf("%w: %v", resilience.ErrConfig, err)
			return t
		}
	}
	t.Session = newSession(o, srv, tools, dialer(o, srv, nil, childStderr, logger), base)
	t.ReadyTimeout = srv.ReadyTimeout
	t.Budget = d.timeout
	if t.Budget <= 0 {
		t.Budget = max(srv.ReadyTimeout, srv.Retry.MaxElapsed) + remoteHandshakeTimeout
	}
	return t
}

// entryOptions returns the wrap command a client config entry amounts to:
// its own mcpwrap command line when it is wrapped already.
func entryOptions(e doctor.Entry) (wrapOptions, error) {
	if e.Wrapped() {
		o, err := parseWrapFlags(e.Args, io.Discard)
		o.env = e.Env
		return o, err
	}
	o := wrapOptions{name: e.Name, env: e.Env}
	if !e.Remote() {
		o.command = append([]string{e.Command}, e.Args...)
		return o, nil
	}
	o.url = e.URL
	if e.Type == "http" || e.Type == "sse" {
		o.transport = e.Type
	}
	for _, k := range slices.Sorted(maps.Keys(e.Headers)) {
		o.headers = append(o.headers, k+": "+e.Headers[k])
	}
	return o, nil
}

// serverUse is one client config entry's server, as the sidecar names it.
type serverUse struct {
	name, client string
	command      []string
	url          string
}

// nameClashes returns a warning for every name that two entries use for
// different servers (another command line or URL): they would share
// operator policy, tool approvals and toggles, and each one's catalog would
// look like a rug pull to the other. The servers are described without
// their arguments, which may hold secrets.
func nameClashes(uses []serverUse) []string {
	byName := map[string][]serverUse{}
	var names []string
	for _, u := range uses {
		if _, ok := byName[u.name]; !ok {
			names = append(names, u.name)
		}
		byName[u.name] = append(byName[u.name], u)
	}
	var out []string
	for _, name := range names {
		group := byName[name]
		digests := map[string]bool{}
		var what []string
		for _, u := range group {
			d := servername.Digest(u.command, u.url)
			if !digests[d] {
				digests[d] = true
				what = append(what, fmt.Sprintf("%s (%s)", servername.Identify(u.command, u.url).Describe(), u.client))
			}
		}
		if len(digests) > 1 {
			out = append(out, fmt.Sprintf("the name %q is used for %d different servers: %s; they share tool approvals and toggles, so give each its own --name",
				name, len(digests), strings.Join(what, ", ")))
		}
	}
	return out
}
