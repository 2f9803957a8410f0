package middleware

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/mcpwrap/mcpwrap/resilience"
)

// DefaultDiscoveryLimit is how many callable tools the discovery tool
// returns when the call gives no limit.
const DefaultDiscoveryLimit = 15

// maxDisabledEntries caps the locked tools one discovery answer lists.
const maxDisabledEntries = 10

type discoverArgs struct {
	Query           string `json:"query"`
	Limit           int    `json:"limit"`
	IncludeDisabled bool   `json:"include_disabled"`
}

// DiscoveredTool is one tool in a discovery answer.
type DiscoveredTool struct {
	Name        string `json:"name"`
	Server      string `json:"server"`
	Description string `json:"description"`
	Status      string `json:"status,omitempty"` // only for locked tools
}

// DiscoveryServer describes the upstream in a discovery answer.
type DiscoveryServer struct {
	Name     string           `json:"name"`
	Status   resilience.Class `json:"status"` // encoded as its word, such as "available"
	Attempts int              `json:"attempts"`
	Error    string           `json:"error,omitempty"`
	Message  string           `json:"message,omitempty"`
	Counts   map[string]int   `json:"counts,omitempty"` // only when some tool is not callable
}

// DiscoveryResult is the discovery tool's answer, sent both as the text of
// its content and as its structuredContent.
type DiscoveryResult struct {
	Tools       []DiscoveredTool  `json:"tools"`
	Disabled    *[]DiscoveredTool `json:"disabled,omitempty"` // only with include_disabled
	Remediation map[string]string `json:"remediation,omitempty"`
	Server      DiscoveryServer   `json:"server"`
	Notice      string            `json:"notice,omitempty"`
}

// Stats are a Session's counters, kept in memory only, and what its
// upstream connection says of the protocol each side speaks.
type Stats struct {
	Calls                  int // tools/call requests the client sent
	Rejections             int // calls to locked tools answered by the sidecar
	IncludeDisabledQueries int // discovery calls with include_disabled: true
	Restarts               int // upstream restarts after a crash
	// ClientProtocol and ServerProtocol are the protocol versions the
	// client and the upstream speak on the ready upstream connection, as
	// its Conn reports them (an [EraReporter]); "" when it reports none
	// or no connection is ready.
	ClientProtocol, ServerProtocol string
}

// An EraReporter is a [Conn] that knows the protocol version each of its
// sides speaks, such as a bridge between the protocol eras. Eras returns
// them, "" while unknown; it is called concurrently with the Conn's use.
type EraReporter interface {
	Eras() (client, server string)
}

// Stats returns a snapshot of the session's counters. It takes no lock.
func (s *Session) Stats() Stats {
	st := Stats{
		Calls:                  int(s.counts.calls.Load()),
		Rejections:             int(s.counts.rejections.Load()),
		IncludeDisabledQueries: int(s.counts.includeDisabled.Load()),
		Restarts:               int(s.counts.restarts.Load()),
	}
	if l := s.readyLink(); l != nil {
		if r, ok := l.conn.(EraReporter); ok {
			st.ClientProtocol, st.ServerProtocol = r.Eras()
		}
	}
	return st
}

// counters are what Stats reports, each counted without a lock (a call
// counts one on the call path).
type counters struct {
	calls, rejections, includeDisabled, restarts atomic.Int64
}

