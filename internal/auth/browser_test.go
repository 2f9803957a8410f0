package auth

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
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

// TestCheckWebPage: only a web page reaches a launcher: https anywhere, http on
// this machine; a handler of any other scheme, even on a loopback host, never.
func TestCheckWebPage(t *testing.T) {
	tests := []struct {
		name string
		url  string
		ok   bool
	}{
		{name: "https", url: "https://auth.example.com/authorize?x=1", ok: true},
		{name: "http on localhost", url: "http://localhost:8080/authorize", ok: true},
		{name: "http on 127.0.0.1", url: "http://127.0.0.1:1/authorize", ok: true},
		{name: "http on 127.1.2.3", url: "http://127.1.2.3/", ok: true},
		{name: "http on ::1", url: "http://[::1]:9/cb", ok: true},
		{name: "http elsewhere", url: "http://auth.example.com/authorize"},
		{name: "http on a name ending in localhost", url: "http://localhost.evil.example/"},
		{name: "file on localhost", url: "file://localhost/etc/passwd"},
		{name: "file", url: "file:///C:/Windows/System32/calc.exe"},
		{name: "smb", url: "smb://localhost/share/x.exe"},
		{name: "ms-msdt", url: "ms-msdt:/id PCWDiagnostic"},
		{name: "ms-msdt without spaces", url: "ms-msdt:/id"},
		{name: "vscode", url: "vscode://localhost/open?url=x"},
		{name: "ftp", url: "ftp://localhost/x"},
		{name: "javascript", url: "javascript:alert(1)"},
		{name: "HTTPS in capitals is parsed as https", url: "HTTPS://auth.example.com/", ok: true},
		{name: "https without a host", url: "https:///path"},
		{name: "a newline", url: "https://auth.example.com/\n--flag"},
		{name: "a space", url: "https://auth.example.com/ x"},
		{name: "an option", url: "--new-window"},
		{name: "empty", url: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckWebPage(tt.url)
			if tt.ok {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrNotWebPage)
		})
	}
}

// TestBrowserOpensOnlyAWebPage: Open refuses what CheckWebPage refuses, on
// every path (the configured command and the OS default alike), before
// anything is run.
func TestBrowserOpensOnlyAWebPage(t *testing.T) {
	dir := t.TempDir()
	ran := filepath.Join(dir, "ran")
	script := filepath.Join(dir, "browser")
	require.NoError(t, os.WriteFile(script, []byte("#!/bin/sh\necho \"$@\" >> '"+ran+"'\n"), 0o755))
	for name, env := range map[string]map[string]string{
		"MCPWRAP_BROWSER": {"MCPWRAP_BROWSER": script},
		"BROWSER":         {"BROWSER": script},
		"the OS default":  {},
	} {
		t.Run(name, func(t *testing.T) {
			b := &Browser{Getenv: func(k string) string { return env[k] }}
			err := b.Open(context.Background(), "file://localhost/etc/passwd")
			require.ErrorIs(t, err, ErrNotWebPage)
			b.Wait(context.Background())
			assert.NoFileExists(t, ran)
		})
	}
}
