package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/mcpwrap/mcpwrap/internal/config"
	"github.com/mcpwrap/mcpwrap/internal/gate"
	"github.com/mcpwrap/mcpwrap/internal/httpfront"
	"github.com/mcpwrap/mcpwrap/internal/stores"
	"github.com/mcpwrap/mcpwrap/middleware"
)

// listenOptions are the flags of HTTP mode: serve MCP over streamable HTTP
// instead of stdio.
type listenOptions struct {
	addr        string
	public      bool
	tokenEnv    string
	idleTimeout time.Duration
	maxSessions int
	origins     stringsFlag
	conns       httpfront.ConnLimits // slow-client protection: header and body timeouts, connection cap
}

func (l *listenOptions) addFlags(fs *flag.FlagSet) {
	fs.StringVar(&l.addr, "listen", "", "serve MCP over streamable HTTP at http://ADDR/mcp instead of stdio, e.g. 127.0.0.1:8931; each HTTP session gets its own server process (or remote connection); 2026-07-28 stateless requests share one")
	fs.BoolVar(&l.public, "listen-public", false, "allow --listen on an address other machines can reach (needs --auth-token-env)")
	fs.StringVar(&l.tokenEnv, "auth-token-env", "", "with --listen: require a bearer token, the value of this environment variable")
	fs.DurationVar(&l.idleTimeout, "idle-timeout", 0, fmt.Sprintf("with --listen: end an HTTP session (and its server) idle this long (default %s); negative never does", httpfront.DefaultIdleTimeout))
	fs.IntVar(&l.maxSessions, "max-sessions", 0, fmt.Sprintf("with --listen: the most HTTP sessions open at once (default %d)", httpfront.DefaultMaxSessions))
	fs.Var(&l.origins, "allow-origin", "with --listen: a browser Origin to accept besides loopback ones, repeatable")
	fs.DurationVar(&l.conns.HeaderTimeout, "header-timeout", 0, fmt.Sprintf("with --listen: cut off a client whose request headers take longer (default %s)", httpfront.DefaultHeaderTimeout))
	fs.DurationVar(&l.conns.BodyTimeout, "body-timeout", 0, fmt.Sprintf("with --listen: cut off a client whose request body takes longer to arrive, counted from its headers (default %s)", httpfront.DefaultBodyTimeout))
	fs.IntVar(&l.conns.MaxConns, "max-conns", 0, fmt.Sprintf("with --listen: the most HTTP connections open at once; more wait to be accepted (default %d)", httpfront.DefaultMaxConns))
}

// validate checks the flags' combination; the token is read at start.
func (l listenOptions) validate() error {
	if l.addr == "" {
		if l.public || l.tokenEnv != "" || len(l.origins) > 0 {
			return errors.New("--listen-public, --auth-token-env and --allow-origin go with --listen")
		}
		return nil
	}
	if _, _, err := net.SplitHostPort(l.addr); err != nil {
		return fmt.Errorf("--listen %q: want HOST:PORT, as in 127.0.0.1:8931", l.addr)
	}
	if l.maxSessions < 0 {
		return fmt.Errorf("--max-sessions %d: want at least 1", l.maxSessions)
	}
	switch {
	case l.conns.MaxConns < 0:
		return fmt.Errorf("--max-conns %d: want at least 1", l.conns.MaxConns)
	case l.conns.HeaderTimeout < 0:
		return fmt.Errorf("--header-timeout %s: want a positive duration", l.conns.HeaderTimeout)
	case l.conns.BodyTimeout < 0:
		return fmt.Errorf("--body-timeout %s: want a positive duration", l.conns.BodyTimeout)
	}
	if !httpfront.IsLoopbackAddr(l.addr) {
		if !l.public {
			return fmt.Errorf("--listen %s is reachable from other machines: add --listen-public and --auth-token-env to mean it, or listen on 127.0.0.1", l.addr)
		}
		if l.tokenEnv == "" {
			return errors.New("--listen-public needs --auth-token-env: a server other machines can reach must require a token")
		}
	}
	return nil
}

// token returns the bearer token to require, "" for none.
func (l listenOptions) token(getenv func(string) string) (string, error) {
	if l.tokenEnv == "" {
		return "", nil
	}
	token := strings.TrimSpace(getenv(l.tokenEnv))
	if token == "" {
		return "", fmt.Errorf("--auth-token-env %s: the variable is unset or empty", l.tokenEnv)
	}
	return token, nil
}

