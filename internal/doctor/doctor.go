// Package doctor loads the MCP servers of a client's config the way the
// mcpwrap sidecar would, all at once, and reports how each one fared: its
// load class, attempts, load time, tools and, when it failed, why and how
// to fix it. It backs `mcpwrap doctor`.
//
// A check drives a real [middleware.Session] through an in-memory client
// that sends what a client sends (initialize, notifications/initialized,
// tools/list over every page), so it exercises the same dialing, retries,
// classification and tool policy as the sidecar. A check is read-only: it
// records no catalog and approves nothing.
package doctor

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mcpwrap/mcpwrap/internal/era"
	"github.com/mcpwrap/mcpwrap/middleware"
	"github.com/mcpwrap/mcpwrap/resilience"
)

// DefaultBudget bounds a check whose Target gives no Budget: the default
// load budget (30 s of retries) plus one more attempt's handshake.
const DefaultBudget = 40 * time.Second

// Transports, as a [Result] names them.
const (
	TransportStdio = "stdio"
	TransportHTTP  = "http"
)

// protocolVersion is what the doctor's client asks for: the newest version
// opening with initialize, as desktop clients send it.
const protocolVersion = era.SessionVersion

// Target is one server to check.
type Target struct {
	Name      string // the server's name
	Client    string // the client config it came from, for the report
	Transport string // TransportStdio or TransportHTTP
	// Session loads the server. Build it as the sidecar does (Dial, Tools,
	// Retrier, Logger...) and leave Client unset; the check sets Client and
	// ReadyTimeout, and replaces Retrier by a copy that gives up when its
	// load budget is spent instead of retrying in the background. Leave
	// CatalogSeen nil: a check must not approve a catalog.
	Session *middleware.Session
	// ReadyTimeout is the sidecar's ready_timeout. A server that loads but
	// takes longer is reported as slow: its clients see it starting up
	// first. Zero means [middleware.DefaultReadyTimeout].
	ReadyTimeout time.Duration
	// Budget bounds the whole check; zero means [DefaultBudget].
	Budget time.Duration
	// Err, when set, says why no Session could be built (a bad entry or
	// config): it is reported, classified, without loading anything.
	Err error
	// Skip, when set, keeps the server from being started at all: the
	// result's Status is [StatusSkipped] and Skip its hint, how to include
	// it. It is for what nothing may run unasked, such as a repository's
	// own project config.
	Skip string
}

// StatusSkipped is the Status of a server that was not started (see
// [Target.Skip]). It counts neither as available nor as failing.
const StatusSkipped = "skipped"

// Result is how one server fared.
type Result struct {
	Name      string `json:"name"`
	Client    string `json:"client,omitempty"`
	Transport string `json:"transport"`
	// Status is the load class: "available", "transient", "permanent" or
	// "denied".
	Status   string        `json:"status"`
	Attempts int           `json:"attempts"`
	LoadTime time.Duration `json:"-"` // start to ready, or to failure
	// Tools counts the tools the agent can call; Locked those it can find
	// through discovery but not call, by status in LockedBy.
	Tools    int            `json:"tools"`
	Locked   int            `json:"locked"`
	LockedBy map[string]int `json:"locked_by,omitempty"`
	// ClientProtocol and ServerProtocol are the protocol versions the
	// doctor's client (a desktop client's, of the session era) and the
	// server spoke once it loaded; they differ where mcpwrap bridges the
	// eras.
	ClientProtocol string `json:"client_protocol,omitempty"`
	ServerProtocol string `json:"server_protocol,omitempty"`
	// Slow is set when the server loaded after its ready timeout.
	Slow bool `json:"slow,omitempty"`
	// Error says what went wrong, user-safe; Hint how to fix it.
	Error string `json:"error,omitempty"`
	Hint  string `json:"hint,omitempty"`
}

// Available reports whether the server loaded.
func (r Result) Available() bool { return r.Status == resilience.Available.String() }

// Skipped reports whether the server was not started (see [Target.Skip]).
func (r Result) Skipped() bool { return r.Status == StatusSkipped }

