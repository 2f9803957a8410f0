package resilience_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/resilience"
)

// timeoutError is a net.Error that timed out, like a read deadline.
type timeoutError struct{}

func (timeoutError) Error() string   { return "i/o deadline reached" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

// dialErr wraps an errno the way net.Dial reports it, inside the
// *url.Error an http.Client returns.
func dialErr(errno error) error {
	return &url.Error{Op: "Post", URL: "https://mcp.example.com/mcp", Err: &net.OpError{
		Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", errno),
	}}
}

// TestClassify covers every row of the classification table (docs/DESIGN.md,
// Resilience), and that wrapped
// errors are found through errors.Is/As.
func TestClassify(t *testing.T) {
	retryRefused := resilience.Classifier{RetryRefused: true}
	tests := []struct {
		name           string
		classifier     resilience.Classifier
		err            error
		want           resilience.Class
		wantReason     string // substring
		wantHint       string // substring; "" means the hint must be empty
		wantRetryAfter time.Duration
	}{
		// handshake or request timeout, read timeout → transient
		{name: "context deadline", err: fmt.Errorf("initialize: %w", context.DeadlineExceeded), want: resilience.Transient, wantReason: "timed out"},
		{name: "handshake timeout sentinel", err: fmt.Errorf("load: %w", resilience.ErrHandshakeTimeout), want: resilience.Transient, wantReason: "handshake timed out"},
		{name: "read deadline", err: &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}, want: resilience.Transient, wantReason: "timed out"},
		{name: "net.Error timeout in url.Error", err: &url.Error{Op: "Get", URL: "https://x/mcp", Err: timeoutError{}}, want: resilience.Transient, wantReason: "timed out"},
		// connection reset / closed mid-stream after connect → transient
		{name: "ECONNRESET", err: dialErr(syscall.ECONNRESET), want: resilience.Transient, wantReason: "connection reset"},
		{name: "EPIPE", err: fmt.Errorf("write request: %w", &net.OpError{Op: "write", Err: os.NewSyscallError("write", syscall.EPIPE)}), want: resilience.Transient, wantReason: "connection reset"},
		{name: "unexpected EOF", err: fmt.Errorf("read response: %w", io.ErrUnexpectedEOF), want: resilience.Transient, wantReason: "closed mid-stream"},
		{name: "EOF in url.Error", err: &url.Error{Op: "Post", URL: "https://x/mcp", Err: io.EOF}, want: resilience.Transient, wantReason: "closed mid-stream"},
		{name: "go-sdk connection closed", err: fmt.Errorf("%w: calling %q: eof", mcp.ErrConnectionClosed, "tools/list"), want: resilience.Transient},
		// HTTP 408, 429 (Retry-After), 5xx → transient
		{name: "HTTP 408", err: &resilience.HTTPStatusError{StatusCode: 408}, want: resilience.Transient, wantReason: "HTTP 408 Request Timeout"},
		{name: "HTTP 429 with Retry-After", err: fmt.Errorf("post: %w", &resilience.HTTPStatusError{StatusCode: 429, Status: "429 Too Many Requests", RetryAfter: 7 * time.Second}), want: resilience.Transient, wantReason: "HTTP 429 Too Many Requests", wantRetryAfter: 7 * time.Second},
		{name: "HTTP 500", err: &resilience.HTTPStatusError{StatusCode: 500}, want: resilience.Transient, wantReason: "HTTP 500 Internal Server Error"},
		{name: "HTTP 503 with Retry-After", err: &resilience.HTTPStatusError{StatusCode: 503, RetryAfter: time.Minute}, want: resilience.Transient, wantRetryAfter: time.Minute},
		{name: "HTTP 504", err: &resilience.HTTPStatusError{StatusCode: 504}, want: resilience.Transient},
		// HTTP 401/403 carrying a timeout signature → transient
		{name: "HTTP 403 upstream call timeout", err: &resilience.HTTPStatusError{StatusCode: 403, Status: "403 Forbidden", Body: "RBAC: Upstream Call Timeout"}, want: resilience.Transient, wantReason: "HTTP 403 Forbidden caused by a gateway timeout"},
		{name: "HTTP 401 upstream request timeout", err: &resilience.HTTPStatusError{StatusCode: 401, Body: `{"error":"upstream request timeout"}`}, want: resilience.Transient},
		{name: "HTTP 403 ext_authz timed out", err: &resilience.HTTPStatusError{StatusCode: 403, Body: "ext_authz check timed out"}, want: resilience.Transient},
		// child exits after having been ready → transient
		{name: "crash after ready", err: &resilience.ExitError{Code: 137, Ready: true, Stderr: []string{"panic: boom"}}, want: resilience.Transient, wantReason: `exited with code 137 after it was ready; stderr: "panic: boom"`},
		// DNS failure, TLS/certificate error → permanent
		{name: "DNS not found", err: &url.Error{Op: "Get", URL: "https://nope.invalid/mcp", Err: &net.OpError{Op: "dial", Err: &net.DNSError{Err: "no such host", Name: "nope.invalid", IsNotFound: true}}}, want: resilience.Permanent, wantReason: `cannot resolve host "nope.invalid"`, wantHint: "host name"},
		{name: "DNS temporary", err: &net.DNSError{Err: "server misbehaving", Name: "x.example", IsTemporary: true}, want: resilience.Transient},
		{name: "TLS record header", err: &url.Error{Op: "Get", URL: "https://x", Err: tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}}, want: resilience.Permanent, wantReason: "did not answer with TLS", wantHint: "http://"},
		{name: "x509 unknown authority", err: x509.UnknownAuthorityError{}, want: resilience.Permanent, wantReason: "unknown authority", wantHint: "certificate"},
		{name: "x509 hostname", err: x509.HostnameError{Certificate: &x509.Certificate{}, Host: "x.example"}, want: resilience.Permanent, wantReason: "TLS certificate not accepted"},
		{name: "x509 invalid", err: x509.CertificateInvalidError{Cert: &x509.Certificate{}, Reason: x509.Expired}, want: resilience.Permanent, wantReason: "TLS certificate not accepted"},
		{name: "tls verification wrapping x509", err: &url.Error{Op: "Get", URL: "https://x", Err: &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}}, want: resilience.Permanent, wantReason: "unknown authority"},
		// connection refused → permanent, transient with RetryRefused
		{name: "refused", err: dialErr(syscall.ECONNREFUSED), want: resilience.Permanent, wantReason: "connection refused", wantHint: "retry_refused"},
		{name: "refused with RetryRefused", classifier: retryRefused, err: dialErr(syscall.ECONNREFUSED), want: resilience.Transient, wantReason: "connection refused"},
		// HTTP 404, 405 → permanent
		{name: "HTTP 404", err: &resilience.HTTPStatusError{StatusCode: 404}, want: resilience.Permanent, wantReason: "HTTP 404 Not Found", wantHint: "/mcp"},
		{name: "HTTP 405", err: &resilience.HTTPStatusError{StatusCode: 405}, want: resilience.Permanent, wantReason: "HTTP 405 Method Not Allowed"},
		{name: "HTTP 400", err: &resilience.HTTPStatusError{StatusCode: 400}, want: resilience.Permanent, wantHint: "headers"},
		// spawn ENOENT / EACCES / exec format, malformed config → permanent
		{name: "spawn not in PATH", err: &resilience.SpawnError{Command: "npx", Err: &exec.Error{Name: "npx", Err: exec.ErrNotFound}}, want: resilience.Permanent, wantReason: `cannot start "npx": command not found`, wantHint: "GUI apps get a minimal PATH"},
		{name: "spawn ENOENT path", err: &resilience.SpawnError{Command: "/opt/srv", Err: &fs.PathError{Op: "fork/exec", Path: "/opt/srv", Err: syscall.ENOENT}}, want: resilience.Permanent, wantReason: "command not found", wantHint: "Check that the file exists"},
		{name: "spawn not installed", err: &resilience.SpawnError{Command: "uvx", Err: &exec.Error{Name: "uvx", Err: exec.ErrNotFound}, NotInstalled: true}, want: resilience.Permanent, wantReason: `cannot start "uvx": command not found`, wantHint: "uvx is not installed: it is on neither mcpwrap's PATH nor your login shell's"},
		{name: "spawn EACCES", err: fmt.Errorf("start upstream: %w", &resilience.SpawnError{Command: "./srv", Err: &fs.PathError{Op: "fork/exec", Path: "./srv", Err: syscall.EACCES}}), want: resilience.Permanent, wantReason: "permission denied", wantHint: "chmod +x"},
		{name: "spawn ENOEXEC", err: &resilience.SpawnError{Command: "./srv.js", Err: &fs.PathError{Op: "fork/exec", Path: "./srv.js", Err: syscall.ENOEXEC}}, want: resilience.Permanent, wantReason: "exec format error", wantHint: "#!"},
		{name: "malformed config", err: fmt.Errorf("%w: servers.fs.retry.initial: not a duration", resilience.ErrConfig), want: resilience.Permanent, wantReason: "servers.fs.retry.initial", wantHint: "configuration"},
		// child exits before completing the handshake → permanent, unless
		// its stderr shows a transient or denial signature
		{name: "exit before handshake", err: &resilience.ExitError{Code: 1, Stderr: []string{"a", "", "Error: Cannot find module 'x'", "  at y", "node v22"}}, want: resilience.Permanent, wantReason: `the server exited with code 1 before completing the handshake; stderr: "Error: Cannot find module 'x'"`, wantHint: "by hand"},
		{name: "exit: the error lines, not a config dump's last lines", err: &resilience.ExitError{Code: 1, Stderr: []string{
			"Starting server with config {", "  host: 'localhost',", "Error: listen EADDRINUSE: address already in use :::9443",
			"    at Server.setupListenHandle (node:net:1897:16)", "config was {", "  port: 9443", "}",
			"npm notice New major version of npm available! 10.8.2 -> 11.0.0"}},
			want: resilience.Permanent, wantReason: `; stderr: "Error: listen EADDRINUSE: address already in use :::9443"`},
		{name: "exit: a traceback's header and its exception", err: &resilience.ExitError{Code: 1, Stderr: []string{
			"Traceback (most recent call last):", `  File "/srv/main.py", line 3, in <module>`, "    import httpx", "ModuleNotFoundError: No module named 'httpx'"}},
			want: resilience.Permanent, wantReason: `; stderr: "Traceback (most recent call last):" | "ModuleNotFoundError: No module named 'httpx'"`},
		{name: "exit: the first lines after a stack header", err: &resilience.ExitError{Code: 2, Stderr: []string{
			"starting", "goroutine 1 [running]:", "main.main()", "\t/src/main.go:12 +0x1d", "exit status 2"}},
			want: resilience.Permanent, wantReason: `; stderr: "main.main()" | "/src/main.go:12 +0x1d" | "exit status 2"`},
		{name: "exit: nothing explains it, the last lines but noise", err: &resilience.ExitError{Code: 3, Stderr: []string{"one", "two", "three", "}", "npm notice update available"}},
			want: resilience.Permanent, wantReason: `; stderr: "one" | "two" | "three"`},
		{name: "exit: the exact command line to run by hand, secrets hidden", err: &resilience.ExitError{Code: 1,
			Command: []string{"npx", "-y", "@acme/server", "--api-key", "s3cret", "--token=s3cret", "/home/me/My Files", "https://u:s3cret@h.example/x"}},
			want: resilience.Permanent, wantHint: `Run it by hand to see why it exits: npx -y @acme/server --api-key '***' --token='***' '/home/me/My Files' https://h.example`},
		{name: "killed before handshake", err: &resilience.ExitError{Code: -1, Signal: "killed"}, want: resilience.Permanent, wantReason: "killed by signal killed before completing"},
		{name: "exit with ECONNRESET", err: &resilience.ExitError{Code: 1, Stderr: []string{"Error: read ECONNRESET"}}, want: resilience.Transient},
		{name: "exit with 503", err: &resilience.ExitError{Code: 1, Stderr: []string{"fetch failed: 503"}}, want: resilience.Transient},
		{name: "exit temporarily unavailable", err: &resilience.ExitError{Code: 1, Stderr: []string{"backend temporarily unavailable"}}, want: resilience.Transient},
		{name: "exit with timeout", err: &resilience.ExitError{Code: 1, Stderr: []string{"connect ETIMEDOUT 10.0.0.1:443"}}, want: resilience.Transient},
		{name: "exit with 401", err: &resilience.ExitError{Code: 1, Stderr: []string{"GitHub API: 401 Bad credentials"}}, want: resilience.Denied, wantHint: "credentials"},
		{name: "exit with invalid token", err: &resilience.ExitError{Code: 2, Stderr: []string{"Invalid token supplied"}}, want: resilience.Denied},
		{name: "exit with forbidden", err: &resilience.ExitError{Code: 2, Stderr: []string{"FORBIDDEN"}}, want: resilience.Denied},
		{name: "exit port 4031 is not a 403", err: &resilience.ExitError{Code: 1, Stderr: []string{"bind 127.0.0.1:4031 in use"}}, want: resilience.Permanent},
		// stderr signatures are whole tokens, never part of a stack trace, version, option or identifier
		{name: "exit with a stack trace through line 401 is not denied", err: &resilience.ExitError{Code: 1, Stderr: []string{"Error: boom", "    at main (/app/dist/index.js:401:13)"}}, want: resilience.Permanent},
		{name: "exit with a Python trace through line 503 is not transient", err: &resilience.ExitError{Code: 1, Stderr: []string{"Traceback (most recent call last):", `  File "/app/server.py", line 503, in <module>`, "KeyError: 'API_URL'"}}, want: resilience.Permanent},
		{name: "exit naming version 1.429.0 is not transient", err: &resilience.ExitError{Code: 1, Stderr: []string{"srv@1.429.0: missing --config"}}, want: resilience.Permanent},
		{name: "exit thrown from a node timer is not a timeout", err: &resilience.ExitError{Code: 1, Stderr: []string{"TypeError: start is not a function", "    at Timeout._onTimeout (/app/index.js:12:9)", "    at listOnTimeout (node:internal/timers:581:17)"}}, want: resilience.Permanent},
		{name: "exit printing a --timeout option is not a timeout", err: &resilience.ExitError{Code: 2, Stderr: []string{"error: unknown option '--bogus'", "usage: srv [--timeout MS] [--request_timeout MS]"}}, want: resilience.Permanent},
		{name: "exit with a timeout word", err: &resilience.ExitError{Code: 1, Stderr: []string{"TimeoutError: The operation was aborted due to timeout"}}, want: resilience.Transient},
		{name: "exit with a timeout sentence", err: &resilience.ExitError{Code: 1, Stderr: []string{"Error: connection timeout."}}, want: resilience.Transient},
		{name: "exit with HTTP 503 at the end", err: &resilience.ExitError{Code: 1, Stderr: []string{"registry answered HTTP 503."}}, want: resilience.Transient},
		{name: "exit with status 403 in parentheses", err: &resilience.ExitError{Code: 1, Stderr: []string{"request failed (403)"}}, want: resilience.Denied},
		// crash loop → permanent
		{name: "crash loop", err: &resilience.CrashLoopError{Restarts: 5, Window: 5 * time.Minute, Err: &resilience.ExitError{Code: 1, Ready: true, Stderr: []string{"oom"}}}, want: resilience.Permanent, wantReason: `crash loop: 5 restarts in 5m; last: the server exited with code 1 after it was ready; stderr: "oom"`, wantHint: "stderr"},
		{name: "crash loop sentinel", err: fmt.Errorf("supervise: %w", resilience.ErrCrashLoop), want: resilience.Permanent, wantReason: "crash loop"},
		// clean HTTP 401/403, JSON-RPC auth error → denied
		{name: "clean 403", err: &resilience.HTTPStatusError{StatusCode: 403, Status: "403 Forbidden", Body: "RBAC: access denied"}, want: resilience.Denied, wantReason: "HTTP 403 Forbidden", wantHint: "credentials"},
		{name: "clean 401 wrapped", err: fmt.Errorf("initialize: %w", &resilience.HTTPStatusError{StatusCode: 401}), want: resilience.Denied, wantReason: "HTTP 401 Unauthorized"},
		{name: "403 mentioning a session timeout is still a denial", err: &resilience.HTTPStatusError{StatusCode: 403, Body: "session timeout, log in again"}, want: resilience.Denied},
		{name: "rpc unauthorized", err: &resilience.RPCError{Code: -32600, Message: "Unauthorized: missing bearer"}, want: resilience.Denied, wantReason: "JSON-RPC error -32600"},
		{name: "rpc code 401", err: &resilience.RPCError{Code: 401, Message: "nope"}, want: resilience.Denied},
		{name: "rpc request timeout", err: &resilience.RPCError{Code: -32001, Message: "Request timed out"}, want: resilience.Transient},
		{name: "rpc method not found", err: &resilience.RPCError{Code: -32601, Message: "Method not found"}, want: resilience.Permanent},
		// beyond the table: more typed causes that no retry fixes
		{name: "host unreachable", err: dialErr(syscall.EHOSTUNREACH), want: resilience.Permanent, wantReason: "unreachable", wantHint: "VPN"},
		{name: "tls alert", err: &net.OpError{Op: "remote error", Err: tls.AlertError(40)}, want: resilience.Permanent, wantReason: "TLS handshake failed", wantHint: "certificate"},
		{name: "spawn relative to dot", err: &resilience.SpawnError{Command: "srv", Err: &exec.Error{Name: "srv", Err: exec.ErrDot}}, want: resilience.Permanent, wantReason: "current directory", wantHint: "absolute path"},
		{name: "spawn other", err: &resilience.SpawnError{Command: "srv", Err: errors.New("fork: resource exhausted")}, want: resilience.Permanent, wantReason: `cannot start "srv": fork: resource exhausted`, wantHint: "command"},
		{name: "rpc timeout message", err: &resilience.RPCError{Code: -32603, Message: "upstream timeout"}, want: resilience.Transient},
		// anything unrecognised → permanent
		{name: "unknown long text is truncated", err: errors.New(strings.Repeat("é", 1000)), want: resilience.Permanent, wantReason: strings.Repeat("é", 299) + "…"},
		{name: "unparsable URL is dropped", err: errors.New(`bad "http://[::1%zz/x?k=SECRET" here`), want: resilience.Permanent, wantReason: `bad "<url>" here`},
		{name: "unknown", err: errors.New("boom"), want: resilience.Permanent, wantReason: "boom", wantHint: "log"},
		{name: "unknown redacts URL credentials", err: errors.New(`get "https://user:pw@x.example/mcp?api_key=SECRET#frag": weird`), want: resilience.Permanent, wantReason: `get "https://x.example": weird`},
		{name: "unknown redacts a token in a URL path", err: errors.New(`get "https://x.example/mcp/sk-SECRET/sse": weird`), want: resilience.Permanent, wantReason: `get "https://x.example": weird`},
		{name: "canceled", err: context.Canceled, want: resilience.Permanent, wantReason: "canceled"},
		// untyped text from libraries that format with %v
		{name: "text refused", err: errors.New("failed to connect: dial tcp 127.0.0.1:9: connect: connection refused"), want: resilience.Permanent, wantReason: "connection refused"},
		{name: "text reset", err: errors.New("read tcp: connection reset by peer"), want: resilience.Transient},
		{name: "text TLS handshake timeout", err: errors.New("net/http: TLS handshake timeout"), want: resilience.Transient},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.classifier.Classify(tt.err)
			require.NotNil(t, got)
			assert.Equal(t, tt.want, got.Class, "class; reason %q", got.Reason)
			assert.Contains(t, got.Reason, tt.wantReason)
			switch {
			case tt.wantHint != "":
				assert.Contains(t, got.Hint, tt.wantHint)
			case tt.want == resilience.Transient:
				assert.Empty(t, got.Hint, "nothing to fix in a transient failure")
			}
			assert.Equal(t, tt.wantRetryAfter, got.RetryAfter)
			assert.Equal(t, tt.err, got.Err)
			assert.ErrorIs(t, got, tt.err)
			assert.Equal(t, got.Reason, got.Error())
		})
	}
}

