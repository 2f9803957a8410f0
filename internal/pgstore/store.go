// Package pgstore is the [state.Store] kept in PostgreSQL, shared by every
// mcpwrap process (replicas of a --listen gateway on many machines, the CLI)
// that is given the same database (see docs/DESIGN.md, The state store).
//
// Each server's state is one row of mcpwrap_state holding the document the
// file store would write. Update locks the row (SELECT … FOR UPDATE) for its
// read-modify-write, so no concurrent update is lost, and announces the
// change with NOTIFY in the same transaction; Watch LISTENs on one
// connection per Store, reconnecting with backoff, and calls every watcher
// back after each reconnect, since changes may have been missed. The sign-in
// documents ([Doc]) are announced and watched the same way, on another
// channel of that connection. The schema is migrated by the first process
// to use the database (migrate.go).
//
// A database that cannot be reached makes Load, Update and Servers fail with
// an error matching [state.ErrUnavailable]; the gate keeps judging by the
// state it loaded last, and loads again when Watch calls back.
package pgstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mcpwrap/mcpwrap/internal/state"
	"github.com/mcpwrap/mcpwrap/resilience"
)

// channel is the NOTIFY channel of state changes; a notification's payload
// is the server's name, or "" for every server.
const channel = "mcpwrap_state"

// maxPayload is the longest server name sent as a payload (NOTIFY takes
// fewer than 8000 bytes); a longer one is announced as "" (every server).
const maxPayload = 4000

// Options configure a [Store]; the zero value is ready to use.
type Options struct {
	// Logger receives the store's warnings (a lost connection) and debug
	// records. Nil discards.
	Logger *slog.Logger
	// Reconnect is the backoff between attempts to re-establish the
	// notification connection. Zero fields take those of
	// [DefaultReconnect].
	Reconnect resilience.Policy
	// NewTimer makes the timers the reconnects wait on; nil means real
	// ones (see [resilience.Retrier]).
	NewTimer func() resilience.Timer
}

// DefaultReconnect is the notification connection's reconnect backoff: 100
// ms doubling up to 2 s, jitter 0.5, for as long as it takes, so a replica
// resyncs within about 2 s of the database coming back.
func DefaultReconnect() resilience.Policy {
	return resilience.Policy{Initial: 100e6, MaxInterval: 2e9, Multiplier: 2, Jitter: 0.5, MaxAttempts: -1, MaxElapsed: -1}
}

// Store is the PostgreSQL [state.Store]. It is safe for concurrent use. Its
// pool connects on first use, so Open succeeds while the database is down.
// Close it once every Watch has returned.
type Store struct {
	pool   *pgxpool.Pool
	where  string // the database, for people (see describe)
	logger *slog.Logger
	opts   Options

	schema sync.Mutex // held while migrating
	ready  bool       // the schema is migrated, under schema

	listener // Watch's notification connection and its watchers
}

var _ state.Store = (*Store)(nil)

// Open returns the store in the database rawURL names (postgres://…,
// without a password: see [ErrPasswordInURL]). It does not connect: the
// schema is migrated by the first use, and a database that is down is
// reported by each use until it is up.
func Open(rawURL string, opts Options) (*Store, error) {
	cfg, err := parseURL(rawURL)
	if err != nil {
		return nil, err
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		return nil, fmt.Errorf("the store's URL is invalid: %w", err)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Store{pool: pool, where: describe(cfg), logger: opts.Logger, opts: opts}
	s.listener.store = s
	return s, nil
}

// String names the database, without user, password or parameters.
func (s *Store) String() string { return s.where }

// Close ends the notification connection and closes the pool. Watch calls
// still running return at once after it, without calling back again.
func (s *Store) Close() {
	s.listener.close()
	s.pool.Close()
}

// Ping connects (migrating the schema if needed) and reports whether the
// store can be used, for `mcpwrap doctor` and readiness checks.
func (s *Store) Ping(ctx context.Context) error { return s.migrated(ctx) }

// migrated migrates the schema once per Store, before first use.
func (s *Store) migrated(ctx context.Context) error {
	s.schema.Lock()
	defer s.schema.Unlock()
	if s.ready {
		return nil
	}
	if _, err := migrate(ctx, s.pool); err != nil {
		return s.fail(ctx, "migrate the schema", err)
	}
	s.ready = true
	return nil
}

// Load implements [state.Store].
func (s *Store) Load(ctx context.Context, server string) (*state.Server, error) {
	if err := s.migrated(ctx); err != nil {
		return nil, err
	}
	var doc []byte
	err := s.pool.QueryRow(ctx, "SELECT doc FROM mcpwrap_state WHERE server = $1", server).Scan(&doc)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return nil, s.fail(ctx, "load", err)
	}
	return s.decode(server, doc)
}

