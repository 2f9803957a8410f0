package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/mcpwrap/mcpwrap/internal/config"
	"github.com/mcpwrap/mcpwrap/internal/gate"
	"github.com/mcpwrap/mcpwrap/internal/policy"
	"github.com/mcpwrap/mcpwrap/internal/state"
	"github.com/mcpwrap/mcpwrap/internal/upstream"
	"github.com/mcpwrap/mcpwrap/middleware"
)

const wrapUsage = `mcpwrap wraps an MCP server: resilient loading, tool availability policy
and disabled-tool discovery; everything else passes through byte for byte.

Usage:
  mcpwrap [flags] -- COMMAND [ARGS...]   wrap a stdio server
  mcpwrap demo                           a narrated, self-contained showcase
  mcpwrap version                        print the version

Flags:
`

// softMemoryLimit is the Go heap size past which the collector works harder.
const softMemoryLimit = 24 << 20

const exitCodesHelp = `
Exit codes:
  0  clean shutdown (the client closed stdin, or SIGINT/SIGTERM)
  1  the upstream server failed or exited
  2  bad flags, configuration or arguments
`

// wrapOptions are the flags of the wrap command.
type wrapOptions struct {
	name          string
	configPath    string
	stateDir      string
	allowTools    string
	discoveryTool string
	discovery     string
	maxLineBytes  int
	log          logOptions
	command      []string
}

func parseWrapFlags(args []string, stderr io.Writer) (wrapOptions, error) {
	var o wrapOptions
	fs := flag.NewFlagSet("mcpwrap", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), wrapUsage)
		fs.PrintDefaults()
		fmt.Fprint(fs.Output(), exitCodesHelp)
	}
	fs.StringVar(&o.name, "name", "", "the server's name in logs, messages and config (default: derived from the command)")
	fs.StringVar(&o.configPath, "config", "", "config file (default: $MCPWRAP_CONFIG, else <user config dir>/mcpwrap/config.json)")
	fs.StringVar(&o.stateDir, "state-dir", "", "user state directory (default: $MCPWRAP_STATE_DIR, else the OS per-user state dir)")
	fs.StringVar(&o.allowTools, "allow-tools", "", "comma-separated tool names or globs this run may use; narrows, never widens")
	fs.StringVar(&o.discoveryTool, "discovery-tool", "", "name of the discovery tool (default from config, else discover_tools)")
	fs.StringVar(&o.discovery, "discovery", "", "when to list the discovery tool: auto, always or never (default from config, else auto)")
	fs.IntVar(&o.maxLineBytes, "max-line-bytes", 0, "largest JSON-RPC message accepted, in bytes (default from config, else 64 MiB)")
	fs.StringVar(&o.log.level, "log-level", "info", "log level: debug, info, warn or error")
	fs.StringVar(&o.log.format, "log-format", "text", "log format: text or json")
	fs.StringVar(&o.log.file, "log-file", "", "write logs to this file instead of stderr")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.command = fs.Args()
	if len(o.command) == 0 {
		fs.Usage()
		return o, errors.New("no server command: put it after --, as in: mcpwrap -- npx -y @modelcontextprotocol/server-everything")
	}
	if o.name == "" {
		o.name = deriveName(o.command)
	}
	return o, nil
}

// deriveName names a server after its command: the npm package or script
// it runs, else the program itself.
func deriveName(command []string) string {
	name := filepath.Base(command[0])
	switch strings.TrimSuffix(name, filepath.Ext(name)) {
	case "npx", "uvx", "node", "python", "python3", "bunx", "deno", "pnpm", "docker":
		for _, a := range command[1:] {
			if !strings.HasPrefix(a, "-") && a != "run" && a != "dlx" {
				name = filepath.Base(a)
				break
			}
		}
	}
	name = strings.TrimPrefix(strings.TrimSuffix(name, filepath.Ext(name)), "server-")
	if name == "" {
		return "server"
	}
	return name
}

