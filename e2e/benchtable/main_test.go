package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRunPairsModes(t *testing.T) {
	in := `goos: linux
BenchmarkRoundTrip/direct-2     100   200000 ns/op   150.0 p50-µs   1000 B/op
BenchmarkRoundTrip/wrapped-2    100   230000 ns/op   180.0 p50-µs   1000 B/op
BenchmarkRemoteCall/mcp-remote-2  3   4000000 ns/op  120.0 peak-RSS-MiB
BenchmarkRemoteCall/mcpwrap-2     3   1000000 ns/op   12.0 peak-RSS-MiB
BenchmarkLonely/direct-2          3   1 ns/op
PASS`
	var out strings.Builder
	require.NoError(t, run(strings.NewReader(in), &out))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 5, out.String()) // header + 2 + 2; B/op and unpaired runs left out
	assert.Regexp(t, `RemoteCall \(vs mcp-remote\)\s+ns/op\s+4000000.0\s+1000000.0\s+-3000000.0\s+0.25`, lines[1])
	assert.Regexp(t, `RemoteCall \(vs mcp-remote\)\s+peak-RSS-MiB\s+120.0\s+12.0\s+-108.0\s+0.10`, lines[2])
	assert.Regexp(t, `RoundTrip \(vs direct\)\s+ns/op\s+200000.0\s+230000.0\s+\+30000.0\s+1.15`, lines[3])
	assert.Regexp(t, `RoundTrip \(vs direct\)\s+p50-µs\s+150.0\s+180.0\s+\+30.0\s+1.20`, lines[4])
}
