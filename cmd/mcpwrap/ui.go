package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"time"

	"github.com/mcpwrap/mcpwrap/internal/audit"
	"github.com/mcpwrap/mcpwrap/internal/auth"
	"github.com/mcpwrap/mcpwrap/internal/clientconfig"
	"github.com/mcpwrap/mcpwrap/internal/config"
	"github.com/mcpwrap/mcpwrap/internal/doctor"
	"github.com/mcpwrap/mcpwrap/internal/hostcheck"
	"github.com/mcpwrap/mcpwrap/internal/panel"
	"github.com/mcpwrap/mcpwrap/internal/redact"
	"github.com/mcpwrap/mcpwrap/internal/runstatus"
	"github.com/mcpwrap/mcpwrap/internal/stores"
	"github.com/mcpwrap/mcpwrap/internal/toolscli"
)

const uiUsage = `Usage: mcpwrap ui [--no-open] [--listen ADDR] [flags]

Serves mcpwrap's control panel, a local web page where you see every server,
approve changed tools, enable and disable tools, sign in to remote servers
and install mcpwrap into client configs, and opens it in the browser
($MCPWRAP_BROWSER, else $BROWSER, else the system's). Only this browser can
use it: the URL carries a secret, exchanged for a cookie. If a panel is
already running, it is opened instead. Stop it with Ctrl-C.

Exit codes: 0 stopped, 1 it could not be served, 2 bad flags.

Flags:
`

// runUI is `mcpwrap ui`.
func runUI(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcpwrap ui", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), uiUsage)
		fs.PrintDefaults()
	}
	noOpen := fs.Bool("no-open", false, "print the panel's URL on stdout instead of opening the browser")
	listen := fs.String("listen", "127.0.0.1:0", "loopback address to serve on (port 0: any free one)")
	interval := fs.Duration("interval", panel.DefaultInterval, "how often an open page looks for changes it is not told of (sidecars starting and stopping, client configs); the state store's changes show at once")
	var o wrapOptions
	fs.StringVar(&o.configPath, "config", "", "config file (default: $MCPWRAP_CONFIG, else <user config dir>/mcpwrap/config.json)")
	fs.StringVar(&o.stateDir, "state-dir", "", "user state directory (default: $MCPWRAP_STATE_DIR, else the OS per-user state dir)")
	fs.StringVar(&o.store, "store", "", "the state store: file or a postgres:// URL (default: $MCPWRAP_STORE, else the config file's store, else file)")
	if err := parseFlags(fs, args, stdout); err != nil {
		if errors.Is(err, errHelp) {
			return exitOK
		}
		return usageFailed(stderr, "mcpwrap ui", err)
	}
	if fs.NArg() > 0 {
		return usageFailed(stderr, "mcpwrap ui", fmt.Errorf("unexpected arguments %q", fs.Args()))
	}
	if *interval <= 0 {
		return usageFailed(stderr, "mcpwrap ui", fmt.Errorf("--interval %s: must be positive", *interval))
	}
	if !hostcheck.IsLoopbackAddr(*listen) {
		return usageFailed(stderr, "mcpwrap ui", fmt.Errorf("--listen %s: the panel listens on a loopback address only (127.0.0.1:PORT)", *listen))
	}
	dir, err := config.StateDir(o.stateDir, os.Getenv)
	if err != nil {
		fmt.Fprintf(stderr, "mcpwrap ui: state directory: %v\n", err)
		return exitUsage
	}
	browser := &auth.Browser{Getenv: os.Getenv, Output: stderr}
	show := func(url string) int {
		if *noOpen || browser.Disabled() {
			fmt.Fprintln(stdout, url)
			return exitOK
		}
		if err := browser.Open(ctx, url); err != nil {
			fmt.Fprintf(stderr, "mcpwrap ui: cannot open the browser (%v); open this URL:\n", err)
			fmt.Fprintln(stdout, url)
		}
		return exitOK
	}
	if url, ok := panel.Running(ctx, dir, nil); ok {
		fmt.Fprintln(stderr, "mcpwrap ui: a panel is already running; opening it.")
		return show(url)
	}
	logger, closer, err := newLogger(logOptions{level: "warn", format: "text"}, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "mcpwrap ui: %v\n", err)
		return exitUsage
	}
	defer closer.Close()

	// The panel edits the store the sidecars read: the same choice as
	// theirs and mcpwrap tools' (--store, $MCPWRAP_STORE, the config file).
	file, _ := config.Open(o.configPath, os.Getenv) // a config error is the page's to show
	location, from := config.StoreLocation(o.store, os.Getenv, file)
	var opened stores.Set
	defer opened.Close()
	store, err := opened.Open(location, from, dir, logger)
	if err != nil {
		fmt.Fprintf(stderr, "mcpwrap ui: %v\n", err)
		return exitUsage
	}
	cache := &toolscli.DefinitionCache{}
	// Approvals and toggles made on the page are audited as mcpwrap tools'
	// are, in the config file's audit_log as the panel started.
	var auditLog *audit.Log
	if file != nil && file.AuditLog != "" {
		path := file.AuditLog
		if auditLog, err = audit.Open(path, "mcpwrap ui"); err != nil {
			logger.Warn("cannot open the audit log; the panel's changes are not audited", "error", err)
		}
		defer auditLog.Close()
	}
	p := &panel.Panel{
		Tools: func(context.Context) (*toolscli.Tools, error) {
			file, err := config.Open(o.configPath, os.Getenv)
			if err != nil {
				return nil, err
			}
			return toolscli.NewTools(file, store, nil).WithCache(cache).WithAudit(auditLog), nil
		},
		Store:     store,
		StatusDir: runstatus.Dir(dir),
		Clients:   uiClients{},
		SignIns:   uiSignIns{stateDir: dir, configPath: o.configPath, store: o.store, opened: &opened, stderr: stderr},
		Interval:  *interval,
		Logger:    logger,
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(stderr, "mcpwrap ui: %v\n", err)
		return exitError
	}
	url := p.LaunchURL(ln.Addr())
	remove, err := panel.Publish(dir, url)
	if err != nil {
		logger.Warn("cannot record the panel's address; a second mcpwrap ui will start another", "error", err)
	} else {
		defer remove()
	}
	served := make(chan error, 1)
	go func() { served <- p.Serve(ln) }()
	show(url)
	if !*noOpen {
		fmt.Fprintln(stderr, "mcpwrap ui: serving the panel; stop it with Ctrl-C.")
	}
	select {
	case err = <-served:
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = p.Shutdown(sctx)
		cancel()
		err = <-served
	}
	if err != nil && !errors.Is(err, panel.ErrServerClosed) {
		fmt.Fprintf(stderr, "mcpwrap ui: %v\n", err)
		return exitError
	}
	return exitOK
}