func runWrap(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	o, err := parseWrapFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintln(stderr, "mcpwrap:", err)
		return exitUsage
	}
	logger, closer, err := newLogger(o.log, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "mcpwrap:", err)
		return exitUsage
	}
	defer closer.Close()
	logger = logger.With("server", o.name)
	if os.Getenv("GOMEMLIMIT") == "" {
		// A sidecar should stay small: collect early rather than let the heap
		// double after a large message. A soft limit, not a cap.
		debug.SetMemoryLimit(softMemoryLimit)
	}

	srv, tools, err := loadPolicy(ctx, o, logger)
	if err != nil {
		logger.Error("bad configuration", "error", err)
		return exitUsage
	}
	child, err := upstream.StartStdio(ctx, upstream.Command{
		Path:   o.command[0],
		Args:   o.command[1:],
		Env:    childEnv(srv.Env),
		Stderr: stderr,
		Logger: logger,
	}, srv.MaxLineBytes)
	if err != nil {
		logger.Error("cannot start the server", "error", err)
		return exitUpstream
	}
	session := &middleware.Session{
		Name:          o.name,
		Client:        middleware.NewStreamConn(stdin, stdout, nil, srv.MaxLineBytes),
		Upstream:      child,
		Logger:        logger,
		Tools:         tools,
		DiscoveryTool: srv.DiscoveryTool,
		Discovery:     string(srv.Discovery),
		CatalogSeen:   func(catalog []json.RawMessage) { tools.CatalogSeen(ctx, catalog) },
	}
	go tools.Watch(ctx, session.ReevaluateTools)
	logger.Info("relaying", "command", o.command[0], "pid", child.Pid())
	err = session.Run(ctx)
	if err != nil {
		logger.Error("session ended", "error", err)
		return exitUpstream
	}
	logger.Info("session ended")
	return exitOK
}

// loadPolicy reads the config and the state store and returns the server's
// effective settings (flags applied) and its tool gate.
func loadPolicy(ctx context.Context, o wrapOptions, logger *slog.Logger) (config.Server, *gate.Gate, error) {
	path, err := config.ConfigPath(o.configPath, os.Getenv)
	if err != nil {
		return config.Server{}, nil, err
	}
	file, err := config.Load(path)
	if err != nil {
		return config.Server{}, nil, err
	}
	srv := file.Server(o.name)
	if o.discoveryTool != "" {
		srv.DiscoveryTool = o.discoveryTool
	}
	if o.discovery != "" {
		switch o.discovery {
		case middleware.DiscoveryAuto, middleware.DiscoveryAlways, middleware.DiscoveryNever:
			srv.Discovery = config.DiscoveryMode(o.discovery)
		default:
			return srv, nil, fmt.Errorf("--discovery %q: want auto, always or never", o.discovery)
		}
	}
	if o.maxLineBytes > 0 {
		srv.MaxLineBytes = o.maxLineBytes
	}
	allow, err := policy.ParseAllowList(o.allowTools)
	if err != nil {
		return srv, nil, fmt.Errorf("--allow-tools: %w", err)
	}
	eval, err := policy.NewEvaluator(policy.Options{
		ServerDisabled: !srv.Enabled,
		Rules:          srv.Tools,
		Allow:          allow,
		Approval:       srv.Approval,
	})
	if err != nil {
		return srv, nil, fmt.Errorf("%s: servers.%s: %w", path, o.name, err)
	}
	dir, err := config.StateDir(o.stateDir, os.Getenv)
	if err != nil {
		return srv, nil, err
	}
	g := gate.New(o.name, eval, state.Open(dir, logger), logger)
	g.Reload(ctx)
	return srv, g, nil
}

// childEnv is mcpwrap's environment plus the config's env entries.
func childEnv(extra map[string]string) []string {
	if len(extra) == 0 {
		return nil // inherit
	}
	env := os.Environ()
	for k, v := range extra {
		env = append(env, k+"="+v)
	}
	return env
}

func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}