func TestClassifyNilAndAlreadyClassified(t *testing.T) {
	assert.Nil(t, resilience.Classify(nil))

	inner := &resilience.Error{Class: resilience.Transient, Reason: "already decided"}
	assert.Same(t, inner, resilience.Classify(fmt.Errorf("load: %w", inner)))
}

// TestClassifyLoopback checks the typed chains real clients produce
// against loopback servers, not hand-built ones.
func TestClassifyLoopback(t *testing.T) {
	t.Run("connection refused", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := ln.Addr().String()
		require.NoError(t, ln.Close())

		_, err = http.Get("http://" + addr + "/mcp")
		require.Error(t, err)
		assert.Equal(t, resilience.Permanent, resilience.Classify(err).Class)
		assert.Equal(t, resilience.Transient, resilience.Classifier{RetryRefused: true}.Classify(err).Class)
	})
	t.Run("untrusted certificate", func(t *testing.T) {
		srv := httptest.NewUnstartedServer(http.NotFoundHandler())
		srv.Config.ErrorLog = discardLog() // the server logs the client's aborted handshake
		srv.StartTLS()
		t.Cleanup(srv.Close)

		_, err := http.Get(srv.URL + "/mcp")
		require.Error(t, err)
		got := resilience.Classify(err)
		assert.Equal(t, resilience.Permanent, got.Class)
		assert.Contains(t, got.Reason, "TLS certificate not accepted")
	})
	t.Run("plain HTTP server behind an https URL", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		t.Cleanup(srv.Close)

		_, err := http.Get("https://" + srv.Listener.Addr().String() + "/mcp")
		require.Error(t, err)
		got := resilience.Classify(err)
		assert.Equal(t, resilience.Permanent, got.Class)
		assert.Contains(t, got.Reason, "did not answer with TLS")
	})
	t.Run("429 with Retry-After", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Retry-After", "2")
			http.Error(w, "slow down", http.StatusTooManyRequests)
		}))
		t.Cleanup(srv.Close)

		resp, err := http.Post(srv.URL+"/mcp", "application/json", nil)
		require.NoError(t, err)
		t.Cleanup(func() { _ = resp.Body.Close() })
		got := resilience.Classify(resilience.NewHTTPStatusError(resp))
		assert.Equal(t, resilience.Transient, got.Class)
		assert.Equal(t, 2*time.Second, got.RetryAfter)
	})
}
