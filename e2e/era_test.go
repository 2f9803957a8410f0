package e2e

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEraMatrix is the protocol-era matrix: a client of either era (2025-11-25 sessions opened
// with initialize, or 2026-07-28 with server/discover and per-request _meta) in front of a
// server that speaks only the other era or the same, over each path (stdio, `mcpwrap --listen
// -- server` as the HTTP front of a local server, mcpwrap in front of a remote server), directly
// and through mcpwrap. No client is told which era the server speaks. Through mcpwrap, a
// same-era cell passes every check that passes directly; a cross-era cell passes every check
// that a client of the server's own era passes (the stdio script), or that the same suite
// passes directly against a server of the client's era (the conformance suites).
//
// The 2025-only server is the go-sdk v1.4.1 everything-server (it refuses server/discover); the
// 2026-only one is the current everything-server behind a filter that refuses every message
// without the 2026 _meta, initialize included (only2026_test.go).
//
// Subtests, to run one part: stdio (the era driver over stdio: eradriver_test.go), server (the
// official server suites through --listen), client (the eleven non-auth client scenarios with
// a 2025-11-25 stdio client through `mcpwrap --url`), auth (the 27 client auth scenarios with an
// era-blind authclient). The cross-era cells are stdio/2026-07-28_client/2025-only*,
// stdio/2025-11-25_client/2026-only*, server/2026-07-28_suite/2025-only*,
// server/2025-11-25_suite/2026-only*, and client and auth (their scenario servers are of either
// era). `go test -count=1 -run '^TestEraMatrix$' -v ./e2e/` logs the matrix.
func TestEraMatrix(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 12*time.Minute)
	defer cancel()
	var table eraTable
	t.Run("stdio", func(t *testing.T) { eraStdio(ctx, t, &table) })
	t.Run("server", func(t *testing.T) { eraServer(ctx, t, &table) })
	t.Run("client", func(t *testing.T) { eraClient(ctx, t, &table) })
	t.Run("auth", func(t *testing.T) { eraAuth(ctx, t, &table) })
	t.Logf("protocol-era matrix (direct and through mcpwrap: checks passed/run; verdict: the cell's acceptance):\n%s", table.String())
}

// eraTable gathers the matrix's rows. Safe for concurrent use.
type eraTable struct {
	mu   sync.Mutex
	rows []eraRow
}

// eraRow is one cell of the matrix.
type eraRow struct {
	client, server, path string
	direct, through      string
	verdict              string
}

func (m *eraTable) add(r eraRow) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rows = append(m.rows, r)
}

func (m *eraTable) String() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "client\tserver\tpath\tdirect\tthrough mcpwrap\tverdict")
	for _, r := range m.rows {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", r.client, r.server, r.path, r.direct, r.through, r.verdict)
	}
	_ = w.Flush()
	return b.String()
}

// eraVerdict says how many of a cell's units (checks, steps, scenarios) met its acceptance.
func eraVerdict(met, of int, unit string) string {
	if met == of {
		return fmt.Sprintf("ok (%d/%d %s)", met, of, unit)
	}
	return fmt.Sprintf("FAIL (%d/%d %s)", met, of, unit)
}

// lostChecks lists the checks that pass in want and not in got, with their status in got.
func lostChecks(want, got conformanceResult) []string {
	var lost []string
	for _, key := range want.keys() {
		if want.checks[key] == "SUCCESS" && got.checks[key] != "SUCCESS" {
			lost = append(lost, key+": "+cmp.Or(got.checks[key], "not run"))
		}
	}
	return lost
}

// summaryShort is passed/(passed+failed).
func (r conformanceResult) summaryShort() string {
	passed, failed := r.count("SUCCESS"), r.count("FAILURE")
	return fmt.Sprintf("%d/%d", passed, passed+failed)
}

// eraServerKind is a server of one era, over stdio or HTTP.
type eraServerKind struct {
	name string // for the table and subtests
	era  string // the one era it speaks
}

var (
	server2025 = eraServerKind{name: "2025-only (go-sdk " + everythingServer2025Version + ")", era: protocolVersionInitialize}
	server2026 = eraServerKind{name: "2026-only (filtered everything-server)", era: protocolVersionStateless}
)

// subtestName is name without what `go test -run` would read as a pattern.
func subtestName(name string) string {
	return strings.NewReplacer(" ", "_", "(", "", ")", "", "/", "-").Replace(name)
}

