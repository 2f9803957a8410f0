package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mcpwrap/mcpwrap/internal/auth"
	"github.com/mcpwrap/mcpwrap/internal/clientconfig"
	"github.com/mcpwrap/mcpwrap/internal/config"
	"github.com/mcpwrap/mcpwrap/internal/doctor"
	"github.com/mcpwrap/mcpwrap/internal/redact"
	"github.com/mcpwrap/mcpwrap/internal/stores"
	"github.com/mcpwrap/mcpwrap/internal/upstream"
	"github.com/mcpwrap/mcpwrap/resilience"
)

// oauthFlags are the --oauth-* flags, which override the config's `oauth`.
type oauthFlags struct {
	clientID, clientSecretEnv, clientMetadataURL, scopes string
	redirectPort                                         int
}

func (f *oauthFlags) add(fs *flag.FlagSet) {
	fs.StringVar(&f.clientID, "oauth-client-id", "", "sign in with this pre-registered OAuth client id (--url servers that ask for a sign-in)")
	fs.StringVar(&f.clientSecretEnv, "oauth-client-secret-env", "", "name of the environment variable holding that client's secret")
	fs.StringVar(&f.clientMetadataURL, "oauth-client-metadata-url", "", "https URL of mcpwrap's client ID metadata document, used when the authorization server supports them")
	fs.StringVar(&f.scopes, "oauth-scopes", "", "scopes to ask for, separated by spaces or commas (default: those the server names)")
	fs.IntVar(&f.redirectPort, "oauth-redirect-port", 0, "port of the loopback sign-in redirect http://127.0.0.1:PORT/callback (default: a stable port derived from --name)")
}

// apply overrides the config's settings with the flags given.
func (f oauthFlags) apply(o *config.OAuth) {
	o.ClientID = cmp.Or(f.clientID, o.ClientID)
	o.ClientSecretEnv = cmp.Or(f.clientSecretEnv, o.ClientSecretEnv)
	o.ClientMetadataURL = cmp.Or(f.clientMetadataURL, o.ClientMetadataURL)
	if f.scopes != "" {
		o.Scopes = strings.FieldsFunc(f.scopes, func(r rune) bool { return r == ' ' || r == ',' })
	}
	o.RedirectPort = cmp.Or(f.redirectPort, o.RedirectPort)
}

// signIn returns the OAuth client of the remote server o wraps, its store
// opened in opened (see signInStore). autoLogin lets it open the browser
// once (the sidecar); doctor passes false.
func signIn(o wrapOptions, srv config.Server, opened *stores.Set, stderr io.Writer, logger *slog.Logger, autoLogin bool) (*auth.Client, error) {
	getenv := o.getenv()
	endpoint, err := upstream.ExpandURL(o.url, getenv)
	if err != nil {
		return nil, err
	}
	oc := srv.OAuth
	o.oauth.apply(&oc)
	if oc.RedirectPort < 0 || oc.RedirectPort > 65535 {
		return nil, fmt.Errorf("%w: --oauth-redirect-port %d: not a port", resilience.ErrConfig, oc.RedirectPort)
	}
	cfg := auth.Config{ClientID: oc.ClientID, ClientMetadataURL: oc.ClientMetadataURL, Scopes: oc.Scopes, RedirectPort: oc.RedirectPort}
	if oc.ClientSecretEnv != "" {
		cfg.ClientSecret = getenv(oc.ClientSecretEnv)
		if cfg.ClientSecret == "" {
			return nil, fmt.Errorf("%w: the OAuth client secret variable %s is not set", resilience.ErrConfig, oc.ClientSecretEnv)
		}
	}
	store, err := signInStore(o.configPath, o.store, stateDir(o), getenv, opened, logger)
	if err != nil {
		return nil, err
	}
	return &auth.Client{
		Name:      o.name,
		ServerURL: endpoint,
		Config:    cfg,
		Store:     store,
		Browser:   &auth.Browser{Getenv: getenv, Output: stderr},
		AutoLogin: autoLogin,
		Logger:    logger,
	}, nil
}

