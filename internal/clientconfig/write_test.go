package clientconfig

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var writeTime = time.Date(2026, 11, 22, 6, 1, 2, 0, time.FixedZone("CET", 3600))

func TestWriteWithBackup(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "claude_desktop_config.json")
	require.NoError(t, os.WriteFile(path, []byte("old"), 0o600))

	backup, err := WriteWithBackup(t.Context(), path, []byte("old"), []byte("new"), at(writeTime))
	require.NoError(t, err)
	assert.Equal(t, path+".mcpwrap-backup-20261122T050102Z", backup, "named in UTC")
	assertFile(t, path, "new", 0o600)
	assertFile(t, backup, "old", 0o600)

	// A second write in the same second gets its own backup.
	backup2, err := WriteWithBackup(t.Context(), path, []byte("new"), []byte("newer"), at(writeTime))
	require.NoError(t, err)
	assert.Equal(t, backup+"-2", backup2)
	assertFile(t, backup2, "new", 0o600)
	assertFile(t, backup, "old", 0o600)
	assertFile(t, path, "newer", 0o600)

	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 3, "no temporary file is left behind")
}

func TestWriteWithBackupKeepsPermissions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcp.json")
	require.NoError(t, os.WriteFile(path, []byte("old"), 0o640))
	require.NoError(t, os.Chmod(path, 0o640)) // whatever the umask

	backup, err := WriteWithBackup(t.Context(), path, []byte("old"), []byte("new"), at(writeTime))
	require.NoError(t, err)
	assertFile(t, path, "new", 0o640)
	assertFile(t, backup, "old", 0o600) // a client config may hold secrets
}

// TestWriteWithBackupKeepsTheNewestBackups: each write leaves at most
// KeepBackups backups of the file, the newest ones, each 0600; other files
// beside it are left alone.
func TestWriteWithBackupKeepsTheNewestBackups(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "claude_desktop_config.json")
	require.NoError(t, os.WriteFile(path, []byte("v0"), 0o644))
	other := filepath.Join(dir, "other.json"+BackupSuffix+"20200101T000000Z")
	require.NoError(t, os.WriteFile(other, nil, 0o600))
	notOurs := path + BackupSuffix + "notes"
	require.NoError(t, os.WriteFile(notOurs, nil, 0o600))

	times := []time.Time{writeTime, writeTime, writeTime.Add(time.Hour), writeTime, writeTime.Add(2 * time.Hour)}
	var backups []string
	for i, when := range times { // the clock may even go back: the names order the backups
		b, err := WriteWithBackup(t.Context(), path, fmt.Appendf(nil, "v%d", i), fmt.Appendf(nil, "v%d", i+1), at(when))
		require.NoError(t, err)
		backups = append(backups, b)
	}
	prefix := path + BackupSuffix
	assert.Equal(t, []string{prefix + "20261122T050102Z", prefix + "20261122T050102Z-2", prefix + "20261122T060102Z",
		prefix + "20261122T050102Z-3", prefix + "20261122T070102Z"}, backups)

	matches, err := filepath.Glob(prefix + "2*")
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{prefix + "20261122T050102Z-3", prefix + "20261122T060102Z", prefix + "20261122T070102Z"}, matches)
	for _, m := range matches {
		info, err := os.Stat(m)
		require.NoError(t, err)
		assert.Equal(t, fs.FileMode(0o600), info.Mode().Perm(), m)
	}
	assert.FileExists(t, other, "another file's backup")
	assert.FileExists(t, notOurs, "a file that only looks like a backup")
	assertFile(t, path, "v5", 0o644)
}

func TestWriteWithBackupRefusesAChangedFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ".claude.json")
	require.NoError(t, os.WriteFile(path, []byte("written by the client meanwhile"), 0o600))

	backup, err := WriteWithBackup(t.Context(), path, []byte("what we read"), []byte("new"), at(writeTime))
	require.ErrorIs(t, err, ErrChanged)
	assert.Empty(t, backup)
	assertFile(t, path, "written by the client meanwhile", 0o600)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "nothing written")
}

func TestWriteWithBackupUnchangedWritesNothing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "mcp.json")
	require.NoError(t, os.WriteFile(path, []byte("same"), 0o600))

	backup, err := WriteWithBackup(t.Context(), path, []byte("same"), []byte("same"), at(writeTime))
	require.NoError(t, err)
	assert.Empty(t, backup)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1)
}

func TestWriteWithBackupThroughSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "dotfiles", "claude.json")
	require.NoError(t, os.Mkdir(filepath.Dir(target), 0o700))
	require.NoError(t, os.WriteFile(target, []byte("old"), 0o600))
	link := filepath.Join(dir, ".claude.json")
	if err := os.Symlink(target, link); err != nil {
		t.Skipf("no symlinks here: %v", err)
	}

	backup, err := WriteWithBackup(t.Context(), link, []byte("old"), []byte("new"), at(writeTime))
	require.NoError(t, err)
	info, err := os.Lstat(link)
	require.NoError(t, err)
	assert.Equal(t, fs.ModeSymlink, info.Mode().Type(), "the link stays a link")
	assertFile(t, target, "new", 0o600)
	assert.Equal(t, link+".mcpwrap-backup-20261122T050102Z", backup, "the backup sits where the user looks")
	assertFile(t, backup, "old", 0o600)
}

func TestWriteWithBackupMissingFile(t *testing.T) {
	_, err := WriteWithBackup(t.Context(), filepath.Join(t.TempDir(), "absent.json"), nil, []byte("new"), at(writeTime))
	require.ErrorIs(t, err, fs.ErrNotExist)
}

// at is the options of a write at the time t.
func at(t time.Time) WriteOptions { return WriteOptions{Now: func() time.Time { return t }} }

func assertFile(t *testing.T, path, content string, perm fs.FileMode) {
	t.Helper()
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, content, string(got), path)
	info, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, perm, info.Mode().Perm(), path)
}

// TestWriteWithBackupNeverReplacesAConcurrentSave: a client that saves the
// file after it was read and checked, while the backup and the new content
// are written (here: while it holds the file's lock, as Claude Code does),
// keeps its save: the write fails with ErrChanged and leaves nothing behind.
func TestWriteWithBackupNeverReplacesAConcurrentSave(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ".claude.json")
	require.NoError(t, os.WriteFile(path, []byte("what we read"), 0o600))
	lockPath := path + LockSuffix
	require.NoError(t, os.Mkdir(lockPath, 0o700)) // the client is saving

	waiting := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		_, err := WriteWithBackup(t.Context(), path, []byte("what we read"), []byte("new"),
			WriteOptions{Now: func() time.Time { return writeTime }, Waiting: func(l string) { waiting <- l }})
		done <- err
	}()
	assert.Equal(t, lockPath, <-waiting)
	assert.FileExists(t, path+BackupSuffix+"20261122T050102Z", "the write is past its first check")
	require.NoError(t, os.WriteFile(path, []byte("the client's save"), 0o600))
	require.NoError(t, os.Remove(lockPath))

	require.ErrorIs(t, <-done, ErrChanged)
	assertFile(t, path, "the client's save", 0o600)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no backup, temporary file or lock left")
}

// TestWriteWithBackupLock: the write waits for a held lock, takes over a
// stale one (a crashed holder's) without waiting, and ends its wait with
// its context.
func TestWriteWithBackupLock(t *testing.T) {
	tests := []struct {
		name        string
		lockAge     time.Duration // of a lock held when the write starts
		release     bool          // the holder releases it once the write waits
		cancel      bool          // the write's context ends once it waits
		wantWaiting bool
		wantErr     error
		want        string
	}{
		{name: "free", want: "new"},
		{name: "released", release: true, wantWaiting: true, want: "new"},
		{name: "stale", lockAge: time.Minute, want: "new"},
		{name: "canceled", cancel: true, wantWaiting: true, wantErr: ErrLocked, want: "old"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "mcp.json")
			require.NoError(t, os.WriteFile(path, []byte("old"), 0o600))
			lockPath := path + LockSuffix
			if tt.release || tt.cancel || tt.lockAge > 0 {
				require.NoError(t, os.Mkdir(lockPath, 0o700))
				old := time.Now().Add(-tt.lockAge)
				require.NoError(t, os.Chtimes(lockPath, old, old))
			}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			waited := false
			_, err := WriteWithBackup(ctx, path, []byte("old"), []byte("new"), WriteOptions{Waiting: func(string) {
				waited = true
				switch {
				case tt.release:
					assert.NoError(t, os.Remove(lockPath))
				case tt.cancel:
					cancel()
				}
			}})
			require.ErrorIs(t, err, tt.wantErr)
			assert.Equal(t, tt.wantWaiting, waited)
			assertFile(t, path, tt.want, 0o600)
			if !tt.cancel {
				assert.NoDirExists(t, lockPath, "released")
			}
		})
	}
}
