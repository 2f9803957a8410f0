package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// The benchmarks run the same go-sdk client workload against the built-in
// demo server twice in one run: directly ("direct") and through mcpwrap
// ("wrapped"). `make bench` turns their output into a table of what mcpwrap
// adds (e2e/benchtable).

// benchModes are the two ways of reaching the demo server.
var benchModes = []struct {
	name    string
	command func() []string
}{
	{"direct", func() []string { return []string{mcpwrapPath, "demo-server"} }},
	{"wrapped", func() []string {
		return []string{mcpwrapPath, "--name", "bench", "--log-level", "warn", "--", mcpwrapPath, "demo-server"}
	}},
}

// benchSession connects a go-sdk client to argv and returns the session and
// the pid of the process the client started.
func benchSession(b *testing.B, argv []string) (*mcp.ClientSession, int) {
	b.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(b, err)
	b.Cleanup(func() { cs.Close() })
	return cs, cmd.Process.Pid
}

func callTool(b *testing.B, cs *mcp.ClientSession, name string, args map[string]any) {
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		b.Fatal(err)
	}
	if res.IsError {
		b.Fatalf("%s: tool error", name)
	}
}

// BenchmarkRoundTrip measures sequential small tools/call round trips.
func BenchmarkRoundTrip(b *testing.B) {
	for _, m := range benchModes {
		b.Run(m.name, func(b *testing.B) {
			cs, _ := benchSession(b, m.command())
			args := map[string]any{"text": "ping"}
			callTool(b, cs, "echo", args) // warm up
			var lat []time.Duration
			for b.Loop() {
				start := time.Now()
				callTool(b, cs, "echo", args)
				lat = append(lat, time.Since(start))
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99-µs")
		})
	}
}

// BenchmarkInFlight64 measures throughput with 64 calls in flight.
func BenchmarkInFlight64(b *testing.B) {
	for _, m := range benchModes {
		b.Run(m.name, func(b *testing.B) {
			cs, _ := benchSession(b, m.command())
			args := map[string]any{"text": "ping"}
			callTool(b, cs, "echo", args)
			b.SetParallelism((64 + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					callTool(b, cs, "echo", args)
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "calls/s")
		})
	}
}

// BenchmarkResult10MiB measures one tools/call whose result is 10 MiB, and
// the peak RSS of the process the client started (mcpwrap when wrapped).
func BenchmarkResult10MiB(b *testing.B) {
	for _, m := range benchModes {
		b.Run(m.name, func(b *testing.B) {
			cs, pid := benchSession(b, m.command())
			args := map[string]any{"bytes": 10 << 20}
			callTool(b, cs, "blob", args)
			b.SetBytes(10 << 20)
			for b.Loop() {
				callTool(b, cs, "blob", args)
			}
			if kib, err := procStatusKiB(pid, "VmHWM:"); err == nil {
				b.ReportMetric(float64(kib)/1024, "peak-RSS-MiB")
			}
		})
	}
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