// signInStore opens the sign-in store of a command: the user's keychain
// or file in stateDir; with a PostgreSQL state store (storeFlag, else
// $MCPWRAP_STORE, else configPath's store, opened in opened), the
// registrations in the database and, with $MCPWRAP_STORE_KEY, the tokens
// too, sealed (stores.SignIns). getenv reads the environment.
func signInStore(configPath, storeFlag, stateDir string, getenv func(string) string, opened *stores.Set, logger *slog.Logger) (*auth.Store, error) {
	local, err := auth.OpenStore(stateDir, getenv, logger)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", resilience.ErrStateDir, err)
	}
	file, _ := config.Open(configPath, os.Getenv) // a broken file names no store; the sidecar says why elsewhere
	location, from := config.StoreLocation(storeFlag, getenv, file)
	st, err := opened.Open(location, from, stateDir, logger)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", resilience.ErrConfig, err)
	}
	store, err := stores.SignIns(st, local, getenv(config.EnvStoreKey))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", resilience.ErrConfig, err)
	}
	return store, nil
}

// getenv reads the environment the way the server's entry sees it, with
// the references in the values install moved out of the entry's url and
// headers expanded as the client would have (clientconfig.MovedValues).
func (o wrapOptions) getenv() func(string) string {
	return clientconfig.MovedValues(func(key string) string {
		if v, ok := o.env[key]; ok {
			return v
		}
		return os.Getenv(key)
	})
}

const loginUsage = `Usage: mcpwrap login NAME [--url URL] [flags]
       mcpwrap logout NAME [--url URL]

login signs you in to the remote server NAME (OAuth): it prints the sign-in
URL, opens it in the browser ($MCPWRAP_BROWSER, else $BROWSER, else the
system's) and waits until you have signed in. Running sidecars of the server
notice, and its tools appear. logout forgets the server's tokens.

The server's URL comes from --url, else from the client config entry that
wraps it (Claude Desktop, Claude Code, Cursor).

Exit codes: 0 done, 1 the sign-in failed, 2 bad flags or unknown server.

Flags:
`

// runLogin is `mcpwrap login` and `mcpwrap logout`.
func runLogin(ctx context.Context, cmd string, args []string, stdout, stderr io.Writer) int {
	var o wrapOptions
	fs := flag.NewFlagSet("mcpwrap "+cmd, flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), loginUsage)
		fs.PrintDefaults()
	}
	fs.StringVar(&o.url, "url", "", "the server's MCP endpoint (default: from the client config entry named NAME)")
	fs.StringVar(&o.configPath, "config", "", "config file (default: $MCPWRAP_CONFIG, else <user config dir>/mcpwrap/config.json)")
	fs.StringVar(&o.stateDir, "state-dir", "", "user state directory (default: $MCPWRAP_STATE_DIR, else the OS per-user state dir)")
	fs.StringVar(&o.store, "store", "", "the state store, whose PostgreSQL database keeps registrations (and, with $MCPWRAP_STORE_KEY, tokens) for every replica: file or a postgres:// URL (default: the entry's, else $MCPWRAP_STORE, else the config file's store, else file)")
	o.oauth.add(fs)
	name, rest := "", args
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, rest = args[0], args[1:]
	}
	if err := parseFlags(fs, rest, stdout); err != nil {
		if errors.Is(err, errHelp) {
			return exitOK
		}
		return usageFailed(stderr, "mcpwrap "+cmd, err)
	}
	switch {
	case name == "" && fs.NArg() == 1:
		name = fs.Arg(0)
	case name == "":
		return usageFailed(stderr, "mcpwrap "+cmd, errors.New("give the server's name, as in: mcpwrap "+cmd+" linear"))
	case fs.NArg() > 0:
		return usageFailed(stderr, "mcpwrap "+cmd, fmt.Errorf("unexpected arguments %q", fs.Args()))
	}
	if err := checkURL(o.url); err != nil {
		return usageFailed(stderr, "mcpwrap "+cmd, err)
	}
	o.name = name
	// A sign-in's errors quote URLs derived from the server's, which may
	// carry its credential.
	fail := func(err error) { fmt.Fprintln(stderr, "mcpwrap "+cmd+":", redact.Text(err.Error())) }
	if o.url == "" {
		found, err := entryURL(name)
		if err != nil {
			fail(err)
			return exitUsage
		}
		o.url, o.env = found.url, found.env
		if o.configPath == "" {
			o.configPath = found.configPath
		}
		if o.stateDir == "" {
			o.stateDir = found.stateDir
		}
		o.store = cmp.Or(o.store, found.store)
		o.oauth = found.oauth.overriddenBy(o.oauth)
	}
	logger, closer, err := newLogger(logOptions{level: "warn", format: "text"}, stderr)
	if err != nil {
		fail(err)
		return exitUsage
	}
	defer closer.Close()
	file, err := config.Open(o.configPath, os.Getenv)
	if err != nil {
		fail(err)
		return exitUsage
	}
	var opened stores.Set
	defer opened.Close()
	c, err := signIn(o, file.Server(name), &opened, stderr, logger, false)
	if err != nil {
		fail(err)
		return exitUsage
	}
	defer c.Close()
	if cmd == "logout" {
		found, err := c.Logout(ctx)
		switch {
		case err != nil:
			fail(err)
			return exitError
		case found:
			fmt.Fprintf(stdout, "Signed out of %s.\n", name)
		default:
			fmt.Fprintf(stdout, "Not signed in to %s.\n", name)
		}
		return exitOK
	}
	err = c.Login(ctx, func(url string) {
		fmt.Fprintf(stdout, "Sign in to %s in your browser. If it does not open, open this URL:\n\n  %s\n\n", name, url)
	})
	switch {
	case errors.Is(err, auth.ErrNotProtected):
		fmt.Fprintf(stdout, "%s does not ask for a sign-in (or you are signed in already).\n", name)
		return exitOK
	case err != nil:
		fail(err)
		return exitError
	}
	fmt.Fprintf(stdout, "Signed in to %s. Its running sidecars will pick it up.\n", name)
	return exitOK
}

