package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/gofrs/flock"

	"github.com/mcpwrap/mcpwrap/internal/atomicfile"
	"github.com/mcpwrap/mcpwrap/internal/filewatch"
)

// Token is one server's sign-in, stored per user and keyed by the server's
// MCP endpoint (ServerURL): every sidecar, login and status of that
// endpoint shares it, whatever --name each gives it, and no other endpoint
// does. Everything a refresh needs is here, so any process can refresh it.
type Token struct {
	// ServerURL is the MCP endpoint the sign-in was made for; sidecars
	// find their token by it.
	ServerURL string `json:"server_url"`
	// Name is the --name of the server that signed in, for status (which
	// shows only the URL's origin); "" in stores written before it.
	Name string `json:"name,omitempty"`
	// Issuer is the authorization server's issuer identifier.
	Issuer string `json:"issuer"`
	// Resource is the RFC 8707 resource the token is bound to, sent again
	// with every refresh.
	Resource string `json:"resource"`
	// TokenURL is the authorization server's token endpoint.
	TokenURL string `json:"token_url"`
	// AuthStyle is how the client authenticates at TokenURL
	// (golang.org/x/oauth2's AuthStyle values).
	AuthStyle int `json:"auth_style"`
	// ClientID and ClientSecret are the client the token was issued to.
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret,omitempty"`
	// Scopes were granted (or requested, when the server did not say).
	Scopes []string `json:"scopes,omitempty"`

	AccessToken  string    `json:"access_token"`
	TokenType    string    `json:"token_type,omitempty"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
}

// Registration is a client registered dynamically with an authorization
// server, kept so that a restart never registers again.
type Registration struct {
	Issuer       string `json:"issuer"`
	ServerURL    string `json:"server_url"`
	RedirectURL  string `json:"redirect_url"`
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret,omitempty"`
}

// document is the whole store: what one backend item or file holds.
type document struct {
	Version       int            `json:"version"`
	Tokens        []Token        `json:"tokens"`
	Registrations []Registration `json:"registrations"`
}

// find returns the token of serverURL, or nil.
func (d *document) find(serverURL string) *Token {
	for i := range d.Tokens {
		if d.Tokens[i].ServerURL == serverURL {
			return &d.Tokens[i]
		}
	}
	return nil
}

// put stores t in its server's slot, replacing that server's token and no
// other. Tokens are not keyed by issuer and resource: two endpoints of one
// host may name the same ones (both fall back to the root protected-resource
// metadata, resource "https://host"), and a sign-in to one must not sign
// the user out of the other.
func (d *document) put(t Token) {
	d.Tokens = slices.DeleteFunc(d.Tokens, func(x Token) bool { return x.ServerURL == t.ServerURL })
	d.Tokens = append(d.Tokens, t)
}

// registration returns the registration for serverURL and redirectURL.
func (d *document) registration(serverURL, redirectURL string) *Registration {
	for i := range d.Registrations {
		r := &d.Registrations[i]
		if r.ServerURL == serverURL && r.RedirectURL == redirectURL {
			return r
		}
	}
	return nil
}

// TokenStore keeps the sign-in document (tokens and registrations, as
// JSON) where every process that shares it finds it: a keychain item or a
// file of the user's (OpenStore's), or a row of a PostgreSQL database that
// replicas share (internal/pgstore's Doc), maybe sealed ([Seal]). Its
// methods are safe for concurrent use, by any number of processes.
type TokenStore interface {
	// Load returns the document, nil when there is none yet.
	Load(ctx context.Context) ([]byte, error)
	// Update replaces the document with what fn returns for the current
	// one (nil when none), atomically with respect to every other Update
	// of every process; nothing is written when fn fails.
	Update(ctx context.Context, fn func(old []byte) ([]byte, error)) error
	// Lock takes the named lock, which one process at a time holds of all
	// that share the store, waiting for it until ctx is done, and returns
	// its release.
	Lock(ctx context.Context, name string) (unlock func(), err error)
	// TryLock takes the named lock only if no process holds it.
	TryLock(ctx context.Context, name string) (unlock func(), ok bool, err error)
	// Generation returns a value that changes whenever any process updates
	// the document ("" before the first update).
	Generation(ctx context.Context) (string, error)
	// String says where the document is kept, for people: no secret.
	String() string
}

