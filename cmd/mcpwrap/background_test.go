package main

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGoUntilStopped(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	ended := false
	stop := goUntilStopped(t.Context(), func(ctx context.Context) {
		close(started)
		<-ctx.Done()
		ended = true
	})
	<-started
	stop()
	assert.True(t, ended, "stop returns once run has returned")
}

// TestWrapLeavesNoWatcherRunning runs a sidecar whose client leaves at once
// (its stdin is empty) while the command's context stays alive: when
// runWrap returns, the watchers it started (tool state, config file) have
// returned too, rather than running on with the process's context.
func TestWrapLeavesNoWatcherRunning(t *testing.T) {
	// Not parallel: it inspects every goroutine of the test binary.
	dir := t.TempDir()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	var stdout, stderr bytes.Buffer
	code := runWrap(t.Context(), []string{"--name", "leak", "--state-dir", dir, "--config", filepath.Join(dir, "config.json"),
		"--log-level", "error", "--", sh, "-c", "cat >/dev/null"}, strings.NewReader(""), &stdout, &stderr)
	require.Equal(t, exitOK, code, stderr.String())
	buf := make([]byte, 1<<20)
	stacks := string(buf[:runtime.Stack(buf, true)])
	for _, watcher := range []string{"internal/gate.(*Gate).Watch", "internal/config.Watch", "internal/auth.(*Client).Watch"} {
		assert.NotContains(t, stacks, watcher, "a watcher outlived runWrap")
	}
}
