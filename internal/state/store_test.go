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
	srv, err := Open(dir, nil).Load(t.Context(), "s")
	require.NoError(t, err)
	assert.True(t, srv.Empty())
	assert.NoDirExists(t, dir, "Load must not create the state directory")
}

func TestUpdateThenLoad(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nested", "state")
	store := Open(dir, nil)
	require.NoError(t, store.Update(t.Context(), "filesystem", func(srv *Server) error {
		*srv = *sampleServer()
		return nil
	}))
	disable(t, store, "linear", "delete_issue")
	require.NoError(t, store.Update(t.Context(), "untouched", func(*Server) error { return nil }))

	path := filepath.Join(dir, ServersDir, "filesystem.json")
	assert.Equal(t, path, store.Path("filesystem"))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, sampleFile, string(data))
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "the state is private to the user")

	names, err := store.Servers(t.Context())
	require.NoError(t, err)
	assert.Equal(t, []string{"filesystem", "linear"}, names, "an empty server has no state")
	srv, err := store.Load(t.Context(), "linear")
	require.NoError(t, err)
	assert.True(t, srv.IsDisabled("delete_issue"))
	assert.NoFileExists(t, store.Path("untouched"))

	require.NoError(t, store.Update(t.Context(), "linear", func(srv *Server) error { srv.Enable("delete_issue"); return nil }))
	assert.NoFileExists(t, store.Path("linear"), "a server whose state became empty has no file")
}

func TestUpdateCallbackErrorWritesNothing(t *testing.T) {
	store := Open(t.TempDir(), nil)
	disable(t, store, "s", "kept")
	before, err := os.ReadFile(store.Path("s"))
	require.NoError(t, err)

	errRefused := errors.New("refused by policy")
	err = store.Update(t.Context(), "s", func(srv *Server) error {
		srv.Enable("kept")
		return fmt.Errorf("enable: %w", errRefused)
	})
	require.ErrorIs(t, err, errRefused)

	after, err := os.ReadFile(store.Path("s"))
	require.NoError(t, err)
	assert.Equal(t, string(before), string(after))
}

func TestUpdateRefusesUnencodableState(t *testing.T) {
	store := Open(t.TempDir(), nil)
	disable(t, store, "s", "kept")
	before, err := os.ReadFile(store.Path("s"))
	require.NoError(t, err)

	err = store.Update(t.Context(), "s", func(srv *Server) error {
		srv.Approve("t", Approval{Definition: []byte("{broken")})
		return nil
	})
	require.Error(t, err)

	after, err := os.ReadFile(store.Path("s"))
	require.NoError(t, err)
	assert.Equal(t, string(before), string(after))
}

func TestUpdateWithoutChangeKeepsFile(t *testing.T) {
	store := Open(t.TempDir(), nil)
	disable(t, store, "s", "t")
	before, err := os.Stat(store.Path("s"))
	require.NoError(t, err)

	disable(t, store, "s", "t") // already disabled
	after, err := os.Stat(store.Path("s"))
	require.NoError(t, err)
	assert.True(t, os.SameFile(before, after), "an update that changes nothing must not rewrite the file")
}

func TestCorruptStoreIsNeverOverwritten(t *testing.T) {
	for _, tt := range corruptFiles {
		t.Run(tt.name, func(t *testing.T) {
			store := Open(t.TempDir(), nil)
			path := store.Path("a")
			require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
			require.NoError(t, os.WriteFile(path, []byte(tt.data), 0o600))

			_, err := store.Load(t.Context(), "a")
			assertCorrupt(t, path, err)

			called := false
			err = store.Update(t.Context(), "a", func(*Server) error {
				called = true
				return nil
			})
			assertCorrupt(t, path, err)
			assert.False(t, called, "Update must not offer a corrupt state for modification")

			data, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, tt.data, string(data), "the bytes on disk must be unchanged")

			disable(t, store, "b", "t") // another server's state is apart
			srv, err := store.Load(t.Context(), "b")
			require.NoError(t, err)
			assert.True(t, srv.IsDisabled("t"))
		})
	}
}

func assertCorrupt(t *testing.T, path string, err error) {
	t.Helper()
	require.ErrorIs(t, err, ErrCorrupt)
	var corrupt *CorruptError
	require.ErrorAs(t, err, &corrupt)
	assert.Equal(t, path, corrupt.Path)
	assert.Contains(t, err.Error(), path)
	assert.Contains(t, err.Error(), "repair it by hand, or move it aside")
}

func TestUpdateRemovesOrphanedTempFiles(t *testing.T) {
	store := Open(t.TempDir(), nil)
	disable(t, store, "s", "t")
	orphan := filepath.Join(store.Dir(), ServersDir, ".s.json.tmp-12345")
	require.NoError(t, os.WriteFile(orphan, []byte(`{"half": `), 0o600))
	others := filepath.Join(store.Dir(), ServersDir, ".s.json.json.tmp-12345") // server "s.json"'s
	require.NoError(t, os.WriteFile(others, []byte(`{"half": `), 0o600))

	disable(t, store, "s", "u")
	assert.NoFileExists(t, orphan)
	assert.FileExists(t, others, "another server's writer may be writing it")
}

func TestWaitingForLockHonoursContext(t *testing.T) {
	store := Open(t.TempDir(), nil)
	disable(t, store, "s", "t")

	// Another process holds the lock: simulated by a second open file
	// description, which flock treats the same way.
	other := flock.New(store.Path("s") + ".lock")
	require.NoError(t, other.Lock())
	defer func() { require.NoError(t, other.Unlock()) }()

	tests := []struct {
		name string
		call func(ctx context.Context) error
	}{
		{name: "Update", call: func(ctx context.Context) error {
			return store.Update(ctx, "s", func(*Server) error { return nil })
		}},
		{name: "Load", call: func(ctx context.Context) error {
			_, err := store.Load(ctx, "s")
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
		firstDone <- store.Update(t.Context(), "s", func(*Server) error {
			close(entered)
			<-release
			return nil
		})
	}()
	<-entered

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := store.Update(ctx, "s", func(*Server) error { return nil })
	assert.ErrorIs(t, err, context.Canceled)

	close(release)
	require.NoError(t, <-firstDone)
}

func TestConcurrentGoroutinesAndStores(t *testing.T) {
	dir := t.TempDir()
	stores := []*FileStore{Open(dir, nil), Open(dir, nil)}
	const perStore = 50
	var wg sync.WaitGroup
	for i, store := range stores {
		for j := range perStore {
			wg.Go(func() {
				assert.NoError(t, store.Update(t.Context(), "s", func(srv *Server) error {
					srv.Disable(fmt.Sprintf("t-%d-%d", i, j))
					return nil
				}))
			})
		}
	}
	wg.Wait()

	srv, err := stores[0].Load(t.Context(), "s")
	require.NoError(t, err)
	assert.Len(t, srv.Disabled, len(stores)*perStore)
}
