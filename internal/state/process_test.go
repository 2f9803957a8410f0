package state

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The multi-process tests re-execute the test binary as helper processes.
// TestMain runs the helper named by helperEnv instead of the tests.
const (
	helperEnv    = "STATE_TEST_HELPER" // helper mode: ops, writer or once
	helperDirEnv = "STATE_TEST_DIR"    // state directory
	helperIDEnv  = "STATE_TEST_ID"     // helper number, for ops
)

const (
	opsProcs    = 8
	counterTool = "counter"
	killServer  = "kill"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		if err := runHelper(mode); err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func runHelper(mode string) error {
	ctx := context.Background()
	store := Open(os.Getenv(helperDirEnv), nil)
	switch mode {
	case "ops":
		id, err := strconv.Atoi(os.Getenv(helperIDEnv))
		if err != nil {
			return err
		}
		return runOps(ctx, store, id)
	case "writer":
		return runWriter(ctx, store)
	case "once":
		return store.Update(ctx, "other", func(srv *Server) error {
			srv.Disable("from-another-process")
			return nil
		})
	}
	return fmt.Errorf("unknown helper mode %q", mode)
}

// runOps performs helper id's share of TestConcurrentProcesses, all at once.
func runOps(ctx context.Context, store *FileStore, id int) error {
	errs := make(chan error, opsPerProc)
	var wg sync.WaitGroup
	for op := range opsPerProc {
		wg.Go(func() {
			errs <- store.Update(ctx, opServer(id), func(srv *Server) error {
				applyOp(srv, id, op)
				return nil
			})
			if op%20 == 0 { // readers take part too
				if _, err := store.Load(ctx, opServer(id)); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// Each operation of TestConcurrentProcesses leaves a distinct trace:
// disabling its own tool, approving its own tool, or enabling its own tool
// that the test disabled beforehand.
func opServer(id int) string           { return "srv-" + strconv.Itoa(id%3) }
func opTool(id, op int) string         { return fmt.Sprintf("tool-%d-%d", id, op) }
func opApprovalHash(id, op int) string { return fmt.Sprintf("sha256:%d-%d", id, op) }

func applyOp(srv *Server, id, op int) {
	tool := opTool(id, op)
	switch op % 3 {
	case 0:
		srv.Disable(tool)
	case 1:
		srv.Approve(tool, Approval{
			Hash:       opApprovalHash(id, op),
			Definition: json.RawMessage(fmt.Sprintf(`{"name":%q}`, tool)),
			ApprovedAt: time.Now().UTC(),
		})
	case 2:
		srv.Enable(tool)
	}
}

// runWriter updates a counter forever, reporting each saved value on stdout.
// Each write carries a large payload, so that a kill often lands mid-write.
func runWriter(ctx context.Context, store *FileStore) error {
	payload := strings.Repeat("x", 64<<10)
	for {
		var n int
		err := store.Update(ctx, killServer, func(srv *Server) error {
			if a, ok := srv.Approval(counterTool); ok {
				n, _ = strconv.Atoi(a.Hash)
			}
			n++
			def, err := json.Marshal(map[string]any{"n": n, "payload": payload[:len(payload)-n%1000]})
			if err != nil {
				return err
			}
			srv.Approve(counterTool, Approval{Hash: strconv.Itoa(n), Definition: def, ApprovedAt: time.Now().UTC()})
			return nil
		})
		if err != nil {
			return err
		}
		if _, err := fmt.Println(n); err != nil {
			return err
		}
	}
}

func helperCommand(t *testing.T, mode, dir string, id int) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(),
		helperEnv+"="+mode,
		helperDirEnv+"="+dir,
		helperIDEnv+"="+strconv.Itoa(id),
	)
	return cmd
}

func TestConcurrentProcesses(t *testing.T) {
	dir := t.TempDir()
	store := Open(dir, nil)
	ctx := t.Context()
	for id := range opsProcs {
		require.NoError(t, store.Update(ctx, opServer(id), func(srv *Server) error {
			for op := 2; op < opsPerProc; op += 3 {
				srv.Disable(opTool(id, op))
			}
			return nil
		}))
	}

	var wg sync.WaitGroup
	for id := range opsProcs {
		wg.Go(func() {
			cmd := helperCommand(t, "ops", dir, id)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			assert.NoError(t, cmd.Run(), "helper %d: %s", id, stderr.String())
		})
	}
	wg.Wait()

	var missing []string
	for id := range opsProcs {
		srv, err := store.Load(ctx, opServer(id))
		require.NoError(t, err)
		for op := range opsPerProc {
			tool := opTool(id, op)
			var ok bool
			switch op % 3 {
			case 0:
				ok = srv.IsDisabled(tool)
			case 1:
				a, found := srv.Approval(tool)
				ok = found && a.Hash == opApprovalHash(id, op)
			case 2:
				ok = !srv.IsDisabled(tool)
			}
			if !ok {
				missing = append(missing, tool)
			}
		}
	}
	assert.Empty(t, missing, "operations lost")
}

func TestKillDuringWrites(t *testing.T) {
	kills := 100
	if testing.Short() {
		kills = 20
	}
	dir := t.TempDir()
	store := Open(dir, nil)
	ctx := t.Context()

	for i := range kills {
		cmd := helperCommand(t, "writer", dir, 0)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())

		// Vary the moment of the kill: during start-up, or right after
		// the writer reports its 1st, 2nd or 3rd write, while it is in the
		// middle of the next one.
		acked := 0
		lines := bufio.NewScanner(stdout)
		for range i % 4 {
			if !lines.Scan() {
				_ = cmd.Wait()
				require.FailNow(t, "writer died", "%v: %s", lines.Err(), stderr.String())
			}
			acked, err = strconv.Atoi(lines.Text())
			require.NoError(t, err)
		}
		require.NoError(t, cmd.Process.Kill())
		_ = cmd.Wait()

		srv, err := store.Load(ctx, killServer)
		require.NoError(t, err, "kill %d", i)
		a, _ := srv.Approval(counterTool)
		saved, _ := strconv.Atoi(a.Hash)
		require.GreaterOrEqual(t, saved, acked, "kill %d lost an acknowledged write", i)
	}

	// The next writer clears the temporary files of the killed ones.
	require.NoError(t, store.Update(ctx, killServer, func(srv *Server) error {
		srv.Disable("x")
		return nil
	}))
	entries, err := os.ReadDir(filepath.Join(dir, ServersDir))
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.ElementsMatch(t, []string{killServer + ".json", killServer + ".json.lock"}, names)
}

func TestWatchSeesOtherProcess(t *testing.T) {
	dir := t.TempDir()
	store := Open(dir, nil)
	store.watch.Debounce = 10 * time.Millisecond
	w := startWatch(t, store, "other")
	assert.Equal(t, "notify", w.awaitStart(t))

	cmd := helperCommand(t, "once", dir, 0)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))

	w.awaitChange(t)
	srv, err := store.Load(t.Context(), "other")
	require.NoError(t, err)
	assert.True(t, srv.IsDisabled("from-another-process"))
}