// eraStdio is TestEraMatrix/stdio: the era driver's script over stdio, against each server
// directly and through `mcpwrap -- server`, in each era.
func eraStdio(ctx context.Context, t *testing.T, table *eraTable) {
	servers := []struct {
		kind eraServerKind
		argv []string
	}{
		{kind: server2025, argv: []string{everythingServer2025Path}},
		{kind: server2026, argv: only2026Command(t)},
	}
	eras := []string{protocolVersionInitialize, protocolVersionStateless}
	for _, srv := range servers {
		direct := map[string]map[string]error{}
		for _, era := range eras {
			direct[era], _ = runEraScript(ctx, t, era, nil, srv.argv...)
		}
		// What a client of the server's own era gets directly is what any client gets through
		// mcpwrap.
		want := direct[srv.kind.era]
		require.Zero(t, eraFailed(want, nil), "a %s client directly against the %s server: %v", srv.kind.era, srv.kind.name, want)
		for _, era := range eras {
			name := fmt.Sprintf("%s_client/%s", era, subtestName(srv.kind.name))
			var through map[string]error
			ran := false
			t.Run(name, func(t *testing.T) {
				ran = true
				env := mcpwrapEnv(t, transparentConfig)
				var d *eraDriver
				through, d = runEraScript(ctx, t, era, env, append([]string{mcpwrapPath, "--name", "everything", "--"}, srv.argv...)...)
				for _, step := range eraScript {
					if want[step.name] == nil {
						assert.NoError(t, through[step.name], "step %s: a %s client passes it directly against a %s server", step.name, srv.kind.era, srv.kind.era)
					}
				}
				if t.Failed() {
					t.Logf("mcpwrap stderr:\n%s", d.proc.Stderr())
				}
			})
			if !ran {
				continue // not selected by -run
			}
			table.add(eraRow{
				client: era + " (era driver)", server: srv.kind.name, path: "stdio: mcpwrap -- server",
				direct: eraSteps(direct[era]), through: eraSteps(through),
				verdict: eraVerdict(len(eraScript)-eraFailed(through, want), len(eraScript), "steps"),
			})
		}
	}
}

// eraFailed counts the steps that failed in got among those that passed in want (every step when
// want is nil).
func eraFailed(got, want map[string]error) int {
	n := 0
	for _, step := range eraScript {
		if (want == nil || want[step.name] == nil) && got[step.name] != nil {
			n++
		}
	}
	return n
}

// eraSteps is "passed/steps".
func eraSteps(got map[string]error) string {
	if got == nil {
		return "-"
	}
	return fmt.Sprintf("%d/%d", len(eraScript)-eraFailed(got, nil), len(eraScript))
}

// eraServer is TestEraMatrix/server: the official server suites (0.2.0-alpha.12, the "active"
// suite of each version) directly against each server and through `mcpwrap --listen` in front of
// it, over stdio (the HTTP front) and over HTTP (remote).
func eraServer(ctx context.Context, t *testing.T, table *eraTable) {
	suite := newConformance(t, "conformance-next")
	// The baselines: each suite directly against a server of its own era with the same
	// features (the current everything-server, stateful for the session era).
	baseline := map[string]conformanceResult{
		protocolVersionInitialize: suite.runServer(ctx, t, startEverythingHTTP(ctx, t, false), protocolVersionInitialize, "active"),
		protocolVersionStateless:  suite.runServer(ctx, t, startEverythingHTTP(ctx, t, true), protocolVersionStateless, "active"),
	}
	for version, res := range baseline {
		require.Zero(t, res.count("FAILURE"), "the %s suite directly against the everything-server: %s", version, res.summary())
	}

	http2025 := startHTTPServer(ctx, t, everythingServer2025Path)
	http2026 := startOnly2026HTTP(t, startEverythingHTTP(ctx, t, true))
	servers := []struct {
		kind         eraServerKind
		direct       string   // the server's own URL
		stdio        []string // the same server over stdio
		overHTTPFrom string   // its URL, for mcpwrap --url
	}{
		{kind: server2025, direct: http2025, stdio: []string{everythingServer2025Path}, overHTTPFrom: http2025},
		{kind: server2026, direct: http2026, stdio: only2026Command(t), overHTTPFrom: http2026},
	}
	for _, srv := range servers {
		front := startListen(ctx, t, listenOptions{Name: "everything", Config: transparentConfig}, srv.stdio...)
		remote := startListen(ctx, t, listenOptions{Name: "everything", Config: transparentConfig, Flags: []string{"--url", srv.overHTTPFrom}})
		for _, version := range []string{protocolVersionInitialize, protocolVersionStateless} {
			direct := suite.runServer(ctx, t, srv.direct, version, "active")
			want := direct
			if version != srv.kind.era {
				want = baseline[version]
				if srv.kind == server2026 {
					want = withoutScenarios(want, beyond2026Only)
				}
			}
			for _, path := range []struct {
				name, label, url string
			}{
				{name: "front", label: "HTTP front: mcpwrap --listen -- server", url: front.URL},
				{name: "remote", label: "remote: mcpwrap --listen --url", url: remote.URL},
			} {
				var got conformanceResult
				met, of, ran := 0, 0, false
				t.Run(fmt.Sprintf("%s_suite/%s/%s", version, subtestName(srv.kind.name), path.name), func(t *testing.T) {
					ran = true
					got = suite.runServer(ctx, t, path.url, version, "active")
					t.Logf("%s suite against the %s server: directly %s; through %s: %s", version, srv.kind.name, direct.summary(), path.label, got.summary())
					var lost []string
					for _, key := range want.keys() {
						if want.checks[key] != "SUCCESS" {
							continue
						}
						if of++; got.checks[key] == "SUCCESS" {
							met++
						} else {
							lost = append(lost, key+": "+cmp.Or(got.checks[key], "not run"))
						}
					}
					assert.Empty(t, lost, "checks that pass directly against a %s server, not through mcpwrap", version)
				})
				if !ran {
					continue // not selected by -run
				}
				table.add(eraRow{
					client: version + " (server suite)", server: srv.kind.name, path: path.label,
					direct: direct.summaryShort(), through: got.summaryShort(), verdict: eraVerdict(met, of, "checks"),
				})
			}
		}
		front.Stop(t)
		remote.Stop(t)
	}
}

