package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// The test binary doubles as a fixture upstream: `e2e.test mcpwrap-e2e-fixture MODE` serves MCP
// on stdio instead of running tests (TestMain dispatches on fixtureArg).
const fixtureArg = "mcpwrap-e2e-fixture"

// Fixture modes.
const (
	// fixtureBanner prints fixtureBannerLine on stdout before its first message, as some real
	// servers do, then serves normally.
	fixtureBanner = "banner"
	// fixtureStubborn ignores SIGTERM, SIGINT and stdin EOF: only SIGKILL (or fixtureLifetime)
	// ends it.
	fixtureStubborn = "stubborn"
	// fixturePipeCloser is a raw line server that closes its stdin or stdout on request and runs
	// on (see runPipeCloser).
	fixturePipeCloser = "pipe-closer"
	// fixtureHangToolsList serves normally but never answers tools/list: mcpwrap's catalog load
	// never finishes.
	fixtureHangToolsList = "hang-tools-list"
	// fixtureSlowRestart (arguments: a start-counter file and a delay) serves at once on its first
	// start and only after the delay on every later one: a restart after a crash is slow.
	fixtureSlowRestart = "slow-restart"
)

const (
	fixtureBannerLine = "e2e fixture banner: this line is not JSON-RPC"
	// fixturePIDTool answers with the fixture's pid (text, and structured as {"pid": N}).
	fixturePIDTool = "fixture_pid"
	// fixtureEnvTool answers with the fixture's environment (structured as {"env": [...]}).
	fixtureEnvTool = "fixture_env"
	// fixtureLifetime bounds how long a stubborn fixture outlives its stdin, so that a broken
	// mcpwrap cannot leak it forever.
	fixtureLifetime = 2 * time.Minute
)

// fixtureCommand returns the command line that runs the fixture upstream in mode.
func fixtureCommand(t testing.TB, mode string) []string {
	t.Helper()
	self, err := os.Executable()
	require.NoError(t, err)
	return []string{self, fixtureArg, mode}
}

// runFixture serves the fixture upstream on stdin/stdout and returns the process exit code.
func runFixture(args []string) int {
	fs := flag.NewFlagSet(fixtureArg, flag.ContinueOnError)
	if err := fs.Parse(args); err != nil || fs.NArg() < 1 {
		fmt.Fprintf(os.Stderr, "usage: %s {%s|%s|%s|%s|%s FILE DELAY}\n", fixtureArg, fixtureBanner, fixtureStubborn, fixturePipeCloser, fixtureHangToolsList, fixtureSlowRestart)
		return 2
	}
	mode := fs.Arg(0)
	switch mode {
	case fixtureSlowRestart:
		return runSlowRestart(fs.Args()[1:])
	case fixtureLedger:
		return runLedger(fs.Args()[1:])
	case fixtureListFailsUntil:
		return runListFailsUntil(fs.Args()[1:])
	}
	if mode == fixtureSlowCaps {
		return runSlowCaps(fs.Args()[1:])
	}
	if fs.NArg() != 1 {
		fmt.Fprintf(os.Stderr, "%s %s takes no arguments\n", fixtureArg, mode)
		return 2
	}

	switch mode {
	case fixturePipeCloser:
		return runPipeCloser()
	case fixtureListFails, fixtureListCut:
		return runListFault(mode)
	case fixtureBanner:
		fmt.Println(fixtureBannerLine)
	case fixtureStubborn:
		signal.Ignore(syscall.SIGTERM, syscall.SIGINT)
	case fixtureHangToolsList:
	default:
		fmt.Fprintf(os.Stderr, "%s: unknown mode %q\n", fixtureArg, mode)
		return 2
	}
	fmt.Fprintf(os.Stderr, "%s %s: pid %d\n", fixtureArg, mode, os.Getpid())

	server := newFixtureServer()
	if mode == fixtureHangToolsList {
		server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if method == "tools/list" {
					<-ctx.Done() // never answered while the connection lives
					return nil, ctx.Err()
				}
				return next(ctx, method, req)
			}
		})
	}
	err := server.Run(context.Background(), &mcp.StdioTransport{})
	fmt.Fprintf(os.Stderr, "%s %s: stdin closed: %v\n", fixtureArg, mode, err)

	if mode == fixtureStubborn {
		<-time.After(fixtureLifetime) // deliberately ignore EOF; see fixtureLifetime
	}
	return 0
}

