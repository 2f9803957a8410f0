// Package stores opens the state store an mcpwrap command is told to use:
// the file store in the state directory by default, or the PostgreSQL store
// a postgres:// URL names (see config.StoreLocation for where the choice
// comes from). It is the one place that knows both implementations; gate,
// toolscli and the panel take a state.Store.
package stores

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/mcpwrap/mcpwrap/internal/auth"
	"github.com/mcpwrap/mcpwrap/internal/config"
	"github.com/mcpwrap/mcpwrap/internal/pgstore"
	"github.com/mcpwrap/mcpwrap/internal/state"
)

// Set opens stores by location, each once, for the run of one command (a
// sidecar, doctor's many targets), and closes them together. The zero Set is
// ready to use; it is safe for concurrent use.
type Set struct {
	mu   sync.Mutex
	open map[string]state.Store
	pg   []*pgstore.Store
}

// Open returns the store at location: [config.StoreFile] is the file store
// in stateDir, a postgres:// URL the PostgreSQL store (one pool per URL per
// Set). from says where location came from (see config.StoreLocation) and
// prefixes the errors, which never repeat the location. A nil logger
// discards.
func (s *Set) Open(location, from, stateDir string, logger *slog.Logger) (state.Store, error) {
	if location == config.StoreFile {
		return state.Open(stateDir, logger), nil
	}
	if !pgstore.IsURL(location) {
		return nil, fmt.Errorf("%s: want %q (the state directory) or a postgres:// URL", from, config.StoreFile)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.open[location]; ok {
		return st, nil
	}
	st, err := pgstore.Open(location, pgstore.Options{Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", from, err)
	}
	if s.open == nil {
		s.open = make(map[string]state.Store)
	}
	s.open[location] = st
	s.pg = append(s.pg, st)
	return st, nil
}

// Close closes every store the Set opened; call it once their users (a
// gate's Watch) have returned.
func (s *Set) Close() {
	s.mu.Lock()
	pg := s.pg
	s.pg, s.open = nil, nil
	s.mu.Unlock()
	for _, st := range pg {
		st.Close()
	}
}

// Describe names where st keeps the state, for people: a directory, or a
// database as host, port and name.
func Describe(st state.Store) string {
	switch st := st.(type) {
	case *state.FileStore:
		return "files in " + st.Dir()
	case *pgstore.Store:
		return "PostgreSQL " + st.String()
	}
	return fmt.Sprintf("%T", st)
}

// Check reports whether st can be used now: for PostgreSQL, the database
// reachable and its schema migrated; for any store, its servers listed.
func Check(ctx context.Context, st state.Store) error {
	if pg, ok := st.(*pgstore.Store); ok {
		if err := pg.Ping(ctx); err != nil {
			return err
		}
	}
	_, err := st.Servers(ctx)
	return err
}

// The sign-in documents a PostgreSQL store keeps (see internal/auth).
const (
	registrationsDoc = "registrations" // registrations only, as JSON
	signInsDoc       = "signins"       // tokens and registrations, sealed
)

// SignIns returns the sign-in store of a command whose state store is st:
// local (the user's keychain or file) for the file store; for PostgreSQL,
// the registrations in the database, so that replicas share one, and,
// when key ($MCPWRAP_STORE_KEY) is set, the tokens there too, sealed
// under it; else the tokens stay in local. key is never quoted in errors.
func SignIns(st state.Store, local *auth.Store, key string) (*auth.Store, error) {
	pg, ok := st.(*pgstore.Store)
	if !ok {
		return local, nil
	}
	if key == "" {
		return local.Share(pg.Doc(registrationsDoc), nil), nil
	}
	k, err := auth.ParseKey(key)
	if err != nil {
		return nil, err
	}
	sealed := auth.Seal(pg.Doc(signInsDoc), k, signInsDoc)
	return local.Share(sealed, sealed), nil
}
