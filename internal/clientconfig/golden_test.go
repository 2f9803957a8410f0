package clientconfig

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// goldenMcpwrap is the mcpwrap path the golden files are written with.
const goldenMcpwrap = "/usr/local/bin/mcpwrap"

// TestGolden installs into each testdata/*/original.json and compares with
// installed.json and plan.txt; installing again changes nothing,
// uninstalling what it wrapped gives back the original bytes, and so does
// uninstalling everything when the original had no wrapped entry.
func TestGolden(t *testing.T) {
	originals, err := filepath.Glob("testdata/*/original.json")
	require.NoError(t, err)
	require.NotEmpty(t, originals)
	for _, path := range originals {
		dir := filepath.Dir(path)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			original, err := os.ReadFile(path)
			require.NoError(t, err)

			installed, installPlan, err := Install(original, Options{Mcpwrap: goldenMcpwrap})
			require.NoError(t, err)
			assertGolden(t, filepath.Join(dir, "installed.json"), installed)

			again, againPlan, err := Install(installed, Options{Mcpwrap: goldenMcpwrap})
			require.NoError(t, err)
			require.Equal(t, string(installed), string(again), "a second install changes nothing")
			for _, c := range againPlan {
				require.Equal(t, Skip, c.Action, "a second install wraps nothing: %s", c)
			}

			// Uninstalling what install wrapped gives back the original bytes.
			restored, _, err := Uninstall(installed, Options{Servers: serversWith(Wrap, installPlan)})
			require.NoError(t, err)
			require.Equal(t, string(original), string(restored), "uninstall gives back the original bytes")

			// Uninstalling everything unwraps, on top of that, the entries
			// the original had wrapped already: it gives what uninstalling
			// everything of the original gives, and so the original bytes
			// when nothing in it was wrapped.
			all, uninstallPlan, err := Uninstall(installed, Options{})
			require.NoError(t, err)
			originalAll, prewrappedPlan, err := Uninstall(original, Options{})
			require.NoError(t, err)
			prewrapped := serversWith(Unwrap, prewrappedPlan)
			require.ElementsMatch(t, append(serversWith(Wrap, installPlan), prewrapped...),
				serversWith(Unwrap, uninstallPlan), "uninstall of all unwraps what install wrapped and what was wrapped before")
			require.Equal(t, string(originalAll), string(all),
				"uninstall of all gives what uninstall of all gives on the original")
			if len(prewrapped) == 0 {
				require.Equal(t, string(original), string(all), "uninstall of all gives back the original bytes")
			} else {
				require.NotEqual(t, string(original), string(all), "uninstall of all unwraps the entries wrapped before install")
			}

			assertGolden(t, filepath.Join(dir, "plan.txt"),
				[]byte(planText("install", installPlan)+"\n"+planText("uninstall", uninstallPlan)))
		})
	}
}

// serversWith returns the servers the plan applies action to.
func serversWith(action Action, plan []Change) []string {
	var servers []string
	for _, c := range plan {
		if c.Action == action {
			servers = append(servers, c.Server)
		}
	}
	return servers
}

func planText(title string, plan []Change) string {
	var b strings.Builder
	b.WriteString(title + ":\n")
	for _, c := range plan {
		b.WriteString("  " + c.String() + "\n")
	}
	return b.String()
}

// assertGolden compares got with the golden file at path, or rewrites it
// under -update.
func assertGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test -update to create it")
	require.Equal(t, string(want), string(got), "golden file %s; go test -update rewrites it", path)
}