// uiClients is the panel's view of the client config files: the same
// files and plans as install and uninstall.
type uiClients struct{}

func (uiClients) Files(context.Context) ([]panel.ClientFile, error) {
	files, err := clientFiles(clientconfig.AllClients, "")
	if err != nil {
		return nil, err
	}
	cwd, _ := os.Getwd()
	out := make([]panel.ClientFile, 0, len(files))
	for _, f := range files {
		cf := panel.ClientFile{Path: f.Path, Client: f.Client}
		entries, err := doctor.ReadEntries(f.Data, cwd)
		if err != nil && !errors.Is(err, doctor.ErrNoServers) {
			cf.Err = err.Error()
		}
		for _, e := range entries {
			name := e.Name
			if o, err := entryOptions(e); err == nil && o.name != "" {
				name = o.name
			}
			cf.Entries = append(cf.Entries, panel.ClientEntry{Name: e.Name, Server: name, Project: e.Project, Wrapped: e.Wrapped(), Remote: e.Remote()})
		}
		out = append(out, cf)
	}
	return out, nil
}

// plan runs install or uninstall of one entry of one of the client files
// on its contents.
func (uiClients) plan(path, entry string, uninstall bool) (clientFile, []byte, []panel.Change, error) {
	files, err := clientFiles(clientconfig.AllClients, "")
	if err != nil {
		return clientFile{}, nil, nil, err
	}
	i := slices.IndexFunc(files, func(f clientFile) bool { return f.Path == path })
	if i < 0 {
		return clientFile{}, nil, nil, fmt.Errorf("%s is not one of the client config files", path)
	}
	f := files[i]
	opts := clientconfig.Options{Servers: []string{entry}}
	apply := clientconfig.Uninstall
	if !uninstall {
		apply = clientconfig.Install
		if opts.Mcpwrap, err = mcpwrapPath(); err != nil {
			return f, nil, nil, err
		}
		if opts.LogDir, err = installLogDir(""); err != nil {
			return f, nil, nil, err
		}
	}
	out, plan, err := apply(f.Data, opts)
	if err != nil {
		return f, nil, nil, err
	}
	changes := make([]panel.Change, len(plan))
	for i, c := range plan {
		changes[i] = panel.Change{Server: c.Server, Action: string(c.Action), Detail: c.Detail}
	}
	return f, out, changes, nil
}

