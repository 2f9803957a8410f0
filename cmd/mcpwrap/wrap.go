package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"github.com/mcpwrap/mcpwrap/internal/pipesize"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mcpwrap/mcpwrap/internal/auth"
	"github.com/mcpwrap/mcpwrap/internal/config"
	"github.com/mcpwrap/mcpwrap/internal/desktop"
	"github.com/mcpwrap/mcpwrap/internal/era"
	"github.com/mcpwrap/mcpwrap/internal/erabridge"
	"github.com/mcpwrap/mcpwrap/internal/gate"
	"github.com/mcpwrap/mcpwrap/internal/policy"
	"github.com/mcpwrap/mcpwrap/internal/servername"
	"github.com/mcpwrap/mcpwrap/internal/stores"
	"github.com/mcpwrap/mcpwrap/internal/upstream"
	"github.com/mcpwrap/mcpwrap/middleware"
	"github.com/mcpwrap/mcpwrap/resilience"
)

const wrapUsage = `mcpwrap wraps an MCP server: resilient loading, tool availability policy
and disabled-tool discovery; everything else passes through byte for byte.

Usage:
  mcpwrap [flags] -- COMMAND [ARGS...]   wrap a stdio server
  mcpwrap [flags] --url URL              wrap a remote (streamable HTTP or SSE) server
  mcpwrap --listen ADDR [flags] -- COMMAND [ARGS...]   serve it over streamable HTTP at http://ADDR/mcp (also with --url)
  mcpwrap tools list|enable|disable|approve|diff ...   which tools may be called (see mcpwrap tools --help)
  mcpwrap login|logout NAME [--url URL]  sign in to (or forget) a remote server that asks for it (OAuth)
  mcpwrap install|uninstall [--client C]  wrap (or unwrap) the servers of Claude Desktop, Claude Code, Cursor
  mcpwrap doctor [--client C] [SERVER...] load each configured server once; a classified table with fix hints
  mcpwrap status                         what the running sidecars and --listen fronts are doing
  mcpwrap ui [--no-open]                 the control panel: a local web page to see, approve, toggle, sign in
  mcpwrap demo                           a narrated, self-contained showcase
  mcpwrap help [COMMAND]                 this help, or a command's
  mcpwrap version | --version            the version and the commit it was built from

Flags:
`

const exitCodesHelp = `
Exit codes:
  0  clean shutdown (the client closed stdin, or SIGINT/SIGTERM)
  1  the session ended with an error (for example, reading the client's stdin failed)
  2  bad flags or arguments
A server that fails while the client is connected never ends the session:
the agent is told what is wrong instead. Neither does a config file with an
error: every tool stays locked, and the agent is told to fix the file.
Each command's exit codes are in its help: mcpwrap help COMMAND.
`

// wrapOptions are the flags of the wrap command.
type wrapOptions struct {
	name          string
	configPath    string
	stateDir      string
	store         string // --store: "" for $MCPWRAP_STORE, the config file's, or the default
	allowTools    string
	discoveryTool string
	discovery     string
	url           string
	transport     string
	headers       headerFlags
	readyTimeout  time.Duration
	callTimeout   *time.Duration // nil: from config
	maxLineBytes  int
	upstreamProto string // --upstream-protocol; "" means from config
	log           logOptions
	command       []string
	listen        listenOptions // --listen and its companions: serve HTTP instead of stdio
	oauth         oauthFlags    // --oauth-*: how a --url server is signed in to
	observe       observeFlags  // --audit-log and the metrics and traces flags
	signIn        *auth.Client  // the --url server's OAuth client; nil: none
	// env is what the client adds to mcpwrap's environment for this server
	// (its config entry's env), shadowing mcpwrap's own. The wrap command
	// already runs with it; doctor, which reads client configs, sets it.
	env map[string]string
}

