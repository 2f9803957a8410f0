// Command benchtable reads `go test -bench` output on stdin and prints, for
// every benchmark run in a baseline mode and in mcpwrap's, the difference
// and the ratio of each metric: "direct" vs "wrapped" (what mcpwrap adds to
// a stdio server) and "mcp-remote" vs "mcpwrap" (the two stdio-to-HTTP
// bridges).
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
)

// line matches "BenchmarkName/mode-2   123   456 ns/op   7.8 unit ...".
var line = regexp.MustCompile(`^(Benchmark\S+?)/(direct|wrapped|mcp-remote|mcpwrap)(?:-\d+)?\s+\d+\s+(.*)$`)

// baseline maps mcpwrap's mode to the mode it is compared with.
var baseline = map[string]string{"wrapped": "direct", "mcpwrap": "mcp-remote"}

func main() {
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
}

func run(in io.Reader, out io.Writer) error {
	results := map[string]map[string]map[string]float64{} // bench → mode → unit → value
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		m := line.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		fields := strings.Fields(m[3])
		metrics := map[string]float64{}
		for i := 0; i+1 < len(fields); i += 2 {
			if v, err := strconv.ParseFloat(fields[i], 64); err == nil {
				metrics[fields[i+1]] = v
			}
		}
		if results[m[1]] == nil {
			results[m[1]] = map[string]map[string]float64{}
		}
		results[m[1]][m[2]] = metrics
	}
	if err := sc.Err(); err != nil {
		return err
	}
	names := make([]string, 0, len(results))
	for n := range results {
		names = append(names, n)
	}
	sort.Strings(names)
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "benchmark\tmetric\tbaseline\tmcpwrap\tdifference\tmcpwrap/baseline\t")
	for _, n := range names {
		var d, w map[string]float64
		base := ""
		for mode, b := range baseline {
			if results[n][mode] != nil && results[n][b] != nil {
				d, w, base = results[n][b], results[n][mode], b
			}
		}
		if d == nil {
			continue
		}
		units := make([]string, 0, len(d))
		for u := range d {
			if _, ok := w[u]; ok && u != "B/op" && u != "allocs/op" {
				units = append(units, u)
			}
		}
		sort.Strings(units)
		for _, u := range units {
			ratio := "-"
			if d[u] != 0 {
				ratio = fmt.Sprintf("%.2f", w[u]/d[u])
			}
			fmt.Fprintf(tw, "%s (vs %s)\t%s\t%.1f\t%.1f\t%+.1f\t%s\t\n", strings.TrimPrefix(n, "Benchmark"), base, u, d[u], w[u], w[u]-d[u], ratio)
		}
	}
	return tw.Flush()
}