// runSlowRestart is fixtureSlowRestart: args are the start-counter file and the delay of every
// start but the first.
func runSlowRestart(args []string) int {
	if len(args) != 2 {
		fmt.Fprintf(os.Stderr, "usage: %s %s FILE DELAY\n", fixtureArg, fixtureSlowRestart)
		return 2
	}
	delay, err := time.ParseDuration(args[1])
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", fixtureSlowRestart, err)
		return 2
	}
	f, err := os.OpenFile(args[0], os.O_APPEND|os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", fixtureSlowRestart, err)
		return 1
	}
	_, err = f.WriteString("start\n")
	info, statErr := f.Stat()
	f.Close()
	if err != nil || statErr != nil {
		fmt.Fprintf(os.Stderr, "%s: cannot count starts: %v %v\n", fixtureSlowRestart, err, statErr)
		return 1
	}
	starts := int(info.Size()) / len("start\n")
	fmt.Fprintf(os.Stderr, "%s %s: pid %d, start %d\n", fixtureArg, fixtureSlowRestart, os.Getpid(), starts)
	if starts > 1 {
		time.Sleep(delay) // simulates a slow restart; not synchronisation
	}
	err = newFixtureServer().Run(context.Background(), &mcp.StdioTransport{})
	fmt.Fprintf(os.Stderr, "%s %s: stdin closed: %v\n", fixtureArg, fixtureSlowRestart, err)
	return 0
}

// newFixtureServer returns the fixture's MCP server with its one tool, fixturePIDTool.
func newFixtureServer() *mcp.Server {
	server := mcp.NewServer(&mcp.Implementation{Name: "mcpwrap-e2e-fixture", Version: "1.0.0"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: fixturePIDTool, Description: "Reports the fixture's process id."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, fixturePID, error) {
			pid := os.Getpid()
			return &mcp.CallToolResult{
				Content: []mcp.Content{&mcp.TextContent{Text: strconv.Itoa(pid)}},
			}, fixturePID{PID: pid}, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: fixtureEnvTool, Description: "Reports the fixture's environment."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, fixtureEnv, error) {
			return &mcp.CallToolResult{}, fixtureEnv{Env: os.Environ()}, nil
		})
	addSleepTool(server)
	return server
}

// fixturePID is the structured result of fixturePIDTool.
type fixturePID struct {
	PID int `json:"pid"`
}

// fixtureEnv is the structured result of fixtureEnvTool.
type fixtureEnv struct {
	Env []string `json:"env"`
}

// fixtureSleepTool answers after sleeping the given milliseconds ({"ms": N}), with the text
// "slept N ms". When the call carries a progress token it first sends one progress
// notification, so that a test knows the call has reached the fixture.
const fixtureSleepTool = "fixture_sleep"

// fixtureSleepArgs are fixtureSleepTool's arguments.
type fixtureSleepArgs struct {
	MS int `json:"ms"`
}

// addSleepTool adds fixtureSleepTool to server.
func addSleepTool(server *mcp.Server) {
	mcp.AddTool(server, &mcp.Tool{Name: fixtureSleepTool, Description: "Sleeps, then answers."},
		func(ctx context.Context, req *mcp.CallToolRequest, args fixtureSleepArgs) (*mcp.CallToolResult, any, error) {
			if token := req.Params.GetProgressToken(); token != nil {
				_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Message: "sleeping"})
			}
			select {
			case <-time.After(time.Duration(args.MS) * time.Millisecond):
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
			return &mcp.CallToolResult{
				Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("slept %d ms", args.MS)}},
			}, nil, nil
		})
}
