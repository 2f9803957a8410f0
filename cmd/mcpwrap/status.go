package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"text/tabwriter"
	"time"

	"github.com/mcpwrap/mcpwrap/internal/config"
	"github.com/mcpwrap/mcpwrap/internal/era"
	"github.com/mcpwrap/mcpwrap/internal/gate"
	"github.com/mcpwrap/mcpwrap/internal/httpfront"
	"github.com/mcpwrap/mcpwrap/internal/redact"
	"github.com/mcpwrap/mcpwrap/internal/runstatus"
	"github.com/mcpwrap/mcpwrap/internal/servername"
	"github.com/mcpwrap/mcpwrap/internal/stores"
	"github.com/mcpwrap/mcpwrap/internal/upstream"
)

const statusUsage = `Usage: mcpwrap status [--json] [--state-dir DIR] [--store LOCATION]

Lists the mcpwrap sidecars of this user that are running now, with their
upstream's status (available, transient, permanent, denied), load attempts,
the time its load took, restarts and counters, and the --listen fronts with their URL and one line
per HTTP session. Sidecars that were killed are left out (and their
status files removed). With a shared state store (--store, $MCPWRAP_STORE
or the config file's store: PostgreSQL), it says whether the store can be
used now.

Exit codes: 0 listed, 1 the status directory cannot be read, 2 bad flags.

Flags:
`

// runStatus is `mcpwrap status`.
func runStatus(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcpwrap status", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), statusUsage)
		fs.PrintDefaults()
	}
	asJSON := fs.Bool("json", false, "print a JSON array instead of a table")
	dir := fs.String("state-dir", "", "user state directory (default: $MCPWRAP_STATE_DIR, else the OS per-user state dir)")
	configPath := fs.String("config", "", "config file, for its store (default: $MCPWRAP_CONFIG, else <user config dir>/mcpwrap/config.json)")
	store := fs.String("store", "", "the state store: file or a postgres:// URL (default: $MCPWRAP_STORE, else the config file's store, else file)")
	if err := parseFlags(fs, args, stdout); err != nil {
		if errors.Is(err, errHelp) {
			return exitOK
		}
		return usageFailed(stderr, "mcpwrap status", err)
	}
	if fs.NArg() > 0 {
		return usageFailed(stderr, "mcpwrap status", fmt.Errorf("unexpected arguments %q", fs.Args()))
	}
	state, err := config.StateDir(*dir, os.Getenv)
	if err != nil {
		fmt.Fprintln(stderr, "mcpwrap status:", err)
		return exitUsage
	}
	list, err := runstatus.List(runstatus.Dir(state), nil)
	if err != nil {
		fmt.Fprintln(stderr, "mcpwrap status:", err)
		return exitError
	}
	if *asJSON {
		err = writeStatusJSON(stdout, list)
	} else {
		err = writeStatusTable(stdout, list, time.Now())
		var opened stores.Set
		writeStore(ctx, stdout, *configPath, *store, state, &opened)
		writeSignIns(ctx, stdout, *configPath, *store, state, &opened, time.Now())
		opened.Close()
	}
	if err != nil {
		fmt.Fprintln(stderr, "mcpwrap status:", err)
		return exitError
	}
	return exitOK
}

func writeStatusJSON(w io.Writer, list []runstatus.Status) error {
	if list == nil {
		list = []runstatus.Status{}
	}
	return writeJSON(w, list)
}

