package pgtest

import (
	"errors"
	"fmt"
	"os"
	"testing"
)

// Main runs a test binary's tests with a shared cluster in *shared (nil
// when PostgreSQL is missing and not required: tests then skip through
// [Need]), and $PGPASSFILE set to its password file. It stops and removes
// the cluster before it returns the exit code for os.Exit.
func Main(m *testing.M, shared **Cluster) int {
	c, err := New()
	switch {
	case errors.Is(err, ErrNotInstalled) && os.Getenv(EnvRequire) != "1":
		fmt.Fprintln(os.Stderr, "pgtest:", err, "- PostgreSQL tests skip")
	case err != nil:
		fmt.Fprintln(os.Stderr, "pgtest:", err)
		return 1
	default:
		defer c.Close()
		*shared = c
		os.Setenv("PGPASSFILE", c.PassFile)
	}
	return m.Run()
}

// Need skips the test when there is no cluster (see [Main]).
func Need(t testing.TB, c *Cluster) {
	t.Helper()
	if c == nil {
		t.Skip(ErrNotInstalled.Error())
	}
}

// Own makes a cluster for one test (one it may stop and start), stopped
// and removed when the test ends. Its password file is the shared one's
// format: the test sets $PGPASSFILE to it (t.Setenv).
func Own(t testing.TB) *Cluster {
	t.Helper()
	c, err := New()
	if errors.Is(err, ErrNotInstalled) && os.Getenv(EnvRequire) != "1" {
		t.Skip(err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}
