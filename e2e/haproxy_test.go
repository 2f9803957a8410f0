package e2e

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"text/template"
	"time"

	"github.com/mcpwrap/mcpwrap/internal/syncbuf"
	"github.com/stretchr/testify/require"
)

// requireHAProxyEnv turns "haproxy is not installed" from a skip into a failure (`make e2e`
// installs Debian's when missing: `make balancer-deps`).
const requireHAProxyEnv = "MCPWRAP_E2E_REQUIRE_HAPROXY"

// requireHAProxy returns the haproxy binary, or skips (fails with requireHAProxyEnv set).
func requireHAProxy(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("haproxy")
	if err == nil {
		return path
	}
	msg := "haproxy is not installed: run `make balancer-deps` (apt-get install haproxy)"
	if os.Getenv(requireHAProxyEnv) != "" {
		t.Fatalf("%s (%s is set)", msg, requireHAProxyEnv)
	}
	t.Skip(msg)
	return ""
}

// haproxyConfig is the balancer in front of `mcpwrap --listen` replicas, as a team would run it
// (README, "Running it for a team"):
//   - 2026-07-28 requests carry no session: round robin, each request on its own;
//   - a 2025 session is pinned to the replica that answered its initialize, learnt from the
//     Mcp-Session-Id of that answer (the initialize itself has none) and matched on every later
//     request; a session whose replica is down is sent elsewhere, answered 404, and the client
//     opens a new one;
//   - a request is retried on another replica only when it could not be sent (conn-failure, the
//     default of retry-on): a request a replica may have executed is never sent twice;
//   - /readyz is the health check, every 250 ms (a refused connection marks a replica down in two),
//     each allowed 2 s: on a busy machine a check slower than its interval is no failure.
const haproxyConfig = `global
	maxconn 4096
	stats socket {{.Dir}}/admin.sock mode 600 level admin
	log stderr format raw local0 warning

defaults
	mode http
	log global
	timeout connect 2s
	timeout client 60s
	timeout server 60s
	timeout http-request 10s
	timeout http-keep-alive 10s
	timeout check 2s
	retries 3
	option redispatch 1

frontend mcp
	bind fd@3
	default_backend replicas

backend replicas
	balance roundrobin
	stick-table type string len 64 size 1m expire 30m
	stick on req.hdr(mcp-session-id)
	stick store-response res.hdr(mcp-session-id)
	option httpchk GET /readyz
	http-check expect status 200
	default-server check inter 250ms fall 2 rise 2
{{- range $i, $addr := .Servers}}
	server r{{$i}} {{$addr}}
{{- end}}
`

// haproxyServer is a running HAProxy in a temp dir of its own, stopped by t.Cleanup.
type haproxyServer struct {
	URL string // the MCP endpoint through the balancer
	dir string
	cmd *exec.Cmd
	log *syncbuf.Buffer
}

// startHAProxy runs HAProxy in front of replicas (server r0, r1, ... in their order) on a
// loopback port, and returns once it accepts and sees every replica up.
func startHAProxy(ctx context.Context, t *testing.T, binary string, replicas []*listenServer) *haproxyServer {
	t.Helper()
	dir := t.TempDir()
	var servers []string
	for _, r := range replicas {
		u, err := url.Parse(r.URL)
		require.NoError(t, err)
		servers = append(servers, u.Host)
	}
	var cfg bytes.Buffer
	require.NoError(t, template.Must(template.New("haproxy").Parse(haproxyConfig)).Execute(&cfg, struct {
		Dir     string
		Servers []string
	}{dir, servers}))
	cfgPath := filepath.Join(dir, "haproxy.cfg")
	require.NoError(t, os.WriteFile(cfgPath, cfg.Bytes(), 0o600))

	// The listening socket is handed over (fd 3), so no other process can take its port between
	// choosing it and binding it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	lnFile, err := ln.(*net.TCPListener).File()
	require.NoError(t, err)
	defer lnFile.Close()

	h := &haproxyServer{URL: "http://" + ln.Addr().String() + "/mcp", dir: dir, log: &syncbuf.Buffer{}}
	h.cmd = exec.Command(binary, "-db", "-f", cfgPath) // -db: foreground, logs on stderr
	h.cmd.ExtraFiles = []*os.File{lnFile}
	h.cmd.Stdout, h.cmd.Stderr = h.log, h.log
	h.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, h.cmd.Start())
	done := make(chan struct{})
	go func() { _ = h.cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = h.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = killGroup(h.cmd.Process.Pid)
			<-done
			t.Errorf("haproxy did not exit within 10 s of SIGTERM")
		}
		if t.Failed() {
			t.Logf("haproxy log:\n%s", h.log)
		}
	})
	require.Eventually(t, func() bool {
		select {
		case <-done:
			require.FailNow(t, "haproxy exited", "%s", h.log)
		default:
		}
		st, err := h.stats()
		if err != nil {
			return false
		}
		for i := range replicas {
			if !strings.HasPrefix(st[fmt.Sprintf("r%d", i)]["status"], "UP") {
				return false
			}
		}
		return true
	}, 20*time.Second, 20*time.Millisecond, "haproxy sees every replica up\n%s", h.log)
	return h
}

// stats returns HAProxy's statistics for the backend's servers and the backend itself
// ("BACKEND"), by column name (status, stot, wretr, wredis, hrsp_5xx, ...), from its admin socket.
func (h *haproxyServer) stats() (map[string]map[string]string, error) {
	conn, err := net.DialTimeout("unix", filepath.Join(h.dir, "admin.sock"), time.Second)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "show stat\n"); err != nil {
		return nil, err
	}
	raw, err := io.ReadAll(conn)
	if err != nil {
		return nil, err
	}
	r := csv.NewReader(bytes.NewReader(bytes.TrimPrefix(raw, []byte("# "))))
	r.FieldsPerRecord = -1
	rows, err := r.ReadAll()
	if err != nil || len(rows) < 2 {
		return nil, fmt.Errorf("show stat: %v: %q", err, raw)
	}
	out := map[string]map[string]string{}
	for _, row := range rows[1:] {
		if row[0] != "replicas" {
			continue
		}
		cols := map[string]string{}
		for i, name := range rows[0] {
			if i < len(row) {
				cols[name] = row[i]
			}
		}
		out[row[1]] = cols
	}
	return out, nil
}
