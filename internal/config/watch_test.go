package config

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestWatch: writing, replacing and removing the config file, and editing
// the target of a symbolic link to it, each produce a call.
func TestWatch(t *testing.T) {
	tests := []struct {
		name   string
		link   bool
		change func(t *testing.T, path, target string)
	}{
		{name: "write", change: func(t *testing.T, path, _ string) {
			require.NoError(t, os.WriteFile(path, []byte(`{"servers": {}}`), 0o600))
		}},
		{name: "rename over", change: func(t *testing.T, path, _ string) {
			tmp := path + ".tmp"
			require.NoError(t, os.WriteFile(tmp, []byte(`{"defaults": {}}`), 0o600))
			require.NoError(t, os.Rename(tmp, path))
		}},
		{name: "remove", change: func(t *testing.T, path, _ string) { require.NoError(t, os.Remove(path)) }},
		{name: "edit a symbolic link's target", link: true, change: func(t *testing.T, _, target string) {
			require.NoError(t, os.WriteFile(target, []byte(`{"servers": {"a": {}}}`), 0o600))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "config.json")
			target := path
			if tt.link {
				target = filepath.Join(t.TempDir(), "dotfiles-config.json")
				require.NoError(t, os.Symlink(target, path))
			}
			require.NoError(t, os.WriteFile(target, []byte(`{}`), 0o600))
			ctx, cancel := context.WithCancel(context.Background())
			calls, ready := make(chan struct{}, 16), make(chan struct{})
			var wg sync.WaitGroup
			wg.Go(func() {
				// A short poll: the symbolic link case has no notification.
				watch(ctx, path, nil, time.Millisecond, 5*time.Millisecond,
					func() { close(ready) }, func() { calls <- struct{}{} })
			})
			defer func() { cancel(); wg.Wait() }()
			<-ready
			deadline := time.After(10 * time.Second)
			tt.change(t, path, target)
			select {
			case <-calls:
			case <-deadline:
				t.Fatal("no call after the change")
			}
		})
	}
}