// parseWrapFlags parses the wrap command's arguments. It prints the usage
// on stdout when asked for it and then returns errHelp.
func parseWrapFlags(args []string, stdout io.Writer) (wrapOptions, error) {
	var o wrapOptions
	fs := flag.NewFlagSet("mcpwrap", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), wrapUsage)
		fs.PrintDefaults()
		fmt.Fprint(fs.Output(), exitCodesHelp)
	}
	fs.StringVar(&o.name, "name", "", "the server's name in logs, messages and config (default: derived from the command)")
	fs.StringVar(&o.configPath, "config", "", "config file (default: $MCPWRAP_CONFIG, else <user config dir>/mcpwrap/config.json)")
	fs.StringVar(&o.stateDir, "state-dir", "", "user state directory (default: $MCPWRAP_STATE_DIR, else the OS per-user state dir)")
	fs.StringVar(&o.store, "store", "", "the state store (toggles, approvals, catalogs): file (the state directory) or a postgres:// URL shared by many mcpwrap processes, its password in $PGPASSWORD or $PGPASSFILE (default: $MCPWRAP_STORE, else the config file's store, else file)")
	fs.StringVar(&o.allowTools, "allow-tools", "", "comma-separated tool names or globs this run may use; narrows, never widens")
	fs.StringVar(&o.discoveryTool, "discovery-tool", "", fmt.Sprintf("name of the discovery tool (default from config, else %s)", config.DefaultDiscoveryTool))
	fs.StringVar(&o.discovery, "discovery", "", fmt.Sprintf("when to list the discovery tool: auto, always or never (default from config, else %s)", config.DefaultDiscovery))
	fs.StringVar(&o.url, "url", "", "wrap the remote MCP server at this URL instead of a command; it may reference ${ENV}")
	fs.StringVar(&o.transport, "transport", "", "the remote's transport as the client config named it (http or sse); a hint: mcpwrap detects it anyway")
	fs.Var(&o.headers, "header", "'K: V' header for --url, repeatable; V may reference ${ENV}")
	fs.DurationVar(&o.readyTimeout, "ready-timeout", 0, fmt.Sprintf("how long the client's handshake waits for the server before mcpwrap answers it (default from config, else %s)", config.DefaultReadyTimeout))
	fs.Func("call-timeout", "answer and cancel a request the server has not answered within this duration; 0 means never (default from config, else 0)", func(v string) error {
		d, err := time.ParseDuration(v)
		switch {
		case err != nil && v != "0":
			var kind flag.Getter = new(durationKind)
			return errors.New(badValue(kind, v, err))
		case d < 0:
			return fmt.Errorf("%q is negative; 0 means no timeout", v)
		}
		o.callTimeout = &d
		return nil
	})
	fs.IntVar(&o.maxLineBytes, "max-line-bytes", 0, fmt.Sprintf("largest JSON-RPC message accepted, in bytes (default from config, else %d MiB)", config.DefaultMaxLineBytes>>20))
	fs.StringVar(&o.upstreamProto, "upstream-protocol", "", fmt.Sprintf("the protocol era the server speaks: auto (find out), %s or %s (default from config, else %s)", era.SessionVersion, era.StatelessVersion, config.DefaultUpstreamProtocol))
	fs.StringVar(&o.log.level, "log-level", "info", "log level: debug, info, warn or error")
	fs.StringVar(&o.log.format, "log-format", "text", "log format: text or json")
	fs.StringVar(&o.log.file, "log-file", "", "write logs to this file instead of stderr; the server's stderr lines go to it too (tagged stream=stderr), as well as to stderr")
	o.listen.addFlags(fs)
	o.oauth.add(fs)
	o.observe.add(fs)
	if err := parseFlags(fs, args, stdout); err != nil {
		return o, err
	}
	o.command = fs.Args()
	switch {
	case o.url != "" && len(o.command) > 0:
		return o, errors.New("give either --url or a command after --, not both")
	case o.url == "" && len(o.command) == 0:
		return o, errors.New("no server: put its command after --, as in: mcpwrap -- npx -y @modelcontextprotocol/server-everything, or give --url")
	case o.url == "" && (len(o.headers) > 0 || o.transport != ""):
		return o, errors.New("--header and --transport go with --url")
	case o.transport != "" && o.transport != "http" && o.transport != "sse":
		return o, fmt.Errorf("--transport %q: want http or sse", o.transport)
	}
	if err := o.listen.validate(); err != nil {
		return o, err
	}
	// A malformed --url is not refused here: the sidecar serves, and the
	// agent is told (see remoteDialer).
	if err := o.observe.validate(); err != nil {
		return o, err
	}
	if o.name == "" {
		o.name = servername.Derive(o.command, o.url)
	}
	return o, nil
}

