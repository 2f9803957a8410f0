package main

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/internal/runstatus"
	"github.com/mcpwrap/mcpwrap/internal/servername"
	"github.com/mcpwrap/mcpwrap/middleware"
	"github.com/mcpwrap/mcpwrap/resilience"
)

type idleSource struct{}

func (idleSource) Status() resilience.Outcome { return resilience.Outcome{} }
func (idleSource) Stats() middleware.Stats    { return middleware.Stats{} }

// TestPublishStatusWarnsOfNameClash: a sidecar whose --name a running
// sidecar uses for another server says so in its log; one wrapping the
// same server does not.
func TestPublishStatusWarnsOfNameClash(t *testing.T) {
	memory := []string{"node", "/x/server-memory/dist/index.js"}
	filesystem := []string{"node", "/x/server-filesystem/dist/index.js", "/tmp"}
	tests := []struct {
		name     string
		running  []string
		wantWarn bool
	}{
		{name: "same name, another server", running: memory, wantWarn: true},
		{name: "same name, same server", running: filesystem},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			other := runstatus.Status{Server: "index", PID: os.Getpid(), // a live mcpwrap: this test binary
				Upstream: servername.Identify(tt.running, "").Describe(), UpstreamDigest: servername.Digest(tt.running, "")}
			data, err := json.Marshal(other)
			require.NoError(t, err)
			run := runstatus.Dir(dir)
			require.NoError(t, os.MkdirAll(run, 0o700))
			require.NoError(t, os.WriteFile(filepath.Join(run, strconv.Itoa(os.Getpid())+".json"), data, 0o600))

			var log bytes.Buffer
			o := wrapOptions{name: "index", stateDir: dir, command: filesystem}
			stop := publishStatus(t.Context(), o, idleSource{}, nil, slog.New(slog.NewTextHandler(&log, nil)))
			stop()
			if tt.wantWarn {
				assert.Contains(t, log.String(), "another running sidecar uses this --name for a different server")
				assert.Contains(t, log.String(), `other_upstream="node /x/server-memory"`)
			} else {
				assert.NotContains(t, log.String(), "another running sidecar")
			}
		})
	}
}

// TestStatusDescribesTheExpandedURL: a --url that names an environment
// variable (as mcpwrap install writes it) is described by the URL it
// expands to, redacted to its origin, not as the "remote:" of a URL it cannot parse.
func TestStatusDescribesTheExpandedURL(t *testing.T) {
	const secretURL = "https://mcp.example.com/sk-SECRET/mcp?api_key=SECRET"
	tests := []struct {
		name string
		o    wrapOptions
		want string
	}{
		{name: "from the entry's env", o: wrapOptions{url: "${MCPWRAP_TEST_URL}", env: map[string]string{"MCPWRAP_TEST_URL": secretURL}}, want: "https://mcp.example.com"},
		{name: "part of the URL", o: wrapOptions{url: "https://${MCPWRAP_TEST_HOST}:8443/mcp", env: map[string]string{"MCPWRAP_TEST_HOST": "mcp.example.com"}}, want: "https://mcp.example.com"},
		{name: "literal", o: wrapOptions{url: secretURL}, want: "https://mcp.example.com"},
		{name: "unset variable", o: wrapOptions{url: "${MCPWRAP_TEST_UNSET}"}, want: "remote"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			desc, digest := describeUpstream(tt.o)
			assert.Equal(t, tt.want, desc)
			assert.NotContains(t, desc, "SECRET")
			assert.NotContains(t, digest, "SECRET")
		})
	}
	a, _ := describeUpstream(wrapOptions{url: "${U}", env: map[string]string{"U": "https://a.example.com/mcp"}})
	b, _ := describeUpstream(wrapOptions{url: "${U}", env: map[string]string{"U": "https://b.example.com/mcp"}})
	assert.NotEqual(t, a, b, "two servers behind one variable name are told apart")
}

