package state

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/gofrs/flock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLoadMissingIsEmpty(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "never-created")
	st, err := Open(dir, nil).Load(t.Context())
	require.NoError(t, err)
	assert.Empty(t, st.ServerNames())
	assert.NoDirExists(t, dir, "Load must not create the state directory")
}

func TestUpdateThenLoad(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nested", "state")
	store := Open(dir, nil)
	require.NoError(t, store.Update(t.Context(), func(s *State) error {
		*s = *sampleState()
		return nil
	}))

	data, err := os.ReadFile(store.Path())
	require.NoError(t, err)
	assert.Equal(t, sampleFile, string(data))
	fi, err := os.Stat(store.Path())
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "the state is private to the user")

	st, err := store.Load(t.Context())
	require.NoError(t, err)
	assert.Equal(t, []string{"filesystem", "linear"}, st.ServerNames())
	assert.True(t, st.Server("linear").IsDisabled("delete_issue"))
}

func TestUpdateCallbackErrorWritesNothing(t *testing.T) {
	store := Open(t.TempDir(), nil)
	disable(t, store, "s", "kept")
	before, err := os.ReadFile(store.Path())
	require.NoError(t, err)

	errRefused := errors.New("refused by policy")
	err = store.Update(t.Context(), func(s *State) error {
		s.Server("s").Enable("kept")
		return fmt.Errorf("enable: %w", errRefused)
	})
	require.ErrorIs(t, err, errRefused)

	after, err := os.ReadFile(store.Path())
	require.NoError(t, err)
	assert.Equal(t, string(before), string(after))
}

func TestUpdateRefusesUnencodableState(t *testing.T) {
	store := Open(t.TempDir(), nil)
	disable(t, store, "s", "kept")
	before, err := os.ReadFile(store.Path())
	require.NoError(t, err)

	err = store.Update(t.Context(), func(s *State) error {
		s.Server("s").Approve("t", Approval{Definition: []byte("{broken")})
		return nil
	})
	require.Error(t, err)

	after, err := os.ReadFile(store.Path())
	require.NoError(t, err)
	assert.Equal(t, string(before), string(after))
}

func TestUpdateWithoutChangeKeepsFile(t *testing.T) {
	store := Open(t.TempDir(), nil)
	disable(t, store, "s", "t")
	before, err := os.Stat(store.Path())
	require.NoError(t, err)

	disable(t, store, "s", "t") // already disabled
	after, err := os.Stat(store.Path())
	require.NoError(t, err)
	assert.True(t, os.SameFile(before, after), "an update that changes nothing must not rewrite the file")
}

func TestCorruptStoreIsNeverOverwritten(t *testing.T) {
	for _, tt := range corruptFiles {
		t.Run(tt.name, func(t *testing.T) {
			store := Open(t.TempDir(), nil)
			require.NoError(t, os.WriteFile(store.Path(), []byte(tt.data), 0o600))

			_, err := store.Load(t.Context())
			assertCorrupt(t, store, err)

			called := false
			err = store.Update(t.Context(), func(s *State) error {
				called = true
				return nil
			})
			assertCorrupt(t, store, err)
			assert.False(t, called, "Update must not offer a corrupt state for modification")

			data, err := os.ReadFile(store.Path())
			require.NoError(t, err)
			assert.Equal(t, tt.data, string(data), "the bytes on disk must be unchanged")
		})
	}
}

func assertCorrupt(t *testing.T, store *Store, err error) {
	t.Helper()
	require.ErrorIs(t, err, ErrCorrupt)
	var corrupt *CorruptError
	require.ErrorAs(t, err, &corrupt)
	assert.Equal(t, store.Path(), corrupt.Path)
	assert.Contains(t, err.Error(), store.Path())
	assert.Contains(t, err.Error(), "repair it by hand, or move it aside")
}

func TestUpdateRemovesOrphanedTempFiles(t *testing.T) {
	store := Open(t.TempDir(), nil)
	orphan := filepath.Join(store.Dir(), tempPrefix+"12345")
	require.NoError(t, os.WriteFile(orphan, []byte(`{"half": `), 0o600))

	disable(t, store, "s", "t")
	assert.NoFileExists(t, orphan)
}

func TestWaitingForLockHonoursContext(t *testing.T) {
	store := Open(t.TempDir(), nil)
	disable(t, store, "s", "t")

	// Another process holds the lock: simulated by a second open file
	// description, which flock treats the same way.
	other := flock.New(filepath.Join(store.Dir(), LockFileName))
	require.NoError(t, other.Lock())
	defer func() { require.NoError(t, other.Unlock()) }()

	tests := []struct {
		name string
		call func(ctx context.Context) error
	}{
		{name: "Update", call: func(ctx context.Context) error {
			return store.Update(ctx, func(*State) error { return nil })
		}},
		{name: "Load", call: func(ctx context.Context) error {
			_, err := store.Load(ctx)
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
			defer cancel()
			assert.ErrorIs(t, tt.call(ctx), context.DeadlineExceeded)
		})
	}
}

func TestWaitingForOtherGoroutineHonoursContext(t *testing.T) {
	store := Open(t.TempDir(), nil)
	entered, release := make(chan struct{}), make(chan struct{})
	firstDone := make(chan error, 1)
	go func() {
		firstDone <- store.Update(t.Context(), func(*State) error {
			close(entered)
			<-release
			return nil
		})
	}()
	<-entered

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := store.Update(ctx, func(*State) error { return nil })
	assert.ErrorIs(t, err, context.Canceled)

	close(release)
	require.NoError(t, <-firstDone)
}

func TestConcurrentGoroutinesAndStores(t *testing.T) {
	dir := t.TempDir()
	stores := []*Store{Open(dir, nil), Open(dir, nil)}
	const perStore = 50
	var wg sync.WaitGroup
	for i, store := range stores {
		for j := range perStore {
			wg.Go(func() {
				assert.NoError(t, store.Update(t.Context(), func(s *State) error {
					s.Server("s").Disable(fmt.Sprintf("t-%d-%d", i, j))
					return nil
				}))
			})
		}
	}
	wg.Wait()

	st, err := stores[0].Load(t.Context())
	require.NoError(t, err)
	assert.Len(t, st.Server("s").Disabled, len(stores)*perStore)
}