// foundEntry is a remote server found in a client config.
type foundEntry struct {
	url, configPath, stateDir, store string
	env                              map[string]string
	oauth                            oauthFlags // the entry's own --oauth-* flags
}

// overriddenBy returns f with the flags set in g replacing its own.
func (f oauthFlags) overriddenBy(g oauthFlags) oauthFlags {
	return oauthFlags{
		clientID:          cmp.Or(g.clientID, f.clientID),
		clientSecretEnv:   cmp.Or(g.clientSecretEnv, f.clientSecretEnv),
		clientMetadataURL: cmp.Or(g.clientMetadataURL, f.clientMetadataURL),
		scopes:            cmp.Or(g.scopes, f.scopes),
		redirectPort:      cmp.Or(g.redirectPort, f.redirectPort),
	}
}

// entryURL finds the remote server named name in the client configs.
func entryURL(name string) (foundEntry, error) {
	files, err := clientFiles(clientconfig.AllClients, "")
	if err != nil {
		return foundEntry{}, err
	}
	cwd, _ := os.Getwd()
	for _, f := range files {
		entries, err := doctor.ReadEntries(f.Data, cwd)
		if err != nil {
			continue
		}
		for _, e := range entries {
			o, err := entryOptions(e)
			if err != nil || o.name != name && e.Name != name {
				continue
			}
			if o.url == "" {
				return foundEntry{}, fmt.Errorf("server %q in %s is not a remote (--url) server", name, f.Path)
			}
			return foundEntry{url: o.url, env: e.Env, configPath: o.configPath, stateDir: o.stateDir,
				store: cmp.Or(o.store, e.Env[config.EnvStore]), oauth: o.oauth}, nil
		}
	}
	return foundEntry{}, fmt.Errorf("no remote server %q in the client configs; give its --url", name)
}

// writeSignIns prints the user's stored sign-ins (never a token) for
// status and doctor; nothing when there are none. Each is named by the
// --name it was made with, and its URLs are shown as their origins
// (redact.URL): a server's path or query may hold its key (…/sk-…/mcp).
// The store is the one configPath, storeFlag or the environment selects
// (see signInStore).
func writeSignIns(ctx context.Context, w io.Writer, configPath, storeFlag, stateDir string, opened *stores.Set, now time.Time) {
	store, err := signInStore(configPath, storeFlag, stateDir, os.Getenv, opened, nil)
	if err != nil {
		return // writeStore says what is wrong with the store
	}
	list, err := store.SignIns(ctx)
	if err != nil {
		fmt.Fprintf(w, "\nSign-ins: cannot read %s: %s\n", store.Where(), redact.Text(err.Error()))
		return
	}
	if len(list) == 0 {
		return
	}
	fmt.Fprintf(w, "\nSign-ins (in %s):\n", store.Where())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, s := range list {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", cmp.Or(s.Name, "-"), redact.URL(s.ServerURL), redact.URL(s.Status.Issuer), s.Status.Describe(now))
	}
	_ = tw.Flush()
}
