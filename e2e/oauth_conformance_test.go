package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// authScenarios are the conformance suite's client auth scenarios that the
// go-sdk's conformance/everything-client registers (27 with
// @modelcontextprotocol/conformance 0.2.0-alpha.12, as conformance-next).
// Their servers speak one era or the other: some only 2026-07-28 (they
// refuse initialize), the rest the session era.
var authScenarios = []string{
	"2025-03-26-oauth-metadata-backcompat", "2025-03-26-oauth-endpoint-fallback",
	"authorization-server-migration", "basic-cimd",
	"iss-normalized", "iss-not-advertised", "iss-supported", "iss-supported-missing",
	"iss-unexpected", "iss-wrong-issuer",
	"metadata-default", "metadata-issuer-mismatch", "metadata-var1", "metadata-var2", "metadata-var3",
	"offline-access-not-supported", "offline-access-scope", "pre-registration", "resource-mismatch",
	"scope-from-scopes-supported", "scope-from-www-authenticate", "scope-omitted-when-undefined",
	"scope-retry-limit", "scope-step-up",
	"token-endpoint-auth-basic", "token-endpoint-auth-none", "token-endpoint-auth-post",
}

// authRun is one client's run of one auth scenario.
type authRun struct {
	checks   conformanceResult
	clientOK bool // the client exited 0: it signed in and called the scenario's tool
	output   string
	err      error
}

// eraAuth is TestEraMatrix/auth: the client auth scenarios with the go-sdk's
// everything-client directly (it negotiates the era), and with e2e/authclient
// driving `mcpwrap --url` over stdio, mcpwrap signing in through a headless
// browser stand-in, once speaking 2025-11-25 only (as desktop clients do) and
// once 2026-07-28 only, never told which era the scenario's server speaks.
// Every check the reference client passes directly passes through mcpwrap in
// both runs, and the client gets its tools wherever the reference does.
func eraAuth(ctx context.Context, t *testing.T, table *eraTable) {
	next := newConformance(t, "conformance-next")
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	authclient := filepath.Join(t.TempDir(), "authclient")
	require.NoError(t, goBuild(root, authclient, "./e2e/authclient"))

	clients := []struct {
		name    string
		command string
	}{
		{name: "reference", command: everythingClientPath},
		{name: protocolVersionInitialize, command: authclient + " -era " + protocolVersionInitialize},
		{name: protocolVersionStateless, command: authclient + " -era " + protocolVersionStateless},
	}
	runs := make([][]authRun, len(clients))
	for i := range runs {
		runs[i] = make([]authRun, len(authScenarios))
	}
	var wg sync.WaitGroup
	slots := make(chan struct{}, 4) // runs at a time: each is the suite, a client, mcpwrap and servers, mostly idle
	for c, client := range clients {
		for s, scenario := range authScenarios {
			wg.Go(func() {
				slots <- struct{}{}
				defer func() { <-slots }()
				out := filepath.Join(t.TempDir(), client.name, scenario)
				r := &runs[c][s]
				r.checks, r.output, r.err = next.collect(ctx, out, "client", "--command", client.command,
					"--scenario", "auth/"+scenario, "--timeout", "30000")
				r.clientOK = r.err == nil && !strings.Contains(r.output, "Client exited with code") && !strings.Contains(r.output, "Client timed out")
			})
		}
	}
	wg.Wait()

	reference := runs[0]
	var direct conformanceResult
	direct.checks = map[string]string{}
	for s := range authScenarios {
		for key, status := range reference[s].checks.checks {
			direct.checks[key] = status
		}
	}
	for c, client := range clients[1:] {
		got := runs[c+1]
		var through conformanceResult
		through.checks = map[string]string{}
		passed := 0
		t.Run(client.name, func(t *testing.T) {
			for s, scenario := range authScenarios {
				ref, run := reference[s], got[s]
				for key, status := range run.checks.checks {
					through.checks[key] = status
				}
				t.Run(scenario, func(t *testing.T) {
					require.NoError(t, ref.err, "auth/%s directly:\n%s", scenario, ref.output)
					require.NoError(t, run.err, "auth/%s through mcpwrap:\n%s", scenario, run.output)
					require.NotEmpty(t, ref.checks.checks, "auth/%s ran no check directly:\n%s", scenario, ref.output)
					ok := assert.Empty(t, lostChecks(ref.checks, run.checks), "checks that pass directly, not through mcpwrap")
					if ref.clientOK {
						ok = assert.True(t, run.clientOK, "the reference client gets its tools, a %s client through mcpwrap does not", client.name) && ok
					}
					if !ok {
						t.Logf("auth/%s through mcpwrap:\n%s", scenario, run.output)
					} else {
						passed++
					}
				})
			}
		})
		table.add(eraRow{
			client: client.name + " (authclient, stdio)", server: "auth scenario servers (either era)", path: "remote: mcpwrap --url",
			direct: direct.summaryShort(), through: through.summaryShort(),
			verdict: eraVerdict(passed, len(authScenarios), "scenarios"),
		})
	}
}
