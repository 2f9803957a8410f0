package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestConformance runs the official MCP conformance suite (@modelcontextprotocol/conformance,
// pinned in package.json in two lines: 0.1.16 and, as conformance-next, 0.2.0-alpha.12, which
// knows the 2026-07-28 protocol) against the go-sdk everything-server: directly; through `mcpwrap
// --listen` wrapping it over stdio; and through `mcpwrap --listen --url` wrapping it over HTTP
// (its stateful mode for the session era, its stateless mode for 2026-07-28, which its stateful
// mode refuses). Every check that passes directly must pass through mcpwrap
// (dns-rebinding-protection included). Then the client scenarios of the newer line run with the
// go-sdk everything-client, directly and through `mcpwrap --listen --url SCENARIO_URL`: every
// check that passes directly must pass through mcpwrap.
func TestConformance(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()

	stateful := startEverythingHTTP(ctx, t, false)
	stateless := startEverythingHTTP(ctx, t, true)

	for _, line := range []struct {
		pkg      string
		versions []string // "" is the newest the suite has server scenarios for
	}{
		{pkg: "@modelcontextprotocol/conformance", versions: []string{"2025-11-25", ""}},
		{pkg: "conformance-next", versions: []string{"2025-11-25", "2026-07-28"}},
	} {
		// Fresh sidecars for each line: every scenario of the session era opens sessions, which
		// stay open (up to --max-sessions) until their idle timeout.
		overStdio := startListen(ctx, t, listenOptions{Name: "everything", Config: transparentConfig}, everythingServerPath)
		overStateful := startListen(ctx, t, listenOptions{Name: "everything", Config: transparentConfig, Flags: []string{"--url", stateful}})
		overStateless := startListen(ctx, t, listenOptions{Name: "everything", Config: transparentConfig, Flags: []string{"--url", stateless}})
		suite := newConformance(t, line.pkg)
		versions := line.versions
		if versions[1] == "" {
			if newest := suite.newestServerVersion(ctx, t); newest != versions[0] {
				versions[1] = newest
			} else {
				versions = versions[:1]
			}
		}
		for _, version := range versions {
			direct, overHTTP := stateful, overStateful
			if version >= "2026-07-28" {
				direct, overHTTP = stateless, overStateless
			}
			throughs := []struct {
				name string
				url  string
			}{
				{name: "mcpwrap --listen -- everything-server", url: overStdio.URL},
				{name: "mcpwrap --listen --url (everything-server over HTTP)", url: overHTTP.URL},
			}
			for _, set := range []string{"active", "all"} {
				label := fmt.Sprintf("%s %s (%s suite)", line.pkg, version, set)
				direct := suite.runServer(ctx, t, direct, version, set)
				require.NotEmpty(t, direct.checks, "no scenario ran for %s", label)
				t.Logf("%s, direct: %s", label, direct.summary())
				assert.Zero(t, direct.count("FAILURE"), "%s: the go-sdk everything-server fails checks directly", label)
				// A floor, so that a suite that silently runs fewer scenarios (or checks) fails
				// instead of passing vacuously.
				floor := conformanceFloors[line.pkg+" "+version+" "+set]
				assert.GreaterOrEqual(t, direct.count("SUCCESS"), floor.checks, "%s: too few checks pass directly: %s", label, direct.summary())
				assert.GreaterOrEqual(t, direct.scenarios(), floor.scenarios, "%s: too few scenarios ran", label)
				for _, through := range throughs {
					got := suite.runServer(ctx, t, through.url, version, set)
					t.Logf("%s, through %s: %s", label, through.name, got.summary())
					for key, status := range direct.checks {
						if status == "SUCCESS" {
							assert.Equal(t, "SUCCESS", got.checks[key], "%s, %s: passes directly, not through %s", label, key, through.name)
						}
					}
					assert.Equal(t, "SUCCESS", got.checks["dns-rebinding-protection/localhost-host-rebinding-rejected"], through.name)
					if set == "active" {
						// The same checks run and pass through mcpwrap. Not in "all": its pending
						// server-sse-polling scenario reports INFO and WARNING checks that depend on
						// how the server streams, so their number legitimately differs.
						assert.Equal(t, direct.count("SUCCESS"), got.count("SUCCESS"), "%s: checks passing directly and through %s", label, through.name)
						assert.Equal(t, direct.keys(), got.keys(), "%s: checks run directly and through %s", label, through.name)
					}
				}
			}
		}
		for _, srv := range []*listenServer{overStdio, overStateful, overStateless} {
			srv.Stop(t)
		}
	}

	next := newConformance(t, "conformance-next")
	var direct, through conformanceResult
	direct.checks, through.checks = map[string]string{}, map[string]string{}
	for _, scenario := range clientScenarios {
		d := next.runClient(ctx, t, scenario, everythingClientPath)
		g := next.runClient(ctx, t, scenario, os.Args[0], throughArg, mcpwrapPath, everythingClientPath)
		maps.Copy(direct.checks, d.checks)
		maps.Copy(through.checks, g.checks)
		t.Logf("client %s: direct %s; through mcpwrap --listen --url: %s", scenario, d.summary(), g.summary())
		require.NotEmpty(t, d.checks, "client scenario %s ran no check", scenario)
		for key, status := range d.checks {
			if status == "SUCCESS" {
				assert.Equal(t, "SUCCESS", g.checks[key], "client %s: passes directly, not through mcpwrap --listen --url", key)
			}
		}
	}
	t.Logf("client scenarios, direct: %s", direct.summary())
	t.Logf("client scenarios, through mcpwrap --listen --url: %s", through.summary())
	assert.GreaterOrEqual(t, direct.count("SUCCESS"), minClientSuccesses, "too few client checks pass directly")
}

// clientScenarios are the client scenarios of the newer suite line that need no authorization
// server: the go-sdk everything-client runs each against the suite's scenario server.
var clientScenarios = []string{
	"initialize", "tools_call", "sse-retry", "request-metadata", "http-standard-headers",
	"http-custom-headers", "http-invalid-tool-headers", "json-schema-ref-no-deref",
	"json-schema-2020-12-preservation", "sep-2322-client-request-state",
	"elicitation-sep1034-client-defaults",
}

// Floors, so that a suite that silently runs fewer scenarios fails. Measured with the pinned
// lines against the go-sdk everything-server (every check passes directly): 0.1.16 for
// 2025-11-25 passes 40 checks in the 30 scenarios of the active suite and 44 in the 32 of "all"
// (which adds the pending json-schema-2020-12 and server-sse-polling); 0.2.0-alpha.12 passes 73
// in 31 and 82 in 33 for 2025-11-25, and 42 in 20 and 137 in 40 for 2026-07-28; its client
// scenarios pass 43 with the go-sdk everything-client. (Checks are counted once per scenario
// and id, with the worst status of their repeats; the suite's own totals count repeats: 153
// for 2026-07-28 "all", 71 for the client.)
var conformanceFloors = map[string]struct{ checks, scenarios int }{
	"@modelcontextprotocol/conformance 2025-11-25 active": {40, 30},
	"@modelcontextprotocol/conformance 2025-11-25 all":    {44, 32},
	"conformance-next 2025-11-25 active":                  {73, 31},
	"conformance-next 2025-11-25 all":                     {82, 33},
	"conformance-next 2026-07-28 active":                  {42, 20},
	"conformance-next 2026-07-28 all":                     {137, 40},
}

const minClientSuccesses = 43

// conformance runs one line of the suite's CLI (an npm package under e2e/node_modules) with the
// pinned Node.
type conformance struct {
	node, entry, home string
}

func newConformance(t *testing.T, pkg string) *conformance {
	t.Helper()
	return &conformance{
		node:  nodePath(t),
		entry: npmBin(t, pkg, "conformance"),
		home:  t.TempDir(),
	}
}

// newestServerVersion returns the newest spec version that the suite has server scenarios for,
// as `conformance list` tags them ("  - name [2025-06-18,2025-11-25]").
func (c *conformance) newestServerVersion(ctx context.Context, t *testing.T) string {
	t.Helper()
	p := startProcess(ctx, t, processOptions{Env: []string{"HOME=" + c.home}}, c.node, c.entry, "list")
	require.NoError(t, p.Wait(ctx), "conformance list: %s", p.Stderr())
	var newest string
	inServer := false
	sc := bufio.NewScanner(strings.NewReader(p.Output()))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "Server scenarios"):
			inServer = true
		case !strings.HasPrefix(line, " "):
			inServer = false
		case inServer:
			if m := scenarioVersions.FindStringSubmatch(line); m != nil {
				for _, v := range strings.Split(m[1], ",") {
					if datedVersion.MatchString(v) && v > newest {
						newest = v
					}
				}
			}
		}
	}
	require.NotEmpty(t, newest, "no server scenario in `conformance list`:\n%s", p.Output())
	return newest
}

