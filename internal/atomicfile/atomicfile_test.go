package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWrite(t *testing.T) {
	tests := []struct {
		name    string
		initial []byte // nil: no file before
		data    []byte
		perm    os.FileMode
	}{
		{name: "creates", data: []byte("new"), perm: 0o600},
		{name: "replaces", initial: []byte("old content, longer"), data: []byte("new"), perm: 0o644},
		{name: "empty", initial: []byte("old"), data: []byte{}, perm: 0o600},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "f.json")
			if tt.initial != nil {
				require.NoError(t, os.WriteFile(path, tt.initial, 0o600))
			}
			require.NoError(t, Write(path, tt.data, tt.perm, ".f.json.tmp-*"))
			got, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, tt.data, got)
			fi, err := os.Stat(path)
			require.NoError(t, err)
			assert.Equal(t, tt.perm, fi.Mode().Perm())
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			assert.Len(t, entries, 1, "no temporary file left behind")
		})
	}
}

func TestWriteFailureLeavesTheOldFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub") // a directory: the rename over it fails
	require.NoError(t, os.Mkdir(path, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(path, "keep"), []byte("x"), 0o600))
	require.Error(t, Write(path, []byte("data"), 0o600, ".tmp-*"))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "the temporary file was removed")
}

// TestWriteChecked: check sees the complete temporary file just before the
// rename, and its error leaves path as it was, with no temporary file.
func TestWriteChecked(t *testing.T) {
	refuse := errors.New("changed meanwhile")
	tests := []struct {
		name     string
		checkErr error
		want     string
	}{
		{name: "check passes", want: "new"},
		{name: "check refuses", checkErr: refuse, want: "old"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "f.json")
			require.NoError(t, os.WriteFile(path, []byte("old"), 0o600))
			var seen string
			err := WriteChecked(path, []byte("new"), 0o600, ".f.json.tmp-*", func(tmp string) error {
				data, err := os.ReadFile(tmp)
				require.NoError(t, err)
				seen = string(data)
				return tt.checkErr
			})
			require.ErrorIs(t, err, tt.checkErr)
			assert.Equal(t, "new", seen)
			got, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(got))
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			assert.Len(t, entries, 1, "no temporary file left behind")
		})
	}
}
