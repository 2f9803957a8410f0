package pgstore

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/internal/state"
)

// The multi-process tests re-execute the test binary as helper processes,
// each with a Store (and a pool) of its own. TestMain runs the helper named
// by helperEnv instead of the tests.
const (
	helperEnv = "PGSTORE_TEST_HELPER" // approve or toggles
	dsnEnv    = "PGSTORE_TEST_DSN"
	idEnv     = "PGSTORE_TEST_ID"
)

// togglesPerWriter is how many toggles each writer process makes.
const togglesPerWriter = 25

func runHelper(mode string) int {
	if err := helper(mode); err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 1
	}
	return 0
}

func helper(mode string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := Open(os.Getenv(dsnEnv), Options{})
	if err != nil {
		return err
	}
	defer s.Close()
	id, _ := strconv.Atoi(os.Getenv(idEnv))
	switch mode {
	case "approve":
		err := s.Update(ctx, "shared", func(srv *state.Server) error {
			srv.Approve("write", state.Approval{Hash: "sha256:approved", ApprovedAt: time.Now().UTC()})
			return nil
		})
		if err == nil {
			fmt.Println("committed")
		}
		return err
	case "toggles":
		for k := range togglesPerWriter {
			if err := s.Update(ctx, "shared", func(srv *state.Server) error {
				toggle(srv, id, k)
				return nil
			}); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("unknown helper mode %q", mode)
}

// toggle is writer id's k-th toggle: even ones enable a tool the test
// disabled beforehand, odd ones disable one.
func toggle(srv *state.Server, id, k int) {
	if k%2 == 0 {
		srv.Enable(toggleTool(id, k))
	} else {
		srv.Disable(toggleTool(id, k))
	}
}

func toggleTool(id, k int) string { return fmt.Sprintf("tool-%d-%d", id, k) }

// helperCmd returns the command running helper mode as process id on dsn.
func helperCmd(t *testing.T, mode, dsn string, id int) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.CommandContext(t.Context(), exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode, dsnEnv+"="+dsn, idEnv+"="+strconv.Itoa(id))
	cmd.Stderr = os.Stderr
	return cmd
}

type execCmd struct{ *exec.Cmd }