func runWrap(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	o, err := parseWrapFlags(args, stdout)
	if errors.Is(err, errHelp) {
		return exitOK
	}
	if err != nil {
		return usageFailed(stderr, "mcpwrap", err)
	}
	logger, closer, err := newLogger(o.log, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "mcpwrap:", err)
		return exitUsage
	}
	defer closer.Close()
	base := logger
	logger = logger.With("server", o.name)
	// No soft memory limit (GOMEMLIMIT still applies when set): the line
	// readers give their buffers back after a large message, so the heap
	// is small between messages anyway, while a fixed limit below what one
	// allowed message needs (up to about twice --max-line-bytes while it is
	// read) made the collector run without pause through every large
	// message and, with the buffers it kept, after it.

	var opened stores.Set
	defer opened.Close() // after every user of the store below has stopped
	srv, tools, err := loadPolicy(ctx, o, &opened, logger)
	if err != nil {
		logger.Error("bad configuration", "error", err)
		return exitUsage
	}
	childStderr := serverStderr(o.log, stderr, logger)
	ob, err := openObservability(ctx, o.observe, srv, logger)
	if err != nil {
		logger.Error("bad configuration", "error", err)
		return exitUsage
	}
	defer ob.Close()
	if o.listen.addr != "" {
		return runListen(ctx, o, srv, tools, &opened, ob, childStderr, logger, base)
	}
	var setupErr error // why the --url server cannot be reached as configured
	if o.url != "" {
		if o.signIn, setupErr = signIn(o, srv, &opened, stderr, logger, true); setupErr == nil {
			defer o.signIn.Close()
			o.signIn.SignedIn = ob.signedIn(o.name)
			o.signIn.Refreshed = ob.refreshed(o.name)
		}
	}
	session := newSession(o, srv, tools, dialer(o, srv, setupErr, childStderr, logger), base)
	if o.signIn != nil {
		// A sign-in finished (in any process): load the server again.
		defer goUntilStopped(ctx, func(ctx context.Context) { o.signIn.Watch(ctx, 0, session.Retry) })()
	}
	for _, std := range []any{stdin, stdout} {
		if f, ok := std.(*os.File); ok {
			pipesize.Grow(f) // a large message crosses to the client in fewer steps
		}
	}
	clientIn, closeClientIn := closableStdin(stdin)
	session.Client = middleware.NewStreamConn(clientIn, stdout, closeClientIn, srv.MaxLineBytes)
	session.CatalogSeen = func(catalog []json.RawMessage) { tools.CatalogSeen(ctx, catalog) }
	ob.observe(session, "pipe", o.url != "")
	defer goUntilStopped(ctx, func(ctx context.Context) { tools.Watch(ctx, session.ReevaluateTools) })()
	defer watchConfig(ctx, o, tools, func() {
		session.ReevaluateTools()
		session.Retry() // a server just enabled starts now
	}, logger)()
	stopStatus := publishStatus(ctx, o, session, tools, logger)
	defer stopStatus()
	logger.Info("relaying", "upstream", upstreamDesc(o))
	err = session.Run(ctx)
	if err != nil {
		logger.Error("session ended", "error", err)
		return exitError
	}
	logger.Info("session ended")
	return exitOK
}

// newSession returns the Session of server o with its settings, tool gate
// and dialer, everything but its client side. base is the logger without
// the server key.
func newSession(o wrapOptions, srv config.Server, tools *gate.Gate, dial middleware.Dialer, base *slog.Logger) *middleware.Session {
	s := &middleware.Session{
		Name:          o.name,
		Dial:          enabledOnly(o.name, tools, dial),
		Logger:        base.With("server", o.name),
		Tools:         tools,
		DiscoveryTool: srv.DiscoveryTool,
		Discovery:     srv.Discovery,
		ReadyTimeout:  srv.ReadyTimeout,
		CallTimeout:   srv.CallTimeout,

		MaxHeldRequests: srv.MaxHeldRequests,
		MaxHeldBytes:    srv.MaxHeldBytes,
		MaxInFlight:     srv.MaxInFlight,
		MaxCatalogBytes: srv.MaxCatalogBytes,
		Retrier: &resilience.Retrier{
			Policy:     retryPolicy(srv.Retry),
			Classifier: resilience.Classifier{RetryRefused: srv.RetryRefused},
			Logger:     base, // it adds the server key itself
		},
	}
	if o.url != "" {
		s.HandshakeTimeout = remoteHandshakeTimeout
	}
	return s
}

