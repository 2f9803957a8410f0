package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRun reads BenchmarkRelay's rounds (a case's name gets #01, #02...
// from the second round on) as samples of one case.
func TestRun(t *testing.T) {
	in := `goos: linux
BenchmarkRelay/RoundTrip/direct-2     100   200000 ns/op   100.0 p50-µs   1000 B/op
BenchmarkRelay/RoundTrip/floor-2      100   210000 ns/op   110.0 p50-µs   7.0 relay-cpu-µs/op
BenchmarkRelay/RoundTrip/wrapped-2    100   230000 ns/op   130.0 p50-µs   14.0 relay-cpu-µs/op
BenchmarkRelay/RoundTrip#01/direct-2     100   200000 ns/op   100.0 p50-µs
BenchmarkRelay/RoundTrip#01/floor-2      100   210000 ns/op   120.0 p50-µs   9.0 relay-cpu-µs/op
BenchmarkRelay/RoundTrip#01/wrapped-2    100   230000 ns/op   999.0 p50-µs   10.0 relay-cpu-µs/op
BenchmarkRelay/RoundTrip#02/wrapped-2    100   230000 ns/op   120.0 p50-µs   12.0 relay-cpu-µs/op
BenchmarkRelay/RoundTrip/traced-floor-2  100   230000 ns/op   120.0 p50-µs   12.0 relay-cpu-µs/op
BenchmarkRelay/RoundTrip/traced-2        100   230000 ns/op   140.0 p50-µs   18.0 relay-cpu-µs/op
BenchmarkRemoteCall/mcp-remote-2  3   4000000 ns/op  120.0 peak-RSS-MiB
BenchmarkRemoteCall/mcpwrap-2     3   1000000 ns/op   12.0 peak-RSS-MiB
BenchmarkLonely-2                 3   1 ns/op
BenchmarkHTTP/url-2025-11-25/direct-2   3084   433130 ns/op   2300 calls/s   11000 p50-µs
BenchmarkHTTP/url-2025-11-25/proxy-2    2120   517286 ns/op   1900 calls/s   12000 p50-µs   165.0 hop-cpu-µs/op
BenchmarkHTTP/url-2025-11-25/mcpwrap-2  2200   559700 ns/op   1800 calls/s   13000 p50-µs   270.0 hop-cpu-µs/op
BenchmarkHTTP/url-2025-11-25#01/mcpwrap-2  2200   559700 ns/op   1700 calls/s   13000 p50-µs   260.0 hop-cpu-µs/op
BenchmarkHTTP/stdio-2025-11-25/supergateway-2  595   2103172 ns/op   475.0 calls/s   163.0 hop-peak-RSS-MiB
BenchmarkHTTP/stdio-2025-11-25/mcpwrap-2       2925   418824 ns/op   2375.0 calls/s   32.6 hop-peak-RSS-MiB
PASS`
	var out strings.Builder
	require.NoError(t, run(strings.NewReader(in), &out))
	text := out.String()
	// Medians: floor p50 (110+120)/2 = 115, mcpwrap p50 median of 130, 999, 120 = 130;
	// added ×floor = (130-100)/(115-100) = 2.00.
	assert.Regexp(t, `Relay/RoundTrip\s+p50-µs\s+100.0\s+115.0\s+130.0\s+1.30\s+1.13\s+2.00`, text)
	assert.Regexp(t, `Relay/RoundTrip\s+relay-cpu-µs/op\s+-\s+8.0\s+12.0\s+-\s+1.50\s+-`, text)
	assert.Regexp(t, `Relay/RoundTrip\s+ns/op\s+200000.0\s+210000.0\s+230000.0\s+1.15\s+1.10\s+3.00`, text)
	// Tracing: each traced mode over its untraced self (floor CPU 8.0, mcpwrap 12.0).
	assert.Regexp(t, `Relay/RoundTrip\s+relay-cpu-µs/op\s+8.0\s+12.0\s+1.50\s+12.0\s+18.0\s+1.50`, text)
	assert.Regexp(t, `RemoteCall\s+peak-RSS-MiB\s+120.0\s+12.0\s+0.10`, text)
	assert.NotContains(t, text, "Lonely")
	// BenchmarkHTTP's table: its cases are in none of the others, and ns/op is left to calls/s.
	assert.Regexp(t, `HTTP/url-2025-11-25\s+calls/s\s+2300.0\s+1900.0\s+-\s+1750.0\s+0.92\s+-`, text)
	assert.Regexp(t, `HTTP/url-2025-11-25\s+hop-cpu-µs/op\s+-\s+165.0\s+-\s+265.0\s+1.61\s+-`, text)
	assert.Regexp(t, `HTTP/stdio-2025-11-25\s+calls/s\s+-\s+-\s+475.0\s+2375.0\s+-\s+5.00`, text)
	assert.Regexp(t, `HTTP/stdio-2025-11-25\s+hop-peak-RSS-MiB\s+-\s+-\s+163.0\s+32.6\s+-\s+0.20`, text)
	assert.Len(t, regexp.MustCompile(`HTTP/url-2025-11-25\s+calls/s`).FindAllString(text, -1), 1, "one row, in the HTTP table")
	assert.NotRegexp(t, `HTTP/\S+\s+ns/op`, text)
	assert.NotContains(t, text, "B/op")
}
