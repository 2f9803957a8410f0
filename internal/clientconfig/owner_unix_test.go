//go:build unix

package clientconfig

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWriteWithBackupKeepsTheOwner: root writing another user's file
// leaves it, and its backup, that user's.
func TestWriteWithBackupKeepsTheOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a file to another user")
	}
	const uid, gid = 4242, 4343
	path := filepath.Join(t.TempDir(), ".claude.json")
	require.NoError(t, os.WriteFile(path, []byte("old"), 0o644))
	require.NoError(t, os.Chown(path, uid, gid))

	backup, err := WriteWithBackup(t.Context(), path, []byte("old"), []byte("new"), at(writeTime))
	require.NoError(t, err)
	for _, p := range []string{path, backup} {
		info, err := os.Stat(p)
		require.NoError(t, err)
		st := info.Sys().(*syscall.Stat_t)
		assert.Equal(t, [2]uint32{uid, gid}, [2]uint32{st.Uid, st.Gid}, p)
	}
}