func (c uiClients) Plan(_ context.Context, path, entry string, uninstall bool) ([]panel.Change, error) {
	_, _, plan, err := c.plan(path, entry, uninstall)
	return plan, err
}

func (c uiClients) Apply(ctx context.Context, path, entry string, uninstall bool) ([]panel.Change, string, error) {
	f, out, plan, err := c.plan(path, entry, uninstall)
	if err != nil || string(out) == string(f.Data) {
		return plan, "", err
	}
	// The file is not re-planned when the client saved it meanwhile, as
	// install does: the page shows the refusal, and a reload the new plan.
	backup, err := clientconfig.WriteWithBackup(ctx, f.Path, f.Data, out, clientconfig.WriteOptions{})
	return plan, backup, err
}

// uiSignIns runs the sign-ins of `mcpwrap login` and `logout` for the
// panel.
type uiSignIns struct {
	stateDir, configPath, store string
	opened                      *stores.Set // closed once the panel stopped
	stderr                      io.Writer
}

func (s uiSignIns) List(ctx context.Context) ([]panel.SignIn, error) {
	store, err := signInStore(s.configPath, s.store, s.stateDir, os.Getenv, s.opened, nil)
	if err != nil {
		return nil, err
	}
	stored, err := store.SignIns(ctx)
	if err != nil {
		return nil, errors.New(redact.Text(err.Error()))
	}
	var out []panel.SignIn
	seen := map[string]bool{}
	for _, si := range stored {
		name := cmp.Or(si.Name, redact.URL(si.ServerURL))
		seen[name] = true
		out = append(out, panel.SignIn{Server: name, Origin: redact.URL(si.ServerURL), SignedIn: si.Status.SignedIn,
			Expiry: si.Status.Expiry, Refreshable: si.Status.Refreshable})
	}
	files, _ := clientFiles(clientconfig.AllClients, "")
	cwd, _ := os.Getwd()
	for _, f := range files {
		entries, _ := doctor.ReadEntries(f.Data, cwd)
		for _, e := range entries {
			o, err := entryOptions(e)
			if err != nil || o.url == "" {
				continue
			}
			name := cmp.Or(o.name, e.Name)
			if seen[name] {
				continue
			}
			seen[name] = true
			out = append(out, panel.SignIn{Server: name, Origin: redact.URL(o.url)})
		}
	}
	slices.SortFunc(out, func(a, b panel.SignIn) int { return cmp.Compare(a.Server, b.Server) })
	return out, nil
}

// client builds the sign-in client of the named remote server, as
// `mcpwrap login NAME` does.
func (s uiSignIns) client(name string) (*auth.Client, error) {
	found, err := entryURL(name)
	if err != nil {
		return nil, err
	}
	o := wrapOptions{name: name, url: found.url, env: found.env, oauth: found.oauth,
		configPath: cmp.Or(s.configPath, found.configPath), stateDir: cmp.Or(found.stateDir, s.stateDir), store: cmp.Or(found.store, s.store)}
	file, err := config.Open(o.configPath, os.Getenv)
	if err != nil {
		return nil, err
	}
	logger, _, err := newLogger(logOptions{level: "warn", format: "text"}, s.stderr)
	if err != nil {
		return nil, err
	}
	return signIn(o, file.Server(name), s.opened, s.stderr, logger, false)
}

func (s uiSignIns) Login(ctx context.Context, name string, show func(string)) error {
	c, err := s.client(name)
	if err != nil {
		return errors.New(redact.Text(err.Error()))
	}
	defer c.Close()
	if err := c.Login(ctx, show); err != nil {
		if errors.Is(err, auth.ErrNotProtected) {
			return err
		}
		return errors.New(redact.Text(err.Error()))
	}
	return nil
}

func (s uiSignIns) Logout(ctx context.Context, name string) (bool, error) {
	c, err := s.client(name)
	if err != nil {
		return false, errors.New(redact.Text(err.Error()))
	}
	defer c.Close()
	return c.Logout(ctx)
}
