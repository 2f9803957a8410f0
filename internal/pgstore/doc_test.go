package pgstore

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDocLocksAcrossReplicas: a sign-in lock taken by one replica (its own
// Store and pool) is not granted to another until it is released, and a
// lock of another name or document is independent.
func TestDocLocksAcrossReplicas(t *testing.T) {
	dsn := newDB(t)
	a, b := open(t, dsn, Options{}).Doc("signins"), open(t, dsn, Options{}).Doc("signins")

	unlock, ok, err := a.TryLock(t.Context(), "refresh-1.lock")
	require.NoError(t, err)
	require.True(t, ok)
	_, ok, err = b.TryLock(t.Context(), "refresh-1.lock")
	require.NoError(t, err)
	assert.False(t, ok, "held by the other replica")
	other, ok, err := b.TryLock(t.Context(), "refresh-2.lock")
	require.NoError(t, err)
	assert.True(t, ok, "another lock name is free")
	other()
	elsewhere, ok, err := open(t, dsn, Options{}).Doc("registrations").TryLock(t.Context(), "refresh-1.lock")
	require.NoError(t, err)
	assert.True(t, ok, "another document's lock is free")
	elsewhere()

	unlock()
	again, err := b.Lock(t.Context(), "refresh-1.lock")
	require.NoError(t, err, "released: the waiting replica gets it")
	again()
}

// TestDocUpdateAndGeneration: an update is seen by another replica, moves
// the generation, and an fn error writes nothing.
func TestDocUpdateAndGeneration(t *testing.T) {
	dsn := newDB(t)
	a, b := open(t, dsn, Options{}).Doc("registrations"), open(t, dsn, Options{}).Doc("registrations")
	g0, err := b.Generation(t.Context())
	require.NoError(t, err)
	assert.Empty(t, g0)
	got, err := b.Load(t.Context())
	require.NoError(t, err)
	assert.Nil(t, got)

	require.NoError(t, a.Update(t.Context(), func(old []byte) ([]byte, error) {
		assert.Nil(t, old)
		return []byte(`{"version":1}`), nil
	}))
	got, err = b.Load(t.Context())
	require.NoError(t, err)
	assert.Equal(t, `{"version":1}`, string(got))
	g1, err := b.Generation(t.Context())
	require.NoError(t, err)
	assert.NotEqual(t, g0, g1)

	require.Error(t, a.Update(t.Context(), func([]byte) ([]byte, error) { return nil, assert.AnError }))
	got, err = b.Load(t.Context())
	require.NoError(t, err)
	assert.Equal(t, `{"version":1}`, string(got), "an fn error writes nothing")
	g2, err := b.Generation(t.Context())
	require.NoError(t, err)
	assert.Equal(t, g1, g2)
	assert.Equal(t, "PostgreSQL "+a.s.where, a.String())
}
