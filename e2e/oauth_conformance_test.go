package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// authScenarios are the conformance suite's client auth scenarios that the
// go-sdk's conformance/everything-client registers (27 with
// @modelcontextprotocol/conformance 0.2.0-alpha.12, as conformance-next).
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

// TestConformanceClientAuth runs the conformance suite's client auth
// scenarios with the go-sdk's everything-client (directly), and with
// e2e/authclient driving `mcpwrap --url` over stdio, mcpwrap signing in
// through a headless browser stand-in. Every scenario the reference client
// passes directly passes through mcpwrap.
func TestConformanceClientAuth(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	node := nodePath(t)
	cli := filepath.Join(nodeModulesDir, "conformance-next", "dist", "index.js")
	_, err := os.Stat(cli)
	require.NoError(t, err, "conformance-next is not installed: run make e2e-deps")

	root, err := filepath.Abs("..")
	require.NoError(t, err)
	bin := t.TempDir()
	reference := filepath.Join(bin, "everything-client")
	require.NoError(t, goBuild(root, reference, "github.com/modelcontextprotocol/go-sdk/conformance/everything-client"))
	authclient := filepath.Join(bin, "authclient")
	require.NoError(t, goBuild(root, authclient, "./e2e/authclient"))

	run := func(command, scenario string) (bool, string) {
		out := t.TempDir()
		cmd := exec.CommandContext(ctx, node, cli, "client", "--command", command, "--scenario", "auth/"+scenario, "-o", out, "--timeout", "30000")
		cmd.Env = append(os.Environ(), "MCPWRAP_BIN="+mcpwrapPath, "NPM_CONFIG_UPDATE_NOTIFIER=false")
		output, err := cmd.CombinedOutput()
		return err == nil && strings.Contains(string(output), "OVERALL: PASSED"), string(output)
	}
	type outcome struct {
		okDirect, okThrough   bool
		outDirect, outThrough string
	}
	results := make([]outcome, len(authScenarios))
	var wg sync.WaitGroup
	slots := make(chan struct{}, 4) // scenarios at a time: each runs two processes and a server
	for i, s := range authScenarios {
		wg.Go(func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			r := &results[i]
			r.okDirect, r.outDirect = run(reference, s)
			r.okThrough, r.outThrough = run(authclient, s)
		})
	}
	wg.Wait()
	var table strings.Builder
	table.WriteString("scenario | direct | through mcpwrap\n")
	direct, through := 0, 0
	for i, s := range authScenarios {
		r := results[i]
		table.WriteString(s + " | " + verdict(r.okDirect) + " | " + verdict(r.okThrough) + "\n")
		if r.okDirect {
			direct++
		}
		if r.okThrough {
			through++
		}
		if assert.True(t, r.okDirect, "auth/%s fails with the reference client directly:\n%s", s, r.outDirect) {
			assert.True(t, r.okThrough, "auth/%s passes directly, not through mcpwrap:\n%s", s, r.outThrough)
		}
	}
	t.Logf("client auth scenarios (%d direct, %d through mcpwrap of %d):\n%s", direct, through, len(authScenarios), table.String())
}

func verdict(ok bool) string {
	if ok {
		return "pass"
	}
	return "FAIL"
}
