package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// BenchmarkRelay measures what a relay adds to a stdio MCP server that costs
// almost nothing itself (the raw server, rawserver_test.go), so that the
// relay's own cost is not hidden behind a slow server. Three modes reach the
// same server:
//
//   - direct: the client talks to the server;
//   - floor: through a minimal store-and-forward line relay (linerelay_test.go),
//     the yardstick of what any relay costs here;
//   - wrapped: through mcpwrap.
//
// Each mode has one process tree for the whole run. The cases are, in
// order: small round trips (latency p50/p99 and the relay's CPU per round
// trip from /proc/PID/stat), a 10 MiB request, a 10 MiB result, then 64
// calls in flight (after the large messages, which is when a relay that
// keeps big buffers slows down), with the relay's CPU per call and peak
// RSS. The modes take turns: each case runs in every mode, one after the
// other, before the next case, and the whole sequence is gone through
// MCPWRAP_BENCH_ROUNDS times (1 when unset; `make bench` sets it to
// BENCHCOUNT and runs with -count=1). A mode is thus measured seconds from
// the others, never minutes: this machine's speed drifts, and a ratio of
// two modes is only as good as the conditions they share. `make bench`
// prints the medians as a table with the wrapped/direct and mcpwrap/floor
// ratios (e2e/benchtable).
func BenchmarkRelay(b *testing.B) {
	modes := []string{benchDirect, benchFloor, benchWrapped, benchTracedFloor, benchTraced}
	clients := make(map[string]*rawClient, len(modes))
	for _, mode := range modes {
		clients[mode] = startRawClient(b, benchArgv(b, mode))
	}
	for range benchRounds(b) {
		for _, bc := range relayCases {
			b.Run(bc.name, func(b *testing.B) {
				for _, mode := range modes {
					b.Run(mode, func(b *testing.B) { bc.run(b, clients[mode], mode != benchDirect) })
				}
			})
		}
	}
}

// benchRounds is how many times BenchmarkRelay goes through its cases:
// MCPWRAP_BENCH_ROUNDS, 1 when unset.
func benchRounds(b *testing.B) int {
	v := os.Getenv("MCPWRAP_BENCH_ROUNDS")
	if v == "" {
		return 1
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		b.Fatalf("MCPWRAP_BENCH_ROUNDS=%q: want a positive count", v)
	}
	return n
}

// relayCases are BenchmarkRelay's cases, in the order each round runs
// them. relay says a relay process is measured (not direct mode).
var relayCases = []struct {
	name string
	run  func(b *testing.B, c *rawClient, relay bool)
}{
	{name: "RoundTrip", run: func(b *testing.B, c *rawClient, relay bool) {
		req := c.request("tools/call", `{"name":"echo","arguments":{"text":"ping"}}`)
		c.roundTrip(b, req) // warm up
		var lat []time.Duration
		cpu := c.cpu(b)
		for b.Loop() {
			start := time.Now()
			c.roundTrip(b, req)
			lat = append(lat, time.Since(start))
		}
		if relay {
			b.ReportMetric(float64((c.cpu(b)-cpu).Microseconds())/float64(len(lat)), "relay-cpu-µs/op")
		}
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs")
		b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99-µs")
	}},
	{name: "Request10MiB", run: func(b *testing.B, c *rawClient, _ bool) {
		req := c.request("tools/call", `{"name":"sink","arguments":{"data":"`+strings.Repeat("x", 10<<20)+`"}}`)
		b.SetBytes(int64(len(req)))
		for b.Loop() {
			c.roundTrip(b, req)
		}
	}},
	{name: "Result10MiB", run: func(b *testing.B, c *rawClient, _ bool) {
		req := c.request("tools/call", `{"name":"blob","arguments":{}}`)
		b.SetBytes(rawBlobBytes)
		for b.Loop() {
			c.roundTrip(b, req)
		}
	}},
	{name: "InFlight64", run: func(b *testing.B, c *rawClient, relay bool) {
		req := c.request("tools/call", `{"name":"echo","arguments":{"text":"ping"}}`)
		cpu := c.cpu(b)
		start := time.Now()
		c.inFlight(b, req, 64, b.N)
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "calls/s")
		if relay {
			b.ReportMetric(float64((c.cpu(b)-cpu).Microseconds())/float64(b.N), "relay-cpu-µs/op")
		}
		if kib, err := procStatusKiB(c.pid, "VmHWM:"); err == nil && relay {
			b.ReportMetric(float64(kib)/1024, "relay-peak-RSS-MiB")
		}
	}},
}

// The modes of BenchmarkRelay.
const (
	benchDirect  = "direct"
	benchFloor   = "floor"
	benchWrapped = "wrapped"
	// benchTraced is mcpwrap with tracing on: every span sampled and
	// exported over OTLP/HTTP to a local sink that accepts it.
	benchTraced = "traced"
	// benchTracedFloor is the floor relay making, through the same SDK
	// and exporter, the two spans per call that mcpwrap makes: what
	// tracing costs any relay here (tracedLineRelayArg).
	benchTracedFloor = "traced-floor"
)

