package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// BenchmarkHTTP measures the HTTP hop: httpClients concurrent clients,
// each with a session of its own in the session era, calling a tool of the
// go-sdk everything-server as fast as they are answered. Two groups, each
// in both protocol eras (2025-11-25 with sessions, 2026-07-28 without):
//
//   - url: the server's own streamable HTTP, reached directly ("direct"),
//     through a minimal httputil.ReverseProxy ("proxy", the floor of any
//     HTTP hop: it parses nothing) and through `mcpwrap --listen --url`
//     ("mcpwrap");
//   - stdio: the server over stdio, served over HTTP by supergateway
//     (stateful streamable HTTP, the peer) and by `mcpwrap --listen --`.
//
// Each mode has one process tree and one set of client sessions for the
// whole run. Every leaf reports calls/s, the latency p50 and p99, and for
// a hop its CPU per call (from /proc/PID/stat) and its peak RSS. As in
// BenchmarkRelay, the modes take turns: each group runs in every mode, one
// after the other, MCPWRAP_BENCH_ROUNDS times, so that this machine's drift
// reaches every mode alike; `make bench` prints the medians in one table
// with the ratios (e2e/benchtable). The client runs in the benchmark's own
// process and costs the same in every mode.
func BenchmarkHTTP(b *testing.B) {
	requireNodeModules(b)
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	groups := httpGroups(ctx, b)
	for range benchRounds(b) {
		for _, g := range groups {
			b.Run(g.name, func(b *testing.B) {
				for _, mode := range g.modes {
					b.Run(mode, func(b *testing.B) { g.loads[mode].run(b) })
				}
			})
		}
	}
}

// httpClients is how many clients call at once.
const httpClients = 32

// The modes of BenchmarkHTTP (benchDirect is shared with BenchmarkRelay).
const (
	benchProxy        = "proxy"
	benchSupergateway = "supergateway"
	benchMcpwrap      = "mcpwrap"
)

// httpGroup is one of BenchmarkHTTP's groups in one era: its modes, in the
// order they take turns, and their loads.
type httpGroup struct {
	name  string
	modes []string
	loads map[string]*httpLoad
}

// httpGroups starts every process BenchmarkHTTP measures and opens the
// clients' sessions.
func httpGroups(ctx context.Context, b *testing.B) []httpGroup {
	var groups []httpGroup
	for _, era := range []string{protocolVersionInitialize, protocolVersionStateless} {
		stateless := era >= protocolVersionStateless
		upstream := startEverythingHTTP(ctx, b, stateless)
		proxy := startReverseProxy(ctx, b, upstream)
		wrapped := startListen(ctx, b, listenOptions{Name: "everything", Config: transparentConfig, Flags: []string{"--url", upstream}})
		groups = append(groups, httpGroup{
			name:  "url-" + era,
			modes: []string{benchDirect, benchProxy, benchMcpwrap},
			loads: map[string]*httpLoad{
				benchDirect:  newHTTPLoad(ctx, b, upstream, era, 0),
				benchProxy:   newHTTPLoad(ctx, b, proxy.url, era, proxy.pid),
				benchMcpwrap: newHTTPLoad(ctx, b, wrapped.URL, era, wrapped.Pid()),
			},
		})
	}
	for _, era := range []string{protocolVersionInitialize, protocolVersionStateless} {
		peer := startSupergateway(ctx, b, everythingServerPath)
		wrapped := startListen(ctx, b, listenOptions{Name: "everything", Config: transparentConfig}, everythingServerPath)
		groups = append(groups, httpGroup{
			name:  "stdio-" + era,
			modes: []string{benchSupergateway, benchMcpwrap},
			loads: map[string]*httpLoad{
				benchSupergateway: newHTTPLoad(ctx, b, peer.url, era, peer.pid),
				benchMcpwrap:      newHTTPLoad(ctx, b, wrapped.URL, era, wrapped.Pid()),
			},
		})
	}
	return groups
}

// hop is a process between the clients and the server, serving url.
type hop struct {
	url string
	pid int
}

