// Package runstatus lets every running mcpwrap sidecar publish what it is
// doing, and `mcpwrap status` read it.
//
// Each sidecar keeps one JSON file, <state dir>/run/<pid>.json, replaced
// atomically whenever its upstream's status or counters change and at least
// every few seconds, and removed when it exits. A sidecar killed with
// SIGKILL cannot remove its file: [List] recognises such files by their
// process being gone (or being another program now) and removes them.
package runstatus

import (
	"github.com/mcpwrap/mcpwrap/internal/redact"

	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcpwrap/mcpwrap/internal/atomicfile"
	"github.com/mcpwrap/mcpwrap/middleware"
	"github.com/mcpwrap/mcpwrap/resilience"
)

// DirName is the directory, inside the state directory, that holds the
// status files.
const DirName = "run"

// Defaults of the [Publisher]'s timing.
const (
	// DefaultInterval is how often a Publisher looks for a change.
	DefaultInterval = 500 * time.Millisecond
	// DefaultRefresh is how often a Publisher rewrites its file when nothing
	// changed, so that UpdatedAt shows it is alive.
	DefaultRefresh = 5 * time.Second
)

// Dir returns the status directory inside stateDir.
func Dir(stateDir string) string { return filepath.Join(stateDir, DirName) }

// Status is what one running sidecar publishes about itself.
type Status struct {
	Server string `json:"server"`
	PID    int    `json:"pid"`
	// Upstream describes the wrapped server without secrets, as
	// "npx @modelcontextprotocol/server-filesystem" or "https://host".
	Upstream string `json:"upstream,omitempty"`
	// UpstreamDigest fingerprints the whole command line or URL, so that
	// two sidecars can tell whether they wrap the same server.
	UpstreamDigest string    `json:"upstream_digest,omitempty"`
	StartedAt      time.Time `json:"started_at"`
	UpdatedAt      time.Time `json:"updated_at"`
	// Session is the sidecar's own upstream; its fields are published at
	// the top level. A front's Status is [Listening].
	Session
	// Message is what the agent is told when the upstream is not available.
	Message string `json:"message,omitempty"`
	// Pending counts the server's tools locked pending approval: new, or
	// changed since the user approved them.
	Pending int `json:"pending,omitempty"`
	// Store says why the state store cannot be used, if it cannot: out of
	// reach (the sidecar judges by the state it loaded last) or unreadable
	// (its tools are locked). Secret-free: the store's location is its
	// host, port and database at most.
	Store string `json:"store,omitempty"`
	// Listen is the URL a --listen front serves, "" for a stdio sidecar. A
	// front's upstreams are its Sessions'.
	Listen string `json:"listen,omitempty"`
	// Sessions are a front's HTTP sessions, each with its own upstream.
	Sessions []Session `json:"sessions,omitempty"`
}

// Session is the state of one upstream: a stdio sidecar's, or that of one
// HTTP session of a --listen front.
type Session struct {
	// Status is the upstream's load class: "available", "transient",
	// "permanent", "denied", or "idle" for one not started yet, which
	// starts on its client's first request that needs it (a --listen
	// session whose initialize was answered from the server's last load).
	Status string `json:"status"`
	// Attempts counts the load attempts of the current (or last) load.
	Attempts int `json:"attempts"`
	// Restarts counts the upstream's restarts after a crash.
	Restarts int `json:"restarts"`
	// Calls counts the client's tools/call requests.
	Calls int `json:"calls"`
	// Rejections counts calls to locked tools the sidecar answered.
	Rejections int `json:"rejections"`
	// IncludeDisabledQueries counts discovery calls with include_disabled.
	IncludeDisabledQueries int `json:"include_disabled_queries"`
	// LoadMS is how long the current load took, from its first attempt's
	// start to the upstream being available, in milliseconds rounded up; 0
	// (left out) while it is not available.
	LoadMS int64 `json:"load_ms,omitempty"`
	// Error is the last load failure, user-safe, when not available.
	Error string `json:"error,omitempty"`
	// Hint says how to fix it, as doctor says it; "" when nothing is known.
	Hint string `json:"hint,omitempty"`
	// ClientProtocol and ServerProtocol are the protocol versions the
	// client and the upstream speak (they differ where mcpwrap bridges
	// the protocol eras); "" while no upstream connection is ready.
	ClientProtocol string `json:"client_protocol,omitempty"`
	ServerProtocol string `json:"server_protocol,omitempty"`
}

// LoadTime is LoadMS as a duration, rounded as people read it (to the
// millisecond under a second, else to a tenth of a second: "412ms",
// "2.3s"); 0 while the upstream is not available.
func (s Session) LoadTime() time.Duration {
	d := time.Duration(s.LoadMS) * time.Millisecond
	if d >= time.Second {
		return d.Round(100 * time.Millisecond)
	}
	return d
}