// listenShutdownGrace bounds a shutdown: requests in flight finish, then
// every session's server is terminated.
const listenShutdownGrace = 10 * time.Second

// runListen serves MCP over streamable HTTP until ctx is done. Every HTTP
// session gets its own Session, which dials its own upstream: a child per
// session for a command, a connection per session for --url. The tool gate
// is shared, so a policy change reaches every session.
func runListen(ctx context.Context, o wrapOptions, srv config.Server, tools *gate.Gate, opened *stores.Set, ob *observability, stderr io.Writer, logger, base *slog.Logger) int {
	token, err := o.listen.token(os.Getenv)
	if err != nil {
		logger.Error("bad configuration", "error", err)
		return exitUsage
	}
	var setupErr error // why the --url server cannot be reached as configured
	if o.url != "" {
		// One sign-in for every HTTP session; a browser opens at most as a
		// sidecar's would.
		if o.signIn, setupErr = signIn(o, srv, opened, stderr, logger, true); setupErr == nil {
			defer o.signIn.Close()
			o.signIn.SignedIn = ob.signedIn(o.name)
			o.signIn.Refreshed = ob.refreshed(o.name)
		}
	}
	front := &httpfront.Server{
		NewSession: func(client middleware.Conn, log *slog.Logger) *middleware.Session {
			s := newSession(o, srv, tools, dialer(o, srv, setupErr, stderr, log), base)
			s.Client, s.Logger = client, log
			s.CatalogSeen = func(catalog []json.RawMessage) { tools.CatalogSeen(ctx, catalog) }
			ob.observe(s, "tcp", o.url != "")
			return s
		},
		Token:          token,
		AllowedOrigins: o.listen.origins,
		MaxSessions:    o.listen.maxSessions,
		IdleTimeout:    o.listen.idleTimeout, // 0: the default; negative: never
		MaxBodyBytes:   int64(srv.MaxLineBytes),
		Logger:         logger,
	}
	ln, err := net.Listen("tcp", o.listen.addr)
	if err != nil {
		logger.Error("cannot listen", "error", err)
		return exitError
	}
	reevaluate := func() {
		for _, s := range front.Sessions() {
			s.ReevaluateTools()
		}
	}
	configChanged := func() {
		reevaluate()
		for _, s := range front.Sessions() {
			s.Retry() // a server just enabled starts now
		}
	}
	defer goUntilStopped(ctx, func(ctx context.Context) { tools.Watch(ctx, reevaluate) })()
	defer watchConfig(ctx, o, tools, configChanged, logger)()
	if o.signIn != nil {
		// A sign-in finished (in any process): load the server again.
		defer goUntilStopped(ctx, func(ctx context.Context) {
			o.signIn.Watch(ctx, 0, func() {
				for _, s := range front.Sessions() {
					s.Retry()
				}
			})
		})()
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", front)
	probes := httpfront.Probes{Ready: tools.Ready}
	mux.HandleFunc(httpfront.PathHealthz, probes.Healthz)
	mux.HandleFunc(httpfront.PathReadyz, probes.Readyz)
	hs := o.listen.conns.NewHTTPServer(mux, logger)
	served := make(chan error, 1)
	go func() { served <- hs.Serve(o.listen.conns.Listener(ln)) }()
	url := "http://" + ln.Addr().String() + "/mcp"
	stopStatus := publishFront(ctx, o, url, front, tools, logger)
	defer stopStatus()
	logger.Info("listening", "url", url, "upstream", upstreamDesc(o), "auth", token != "",
		"probes", httpfront.PathHealthz+" "+httpfront.PathReadyz)

	code := exitOK
	select {
	case <-ctx.Done():
	case err := <-served:
		logger.Error("the HTTP server stopped", "error", err)
		code = exitError
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), listenShutdownGrace)
	defer cancel()
	httpDone := make(chan error, 1)
	go func() { httpDone <- hs.Shutdown(shutdownCtx) }() // stops accepting; waits for the handlers below
	if err := front.Shutdown(shutdownCtx); err != nil {
		logger.Warn("sessions not drained in time", "error", err)
	}
	if err := <-httpDone; err != nil {
		hs.Close() // a client that stopped reading keeps its handler busy
	}
	logger.Info("stopped")
	return code
}

// stringsFlag collects a repeated flag's values.
type stringsFlag []string

func (s *stringsFlag) String() string     { return strings.Join(*s, ", ") }
func (s *stringsFlag) Set(v string) error { *s = append(*s, v); return nil }