// Notifier is a [TokenStore] that announces changes, so that a [Client]
// watching it never polls: internal/pgstore's Doc, over LISTEN/NOTIFY, and
// OpenStore's keychain or file, over file notifications of its generation
// file (which poll only when notifications are unavailable). A
// TokenStore wrapping another (as [Seal]'s does) is a Notifier when the one
// its Unwrap() TokenStore returns is.
type Notifier interface {
	// Watch calls onChange at once, then whenever the document may have
	// changed: after any process's Update, and whenever changes may have
	// been missed (a notification connection lost, then back). Calls are
	// never concurrent. It returns when ctx is done or the store is closed.
	Watch(ctx context.Context, onChange func())
}

// notifier returns the Notifier ts is, or wraps, if any.
func notifier(ts TokenStore) (Notifier, bool) {
	for ts != nil {
		if n, ok := ts.(Notifier); ok {
			return n, true
		}
		u, ok := ts.(interface{ Unwrap() TokenStore })
		if !ok {
			break
		}
		ts = u.Unwrap()
	}
	return nil, false
}

// Store is the user's sign-in store as a [Client] uses it: tokens and
// registrations, each kept in a [TokenStore] (one for both by default;
// registrations, and tokens too when sealed, in a shared database for
// replicas). A Store is safe for concurrent use.
type Store struct {
	tokens TokenStore // tokens, and the locks of refreshes and sign-ins
	regs   TokenStore // registrations; may be tokens
}

// storeDirName is the store's directory under the state directory.
const storeDirName = "auth"

// OpenStore opens the store under stateDir: in the OS keychain when one
// answers, else in a 0600 file there (which it says once in logger).
// $MCPWRAP_TOKEN_STORE=file (read through getenv) forces the file.
func OpenStore(stateDir string, getenv func(string) string, logger *slog.Logger) (*Store, error) {
	dir := filepath.Join(stateDir, storeDirName)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("token store: %w", err)
	}
	var b backend
	if getenv("MCPWRAP_TOKEN_STORE") != "file" {
		if k, ok := openKeyring(); ok {
			b = k
		}
	}
	if b == nil {
		b = &fileBackend{path: filepath.Join(dir, "tokens.json")}
		if logger != nil {
			logger.Info("no OS keychain available; keeping sign-in tokens in a file readable only by you", "path", filepath.Join(dir, "tokens.json"))
		}
	}
	return NewStore(&localStore{dir: dir, b: b, logger: logger}, nil), nil
}

// newFileStore is a store kept in a file under dir, for tests.
func newFileStore(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	return NewStore(&localStore{dir: dir, b: &fileBackend{path: filepath.Join(dir, "tokens.json")}}, nil), nil
}

// NewStore returns the Store keeping tokens in tokens and registrations in
// regs; nil regs keeps them in tokens too.
func NewStore(tokens, regs TokenStore) *Store {
	if regs == nil {
		regs = tokens
	}
	return &Store{tokens: tokens, regs: regs}
}

// Share returns a Store that keeps registrations in regs and, when tokens
// is not nil, tokens (and the refresh and sign-in locks) in tokens; what
// it is not given stays where s keeps it.
func (s *Store) Share(regs, tokens TokenStore) *Store {
	out := *s
	if regs != nil {
		out.regs = regs
	}
	if tokens != nil {
		out.tokens = tokens
	}
	return &out
}

// Where describes where tokens are kept, for doctor and logs; with
// registrations elsewhere, where those are too.
func (s *Store) Where() string {
	if s.regs == s.tokens {
		return s.tokens.String()
	}
	return s.tokens.String() + "; registrations in " + s.regs.String()
}

// load reads ts's document.
func load(ctx context.Context, ts TokenStore) (*document, error) {
	data, err := ts.Load(ctx)
	if errors.Is(err, ErrWrongKey) {
		return nil, err // it says where
	}
	if err != nil {
		return nil, fmt.Errorf("reading the token store (%s): %w", ts, err)
	}
	return decode(ts, data)
}

// decode parses ts's document; nil is an empty one.
func decode(ts TokenStore, data []byte) (*document, error) {
	d := &document{Version: 1}
	if len(data) == 0 {
		return d, nil
	}
	if err := json.Unmarshal(data, d); err != nil {
		// The content is not echoed: it holds secrets.
		return nil, fmt.Errorf("the token store (%s) is not valid JSON; delete it to sign in again", ts)
	}
	return d, nil
}

// Token returns the stored token of serverURL, or ErrNoToken.
func (s *Store) Token(ctx context.Context, serverURL string) (Token, error) {
	d, err := load(ctx, s.tokens)
	if err != nil {
		return Token{}, err
	}
	if t := d.find(serverURL); t != nil && t.AccessToken != "" {
		return *t, nil
	}
	return Token{}, ErrNoToken
}