// benchArgv is the command line the client starts in mode.
func benchArgv(b *testing.B, mode string) []string {
	self, err := os.Executable()
	require.NoError(b, err)
	server := []string{self, rawServerArg}
	switch mode {
	case benchFloor:
		return append([]string{self, lineRelayArg}, server...)
	case benchWrapped:
		return append([]string{mcpwrapPath, "--name", "bench", "--log-level", "warn",
			"--state-dir", b.TempDir(), "--config", writeBenchConfig(b), "--"}, server...)
	case benchTraced:
		return append(tracingEnv(b), benchArgv(b, benchWrapped)...)
	case benchTracedFloor:
		return append(tracingEnv(b), append([]string{self, tracedLineRelayArg}, server...)...)
	}
	return server
}

// tracingEnv is the start of a command line that runs the rest with
// tracing on and nothing else: every span sampled and exported over
// OTLP/HTTP to a sink of its own.
func tracingEnv(b *testing.B) []string {
	return []string{"env", "OTEL_TRACES_EXPORTER=otlp", "OTEL_METRICS_EXPORTER=none", "OTEL_LOGS_EXPORTER=none",
		"OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf", "OTEL_EXPORTER_OTLP_ENDPOINT=" + otlpSink(b), "OTEL_TRACES_SAMPLER=always_on"}
}

// otlpSink serves an OTLP/HTTP endpoint that accepts every export (an empty
// ExportTraceServiceResponse) and returns its URL.
func otlpSink(b testing.TB) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	b.Cleanup(srv.Close)
	return srv.URL
}

// writeBenchConfig writes an empty config file, so that the user's own
// config plays no part in the benchmark.
func writeBenchConfig(b testing.TB) string {
	path := b.TempDir() + "/config.json"
	require.NoError(b, os.WriteFile(path, []byte("{}\n"), 0o600))
	return path
}

// rawClient is a minimal MCP client over newline-delimited JSON-RPC: it
// costs the same in every mode and nothing worth measuring.
type rawClient struct {
	pid int
	in  *bufio.Writer
	out *bufio.Reader
}

// startRawClient starts argv and performs the MCP handshake and a tools/list.
func startRawClient(b testing.TB, argv []string) *rawClient {
	b.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(b, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(b, err)
	require.NoError(b, cmd.Start())
	b.Cleanup(func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	c := &rawClient{pid: cmd.Process.Pid, in: bufio.NewWriterSize(stdin, 64<<10), out: bufio.NewReaderSize(stdout, 64<<10)}
	c.roundTrip(b, c.request("initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}`))
	c.send(b, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"))
	c.roundTrip(b, c.request("tools/list", `{}`))
	return c
}

// request returns a request line with the id 1, for roundTrip, which has
// one request out at a time; inFlight numbers its own from it.
func (c *rawClient) request(method, params string) []byte {
	return []byte(`{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":` + params + "}\n")
}

// idPrefix is what every request line starts with, up to its id.
var idPrefix = []byte(`{"jsonrpc":"2.0","id":`)

func (c *rawClient) send(b testing.TB, line []byte) {
	if _, err := c.in.Write(line); err != nil {
		b.Fatal(err)
	}
	if err := c.in.Flush(); err != nil {
		b.Fatal(err)
	}
}

// receive returns the next response, skipping notifications (a response's
// "id" is in its head; a notification has none).
func (c *rawClient) receive(b testing.TB) []byte {
	for {
		line, err := c.out.ReadBytes('\n')
		if err != nil {
			b.Fatalf("reading a response: %v", err)
		}
		head := line[:min(len(line), 64)]
		if bytes.Contains(head, []byte(`"error"`)) {
			b.Fatalf("error response: %.300s", line)
		}
		if bytes.Contains(head, []byte(`"id"`)) {
			return line
		}
	}
}

func (c *rawClient) roundTrip(b testing.TB, req []byte) {
	c.send(b, req)
	c.receive(b)
}

// inFlight sends n copies of req, each with an id of its own, keeping up to
// window of them in flight, and reads their n responses.
func (c *rawClient) inFlight(b *testing.B, req []byte, window, n int) {
	rest := req[len(idPrefix)+1:] // after `"id":1`
	var line []byte
	slots := make(chan struct{}, window)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range n {
			c.receive(b)
			<-slots
		}
	}()
	for i := range n {
		slots <- struct{}{}
		line = append(strconv.AppendInt(append(line[:0], idPrefix...), int64(i+2), 10), rest...)
		if _, err := c.in.Write(line); err != nil {
			b.Fatal(err)
		}
		if len(slots) == window || c.out.Buffered() == 0 {
			if err := c.in.Flush(); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := c.in.Flush(); err != nil {
		b.Fatal(err)
	}
	wg.Wait()
}

// cpu is the user+system CPU time the client's process (the relay, except
// in direct mode) has used so far, from /proc/PID/stat (Linux).
func (c *rawClient) cpu(b *testing.B) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", c.pid))
	if err != nil {
		b.Skipf("no /proc: %v", err)
	}
	// Fields after the command name, which is in parentheses and may hold spaces.
	fields := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+2:]))
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	const ticksPerSecond = 100 // USER_HZ on Linux
	return time.Duration(utime+stime) * time.Second / ticksPerSecond
}

// procStatusKiB reads a size field of a process's /proc status (Linux),
// such as "VmRSS:" (resident now) or "VmHWM:" (peak resident).
func procStatusKiB(pid int, field string) (int, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			return strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
		}
	}
	return 0, fmt.Errorf("no %s for pid %d", field, pid)
}
