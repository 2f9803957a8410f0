package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// fixtureLedger (argument: a ledger file) serves the fixture with one more tool,
// fixtureLedgerTool, which appends a line to the ledger each time it runs: a test counts how many
// times each call was executed, by whichever process, across replicas and restarts.
const fixtureLedger = "ledger"

// fixtureLedgerTool records its key ({"key": "..."}) in the ledger as "KEY PID PPID" and answers
// with its pid and its parent's (structured as fixtureWhere): the parent is the mcpwrap that
// started it, so a test knows which replica served the call.
const fixtureLedgerTool = "fixture_ledger"

type fixtureLedgerArgs struct {
	Key string `json:"key"`
}

// fixtureWhere is the structured result of fixtureLedgerTool.
type fixtureWhere struct {
	PID  int `json:"pid"`
	PPID int `json:"ppid"`
}

// runLedger is fixtureLedger: args are the ledger file.
func runLedger(args []string) int {
	if len(args) != 1 {
		fmt.Fprintf(os.Stderr, "usage: %s %s FILE\n", fixtureArg, fixtureLedger)
		return 2
	}
	// O_APPEND: each line lands whole at the end, whatever other processes append.
	ledger, err := os.OpenFile(args[0], os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", fixtureLedger, err)
		return 1
	}
	defer ledger.Close()
	server := newFixtureServer()
	mcp.AddTool(server, &mcp.Tool{Name: fixtureLedgerTool, Description: "Records its key in the ledger."},
		func(_ context.Context, _ *mcp.CallToolRequest, args fixtureLedgerArgs) (*mcp.CallToolResult, fixtureWhere, error) {
			where := fixtureWhere{PID: os.Getpid(), PPID: os.Getppid()}
			if _, err := fmt.Fprintf(ledger, "%s %d %d\n", args.Key, where.PID, where.PPID); err != nil {
				return nil, where, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: args.Key}}}, where, nil
		})
	err = server.Run(context.Background(), &mcp.StdioTransport{})
	fmt.Fprintf(os.Stderr, "%s %s: stdin closed: %v\n", fixtureArg, fixtureLedger, err)
	return 0
}

// readLedger returns the parent pids of the processes that recorded each key in the ledger
// file, one per execution.
func readLedger(t *testing.T, path string) map[string][]int {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return map[string][]int{}
	}
	require.NoError(t, err)
	defer f.Close()
	ran := map[string][]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var key string
		var where fixtureWhere
		_, err := fmt.Sscanf(sc.Text(), "%s %d %d", &key, &where.PID, &where.PPID)
		require.NoError(t, err, "ledger line %q", sc.Text())
		ran[key] = append(ran[key], where.PPID)
	}
	require.NoError(t, sc.Err())
	return ran
}
