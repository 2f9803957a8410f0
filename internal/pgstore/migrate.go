package pgstore

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// migrations are the schema's versions, applied in order: NNNN_what.sql,
// each run once, in the transaction that records it. A migration is never
// edited once released; a change is a new file.
//
//go:embed migrations/*.sql
var migrations embed.FS

// migrationLock is the transaction-level advisory lock that serialises
// migrations: the replica that takes it first migrates, the others wait
// and then find nothing to do.
const migrationLock int64 = 0x6d6370777261705f // "mcpwrap_"

// ErrSchemaTooNew is wrapped by the error of a database whose schema a
// newer mcpwrap migrated: this one does not know what it would break.
var ErrSchemaTooNew = fmt.Errorf("the database's mcpwrap schema is newer than this mcpwrap knows")

type migration struct {
	version int
	sql     string
}

// loadMigrations returns the embedded migrations in version order.
func loadMigrations() ([]migration, error) {
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, name := range names {
		prefix, _, _ := strings.Cut(path.Base(name), "_")
		v, err := strconv.Atoi(prefix)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: no version prefix", name)
		}
		data, err := migrations.ReadFile(name)
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, sql: string(data)})
	}
	slices.SortFunc(out, func(a, b migration) int { return a.version - b.version })
	for i, m := range out {
		if m.version != i+1 {
			return nil, fmt.Errorf("migration versions must be 1, 2, ...: found %d at %d", m.version, i+1)
		}
	}
	return out, nil
}

// migrate brings the schema to the newest version, in one transaction under
// migrationLock, and returns the version. It refuses a schema newer than the
// newest migration.
func migrate(ctx context.Context, conn interface {
	Begin(context.Context) (pgx.Tx, error)
}) (int, error) {
	all, err := loadMigrations()
	if err != nil {
		return 0, err
	}
	tx, err := conn.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", migrationLock); err != nil {
		return 0, err
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS mcpwrap_schema (
		version    integer PRIMARY KEY,
		applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return 0, err
	}
	var current int
	if err := tx.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM mcpwrap_schema").Scan(&current); err != nil {
		return 0, err
	}
	if current > len(all) {
		return current, fmt.Errorf("%w: version %d, this mcpwrap's newest is %d; upgrade mcpwrap", ErrSchemaTooNew, current, len(all))
	}
	for _, m := range all[current:] {
		if _, err := tx.Exec(ctx, m.sql); err != nil {
			return current, fmt.Errorf("migration %d: %w", m.version, err)
		}
		if _, err := tx.Exec(ctx, "INSERT INTO mcpwrap_schema (version) VALUES ($1)", m.version); err != nil {
			return current, err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return current, err
	}
	return len(all), nil
}
