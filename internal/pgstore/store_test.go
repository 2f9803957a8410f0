package pgstore

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/internal/pgtest"
	"github.com/mcpwrap/mcpwrap/internal/state"
	"github.com/mcpwrap/mcpwrap/internal/state/storetest"
)

// cluster is the throwaway PostgreSQL every test of the package shares, a
// database each (nil when PostgreSQL is missing: the tests skip).
var cluster *pgtest.Cluster

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(runHelper(mode))
	}
	os.Exit(pgtest.Main(m, &cluster))
}

// newDB returns the URL of a new, empty database.
func newDB(t *testing.T) string {
	t.Helper()
	pgtest.Need(t, cluster)
	dsn, err := cluster.CreateDB(t.Context())
	require.NoError(t, err)
	return dsn
}

// open opens a Store on dsn, closed when the test ends.
func open(t *testing.T, dsn string, opts Options) *Store {
	t.Helper()
	s, err := Open(dsn, opts)
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s
}

// TestConformance runs the store conformance suite against PostgreSQL,
// every handle a Store with a pool of its own on one database.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Backend {
		dsn := newDB(t)
		return storetest.Backend{
			Open: func(t *testing.T) state.Store { return open(t, dsn, Options{}) },
			Corrupt: func(t *testing.T, server string, doc []byte) {
				require.NoError(t, cluster.Exec(t.Context(), dsn,
					"UPDATE mcpwrap_state SET doc = $2 WHERE server = $1", server, doc))
			},
		}
	})
}