// MarshalJSON adds load_ms, the load time in milliseconds.
func (r Result) MarshalJSON() ([]byte, error) {
	type plain Result
	return json.Marshal(struct {
		plain
		LoadMS int64 `json:"load_ms"`
	}{plain(r), r.LoadTime.Milliseconds()})
}

// Run checks every target concurrently and returns their results in the
// targets' order. It takes as long as the slowest check.
func Run(ctx context.Context, targets []Target) []Result {
	results := make([]Result, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Go(func() { results[i] = Check(ctx, t) })
	}
	wg.Wait()
	return results
}

// Check loads one server, within its budget, and reports how it fared. It
// returns once the Session has shut the server down again.
func Check(ctx context.Context, t Target) Result {
	res := Result{Name: t.Name, Client: t.Client, Transport: t.Transport}
	if t.Skip != "" {
		res.Status, res.Hint = StatusSkipped, t.Skip
		return res
	}
	if t.Err != nil {
		res.fail(resilience.Outcome{Class: resilience.Permanent, Err: resilience.Classify(t.Err)})
		return res
	}
	budget := cmp.Or(t.Budget, DefaultBudget)
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()

	s := t.Session
	s.ReadyTimeout = budget // the handshake waits for the whole load; slowness is measured instead
	r := resilience.Retrier{}
	if s.Retrier != nil {
		r = *s.Retrier
	}
	// Once the load budget is spent the sidecar keeps retrying slowly in
	// the background; a check reports "still failing" instead.
	r.BackgroundPolicy = resilience.Policy{MaxAttempts: 1, MaxElapsed: time.Nanosecond}
	// The load's outcome: an initialize the upstream answered is not the
	// end of it, its first catalog follows (see middleware.Session.Status).
	loaded := make(chan resilience.Outcome, 1)
	onOutcome := r.OnOutcome
	r.OnOutcome = func(o resilience.Outcome) {
		if onOutcome != nil {
			onOutcome(o)
		}
		select { // the first: the load's own, before any background retry's
		case loaded <- o:
		default:
		}
	}
	s.Retrier = &r
	ours, theirs := pipe()
	s.Client = theirs
	client := newRPCClient(ours)

	runDone := make(chan struct{})
	go func() {
		defer close(runDone)
		_ = s.Run(ctx) // an upstream that fails never ends it: closing the client does
	}()
	defer func() {
		client.close() // closing one end ends both, and so the Session's Run
		<-runDone
	}()

	start := time.Now()
	_, err := client.call(ctx, "initialize", map[string]any{
		"protocolVersion": protocolVersion,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "mcpwrap-doctor", "version": "1"},
	})
	st := s.Status()
	if err == nil {
		select {
		case st = <-loaded:
		case <-ctx.Done():
		}
		if ctx.Err() != nil && st.Class != resilience.Available {
			// The budget is spent, which cuts the load off: an outcome
			// that comes with it is that cut ("load canceled"), not the
			// server's doing. It is still loading, its handshake done and
			// its tool list not.
			st = resilience.Outcome{Class: resilience.Transient, Attempts: max(st.Attempts, s.Status().Attempts)}
		}
	}
	res.LoadTime = time.Since(start)
	res.Attempts = st.Attempts
	var rpc *middleware.RPCError
	if errors.As(err, &rpc) {
		// The upstream refused the handshake: the client got its answer
		// before the Session classified it, the same way.
		st.Err = resilience.Classify(&resilience.RPCError{Code: rpc.Code, Message: rpc.Message})
		st.Class = st.Err.Class
	}
	if st.Class != resilience.Available {
		if st.Class == resilience.Transient && st.Err == nil {
			hint := "The server started but did not complete the MCP handshake; check that it speaks MCP and look at its own log"
			if s.Handshake().Result != nil { // the upstream's own answer, not the sidecar's at the budget
				hint = "The server answered the MCP handshake but did not list its tools in time; look at its own log"
			}
			st.Err = &resilience.Error{Class: resilience.Transient,
				Reason: fmt.Sprintf("not ready after %s", res.LoadTime.Round(time.Millisecond)), Hint: hint}
		}
		res.fail(st)
		return res
	}
	if err != nil { // available, yet the answer was lost: report what was seen
		res.fail(resilience.Outcome{Class: resilience.Permanent, Err: resilience.Classify(err), Attempts: st.Attempts})
		return res
	}
	res.Status = st.Class.String()
	stats := s.Stats()
	res.ClientProtocol, res.ServerProtocol = stats.ClientProtocol, stats.ServerProtocol
	readyTimeout := cmp.Or(t.ReadyTimeout, middleware.DefaultReadyTimeout)
	if res.LoadTime > readyTimeout {
		res.Slow = true
		res.Hint = fmt.Sprintf("Loaded in %s, after ready_timeout (%s): clients see it starting up at first; raise ready_timeout for it",
			res.LoadTime.Round(time.Millisecond), readyTimeout)
	}
	if err := client.notify(ctx, "notifications/initialized"); err != nil {
		res.fail(resilience.Outcome{Class: resilience.Permanent, Err: resilience.Classify(err), Attempts: st.Attempts})
		return res
	}
	if err := res.countTools(ctx, client, s); err != nil {
		res.fail(resilience.Outcome{Class: resilience.Permanent, Err: resilience.Classify(err), Attempts: st.Attempts})
	}
	return res
}

