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

// backend keeps the store's document somewhere: a keychain item or a file.
type backend interface {
	// read returns the document's bytes, or nil when there is none yet.
	read() ([]byte, error)
	write(data []byte) error
	// where describes the backend for the log, e.g. "the OS keychain".
	where() string
}

// Store is the user's token and registration store, shared by every
// mcpwrap process of the user: each update is a read-modify-write under a
// file lock, and bumps a generation marker other processes watch. A Store
// is safe for concurrent use.
type Store struct {
	dir string // locks and the generation marker
	b   backend
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
	return &Store{dir: dir, b: b}, nil
}

// newFileStore is a store kept in a file under dir, for tests.
func newFileStore(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	return &Store{dir: dir, b: &fileBackend{path: filepath.Join(dir, "tokens.json")}}, nil
}

// Where describes where tokens are kept, for doctor and logs.
func (s *Store) Where() string { return s.b.where() }

func (s *Store) load() (*document, error) {
	data, err := s.b.read()
	if err != nil {
		return nil, fmt.Errorf("reading the token store (%s): %w", s.b.where(), err)
	}
	d := &document{Version: 1}
	if len(data) == 0 {
		return d, nil
	}
	if err := json.Unmarshal(data, d); err != nil {
		// The content is not echoed: it holds secrets.
		return nil, fmt.Errorf("the token store (%s) is not valid JSON; delete it to sign in again", s.b.where())
	}
	return d, nil
}

// Token returns the stored token of serverURL, or ErrNoToken.
func (s *Store) Token(serverURL string) (Token, error) {
	d, err := s.load()
	if err != nil {
		return Token{}, err
	}
	if t := d.find(serverURL); t != nil && t.AccessToken != "" {
		return *t, nil
	}
	return Token{}, ErrNoToken
}

// update runs fn on the current document under the store lock and writes
// the result, unless fn fails.
func (s *Store) update(ctx context.Context, fn func(*document) error) error {
	unlock, err := s.lock(ctx, "store.lock")
	if err != nil {
		return err
	}
	defer unlock()
	d, err := s.load()
	if err != nil {
		return err
	}
	if err := fn(d); err != nil {
		return err
	}
	data, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return err
	}
	if err := s.b.write(data); err != nil {
		return fmt.Errorf("writing the token store (%s): %w", s.b.where(), err)
	}
	return s.bump()
}

// SaveToken stores t (and reg, when not nil).
func (s *Store) SaveToken(ctx context.Context, t Token, reg *Registration) error {
	return s.update(ctx, func(d *document) error {
		d.put(t)
		if reg != nil {
			d.Registrations = slices.DeleteFunc(d.Registrations, func(r Registration) bool {
				return r.ServerURL == reg.ServerURL && r.RedirectURL == reg.RedirectURL
			})
			d.Registrations = append(d.Registrations, *reg)
		}
		return nil
	})
}

// Forget removes the token of serverURL and reports whether there was one.
// Registrations are kept: signing in again needs no new registration.
func (s *Store) Forget(ctx context.Context, serverURL string) (bool, error) {
	found := false
	err := s.update(ctx, func(d *document) error {
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
	err := s.update(ctx, func(d *document) error {
		n := len(d.Registrations)
		d.Registrations = slices.DeleteFunc(d.Registrations, func(r Registration) bool {
			return r.ServerURL == serverURL && r.ClientID == clientID
		})
		if registered = len(d.Registrations) != n; registered {
			d.Tokens = slices.DeleteFunc(d.Tokens, func(t Token) bool { return t.ServerURL == serverURL })
		}
		return nil
	})
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
func (s *Store) SignIns() ([]SignIn, error) {
	d, err := s.load()
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
func (s *Store) Registration(serverURL, redirectURL string) (Registration, bool, error) {
	d, err := s.load()
	if err != nil {
		return Registration{}, false, err
	}
	if r := d.registration(serverURL, redirectURL); r != nil {
		return *r, true, nil
	}
	return Registration{}, false, nil
}

// lockRetry is how often a busy lock is tried again.
const lockRetry = 10 * time.Millisecond

// lock takes the named file lock under the store's directory, waiting
// while another process holds it, and returns its release.
func (s *Store) lock(ctx context.Context, name string) (func(), error) {
	l := flock.New(filepath.Join(s.dir, name))
	ok, err := l.TryLockContext(ctx, lockRetry)
	if err != nil {
		return nil, fmt.Errorf("token store lock: %w", err)
	}
	if !ok {
		return nil, fmt.Errorf("token store lock: %w", ctx.Err())
	}
	return func() { _ = l.Unlock() }, nil
}

// tryLock takes the named lock if no other process holds it.
func (s *Store) tryLock(name string) (func(), bool, error) {
	l := flock.New(filepath.Join(s.dir, name))
	ok, err := l.TryLock()
	if err != nil || !ok {
		return nil, false, err
	}
	return func() { _ = l.Unlock() }, true, nil
}

// lockName names a per-server lock file without putting the URL (which
// may carry a credential) in a file name.
func lockName(kind, serverURL string) string {
	sum := sha256.Sum256([]byte(serverURL))
	return kind + "-" + hex.EncodeToString(sum[:8]) + ".lock"
}

const generationFile = "generation"

// bump records that the store changed, for [Store.Generation] readers.
func (s *Store) bump() error {
	return writeFileAtomic(filepath.Join(s.dir, generationFile), []byte(rand.Text()), 0o600)
}

// Generation returns a value that changes whenever any process updates
// the store ("" before the first update).
func (s *Store) Generation() string {
	b, err := os.ReadFile(filepath.Join(s.dir, generationFile))
	if err != nil {
		return ""
	}
	return string(b)
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

func (f *fileBackend) write(data []byte) error { return writeFileAtomic(f.path, data, 0o600) }

func (f *fileBackend) where() string { return "file " + f.path }

// writeFileAtomic replaces path with data: temporary file, fsync, rename,
// so a crash leaves the old or the new content, never a mix.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