// enabledOnly returns dial for a server the operator's config may turn off:
// while tools says it is off (`enabled: false`), a dial starts nothing and
// fails with the server_disabled load error, so the agent is told the
// server is disabled, never a load error of a server that should not run.
// A config change that enables it retries the load (see runWrap).
func enabledOnly(name string, tools *gate.Gate, dial middleware.Dialer) middleware.Dialer {
	if tools == nil || dial == nil {
		return dial
	}
	return func(ctx context.Context) (middleware.Conn, error) {
		if tools.ServerDisabled() {
			return nil, &resilience.Error{Class: resilience.Permanent, Code: resilience.CodeServerDisabled,
				Reason: "the server is disabled in mcpwrap's config",
				Hint:   "An operator must first enable it (servers." + policy.ShellWord(name) + ".enabled: true)"}
		}
		return dial(ctx)
	}
}

// loadPolicy reads the config and the state store (opened in opened) and
// returns the server's effective settings (flags applied) and its tool gate. A config file that
// cannot be used is not an error here: the gate then locks every tool and
// says why (see policyFor), and the server runs with the built-in settings.
func loadPolicy(ctx context.Context, o wrapOptions, opened *stores.Set, logger *slog.Logger) (config.Server, *gate.Gate, error) {
	allow, err := policy.ParseAllowList(o.allowTools)
	if err != nil {
		return config.Server{}, nil, fmt.Errorf("--allow-tools: %w", err)
	}
	file, fileErr := config.Open(o.configPath, os.Getenv)
	srv := file.Server(o.name) // the built-in settings when file is nil
	if o.discoveryTool != "" {
		srv.DiscoveryTool = o.discoveryTool
	}
	if o.discovery != "" {
		switch mode := middleware.DiscoveryMode(o.discovery); mode {
		case middleware.DiscoveryAuto, middleware.DiscoveryAlways, middleware.DiscoveryNever:
			srv.Discovery = mode
		default:
			return srv, nil, fmt.Errorf("--discovery %q: want auto, always or never", o.discovery)
		}
	}
	if o.maxLineBytes > 0 {
		srv.MaxLineBytes = o.maxLineBytes
	}
	if o.upstreamProto != "" {
		pin, err := erabridge.ParsePin(o.upstreamProto)
		if err != nil {
			return srv, nil, fmt.Errorf("--upstream-protocol %w", err)
		}
		srv.UpstreamProtocol = pin
	}
	if o.readyTimeout > 0 {
		srv.ReadyTimeout = o.readyTimeout
	}
	if o.callTimeout != nil {
		srv.CallTimeout = *o.callTimeout
	}
	dir, err := config.StateDir(o.stateDir, os.Getenv)
	if err != nil {
		return srv, nil, err
	}
	location, from := config.StoreLocation(o.store, os.Getenv, file)
	store, err := opened.Open(location, from, dir, logger)
	if err != nil {
		return srv, nil, err
	}
	g := gate.New(o.name, policyFor(file, fileErr, o.name, allow, logger), store, logger)
	g.Reload(ctx)
	return srv, g, nil
}

// remoteHandshakeTimeout bounds one attempt's handshake with a remote
// server; a local child is never killed for being slow.
const remoteHandshakeTimeout = 10 * time.Second

// dialer returns how the session connects to its upstream: a new child
// for every (re)start, or a new remote connection, each behind the era
// bridge, which finds out (or is told) the era the server speaks: a remote
// is asked server/discover first, as the go-sdk client asks, since over
// HTTP a discover commits no session. setupErr, when not nil, is why the
// --url server's sign-in could not be set up.
func dialer(o wrapOptions, srv config.Server, setupErr error, stderr io.Writer, logger *slog.Logger) middleware.Dialer {
	dial := upstreamDialer(o, srv, setupErr, stderr, logger)
	return erabridge.Dial(dial, erabridge.Options{Pin: srv.UpstreamProtocol, DiscoverFirst: o.url != "", Logger: logger, MaxMessageBytes: srv.MaxLineBytes})
}