// fail records a failed load.
func (r *Result) fail(o resilience.Outcome) {
	r.Status = o.Class.String()
	r.Attempts = max(r.Attempts, o.Attempts)
	if o.Err != nil {
		r.Error, r.Hint = o.Err.Error(), o.Err.Hint
	}
	if o.Class == resilience.Transient && r.Hint == "" {
		r.Hint = fmt.Sprintf("Still failing after %d attempt(s); it may recover by itself (the sidecar keeps retrying in the background)", r.Attempts)
	}
}

// countTools lists the tools as the agent sees them, every page, then asks
// the discovery tool how many are locked.
func (r *Result) countTools(ctx context.Context, client *rpcClient, s *middleware.Session) error {
	discovery := cmp.Or(s.DiscoveryTool, middleware.DefaultDiscoveryTool)
	cursor := ""
	for page := 0; ; page++ {
		if page == 1000 {
			return errors.New("tools/list: more than 1000 pages")
		}
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		raw, err := client.call(ctx, "tools/list", params)
		if err != nil {
			return listError(err)
		}
		var list struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
			NextCursor string `json:"nextCursor"`
		}
		if err := json.Unmarshal(raw, &list); err != nil {
			return fmt.Errorf("tools/list: malformed result: %w", err)
		}
		for _, t := range list.Tools {
			if t.Name != discovery || s.Tools == nil {
				r.Tools++
			}
		}
		if list.NextCursor == "" {
			break
		}
		cursor = list.NextCursor
	}
	if s.Tools == nil {
		return nil // no policy: nothing is locked
	}
	raw, err := client.call(ctx, "tools/call", map[string]any{"name": discovery, "arguments": map[string]any{"limit": 1}})
	if err != nil {
		return fmt.Errorf("%s: %w", discovery, err)
	}
	var result struct {
		StructuredContent middleware.DiscoveryResult `json:"structuredContent"`
	}
	if err := json.Unmarshal(raw, &result); err != nil {
		return fmt.Errorf("%s: malformed result: %w", discovery, err)
	}
	for status, n := range result.StructuredContent.Server.Counts {
		if status == "callable" || n == 0 {
			continue
		}
		if r.LockedBy == nil {
			r.LockedBy = map[string]int{}
		}
		r.LockedBy[status] = n
		r.Locked += n
	}
	return nil
}

// listError turns the upstream's error answer to tools/list into a load
// failure the classifier understands.
func listError(err error) error {
	var rpc *middleware.RPCError
	if errors.As(err, &rpc) {
		return &resilience.RPCError{Code: rpc.Code, Message: "tools/list: " + rpc.Message}
	}
	return fmt.Errorf("tools/list: %w", err)
}
