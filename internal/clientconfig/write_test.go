package clientconfig

import (
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

	backup, err := WriteWithBackup(path, []byte("old"), []byte("new"), writeTime)
	require.NoError(t, err)
	assert.Equal(t, path+".mcpwrap-backup-20261122T050102Z", backup, "named in UTC")
	assertFile(t, path, "new", 0o600)
	assertFile(t, backup, "old", 0o600)

	// A second write in the same second gets its own backup.
	backup2, err := WriteWithBackup(path, []byte("new"), []byte("newer"), writeTime)
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

	backup, err := WriteWithBackup(path, []byte("old"), []byte("new"), writeTime)
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
	for i, at := range times { // the clock may even go back: the names order the backups
		b, err := WriteWithBackup(path, fmt.Appendf(nil, "v%d", i), fmt.Appendf(nil, "v%d", i+1), at)
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

	backup, err := WriteWithBackup(path, []byte("what we read"), []byte("new"), writeTime)
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

	backup, err := WriteWithBackup(path, []byte("same"), []byte("same"), writeTime)
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

	backup, err := WriteWithBackup(link, []byte("old"), []byte("new"), writeTime)
	require.NoError(t, err)
	info, err := os.Lstat(link)
	require.NoError(t, err)
	assert.Equal(t, fs.ModeSymlink, info.Mode().Type(), "the link stays a link")
	assertFile(t, target, "new", 0o600)
	assert.Equal(t, link+".mcpwrap-backup-20261122T050102Z", backup, "the backup sits where the user looks")
	assertFile(t, backup, "old", 0o600)
}

func TestWriteWithBackupMissingFile(t *testing.T) {
	_, err := WriteWithBackup(filepath.Join(t.TempDir(), "absent.json"), nil, []byte("new"), writeTime)
	require.ErrorIs(t, err, fs.ErrNotExist)
}

func assertFile(t *testing.T, path, content string, perm fs.FileMode) {
	t.Helper()
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, content, string(got), path)
	info, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, perm, info.Mode().Perm(), path)
}
