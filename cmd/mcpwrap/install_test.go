package main

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestInvokedPath: the path install writes is the one the user ran, made
// absolute, its links kept; anything that does not lead to this binary is
// not used.
func TestInvokedPath(t *testing.T) {
	dir := t.TempDir()
	versioned := filepath.Join(dir, "Cellar", "mcpwrap", "1.0", "bin", "mcpwrap")
	require.NoError(t, os.MkdirAll(filepath.Dir(versioned), 0o755))
	require.NoError(t, os.WriteFile(versioned, []byte("binary"), 0o755))
	link := filepath.Join(dir, "bin", "mcpwrap")
	require.NoError(t, os.Mkdir(filepath.Dir(link), 0o755))
	require.NoError(t, os.Symlink(versioned, link))
	other := filepath.Join(dir, "other")
	require.NoError(t, os.WriteFile(other, []byte("another binary"), 0o755))
	cwd, err := os.Getwd()
	require.NoError(t, err)
	relative, err := filepath.Rel(cwd, link)
	require.NoError(t, err)
	onPath := func(name string) (string, error) {
		if name == "mcpwrap" {
			return link, nil
		}
		return "", errors.New("not found")
	}

	tests := []struct {
		name   string
		arg0   string
		want   string
		wantOK bool
	}{
		{name: "an absolute link stays a link", arg0: link, want: link, wantOK: true},
		{name: "a relative path is made absolute", arg0: relative, want: link, wantOK: true},
		{name: "a bare name is found on PATH", arg0: "mcpwrap", want: link, wantOK: true},
		{name: "the versioned file itself", arg0: versioned, want: versioned, wantOK: true},
		{name: "a bare name not on PATH", arg0: "mcpwrap-renamed"},
		{name: "another binary", arg0: other},
		{name: "a path that is gone", arg0: filepath.Join(dir, "gone")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := invokedPath(tt.arg0, versioned, onPath)
			assert.Equal(t, tt.wantOK, ok)
			if tt.wantOK {
				assert.Equal(t, tt.want, got)
			}
		})
	}
}
