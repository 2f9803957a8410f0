package auth

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestBrowserWaitIsBounded: a browser command run in the foreground lives
// as long as the user keeps it open; waiting for it ends with ctx, so a
// sidecar's shutdown is never held by it.
func TestBrowserWaitIsBounded(t *testing.T) {
	dir := t.TempDir()
	stop := filepath.Join(dir, "stop")
	script := filepath.Join(dir, "foreground-browser")
	require.NoError(t, os.WriteFile(script, []byte("#!/bin/sh\nwhile [ ! -e '"+stop+"' ]; do sleep 0.05; done\n"), 0o755))
	b := &Browser{Getenv: func(k string) string {
		if k == "MCPWRAP_BROWSER" {
			return script
		}
		return ""
	}}
	require.NoError(t, b.Open(context.Background(), "http://127.0.0.1:1/authorize"))
	t.Cleanup(func() {
		require.NoError(t, os.WriteFile(stop, nil, 0o600))
		b.Wait(context.Background()) // the command ends once told to: nothing outlives the test
	})

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	returned := make(chan struct{})
	go func() { b.Wait(ctx); close(returned) }()
	select {
	case <-returned:
	case <-time.After(10 * time.Second):
		t.Fatal("Wait outlived its context, held by a browser still open")
	}
}