// statusRank orders a check's statuses from best to worst.
var statusRank = map[string]int{"": 0, "SKIPPED": 1, "INFO": 2, "SUCCESS": 3, "WARNING": 4, "FAILURE": 5}

var (
	scenarioVersions = regexp.MustCompile(`^\s+- \S+ \[([^\]]*)\]`)
	datedVersion     = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)
	// resultDir names a scenario's results: [server-]<scenario>-<timestamp>.
	resultDir = regexp.MustCompile(`^(?:server-)?(.+)-\d{4}-\d{2}-\d{2}T[0-9-]+Z$`)
)

// conformanceResult holds the status of every check of one run, keyed "scenario/check-id".
type conformanceResult struct {
	checks map[string]string
}

func (r conformanceResult) count(status string) int {
	n := 0
	for _, s := range r.checks {
		if s == status {
			n++
		}
	}
	return n
}

// scenarios counts the scenarios that reported checks.
func (r conformanceResult) scenarios() int {
	seen := map[string]bool{}
	for key := range r.checks {
		scenario, _, _ := strings.Cut(key, "/")
		seen[scenario] = true
	}
	return len(seen)
}

// keys returns the "scenario/check-id" keys of the checks, sorted.
func (r conformanceResult) keys() []string {
	return slices.Sorted(maps.Keys(r.checks))
}