// beyond2026Only are the 2025-11-25 suite's scenarios that no client can pass against the
// 2026-only server: they call everything-server tools (test_elicitation, test_sampling,
// test_elicitation_sep1034_defaults, test_elicitation_sep1330_enums) that send a request to the
// client mid-call, which the server itself refuses to do on 2026-07-28 ("return an InputRequests
// map instead"), so no translation can bring those requests about.
var beyond2026Only = []string{"tools-call-elicitation", "tools-call-sampling", "elicitation-sep1034-defaults", "elicitation-sep1330-enums"}

// withoutScenarios returns r without the checks of scenarios.
func withoutScenarios(r conformanceResult, scenarios []string) conformanceResult {
	out := conformanceResult{checks: map[string]string{}}
	for key, status := range r.checks {
		scenario, _, _ := strings.Cut(key, "/")
		if !slices.Contains(scenarios, scenario) {
			out.checks[key] = status
		}
	}
	return out
}

// eraClient is TestEraMatrix/client: the eleven non-auth client scenarios of 0.2.0-alpha.12 (their
// servers speak one era or the other) with the go-sdk everything-client directly (it negotiates),
// and with a desktop client of the session era (a go-sdk client speaking 2025-11-25 only) over
// stdio through `mcpwrap --url`: every check that passes directly passes through mcpwrap.
func eraClient(ctx context.Context, t *testing.T, table *eraTable) {
	next := newConformance(t, "conformance-next")
	self, err := os.Executable()
	require.NoError(t, err)
	var direct, through conformanceResult
	direct.checks, through.checks = map[string]string{}, map[string]string{}
	passed := 0
	for _, scenario := range clientScenarios {
		t.Run(scenario, func(t *testing.T) {
			d := next.runClient(ctx, t, scenario, everythingClientPath)
			g := next.runClient(ctx, t, scenario, self, stdioClientArg, mcpwrapPath)
			maps.Copy(direct.checks, d.checks)
			maps.Copy(through.checks, g.checks)
			t.Logf("client %s: direct %s; a 2025-11-25 stdio client through mcpwrap --url: %s", scenario, d.summary(), g.summary())
			if lost := lostChecks(d, g); assert.Empty(t, lost, "checks that pass directly, not through mcpwrap --url") {
				passed++
			}
		})
	}
	table.add(eraRow{
		client: protocolVersionInitialize + " (go-sdk client, stdio)", server: "client scenario servers (either era)", path: "remote: mcpwrap --url",
		direct: direct.summaryShort() + " (everything-client)", through: through.summaryShort(),
		verdict: eraVerdict(passed, len(clientScenarios), "scenarios"),
	})
}