// Update implements [state.Store]: in one transaction it makes sure the
// server's row exists, locks it (SELECT … FOR UPDATE, so concurrent updates
// from any process queue), applies fn, and writes the row and NOTIFYs only
// when the document changed. If fn fails or the document is corrupt, the
// transaction is rolled back: nothing is written.
func (s *Store) Update(ctx context.Context, server string, fn func(*state.Server) error) error {
	if err := s.migrated(ctx); err != nil {
		return err
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return s.fail(ctx, "update", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if _, err := tx.Exec(ctx, "INSERT INTO mcpwrap_state (server) VALUES ($1) ON CONFLICT (server) DO NOTHING", server); err != nil {
		return s.fail(ctx, "update", err)
	}
	var old []byte
	if err := tx.QueryRow(ctx, "SELECT doc FROM mcpwrap_state WHERE server = $1 FOR UPDATE", server).Scan(&old); err != nil {
		return s.fail(ctx, "update", err)
	}
	srv, err := s.decode(server, old)
	if err != nil {
		return err
	}
	if err := fn(srv); err != nil {
		return err
	}
	var doc []byte
	if !srv.Empty() {
		if doc, err = state.Marshal(server, srv); err != nil {
			return fmt.Errorf("state: %w", err)
		}
	}
	if bytes.Equal(doc, old) {
		return nil // unchanged: the rollback spares the row and the watchers
	}
	if _, err := tx.Exec(ctx, "UPDATE mcpwrap_state SET doc = $2, revision = revision + 1, updated_at = now() WHERE server = $1",
		server, doc); err != nil {
		return s.fail(ctx, "update", err)
	}
	if _, err := tx.Exec(ctx, "SELECT pg_notify($1, $2)", channel, payload(server)); err != nil {
		return s.fail(ctx, "update", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return s.fail(ctx, "update", err)
	}
	s.logger.Debug("state: saved", "server", server, "bytes", len(doc))
	return nil
}

// Servers implements [state.Store].
func (s *Store) Servers(ctx context.Context) ([]string, error) {
	if err := s.migrated(ctx); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, "SELECT server FROM mcpwrap_state WHERE doc IS NOT NULL")
	if err != nil {
		return nil, s.fail(ctx, "list servers", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, s.fail(ctx, "list servers", err)
	}
	slices.Sort(names) // byte order, whatever the database's collation
	return names, nil
}

// decode is decodeRow, its error located in this store's database.
func (s *Store) decode(server string, doc []byte) (*state.Server, error) {
	srv, err := decodeRow(server, doc)
	if err != nil {
		return nil, &state.CorruptError{
			Where:  fmt.Sprintf("row %q of table mcpwrap_state in %s", server, s.where),
			Server: server, Err: err}
	}
	return srv, nil
}

// decodeRow parses the doc column of server's row: NULL is an empty state,
// anything else must be the server's document (see state.Unmarshal).
func decodeRow(server string, doc []byte) (*state.Server, error) {
	if doc == nil {
		return &state.Server{}, nil
	}
	return state.Unmarshal(doc, server)
}

// payload is server's NOTIFY payload.
func payload(server string) string {
	if len(server) > maxPayload {
		return ""
	}
	return server
}

// fail returns err from the database, located and classified: one that
// says the database cannot be reached for now matches
// [state.ErrUnavailable]; others (a missing permission, a newer schema)
// do not, and callers fail closed on them as on any unreadable store.
func (s *Store) fail(ctx context.Context, what string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("state store %s: %s: %w", s.where, what, ctx.Err())
	}
	if unavailable(err) {
		return fmt.Errorf("%w: %s: cannot %s: %w", state.ErrUnavailable, s.where, what, err)
	}
	return fmt.Errorf("state store %s: cannot %s: %w", s.where, what, err)
}

// unavailable reports whether err says the database cannot be reached or
// is not accepting work for now: a failure to connect or a lost connection
// (no answer from the server at all), or the server's own connection
// exception, shutdown or overload codes.
func unavailable(err error) bool {
	if errors.Is(err, ErrSchemaTooNew) {
		return false
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return true
	}
	switch {
	case strings.HasPrefix(pgErr.Code, "08"): // connection exception
		return true
	case pgErr.Code == "57P01", pgErr.Code == "57P02", pgErr.Code == "57P03": // shutdown, cannot connect now
		return true
	case pgErr.Code == "53300": // too many connections
		return true
	}
	return false
}