// discover answers a call to the discovery tool. Nothing in its arguments
// can change any state but the in-memory counter.
func (s *Session) discover(ctx context.Context, rawArgs json.RawMessage) json.RawMessage {
	var args discoverArgs
	if len(rawArgs) > 0 && string(rawArgs) != "null" {
		if err := json.Unmarshal(rawArgs, &args); err != nil {
			return toolError("Invalid arguments for "+s.discoveryName()+": "+err.Error(), nil)
		}
	}
	if args.Limit <= 0 {
		args.Limit = DefaultDiscoveryLimit
	}
	if args.IncludeDisabled {
		n := s.counts.includeDisabled.Add(1)
		s.log.Info("discovery with include_disabled", "count", n)
	}
	// Available only once a catalog is loaded (see completeLoad): the
	// status and the catalog are told as they are.
	up := s.upstreamState()

	v := s.view()
	res := DiscoveryResult{
		Tools:  []DiscoveredTool{},
		Server: DiscoveryServer{Name: s.Name, Status: up.Status, Attempts: up.Attempts, Error: up.Error},
	}
	if !up.Available() {
		res.Server.Message = up.Message
	}
	counts := map[string]int{"callable": 0}
	var disabled []DiscoveredTool
	lockedMatches := 0
	match := matcher(args.Query)
	for i, a := range v.avail {
		if !a.InScope {
			continue
		}
		if a.Status == "" {
			counts["callable"]++
		} else {
			counts[a.Status]++
		}
		name, desc := v.index.Shown(i), v.index.Description(i)
		hide := withheld(a)
		if hide {
			desc = ""
		}
		if !match(name, desc) {
			continue
		}
		entry := DiscoveredTool{Name: name, Server: s.Name, Description: desc}
		if hide {
			entry.Description = withheldNote
		}
		switch {
		case a.Status == "":
			if len(res.Tools) < args.Limit {
				res.Tools = append(res.Tools, entry)
			}
		default:
			lockedMatches++
			if args.IncludeDisabled && len(disabled) < min(args.Limit, maxDisabledEntries) {
				entry.Status = a.Status
				disabled = append(disabled, entry)
			}
		}
	}
	if len(counts) > 1 {
		res.Server.Counts = counts
	}
	if args.IncludeDisabled {
		if disabled == nil {
			disabled = []DiscoveredTool{}
		}
		res.Disabled = &disabled
		for _, d := range disabled {
			if res.Remediation == nil {
				res.Remediation = map[string]string{}
			}
			if _, ok := res.Remediation[d.Status]; !ok {
				res.Remediation[d.Status] = s.policy().Remediation(d.Status, "")
			}
		}
	} else if len(res.Tools) == 0 && lockedMatches > 0 {
		res.Notice = fmt.Sprintf("%d matching tool(s) exist but are locked; call again with include_disabled:true for details and remediation.", lockedMatches)
	}
	if n, ok := s.policy().(PolicyNotifier); ok {
		if notice := n.Notice(); notice != "" {
			res.Notice = strings.TrimSpace(notice + " " + res.Notice)
		}
	}
	body, _ := json.Marshal(res)
	out, _ := json.Marshal(map[string]any{
		"content":           []any{map[string]any{"type": "text", "text": string(body)}},
		"structuredContent": json.RawMessage(body),
	})
	return out
}

// withheld reports whether the description of a tool with availability a
// is kept from the agent, in answers and in the matching of queries: that
// of a locked tool whose definition nobody approved (pending approval, or
// changed since it was approved and locked by whatever lock comes first),
// and that of a definition the sidecar cannot trust. Its name and status
// are still shown, and its entry says the description is withheld.
func withheld(a Availability) bool {
	return a.Status != "" && (a.Unapproved || a.Status == statusPending || a.Status == statusUnknown)
}

// statusPending is the status of a tool whose definition awaits approval.
const statusPending = "pending_approval"

// withheldNote is the description of a locked tool whose own is withheld.
const withheldNote = "(description withheld: this definition is not approved)"

// matcher returns a case-insensitive match over a tool's name and
// description: the whole query as a substring, or every word of it. An
// empty query matches everything.
func matcher(query string) func(name, desc string) bool {
	q := strings.ToLower(strings.TrimSpace(query))
	if q == "" {
		return func(string, string) bool { return true }
	}
	words := strings.Fields(strings.NewReplacer("_", " ", "-", " ").Replace(q))
	return func(name, desc string) bool {
		hay := strings.ToLower(name + " " + desc)
		if strings.Contains(hay, q) {
			return true
		}
		spaced := strings.NewReplacer("_", " ", "-", " ").Replace(hay)
		for _, w := range words {
			if !strings.Contains(spaced, w) {
				return false
			}
		}
		return len(words) > 0
	}
}