// startReverseProxy starts the test binary as a reverse proxy to target
// (see runReverseProxy).
func startReverseProxy(ctx context.Context, b testing.TB, target string) hop {
	b.Helper()
	self, err := os.Executable()
	require.NoError(b, err)
	p := startProcess(ctx, b, processOptions{PipeStdout: true}, self, reverseProxyArg, target)
	line, err := readLine(p.Stdout)
	require.NoError(b, err, "the reverse proxy did not say where it listens: %s", p.Stderr())
	return hop{url: line, pid: p.Cmd.Process.Pid}
}

// readLine reads one line from r, byte by byte, so that nothing after it
// is consumed.
func readLine(r io.Reader) (string, error) {
	var line []byte
	var c [1]byte
	for {
		if _, err := r.Read(c[:]); err != nil {
			return "", err
		}
		if c[0] == '\n' {
			return string(line), nil
		}
		line = append(line, c[0])
	}
}

// startSupergateway serves the stdio server command over stateful
// streamable HTTP with supergateway (npm), on a free loopback port.
func startSupergateway(ctx context.Context, b testing.TB, command string) hop {
	b.Helper()
	addr := freeLoopbackAddr(b)
	_, port, err := net.SplitHostPort(addr)
	require.NoError(b, err)
	p := startProcess(ctx, b, processOptions{}, nodePath(b), npmBin(b, "supergateway", "supergateway"),
		"--stdio", command, "--outputTransport", "streamableHttp", "--stateful", "--port", port, "--logLevel", "none")
	waitAccepting(b, p, addr)
	return hop{url: "http://" + addr + "/mcp", pid: p.Cmd.Process.Pid}
}

// freeLoopbackAddr returns a loopback address with a port free now, for a
// server that binds it next (a race with another binder is unlikely).
func freeLoopbackAddr(b testing.TB) string {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(b, err)
	addr := ln.Addr().String()
	require.NoError(b, ln.Close())
	return addr
}

// waitAccepting waits until p's server accepts connections on addr.
func waitAccepting(b testing.TB, p *process, addr string) {
	b.Helper()
	require.Eventually(b, func() bool {
		select {
		case <-p.Done():
			return true // reported below
		default:
		}
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			conn.Close()
		}
		return err == nil
	}, 20*time.Second, 20*time.Millisecond, "nothing is listening on %s", addr)
	select {
	case <-p.Done():
		require.FailNow(b, "the server exited", "%s", p.Stderr())
	default:
	}
}

// The test binary doubles as BenchmarkHTTP's floor: `e2e.test
// mcpwrap-e2e-reverse-proxy URL` serves an httputil.ReverseProxy to URL's
// origin on a free loopback port, whose URL (with URL's path) it prints on
// stdout. Its transport keeps an idle connection for every client, so that
// the floor is what a proxy costs, not what a connection costs.
const reverseProxyArg = "mcpwrap-e2e-reverse-proxy"

func runReverseProxy(args []string) int {
	if len(args) != 1 {
		fmt.Fprintf(os.Stderr, "usage: %s URL\n", reverseProxyArg)
		return 2
	}
	target, err := url.Parse(args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = 2 * httpClients
	proxy := &httputil.ReverseProxy{
		Rewrite:   func(r *httputil.ProxyRequest) { r.SetURL(&url.URL{Scheme: target.Scheme, Host: target.Host}) },
		Transport: transport,
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("http://%s%s\n", ln.Addr(), target.Path)
	fmt.Fprintln(os.Stderr, http.Serve(ln, storeAndForward(proxy)))
	return 1
}

// storeAndForward reads a request's body whole before next sees it, as
// mcpwrap does. Streamed, the body races with the answer: a server that
// answers before the proxy's transport has read the body's end has the
// body closed under that transport (net/http closes an HTTP/1.1 request's
// body once the answer is written), which breaks the connection mid-answer.
func storeAndForward(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		next.ServeHTTP(w, r)
	})
}

// httpLoad is httpClients clients of one mode: their sessions (in the
// session era) and the request they send.
type httpLoad struct {
	url      string
	version  string
	pid      int      // the hop's process; 0 for direct
	sessions []string // one per client; "" without sessions
	client   *http.Client
	nextID   atomic.Int64
}

// The tool the clients call, and what its answer says.
const (
	httpBenchTool   = "test_simple_text"
	httpBenchAnswer = "This is a simple text response for testing."
)