// Listening is the Status of a --listen front.
const Listening = "listening"

// A Source is what a Publisher reads: a *middleware.Session satisfies it.
// Both methods must be safe to call concurrently with the session's work.
type Source interface {
	Status() resilience.Outcome
	Stats() middleware.Stats
}

// snapshot reads src into a Status, leaving out the identity and times.
func snapshot(src Source) Status {
	o, st := src.Status(), src.Stats()
	if o.Server == "" && o.Err == nil {
		// The zero Outcome of a session that has not started: it is
		// starting, not failed.
		o.Class = resilience.Transient
	}
	s := Status{Session: Session{
		Status:                 o.Class.String(),
		Attempts:               o.Attempts,
		Restarts:               st.Restarts,
		Calls:                  st.Calls,
		Rejections:             st.Rejections,
		IncludeDisabledQueries: st.IncludeDisabledQueries,
		ClientProtocol:         st.ClientProtocol,
		ServerProtocol:         st.ServerProtocol,
	}}
	if o.Class == resilience.Available {
		s.LoadMS = ceilMillis(o.Elapsed)
	} else {
		if o.Err != nil {
			s.Error, s.Hint = o.Err.Error(), o.Err.Hint
		}
		if o.Server != "" {
			s.Message = o.Message()
		}
	}
	return s
}

// ceilMillis is d in whole milliseconds, rounded up: a load that took any
// time at all never reads as 0 (unknown).
func ceilMillis(d time.Duration) int64 {
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}

// sameState reports whether a and b differ only in their times.
func sameState(a, b Status) bool {
	if !slices.Equal(a.Sessions, b.Sessions) {
		return false
	}
	a.UpdatedAt, b.UpdatedAt = time.Time{}, time.Time{}
	a.Sessions, b.Sessions = nil, nil
	return reflect.DeepEqual(a, b)
}

// frontSnapshot reads a front's sessions, in an order that does not depend
// on the order they are listed in, so that an unchanged front is not
// rewritten.
func frontSnapshot(listen string, sessions []Source) Status {
	s := Status{Session: Session{Status: Listening}, Listen: listen, Sessions: make([]Session, 0, len(sessions))}
	for _, src := range sessions {
		s.Sessions = append(s.Sessions, snapshot(src).Session)
	}
	slices.SortFunc(s.Sessions, func(a, b Session) int {
		return cmp.Or(strings.Compare(a.Status, b.Status), cmp.Compare(b.Calls, a.Calls), cmp.Compare(b.Attempts, a.Attempts),
			cmp.Compare(b.Restarts, a.Restarts), cmp.Compare(b.Rejections, a.Rejections),
			cmp.Compare(b.IncludeDisabledQueries, a.IncludeDisabledQueries), cmp.Compare(a.LoadMS, b.LoadMS), strings.Compare(a.Error, b.Error),
			strings.Compare(a.ClientProtocol, b.ClientProtocol), strings.Compare(a.ServerProtocol, b.ServerProtocol))
	})
	return s
}

// A Publisher keeps one sidecar's status file up to date. Set Dir, Server
// and Source, then call Run once.
type Publisher struct {
	Dir    string // the status directory; see [Dir]
	Server string // the server's --name
	Source Source
	// Upstream and UpstreamDigest are published as they are; see Status.
	Upstream, UpstreamDigest string
	// Listen, when set, makes this the Publisher of a --listen front at
	// that URL: Sessions lists its sessions and Source is not used.
	Listen   string
	Sessions func() []Source
	// Pending, if set, counts the server's tools pending approval; it must
	// be safe to call concurrently with the sidecar's work.
	Pending func() int
	// StoreErr, if set, says why the state store cannot be used, if it
	// cannot (published as Status.Store); safe to call concurrently.
	StoreErr func() error
	// PID names the file and is published; zero means os.Getpid().
	PID int
	// Interval is how often Source is read; zero means [DefaultInterval].
	Interval time.Duration
	// Refresh is the longest time between two writes; zero means
	// [DefaultRefresh].
	Refresh time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger receives write failures; nil discards. Publishing is best
	// effort: a failure never stops the sidecar.
	Logger *slog.Logger
}

// Path returns the status file the Publisher writes.
func (p *Publisher) Path() string {
	return filepath.Join(p.Dir, strconv.Itoa(p.pid())+".json")
}

func (p *Publisher) pid() int { return cmp.Or(p.PID, os.Getpid()) }

func (p *Publisher) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

