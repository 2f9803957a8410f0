package doctor

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/internal/erabridge"
	"github.com/mcpwrap/mcpwrap/middleware"
	"github.com/mcpwrap/mcpwrap/resilience"
)

// testPolicy is a short load budget: 3 attempts, 100 ms then 200 ms apart.
var testPolicy = resilience.Policy{Initial: 100 * time.Millisecond, Jitter: -1, MaxAttempts: 3}

func target(name string, dial middleware.Dialer, tools middleware.ToolPolicy) Target {
	return Target{
		Name:      name,
		Transport: TransportStdio,
		Session: &middleware.Session{Name: name, Dial: dial, Tools: tools,
			Retrier: &resilience.Retrier{Policy: testPolicy}},
		Budget: 5 * time.Second,
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	healthy := fakeServer{pages: [][]string{{"read", "write"}, {"delete", "hidden"}}}
	locks := lockPolicy{"write": "disabled_by_user", "delete": "pending_approval", "hidden": "out"}
	tests := []struct {
		name      string
		target    Target
		want      Result // LoadTime is checked apart
		wantLoad  time.Duration
		wantError string // a substring of Error
	}{
		{
			name:   "healthy, some tools locked, one out of scope, over two pages",
			target: target("fs", healthy.dial, locks),
			want: Result{Name: "fs", Transport: TransportStdio, Status: "available", Attempts: 1, Tools: 1, Locked: 2,
				LockedBy: map[string]int{"disabled_by_user": 1, "pending_approval": 1}},
		},
		{
			name:   "behind the era bridge, as the sidecar dials: each side's protocol",
			target: target("bridged", erabridge.Dial(healthy.dial, erabridge.Options{}), nil),
			want: Result{Name: "bridged", Transport: TransportStdio, Status: "available", Attempts: 1, Tools: 4,
				ClientProtocol: protocolVersion, ServerProtocol: protocolVersion},
		},
		{
			name:   "no tool policy: every tool counts",
			target: target("open", healthy.dial, nil),
			want:   Result{Name: "open", Transport: TransportStdio, Status: "available", Attempts: 1, Tools: 4},
		},
		{
			name:      "command not found",
			target:    target("missing", failing(&resilience.SpawnError{Command: "nope", Err: exec.ErrNotFound}), locks),
			want:      Result{Name: "missing", Transport: TransportStdio, Status: "permanent", Attempts: 1, Hint: "Use a full path to the command; GUI apps get a minimal PATH"},
			wantError: `cannot start "nope": command not found`,
		},
		{
			name:      "exits before its handshake",
			target:    target("exits", exits(3, "fatal: no API key"), locks),
			want:      Result{Name: "exits", Transport: TransportStdio, Status: "permanent", Attempts: 1, Hint: "Run the command by hand to see why it exits"},
			wantError: `exited with code 3 before completing the handshake; stderr: "fatal: no API key"`,
		},
		{
			name:      "denied",
			target:    target("api", failing(&resilience.HTTPStatusError{StatusCode: 401}), locks),
			want:      Result{Name: "api", Transport: TransportStdio, Status: "denied", Attempts: 1, Hint: "Check the credentials configured for it"},
			wantError: "HTTP 401 Unauthorized",
		},
		{
			name:     "flaky: transient failures retried into service",
			target:   target("flaky", flaky(2, healthy), nil),
			want:     Result{Name: "flaky", Transport: TransportStdio, Status: "available", Attempts: 3, Tools: 4},
			wantLoad: 300 * time.Millisecond, // 100 ms, then 200 ms of backoff
		},
		{
			name:   "transient until the budget is spent",
			target: target("down", flaky(100, healthy), nil),
			want: Result{Name: "down", Transport: TransportStdio, Status: "transient", Attempts: 3,
				Hint: "Still failing after 3 attempt(s); it may recover by itself (the sidecar keeps retrying in the background)"},
			wantError: "connection reset by peer",
			wantLoad:  300 * time.Millisecond,
		},
		{
			name:   "never answers: bounded by the budget",
			target: target("silent", fakeServer{silent: true}.dial, nil),
			want: Result{Name: "silent", Transport: TransportStdio, Status: "transient", Attempts: 1,
				Hint: "The server started but did not complete the MCP handshake; check that it speaks MCP and look at its own log"},
			wantError: "not ready after 5s",
			wantLoad:  5 * time.Second,
		},
		{
			name: "slow: loads after the ready timeout",
			target: func() Target {
				t := target("slow", fakeServer{delay: 2 * time.Second, pages: [][]string{{"a"}}}.dial, nil)
				t.ReadyTimeout = 500 * time.Millisecond
				return t
			}(),
			want: Result{Name: "slow", Transport: TransportStdio, Status: "available", Attempts: 1, Tools: 1, Slow: true,
				Hint: "Loaded in 2s, after ready_timeout (500ms): clients see it starting up at first; raise ready_timeout for it"},
			wantLoad: 2 * time.Second,
		},
		{
			name:      "initialize answered with an error",
			target:    target("rejects", fakeServer{initError: &middleware.RPCError{Code: -32602, Message: "unsupported protocol version"}}.dial, nil),
			want:      Result{Name: "rejects", Transport: TransportStdio, Status: "permanent", Attempts: 1, Hint: "The server rejected a load request; check its version and its own log"},
			wantError: "unsupported protocol version",
		},
		{
			name:      "tools/list answered with an error",
			target:    target("nolist", fakeServer{listError: &middleware.RPCError{Code: -32601, Message: "method not found"}}.dial, nil),
			want:      Result{Name: "nolist", Transport: TransportStdio, Status: "permanent", Attempts: 1, Hint: "The server rejected a load request; check its version and its own log"},
			wantError: "tools/list: method not found",
		},
		{
			name:      "tools/list answered with an error, under a policy: the load fails",
			target:    target("nolist-gated", fakeServer{listError: &middleware.RPCError{Code: -32601, Message: "method not found"}}.dial, locks),
			want:      Result{Name: "nolist-gated", Transport: TransportStdio, Status: "permanent", Attempts: 1, Hint: "The server rejected a load request; check its version and its own log"},
			wantError: "cannot list its tools: JSON-RPC error -32601: method not found",
		},
		{
			name:   "tools/list never answered, under a policy: loading until the budget",
			target: target("mute", fakeServer{listMute: true}.dial, locks),
			want: Result{Name: "mute", Transport: TransportStdio, Status: "transient", Attempts: 1,
				Hint: "The server answered the MCP handshake but did not list its tools in time; look at its own log"},
			wantError: "not ready after 5s",
			wantLoad:  5 * time.Second,
		},
		{
			name:      "no session could be built",
			target:    Target{Name: "bad", Client: "cursor", Transport: TransportHTTP, Err: fmt.Errorf("%w: header \"X\": ${TOKEN}: unset", resilience.ErrConfig)},
			want:      Result{Name: "bad", Client: "cursor", Transport: TransportHTTP, Status: "permanent", Hint: "Fix the configuration file"},
			wantError: "${TOKEN}: unset",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				got := Check(t.Context(), tt.target)
				assert.Equal(t, tt.wantLoad, got.LoadTime, "load time")
				assert.Contains(t, got.Error, tt.wantError)
				if tt.wantError == "" {
					assert.Empty(t, got.Error)
				}
				got.LoadTime, got.Error = 0, ""
				assert.Equal(t, tt.want, got)
			})
		})
	}
}

