package pgstore

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Pool bounds: a store is opened by every sidecar, so each holds few
// connections, and lets them go when idle.
const (
	maxConns       = 4
	maxConnIdle    = time.Minute
	connectTimeout = 5 * time.Second
)

// ErrPasswordInURL is returned for a store URL that carries a password:
// a URL given as --store is on a command line, where any user of the
// machine can read it.
var ErrPasswordInURL = errors.New("the store's URL must not carry the password: " +
	"put it in $PGPASSWORD or in a password file ($PGPASSFILE, else ~/.pgpass), as for psql")

// IsURL reports whether location names a PostgreSQL store: a postgres://
// or postgresql:// URL. Anything else is a state directory's location.
func IsURL(location string) bool {
	return strings.HasPrefix(location, "postgres://") || strings.HasPrefix(location, "postgresql://")
}

// parseURL parses a store URL into the pool's configuration. It refuses a
// URL that is no postgres:// URL or carries a password; the password comes
// from $PGPASSWORD or the password file, as libpq takes it (pgx reads
// both). Its errors never quote the URL.
func parseURL(raw string) (*pgxpool.Config, error) {
	if !IsURL(raw) {
		return nil, errors.New("the store's URL must start with postgres:// or postgresql://")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, errors.New("the store's URL does not parse")
	}
	if _, ok := u.User.Password(); ok {
		return nil, ErrPasswordInURL
	}
	for key := range u.Query() {
		if strings.EqualFold(key, "password") {
			return nil, ErrPasswordInURL
		}
	}
	cfg, err := pgxpool.ParseConfig(raw)
	if err != nil {
		// pgx's error quotes the URL (its password redacted); ours names
		// only what is wrong.
		msg := "it does not parse"
		if _, after, ok := strings.Cut(err.Error(), "`: "); ok {
			msg = after
		}
		return nil, fmt.Errorf("the store's URL is invalid: %s", msg)
	}
	cfg.MaxConns = maxConns
	cfg.MaxConnIdleTime = maxConnIdle
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = connectTimeout
	}
	return cfg, nil
}

// describe names the database cfg connects to, for people: host (or socket
// directory), port and database, never the user, password or parameters.
func describe(cfg *pgxpool.Config) string {
	c := cfg.ConnConfig
	if strings.HasPrefix(c.Host, "/") {
		return fmt.Sprintf("postgres://localhost:%d/%s (socket in %s)", c.Port, c.Database, c.Host)
	}
	return fmt.Sprintf("postgres://%s/%s", net.JoinHostPort(c.Host, strconv.Itoa(int(c.Port))), c.Database)
}