// Run writes the status file at once, rewrites it on every change and at
// least every Refresh until ctx is done, then removes it.
func (p *Publisher) Run(ctx context.Context) {
	log := p.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	interval := cmp.Or(p.Interval, DefaultInterval)
	refresh := cmp.Or(p.Refresh, DefaultRefresh)
	path := p.Path()
	defer func() {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			log.Warn("cannot remove the status file", "path", path, "error", err)
		}
	}()
	if err := os.MkdirAll(p.Dir, 0o700); err != nil {
		log.Warn("cannot create the status directory; `mcpwrap status` will not list this sidecar", "path", p.Dir, "error", err)
		<-ctx.Done()
		return
	}

	started := p.now().UTC()
	var last Status
	written := false
	failing := false
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		var cur Status
		if p.Listen != "" {
			var sessions []Source
			if p.Sessions != nil {
				sessions = p.Sessions()
			}
			cur = frontSnapshot(p.Listen, sessions)
		} else {
			cur = snapshot(p.Source)
		}
		if p.Pending != nil {
			cur.Pending = p.Pending()
		}
		if p.StoreErr != nil {
			if err := p.StoreErr(); err != nil {
				cur.Store = redact.Text(err.Error())
			}
		}
		cur.Server, cur.PID, cur.StartedAt = p.Server, p.pid(), started
		cur.Upstream, cur.UpstreamDigest = p.Upstream, p.UpstreamDigest
		now := p.now().UTC()
		if !written || !sameState(cur, last) || now.Sub(last.UpdatedAt) >= refresh {
			cur.UpdatedAt = now
			if err := write(path, cur); err != nil {
				if !failing {
					log.Warn("cannot write the status file", "path", path, "error", err)
				}
				failing = true
			} else {
				last, written, failing = cur, true, false
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

func write(path string, s Status) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(path, append(data, '\n'), 0o600, filepath.Base(path)+tempInfix+"*")
}

// tempInfix marks the temporary files a write goes through:
// <pid>.json.tmp-<random>.
const tempInfix = ".tmp-"

// Start runs a [Publisher] for server in the background until ctx is done
// or stop is called. stop returns once the status file is removed, so that
// a sidecar can call it right before it exits.
func Start(ctx context.Context, dir, server string, src Source, logger *slog.Logger) (stop func()) {
	return StartPublisher(ctx, &Publisher{Dir: dir, Server: server, Source: src, Logger: logger})
}

// StartPublisher runs p in the background as [Start] does.
func StartPublisher(ctx context.Context, p *Publisher) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.Run(ctx)
	}()
	return func() {
		cancel()
		<-done
	}
}

// List returns the status of every running sidecar that published one in
// dir, ordered by server name, then pid. A missing dir means none. Files of
// processes that alive (nil means [Alive]) says are gone are removed, as
// are temporary files they left behind; files that cannot be parsed are
// skipped.
func List(dir string, alive func(pid int) bool) ([]Status, error) {
	if alive == nil {
		alive = Alive
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("status directory: %w", err)
	}
	var out []Status
	for _, e := range entries {
		pid, temp, ok := parseName(e.Name())
		if !ok {
			continue
		}
		path := filepath.Join(dir, e.Name())
		if !alive(pid) {
			_ = os.Remove(path) // stale: a sidecar that was killed; losing a race to remove it is fine
			continue
		}
		if temp {
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil {
			continue // it exited in between
		}
		var s Status
		if json.Unmarshal(data, &s) != nil || s.PID != pid {
			continue
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b Status) int {
		return cmp.Or(strings.Compare(a.Server, b.Server), cmp.Compare(a.PID, b.PID))
	})
	return out, nil
}

// NameClashes returns the running sidecars in list that use server's name
// for another upstream than the one digest fingerprints. Sidecars that
// published no digest are left out: nothing says they differ.
func NameClashes(list []Status, server, digest string) []Status {
	var out []Status
	for _, s := range list {
		if s.Server == server && s.UpstreamDigest != "" && s.UpstreamDigest != digest {
			out = append(out, s)
		}
	}
	return out
}

// parseName reads the pid out of a status file's name, <pid>.json, or out
// of a temporary file's, <pid>.json.tmp-*.
func parseName(name string) (pid int, temp bool, ok bool) {
	base, rest, _ := strings.Cut(name, ".json")
	switch {
	case rest == "" && strings.HasSuffix(name, ".json"):
	case strings.HasPrefix(rest, tempInfix):
		temp = true
	default:
		return 0, false, false
	}
	pid, err := strconv.Atoi(base)
	if err != nil || pid <= 0 {
		return 0, false, false
	}
	return pid, temp, true
}