// TestRunConcurrently checks that servers load side by side: the run takes
// as long as the slowest one, not the sum.
func TestRunConcurrently(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		slow := fakeServer{delay: time.Second, pages: [][]string{{"a"}}}
		targets := []Target{
			target("a", slow.dial, nil),
			target("b", slow.dial, nil),
			target("c", failing(&resilience.SpawnError{Command: "c", Err: exec.ErrNotFound}), nil),
			target("d", fakeServer{silent: true}.dial, nil),
			target("e", slow.dial, nil),
		}
		targets[3].Budget = 3 * time.Second
		start := time.Now()
		results := Run(t.Context(), targets)
		assert.Equal(t, 3*time.Second, time.Since(start), "bounded by the slowest budget")
		var got []string
		for _, r := range results {
			got = append(got, r.Name+":"+r.Status)
		}
		assert.Equal(t, []string{"a:available", "b:available", "c:permanent", "d:transient", "e:available"}, got)
	})
}

func TestCheckCanceled(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(time.Second, cancel) // the user pressed ^C
		got := Check(ctx, target("silent", fakeServer{silent: true}.dial, nil))
		assert.Equal(t, "transient", got.Status)
		assert.Equal(t, time.Second, got.LoadTime)
		assert.Equal(t, "not ready after 1s", got.Error)
		// The Session leaves the timer of its unanswered handshake running
		// after Run returns; let it lapse so the bubble ends clean.
		time.Sleep(DefaultBudget)
	})
}

func TestResultJSON(t *testing.T) {
	t.Parallel()
	r := Result{Name: "fs", Transport: TransportStdio, Status: "available", Attempts: 1, LoadTime: 1500 * time.Microsecond, Tools: 3}
	var buf bytes.Buffer
	require.NoError(t, WriteJSON(&buf, []Result{r}))
	assert.JSONEq(t, `[{"name":"fs","transport":"stdio","status":"available","attempts":1,"tools":3,"locked":0,"load_ms":1}]`, buf.String())

	buf.Reset()
	require.NoError(t, WriteJSON(&buf, nil))
	assert.JSONEq(t, `[]`, buf.String())
}