// upstreamDialer returns how the session reaches its upstream itself.
func upstreamDialer(o wrapOptions, srv config.Server, setupErr error, stderr io.Writer, logger *slog.Logger) middleware.Dialer {
	if o.url != "" {
		return remoteDialer(o, srv, setupErr, logger)
	}
	cmd := upstream.Command{
		Path:   o.command[0],
		Args:   o.command[1:],
		Env:    childEnv(o.env, srv.Env),
		Stderr: stderr,
		Logger: logger,
	}
	cmd.HideEnv = secretEnvNames(o)
	programs := &desktop.Resolver{Logger: logger} // GUI apps' minimal PATH, Windows .cmd scripts
	if dir, err := config.StateDir(o.stateDir, os.Getenv); err == nil {
		programs.CacheFile = filepath.Join(dir, "cache", "login-path")
	}
	return func(ctx context.Context) (middleware.Conn, error) {
		child, err := upstream.StartStdio(ctx, programs.Command(ctx, cmd), srv.MaxLineBytes)
		if err != nil {
			return nil, notInstalled(ctx, programs, cmd.Path, err)
		}
		logger.Info("server started", "pid", child.Pid())
		return child, nil
	}
}

// remoteDialer returns how the session connects to the --url server. When
// it cannot be reached as configured (a malformed or unexpandable URL or
// header, or setupErr, a sign-in that cannot be set up), every load fails
// with the cause: the client is answered in degraded mode and the agent
// told, as for any other load failure, rather than the process exiting
// before it serves.
func remoteDialer(o wrapOptions, srv config.Server, setupErr error, logger *slog.Logger) middleware.Dialer {
	getenv := o.getenv()
	endpoint, err := upstream.ExpandURL(o.url, getenv)
	var header http.Header
	if err == nil {
		header, err = upstream.ExpandHeaders(o.headers, getenv)
	}
	err = cmp.Or(err, setupErr)
	if err != nil {
		logger.Error("the server cannot be reached as configured; the agent is told why", "error", err)
		return func(context.Context) (middleware.Conn, error) { return nil, err }
	}
	remote := upstream.Remote{URL: endpoint, Header: header, Logger: logger, MaxMessageBytes: srv.MaxLineBytes}
	if o.signIn != nil {
		remote.WrapTransport = o.signIn.WrapTransport
	}
	return func(ctx context.Context) (middleware.Conn, error) {
		return upstream.DialRemote(ctx, remote)
	}
}

// notInstalled marks a failure to start program as "not installed" when
// it is on neither mcpwrap's PATH nor the login shell's, so that the
// agent is not told to use a full path to a program that is nowhere.
func notInstalled(ctx context.Context, programs *desktop.Resolver, program string, err error) error {
	if spawn, ok := errors.AsType[*resilience.SpawnError](err); ok && programs.NotInstalled(ctx, program) {
		spawn.NotInstalled = true
	}
	return err
}

// retryPolicy converts the config's retry settings.
func retryPolicy(r config.Retry) resilience.Policy {
	return resilience.Policy{
		Initial:     r.Initial,
		MaxInterval: r.MaxInterval,
		Multiplier:  r.Multiplier,
		Jitter:      r.Jitter,
		MaxAttempts: r.MaxAttempts,
		MaxElapsed:  r.MaxElapsed,
	}
}

func upstreamDesc(o wrapOptions) string {
	if o.url != "" {
		return "remote server (--url)" // the URL may carry credentials
	}
	return o.command[0]
}

// headerFlags collects repeated --header flags.
type headerFlags []string

func (h *headerFlags) String() string     { return strings.Join(*h, ", ") }
func (h *headerFlags) Set(v string) error { *h = append(*h, v); return nil }

// childEnv is mcpwrap's environment plus the entries of each map, a later
// one winning over an earlier one.
func childEnv(extra ...map[string]string) []string {
	var env []string
	for _, m := range extra {
		for k, v := range m {
			if env == nil {
				env = os.Environ()
			}
			env = append(env, k+"="+v)
		}
	}
	return env // nil: inherit
}

// checkURL refuses a --url that is no http or https URL, unless it names
// an environment variable, which is checked once expanded.
func checkURL(raw string) error {
	if raw == "" || strings.Contains(raw, "${") {
		return nil
	}
	_, err := upstream.ParseURL(raw)
	return err
}

// durationKind tells badValue that --call-timeout takes a duration, so it
// words a bad value like every other duration flag's.
type durationKind struct{}

func (*durationKind) String() string   { return "" }
func (*durationKind) Set(string) error { return nil }
func (*durationKind) Get() any         { return time.Duration(0) }
