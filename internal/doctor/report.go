package doctor

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mcpwrap/mcpwrap/internal/era"
)

// WriteTable prints results as a table, one row per server, followed by
// the error and fix hint of every server that has one.
func WriteTable(w io.Writer, results []Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tCLIENT\tTRANSPORT\tSTATUS\tPROTOCOL\tATTEMPTS\tLOAD\tTOOLS")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n",
			r.Name, dash(r.Client), r.Transport, r.Status, dash(era.Describe(r.ClientProtocol, r.ServerProtocol)),
			r.Attempts, loadTime(r), tools(r))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range results {
		if r.Error == "" && r.Hint == "" {
			continue
		}
		fmt.Fprintf(w, "\n%s (%s)", r.Name, r.Status)
		if r.Error != "" {
			fmt.Fprintf(w, ": %s", r.Error)
		}
		fmt.Fprintln(w)
		if r.Hint != "" {
			fmt.Fprintf(w, "  fix: %s.\n", strings.TrimSuffix(r.Hint, "."))
		}
	}
	_, err := fmt.Fprintf(w, "\n%s\n", summary(results))
	return err
}

// WriteJSON prints results as a JSON array of objects.
func WriteJSON(w io.Writer, results []Result) error {
	if results == nil {
		results = []Result{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(results)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func loadTime(r Result) string {
	d := r.LoadTime
	switch {
	case d <= 0:
		return "-"
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	default:
		return d.Round(100 * time.Millisecond).String()
	}
}

// tools renders "12", "10 (2 locked: 1 disabled_by_user, 1 pending_approval)"
// or "-" for a server that did not load.
func tools(r Result) string {
	if !r.Available() {
		return "-"
	}
	if r.Locked == 0 {
		return fmt.Sprint(r.Tools)
	}
	var by []string
	for _, status := range slices.Sorted(maps.Keys(r.LockedBy)) {
		by = append(by, fmt.Sprintf("%d %s", r.LockedBy[status], status))
	}
	return fmt.Sprintf("%d (%d locked: %s)", r.Tools, r.Locked, strings.Join(by, ", "))
}

func summary(results []Result) string {
	failed, skipped := 0, 0
	for _, r := range results {
		switch {
		case r.Skipped():
			skipped++
		case !r.Available():
			failed++
		}
	}
	checked := len(results) - skipped
	var s string
	switch {
	case checked == 0:
		s = "No servers to check."
	case failed == 0:
		s = fmt.Sprintf("All %d server(s) available.", checked)
	default:
		s = fmt.Sprintf("%d of %d server(s) not available.", failed, checked)
	}
	if skipped > 0 {
		s += fmt.Sprintf(" %d project server(s) skipped, not started.", skipped)
	}
	return s
}