// summary reads like the suite's own: passed/(passed+failed), warnings aside.
func (r conformanceResult) summary() string {
	passed, failed := r.count("SUCCESS"), r.count("FAILURE")
	var failing []string
	for key, s := range r.checks {
		if s == "FAILURE" {
			failing = append(failing, key)
		}
	}
	slices.Sort(failing)
	out := fmt.Sprintf("%d/%d checks pass (%d checks in %d scenarios)", passed, passed+failed, len(r.checks), r.scenarios())
	if len(failing) > 0 {
		out += " (failing: " + strings.Join(failing, ", ") + ")"
	}
	return out
}

// runServer runs the server scenarios of version (suite "active" or "all") against url and
// reads the checks.json of each scenario.
func (c *conformance) runServer(ctx context.Context, t *testing.T, url, version, suite string) conformanceResult {
	t.Helper()
	return c.run(ctx, t, "server", "--url", url, "--spec-version", version, "--suite", suite)
}

// runClient runs one client scenario with the client command (its URL argument appended by the
// suite) and reads its checks.
func (c *conformance) runClient(ctx context.Context, t *testing.T, scenario string, command ...string) conformanceResult {
	t.Helper()
	return c.run(ctx, t, "client", "--command", strings.Join(command, " "), "--scenario", scenario)
}

// run runs the suite's CLI with args and an output directory, and reads the checks.json of
// every scenario it ran.
func (c *conformance) run(ctx context.Context, t *testing.T, args ...string) conformanceResult {
	t.Helper()
	res, output, err := c.collect(ctx, t.TempDir(), args...)
	require.NoError(t, err, "conformance %v\n%s", args, output)
	require.NotEmpty(t, res.checks, "conformance %v wrote no results\n%s", args, output)
	return res
}

// collect is run for any goroutine: it runs the suite's CLI with args and the output directory
// out, and returns the checks of every scenario it ran and the CLI's output (stdout, then
// stderr).
func (c *conformance) collect(ctx context.Context, out string, args ...string) (conformanceResult, string, error) {
	if err := os.MkdirAll(out, 0o700); err != nil {
		return conformanceResult{}, "", err
	}
	cmd := exec.CommandContext(ctx, c.node, append([]string{c.entry}, append(args, "--output-dir", out)...)...)
	// MCPWRAP_BIN is for e2e/authclient; the group is killed when ctx ends, the suite's clients
	// and servers with it.
	cmd.Env = append(os.Environ(), "HOME="+c.home, "MCPWRAP_BIN="+mcpwrapPath)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return killGroup(cmd.Process.Pid) }
	cmd.WaitDelay = waitDelay
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	_ = cmd.Run() // non-zero when a check fails; the results say which
	output := stdout.String() + stderr.String()
	res := conformanceResult{checks: map[string]string{}}
	if err := ctx.Err(); err != nil {
		return res, output, fmt.Errorf("did not finish: %w", err)
	}
	// Each scenario's results are in [server-]<scenario>-<timestamp>/checks.json, under out or,
	// for a scenario named with a slash (auth/...), under its first part.
	err := filepath.WalkDir(out, func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || e.Name() != "checks.json" {
			return err
		}
		rel, err := filepath.Rel(out, filepath.Dir(path))
		if err != nil {
			return err
		}
		m := resultDir.FindStringSubmatch(filepath.Base(rel))
		if m == nil {
			return nil
		}
		scenario := m[1]
		if parent := filepath.Dir(rel); parent != "." {
			scenario = filepath.ToSlash(filepath.Join(parent, scenario))
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("scenario %s: %w", scenario, err)
		}
		var checks []struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		}
		if err := json.Unmarshal(raw, &checks); err != nil {
			return fmt.Errorf("scenario %s: %w", scenario, err)
		}
		for _, ch := range checks {
			// A check id may repeat within a scenario (one per message validated, say):
			// the key keeps the worst status.
			key := scenario + "/" + ch.ID
			if statusRank[ch.Status] >= statusRank[res.checks[key]] {
				res.checks[key] = ch.Status
			}
		}
		return nil
	})
	if err != nil {
		return res, output, err
	}
	return res, output, nil
}

// startEverythingHTTP serves the go-sdk everything-server over its own streamable HTTP, stateful
// (sessions, the 2025 era) or stateless (2026-07-28, and the session era without sessions), on a
// free loopback port, and returns its URL once it accepts connections.
func startEverythingHTTP(ctx context.Context, t testing.TB, stateless bool) string {
	t.Helper()
	return startHTTPServer(ctx, t, everythingServerPath, fmt.Sprintf("-stateless=%t", stateless))
}

// startHTTPServer runs a go-sdk everything-server binary with `-http ADDR args...` on a free
// loopback port and returns its URL once it accepts connections.
func startHTTPServer(ctx context.Context, t testing.TB, bin string, args ...string) string {
	t.Helper()
	addr := freeLoopbackAddr(t)
	p := startProcess(ctx, t, processOptions{}, bin, append([]string{"-http", addr}, args...)...)
	waitAccepting(t, p, addr)
	return "http://" + addr + "/mcp"
}