// update runs fn on ts's document and writes the result, unless fn fails.
func update(ctx context.Context, ts TokenStore, fn func(*document) error) error {
	var fnErr error // fn's, or the document's: already told where
	err := ts.Update(ctx, func(old []byte) ([]byte, error) {
		d, err := decode(ts, old)
		if err == nil {
			err = fn(d)
		}
		if err != nil {
			fnErr = err
			return nil, err
		}
		return json.MarshalIndent(d, "", "  ")
	})
	if err != nil && fnErr == nil {
		return fmt.Errorf("writing the token store (%s): %w", ts, err)
	}
	return err
}

// SaveToken stores t (and reg, when not nil).
func (s *Store) SaveToken(ctx context.Context, t Token, reg *Registration) error {
	if reg != nil {
		err := update(ctx, s.regs, func(d *document) error {
			d.Registrations = slices.DeleteFunc(d.Registrations, func(r Registration) bool {
				return r.ServerURL == reg.ServerURL && r.RedirectURL == reg.RedirectURL
			})
			d.Registrations = append(d.Registrations, *reg)
			return nil
		})
		if err != nil {
			return err
		}
	}
	return update(ctx, s.tokens, func(d *document) error {
		d.put(t)
		return nil
	})
}

// Forget removes the token of serverURL and reports whether there was one.
// Registrations are kept: signing in again needs no new registration.
func (s *Store) Forget(ctx context.Context, serverURL string) (bool, error) {
	found := false
	err := update(ctx, s.tokens, func(d *document) error {
		n := len(d.Tokens)
		d.Tokens = slices.DeleteFunc(d.Tokens, func(t Token) bool { return t.ServerURL == serverURL })
		found = len(d.Tokens) != n
		return nil
	})
	return found, err
}

// forgetClient removes the token of serverURL and the registrations of
// clientID for it, when clientID is a client mcpwrap registered for it
// (the next sign-in then registers anew), and reports whether it was. A
// client configured by the user (oauth.client_id) is not mcpwrap's to
// drop: then nothing changes.
func (s *Store) forgetClient(ctx context.Context, serverURL, clientID string) (bool, error) {
	registered := false
	err := update(ctx, s.regs, func(d *document) error {
		n := len(d.Registrations)
		d.Registrations = slices.DeleteFunc(d.Registrations, func(r Registration) bool {
			return r.ServerURL == serverURL && r.ClientID == clientID
		})
		registered = len(d.Registrations) != n
		return nil
	})
	if err != nil || !registered {
		return registered, err
	}
	_, err = s.Forget(ctx, serverURL)
	return registered, err
}

// SignIn is one stored sign-in as status and doctor show it: no token.
type SignIn struct {
	// Name is the --name it was made with; "" when unknown.
	Name      string
	ServerURL string
	Status    Status
}

// SignIns lists the stored sign-ins, in the order they were made.
func (s *Store) SignIns(ctx context.Context) ([]SignIn, error) {
	d, err := load(ctx, s.tokens)
	if err != nil {
		return nil, err
	}
	out := make([]SignIn, 0, len(d.Tokens))
	for _, t := range d.Tokens {
		out = append(out, SignIn{Name: t.Name, ServerURL: t.ServerURL, Status: t.status()})
	}
	return out, nil
}

// Registration returns the stored registration for serverURL and
// redirectURL, if any.
func (s *Store) Registration(ctx context.Context, serverURL, redirectURL string) (Registration, bool, error) {
	d, err := load(ctx, s.regs)
	if err != nil {
		return Registration{}, false, err
	}
	if r := d.registration(serverURL, redirectURL); r != nil {
		return *r, true, nil
	}
	return Registration{}, false, nil
}

// lock takes the named lock of the tokens' store, waiting for it.
func (s *Store) lock(ctx context.Context, name string) (func(), error) {
	unlock, err := s.tokens.Lock(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("token store lock: %w", err)
	}
	return unlock, nil
}

// tryLock takes the named lock if no other process holds it.
func (s *Store) tryLock(ctx context.Context, name string) (func(), bool, error) {
	return s.tokens.TryLock(ctx, name)
}

// lockName names a per-server lock without putting the URL (which may
// carry a credential) in a file name or a database.
func lockName(kind, serverURL string) string {
	sum := sha256.Sum256([]byte(serverURL))
	return kind + "-" + hex.EncodeToString(sum[:8]) + ".lock"
}

