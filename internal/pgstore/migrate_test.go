package pgstore

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Replicas starting at once on an empty database migrate it once: each
// finds the schema ready, and each version is recorded once.
func TestMigrationRunsOnceAcrossConcurrentStarts(t *testing.T) {
	dsn := newDB(t)
	const replicas = 6
	var wg sync.WaitGroup
	errs := make([]error, replicas)
	for i := range replicas {
		s := open(t, dsn, Options{})
		wg.Go(func() { errs[i] = s.Ping(t.Context()) })
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	all, err := loadMigrations()
	require.NoError(t, err)
	s := open(t, dsn, Options{})
	var versions, distinct int
	require.NoError(t, s.pool.QueryRow(t.Context(), "SELECT count(*), count(DISTINCT version) FROM mcpwrap_schema").Scan(&versions, &distinct))
	assert.Equal(t, len(all), versions)
	assert.Equal(t, len(all), distinct)
}

// A database a newer mcpwrap migrated is refused, not used: this mcpwrap
// does not know what its writes would break. The refusal is no outage.
func TestNewerSchemaIsRefused(t *testing.T) {
	dsn := newDB(t)
	require.NoError(t, open(t, dsn, Options{}).Ping(t.Context()))
	require.NoError(t, cluster.Exec(t.Context(), dsn, "INSERT INTO mcpwrap_schema (version) VALUES (999)"))
	s := open(t, dsn, Options{})
	_, err := s.Load(t.Context(), "x")
	require.ErrorIs(t, err, ErrSchemaTooNew)
	assert.NotErrorIs(t, err, errUnavailableForTest())
	assert.Contains(t, err.Error(), "version 999")
}

func TestMigrationsAreNumberedInOrder(t *testing.T) {
	all, err := loadMigrations()
	require.NoError(t, err)
	require.NotEmpty(t, all)
	for i, m := range all {
		assert.Equal(t, i+1, m.version)
		assert.NotEmpty(t, m.sql)
	}
}