// TestStatusTableShowsLoadTime: the LOAD column is how long the current
// load took (issue 23: the panel and status had no load time), "-" while
// the upstream is not available.
func TestStatusTableShowsLoadTime(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	list := []runstatus.Status{
		{Server: "fs", PID: 7, StartedAt: now.Add(-time.Minute), Session: runstatus.Session{Status: "available", Attempts: 1, LoadMS: 412}},
		{Server: "slow", PID: 8, StartedAt: now.Add(-time.Minute), Session: runstatus.Session{Status: "available", Attempts: 2, LoadMS: 2345}},
		{Server: "gone", PID: 9, StartedAt: now.Add(-time.Minute), Session: runstatus.Session{Status: "permanent", Attempts: 1, Error: "boom"}},
		{Server: "front", PID: 10, StartedAt: now.Add(-time.Minute), Session: runstatus.Session{Status: runstatus.Listening},
			Listen: "http://127.0.0.1:1/mcp", Sessions: []runstatus.Session{{Status: "available", Attempts: 1, LoadMS: 30}, {Status: "idle"}}},
	}
	var buf bytes.Buffer
	require.NoError(t, writeStatusTable(&buf, list, now))
	assert.Regexp(t, `(?m)^SERVER\s+UPSTREAM\s+PID\s+UPTIME\s+STATUS\s+PROTOCOL\s+ATTEMPTS\s+LOAD\s+RESTARTS`, buf.String())
	assert.Regexp(t, `(?m)^fs\s+-\s+7\s+1m0s\s+available\s+-\s+1\s+412ms\s+0\s`, buf.String())
	assert.Regexp(t, `(?m)^slow\s+-\s+8\s+1m0s\s+available\s+-\s+2\s+2\.3s\s+0\s`, buf.String())
	assert.Regexp(t, `(?m)^gone\s+-\s+9\s+1m0s\s+permanent\s+-\s+1\s+-\s+0\s+0\s+0\s+0\s+0\s+boom$`, buf.String())
	assert.Regexp(t, `(?m)^  session 1\s+available\s+-\s+1\s+30ms\s+0\s+0\s+0\s+0\s*$`, buf.String())
	assert.Regexp(t, `(?m)^  session 2\s+idle\s+-\s+0\s+-\s+0\s+0\s+0\s+0\s*$`, buf.String(), "not started yet: no attempt, no error")
}

// TestStatusTableShowsEachSidesProtocol: the PROTOCOL column shows the
// version both sides speak, or the client's and the server's where mcpwrap
// bridges the eras, and "-" before an upstream is ready.
func TestStatusTableShowsEachSidesProtocol(t *testing.T) {
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	list := []runstatus.Status{
		{Server: "local", Upstream: "npx x", PID: 1, StartedAt: at,
			Session: runstatus.Session{Status: "available", Attempts: 1, ClientProtocol: "2025-11-25", ServerProtocol: "2025-11-25"}},
		{Server: "remote", Upstream: "https://mcp.example.com", PID: 2, StartedAt: at,
			Session: runstatus.Session{Status: "available", Attempts: 1, ClientProtocol: "2025-11-25", ServerProtocol: "2026-07-28"}},
		{Server: "starting", Upstream: "npx y", PID: 3, StartedAt: at, Session: runstatus.Session{Status: "transient"}},
		{Server: "front", Upstream: "npx z", PID: 4, StartedAt: at, Listen: "http://127.0.0.1:1/mcp", Session: runstatus.Session{Status: "listening"},
			Sessions: []runstatus.Session{{Status: "available", Attempts: 1, ClientProtocol: "2026-07-28", ServerProtocol: "2025-11-25"}}},
	}
	var out bytes.Buffer
	require.NoError(t, writeStatusTable(&out, list, at.Add(time.Minute)))
	want := `SERVER       UPSTREAM                 PID  UPTIME  STATUS                                          PROTOCOL                  ATTEMPTS  LOAD  RESTARTS  CALLS  REJECTED  INCLUDE_DISABLED  PENDING  ERROR
local        npx x                    1    1m0s    available                                       2025-11-25                1         -     0         0      0         0                 0        
remote       https://mcp.example.com  2    1m0s    available                                       2025-11-25 -> 2026-07-28  1         -     0         0      0         0                 0        
starting     npx y                    3    1m0s    transient                                       -                         0         -     0         0      0         0                 0        
front        npx z                    4    1m0s    listening http://127.0.0.1:1/mcp, 1 session(s)                                                                                         0        
  session 1                                        available                                       2026-07-28 -> 2025-11-25  1         -     0         0      0         0                          
`
	assert.Equal(t, want, out.String())
}