// newHTTPLoad opens the clients' sessions at url (in the session era) and
// has each make one call.
func newHTTPLoad(ctx context.Context, b testing.TB, url, version string, pid int) *httpLoad {
	b.Helper()
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.MaxIdleConnsPerHost = 2 * httpClients
	l := &httpLoad{url: url, version: version, pid: pid, sessions: make([]string, httpClients), client: &http.Client{Transport: transport}}
	b.Cleanup(transport.CloseIdleConnections)
	for i := range l.sessions {
		if version < protocolVersionStateless {
			l.sessions[i] = l.open(ctx, b)
		}
		require.NoError(b, l.call(ctx, i), "the first call through %s", url)
	}
	return l
}

// open opens a session: initialize, then notifications/initialized.
func (l *httpLoad) open(ctx context.Context, b testing.TB) string {
	b.Helper()
	init := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`,
		l.nextID.Add(1), l.version)
	resp, body, err := l.post(ctx, "", init, nil)
	require.NoError(b, err)
	require.Equal(b, http.StatusOK, resp.StatusCode, "initialize: %s", body)
	session := resp.Header.Get("Mcp-Session-Id")
	require.NotEmpty(b, session, "initialize: no session id")
	resp, body, err = l.post(ctx, session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil)
	require.NoError(b, err)
	require.Equal(b, http.StatusAccepted, resp.StatusCode, "notifications/initialized: %s", body)
	return session
}

// call makes client i's tool call and checks its answer.
func (l *httpLoad) call(ctx context.Context, i int) error {
	id := l.nextID.Add(1)
	var msg string
	var header http.Header
	if l.sessions[i] == "" {
		msg = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":%q,"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}},"name":%q,"arguments":{}}}`,
			id, l.version, httpBenchTool)
		header = http.Header{"Mcp-Method": {"tools/call"}, "Mcp-Name": {httpBenchTool}}
	} else {
		msg = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{}}}`, id, httpBenchTool)
	}
	resp, body, err := l.post(ctx, l.sessions[i], msg, header)
	switch {
	case err != nil:
		return err
	case resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(httpBenchAnswer)):
		return fmt.Errorf("tools/call: HTTP %d: %.300s", resp.StatusCode, body)
	}
	return nil
}

// post POSTs msg, in session (none when ""), and reads the whole answer.
func (l *httpLoad) post(ctx context.Context, session, msg string, header http.Header) (*http.Response, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.url, bytes.NewReader([]byte(msg)))
	if err != nil {
		return nil, nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	if session != "" || l.version >= protocolVersionStateless {
		req.Header.Set("Mcp-Protocol-Version", l.version)
	}
	resp, err := l.client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp, body, err
}

// run makes b.N calls, httpClients at a time, and reports the rate, the
// latency and the hop's CPU per call and peak RSS.
func (l *httpLoad) run(b *testing.B) {
	ctx := context.Background()
	var next atomic.Int64
	lat := make([][]time.Duration, httpClients)
	errs := make([]error, httpClients)
	cpu := processCPU(b, l.pid)
	start := time.Now()
	var wg sync.WaitGroup
	for i := range httpClients {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				t0 := time.Now()
				if errs[i] = l.call(ctx, i); errs[i] != nil {
					return
				}
				lat[i] = append(lat[i], time.Since(t0))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	for _, err := range errs {
		require.NoError(b, err)
	}
	all := slices.Concat(lat...)
	slices.Sort(all)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "calls/s")
	b.ReportMetric(float64(all[len(all)/2].Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(all[len(all)*99/100].Nanoseconds())/1e3, "p99-µs")
	if l.pid != 0 {
		b.ReportMetric(float64((processCPU(b, l.pid)-cpu).Microseconds())/float64(b.N), "hop-cpu-µs/op")
		if kib, err := procStatusKiB(l.pid, "VmHWM:"); err == nil {
			b.ReportMetric(float64(kib)/1024, "hop-peak-RSS-MiB")
		}
	}
}

// processCPU is the user+system CPU time process pid has used so far (0
// for pid 0), from /proc/PID/stat (Linux).
func processCPU(b *testing.B, pid int) time.Duration {
	if pid == 0 {
		return 0
	}
	return (&rawClient{pid: pid}).cpu(b)
}