func writeStatusTable(w io.Writer, list []runstatus.Status, now time.Time) error {
	if len(list) == 0 {
		_, err := fmt.Fprintln(w, "No mcpwrap sidecar is running.")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tUPSTREAM\tPID\tUPTIME\tSTATUS\tPROTOCOL\tATTEMPTS\tLOAD\tRESTARTS\tCALLS\tREJECTED\tINCLUDE_DISABLED\tPENDING\tERROR")
	for _, s := range list {
		if s.Listen != "" {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s %s, %d session(s)\t\t\t\t\t\t\t\t%d\t\n", s.Server, cmp.Or(s.Upstream, "-"), s.PID,
				now.Sub(s.StartedAt).Round(time.Second), s.Status, s.Listen, len(s.Sessions), s.Pending)
			for i, ss := range s.Sessions {
				fmt.Fprintf(tw, "  session %d\t\t\t\t%s\t%s\t%d\t%s\t%d\t%d\t%d\t%d\t\t%s\n", i+1,
					ss.Status, protocol(ss), ss.Attempts, loadTime(ss), ss.Restarts, ss.Calls, ss.Rejections, ss.IncludeDisabledQueries, ss.Error)
			}
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%d\t%s\t%d\t%d\t%d\t%d\t%d\t%s\n", s.Server, cmp.Or(s.Upstream, "-"), s.PID,
			now.Sub(s.StartedAt).Round(time.Second), s.Status, protocol(s.Session), s.Attempts, loadTime(s.Session), s.Restarts,
			s.Calls, s.Rejections, s.IncludeDisabledQueries, s.Pending, s.Error)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, s := range list {
		if s.Store != "" {
			fmt.Fprintf(w, "%s (pid %d): state store: %s\n", s.Server, s.PID, s.Store)
		}
	}
	return nil
}

// loadTime is the LOAD column: how long the current load took, "-" while
// the upstream is not available.
func loadTime(s runstatus.Session) string {
	if d := s.LoadTime(); d > 0 {
		return d.String()
	}
	return "-"
}

// storeCheckTimeout bounds status's and doctor's look at the state store.
const storeCheckTimeout = 10 * time.Second

// writeStore prints, for status and doctor, the shared state store that
// configPath's file, $MCPWRAP_STORE or storeFlag selects, and whether it
// can be used now; nothing for the file store, the default, whose problems
// each server's line shows.
func writeStore(ctx context.Context, w io.Writer, configPath, storeFlag, stateDir string, opened *stores.Set) {
	file, _ := config.Open(configPath, os.Getenv) // a broken file names no store: the others still do
	location, from := config.StoreLocation(storeFlag, os.Getenv, file)
	if location == config.StoreFile {
		return
	}
	st, err := opened.Open(location, from, stateDir, nil)
	if err != nil {
		fmt.Fprintf(w, "\nState store: %s\n", redact.Text(err.Error()))
		return
	}
	ctx, cancel := context.WithTimeout(ctx, storeCheckTimeout)
	defer cancel()
	verdict := "available"
	if err := stores.Check(ctx, st); err != nil {
		verdict = "cannot be used: " + redact.Text(err.Error())
	}
	fmt.Fprintf(w, "\nState store (%s): %s: %s\n", from, stores.Describe(st), verdict)
}

// protocol shows the protocol versions of an upstream's sides: one, or the
// client's and the server's where mcpwrap bridges the eras; "-" unknown.
func protocol(s runstatus.Session) string {
	return cmp.Or(era.Describe(s.ClientProtocol, s.ServerProtocol), "-")
}

// stateDir is the state directory of the wrap command o. loadPolicy has
// resolved it already, so it does not fail here.
func stateDir(o wrapOptions) string {
	dir, _ := config.StateDir(o.stateDir, os.Getenv)
	return dir
}

// writeJSON prints v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// publishStatus publishes the wrap command's status for `mcpwrap status`
// until the returned stop is called (see startPublisher).
func publishStatus(ctx context.Context, o wrapOptions, src runstatus.Source, tools *gate.Gate, logger *slog.Logger) (stop func()) {
	return startPublisher(ctx, o, &runstatus.Publisher{Source: src, Pending: pendingCount(tools), StoreErr: storeErr(tools)}, logger)
}

// pendingCount counts the tools the gate holds pending approval; nil
// without a gate.
func pendingCount(tools *gate.Gate) func() int {
	if tools == nil {
		return nil
	}
	return func() int { return len(tools.Pending()) }
}

// storeErr says why the gate's state store cannot be used; nil without a
// gate.
func storeErr(tools *gate.Gate) func() error {
	if tools == nil {
		return nil
	}
	return tools.StoreErr
}

// publishFront publishes the status of a --listen front serving at url and
// of its sessions, until the returned stop is called.
func publishFront(ctx context.Context, o wrapOptions, url string, front *httpfront.Server, tools *gate.Gate, logger *slog.Logger) (stop func()) {
	return startPublisher(ctx, o, &runstatus.Publisher{Listen: url, Pending: pendingCount(tools), StoreErr: storeErr(tools), Sessions: func() []runstatus.Source {
		sessions := front.Sessions()
		out := make([]runstatus.Source, len(sessions))
		for i, s := range sessions {
			out[i] = s
		}
		return out
	}}, logger)
}

// startPublisher completes p for the wrap command o and runs it, after
// warning when a running sidecar uses the same name for another server:
// the two would share operator policy, tool approvals and toggles, and
// each one's catalog would look like a rug pull to the other.
func startPublisher(ctx context.Context, o wrapOptions, p *runstatus.Publisher, logger *slog.Logger) (stop func()) {
	p.Dir, p.Server, p.Logger = runstatus.Dir(stateDir(o)), o.name, logger
	p.Upstream, p.UpstreamDigest = describeUpstream(o)
	if list, err := runstatus.List(p.Dir, nil); err == nil {
		for _, other := range runstatus.NameClashes(list, o.name, p.UpstreamDigest) {
			logger.Warn("another running sidecar uses this --name for a different server; they share tool approvals and toggles, so give each its own --name",
				"other_pid", other.PID, "other_upstream", other.Upstream, "upstream", p.Upstream)
		}
	}
	return runstatus.StartPublisher(ctx, p)
}

// describeUpstream returns the secret-free description of o's upstream
// and its digest, for the status file. A --url naming environment
// variables (--url '${LINEAR_URL}', as mcpwrap install writes it) is
// described by the URL it expands to at run time, as redacted as any
// (its origin only), not by the reference.
func describeUpstream(o wrapOptions) (desc, digest string) {
	rawURL := o.url
	if expanded, err := upstream.ExpandURL(o.url, o.getenv()); err == nil && o.url != "" {
		rawURL = expanded
	}
	return servername.Identify(o.command, rawURL).Describe(), servername.Digest(o.command, rawURL)
}
