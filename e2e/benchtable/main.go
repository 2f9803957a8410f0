// Command benchtable reads `go test -bench` output on stdin (any -count)
// and prints the median of every metric per mode, side by side, with the
// ratios that say what mcpwrap costs:
//
//   - BenchmarkRelay: "direct" (no relay), "floor" (a minimal line relay)
//     and "wrapped" (mcpwrap), with wrapped/direct, mcpwrap/floor and, for
//     latencies, what mcpwrap adds over direct divided by what the floor
//     adds ("added ×floor"); and with tracing on, "traced" (mcpwrap) beside
//     "traced-floor" (the floor making the same spans through the same
//     SDK), each over its untraced self;
//   - the remote bridges: "mcp-remote" vs "mcpwrap";
//   - BenchmarkHTTP: "direct" (no hop), "proxy" (a minimal reverse proxy,
//     the floor) and "mcpwrap" in front of a server's HTTP, and
//     "supergateway" (the peer) and "mcpwrap" in front of its stdio, with
//     mcpwrap/proxy and mcpwrap/supergateway.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

// line matches "BenchmarkName/.../mode/...-2   123   456 ns/op   7.8 unit ...".
var line = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+(.*)$`)

// round matches the suffix `go test` gives a sub-benchmark run again under
// the same name, as BenchmarkRelay's rounds do.
var round = regexp.MustCompile(`#\d+$`)

// modes are the path elements of a benchmark name that name a mode.
var modes = []string{"direct", "floor", "wrapped", "traced", "traced-floor", "mcp-remote", "mcpwrap", "proxy", "supergateway"}

// httpPrefix names BenchmarkHTTP's cases, which have a table of their own.
const httpPrefix = "HTTP/"

// latency reports whether a unit is a time, for which "added" makes sense.
func latency(unit string) bool { return unit == "ns/op" || strings.HasSuffix(unit, "-µs") }

func main() {
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
}

// samples holds every value seen: benchmark (mode taken out) → mode → unit.
type samples map[string]map[string]map[string][]float64

func (s samples) median(bench, mode, unit string) (float64, bool) {
	v := slices.Clone(s[bench][mode][unit])
	if len(v) == 0 {
		return 0, false
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2], true
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2, true
}

func run(in io.Reader, out io.Writer) error {
	s := samples{}
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		m := line.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		parts := strings.Split(m[1], "/")
		for j, p := range parts {
			parts[j] = round.ReplaceAllString(p, "") // a later round of the same case
		}
		i := slices.IndexFunc(parts, func(p string) bool { return slices.Contains(modes, p) })
		if i < 0 {
			continue
		}
		mode := parts[i]
		bench := strings.TrimPrefix(strings.Join(slices.Delete(parts, i, i+1), "/"), "Benchmark")
		fields := strings.Fields(m[2])
		for j := 0; j+1 < len(fields); j += 2 {
			v, err := strconv.ParseFloat(fields[j], 64)
			unit := fields[j+1]
			if err != nil || unit == "B/op" || unit == "allocs/op" {
				continue
			}
			if s[bench] == nil {
				s[bench] = map[string]map[string][]float64{}
			}
			if s[bench][mode] == nil {
				s[bench][mode] = map[string][]float64{}
			}
			s[bench][mode][unit] = append(s[bench][mode][unit], v)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	benches := make([]string, 0, len(s))
	for b := range s {
		benches = append(benches, b)
	}
	slices.Sort(benches)

	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "relay (medians)\tmetric\tdirect\tfloor\tmcpwrap\twrapped/direct\tmcpwrap/floor\tadded ×floor\t")
	for _, b := range benches {
		for _, unit := range units(s[b]["wrapped"]) {
			w, _ := s.median(b, "wrapped", unit)
			d, hasD := s.median(b, "direct", unit)
			f, hasF := s.median(b, "floor", unit)
			if !hasD && !hasF {
				continue
			}
			added := "-"
			if hasD && hasF && latency(unit) && f != d {
				added = fmt.Sprintf("%.2f", (w-d)/(f-d))
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", b, unit, num(d, hasD), num(f, hasF), num(w, true),
				ratio(w, d, hasD), ratio(w, f, hasF), added)
		}
	}
	if hasMode(s, "traced") {
		fmt.Fprintln(tw, "\t\t\t\t\t\t\t\t")
		fmt.Fprintln(tw, "tracing (medians)\tmetric\tfloor\ttraced floor\ttraced/floor\tmcpwrap\ttraced\ttraced/mcpwrap\t")
		for _, b := range benches {
			for _, unit := range units(s[b]["traced"]) {
				w, ok := s.median(b, "wrapped", unit)
				if !ok {
					continue
				}
				tr, _ := s.median(b, "traced", unit)
				f, hasF := s.median(b, "floor", unit)
				tf, hasTF := s.median(b, "traced-floor", unit)
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", b, unit, num(f, hasF), num(tf, hasTF),
					ratio(tf, f, hasF && hasTF), num(w, true), num(tr, true), ratio(tr, w, true))
			}
		}
	}
	fmt.Fprintln(tw, "\t\t\t\t\t\t\t\t")
	fmt.Fprintln(tw, "bridge (medians)\tmetric\tmcp-remote\tmcpwrap\tmcpwrap/mcp-remote\t\t\t\t")
	for _, b := range benches {
		if strings.HasPrefix(b, httpPrefix) {
			continue
		}
		for _, unit := range units(s[b]["mcpwrap"]) {
			r, ok := s.median(b, "mcp-remote", unit)
			if !ok {
				continue
			}
			w, _ := s.median(b, "mcpwrap", unit)
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\t\t\t\n", b, unit, num(r, true), num(w, true), ratio(w, r, true))
		}
	}
	fmt.Fprintln(tw, "\t\t\t\t\t\t\t\t")
	fmt.Fprintln(tw, "HTTP (medians)\tmetric\tdirect\tproxy\tsupergateway\tmcpwrap\tmcpwrap/proxy\tmcpwrap/supergateway\t")
	for _, b := range benches {
		if !strings.HasPrefix(b, httpPrefix) {
			continue
		}
		for _, unit := range units(s[b]["mcpwrap"]) {
			if unit == "ns/op" { // calls/s says it, the other way up
				continue
			}
			w, _ := s.median(b, "mcpwrap", unit)
			d, hasD := s.median(b, "direct", unit)
			p, hasP := s.median(b, "proxy", unit)
			g, hasG := s.median(b, "supergateway", unit)
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", b, unit, num(d, hasD), num(p, hasP), num(g, hasG), num(w, true),
				ratio(w, p, hasP), ratio(w, g, hasG))
		}
	}
	return tw.Flush()
}

// hasMode reports whether some benchmark ran in mode.
func hasMode(s samples, mode string) bool {
	for _, m := range s {
		if _, ok := m[mode]; ok {
			return true
		}
	}
	return false
}

// units returns the units measured for one mode, sorted.
func units(m map[string][]float64) []string {
	u := make([]string, 0, len(m))
	for k := range m {
		u = append(u, k)
	}
	slices.Sort(u)
	return u
}

func num(v float64, ok bool) string {
	if !ok {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

func ratio(a, b float64, ok bool) string {
	if !ok || b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", a/b)
}