// Generation returns a value that changes whenever any process updates
// the tokens ("" before the first update, or when it cannot be read).
func (s *Store) Generation(ctx context.Context) string {
	g, _ := s.tokens.Generation(ctx)
	return g
}

// backend keeps a localStore's document somewhere: a keychain item or a
// file.
type backend interface {
	// read returns the document's bytes, or nil when there is none yet.
	read() ([]byte, error)
	write(data []byte) error
	// where describes the backend for the log, e.g. "the OS keychain".
	where() string
}

// localStore is the [TokenStore] of one user on one machine: its document
// in a backend, its locks and generation marker files in dir, so that
// every mcpwrap process of the user shares it. It is a [Notifier]: every
// Update replaces the generation file, which its Watch follows.
type localStore struct {
	dir    string // locks and the generation marker
	b      backend
	logger *slog.Logger // told why Watch polls; nil discards
	// watch holds Watch's timings and seams (zero: filewatch's defaults);
	// tests shorten and replace them.
	watch filewatch.Watch
}

var _ Notifier = (*localStore)(nil)

func (l *localStore) String() string { return l.b.where() }

func (l *localStore) Load(context.Context) ([]byte, error) { return l.b.read() }

// Update runs fn under the store's file lock, writes, and bumps the
// generation marker other processes watch.
func (l *localStore) Update(ctx context.Context, fn func([]byte) ([]byte, error)) error {
	unlock, err := l.Lock(ctx, "store.lock")
	if err != nil {
		return err
	}
	defer unlock()
	old, err := l.b.read()
	if err != nil {
		return err
	}
	data, err := fn(old)
	if err != nil {
		return err
	}
	if err := l.b.write(data); err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(l.dir, generationFile), []byte(rand.Text()))
}

// lockRetry is how often a busy lock is tried again.
const lockRetry = 10 * time.Millisecond

// Lock takes the named file lock under the store's directory, waiting
// while another process holds it.
func (l *localStore) Lock(ctx context.Context, name string) (func(), error) {
	fl := flock.New(filepath.Join(l.dir, name))
	ok, err := fl.TryLockContext(ctx, lockRetry)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, ctx.Err()
	}
	return func() { _ = fl.Unlock() }, nil
}

func (l *localStore) TryLock(_ context.Context, name string) (func(), bool, error) {
	fl := flock.New(filepath.Join(l.dir, name))
	ok, err := fl.TryLock()
	if err != nil || !ok {
		return nil, false, err
	}
	return func() { _ = fl.Unlock() }, true, nil
}

const generationFile = "generation"

// Watch calls onChange once it observes the generation file, then after
// every Update of any process sharing the store, whose last step replaces
// that file (a rename: Update's writes are atomic), until ctx is done. It
// holds one file notification watcher on the store's directory (made if
// missing); without one (a user's inotify instances exhausted, the
// directory removed) it says why in the log and checks the file once a
// second. The keychain is no exception: its item is written only by Update,
// which replaces the file after it; an item changed by another program is
// not seen, as no poll of the generation would see it. Calls are debounced
// (about 100 ms), never concurrent, and Watch waits for the goroutine it
// starts.
func (l *localStore) Watch(ctx context.Context, onChange func()) {
	gen := filepath.Join(l.dir, generationFile)
	w := l.watch
	w.Dirs = []string{l.dir}
	w.Match = func(path string) bool { return path == gen }
	w.Versions = func() map[string]os.FileInfo {
		fi, err := os.Stat(gen)
		if err != nil {
			return nil
		}
		return map[string]os.FileInfo{gen: fi}
	}
	w.Name, w.Path, w.Logger = "the sign-in store's generation file", gen, l.logger
	w.Run(ctx, onChange)
}

func (l *localStore) Generation(context.Context) (string, error) {
	b, err := os.ReadFile(filepath.Join(l.dir, generationFile))
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	return string(b), err
}

// fileBackend keeps the document in a file only the user can read.
type fileBackend struct{ path string }

func (f *fileBackend) read() ([]byte, error) {
	b, err := os.ReadFile(f.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return b, err
}

func (f *fileBackend) write(data []byte) error { return writeFileAtomic(f.path, data) }

// writeFileAtomic replaces path with data, mode 0600, through a hidden
// temporary file beside it (".NAME-*", which the watch ignores).
func writeFileAtomic(path string, data []byte) error {
	return atomicfile.Write(path, data, 0o600, "."+filepath.Base(path)+"-*")
}

func (f *fileBackend) where() string { return "file " + f.path }
