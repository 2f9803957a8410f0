//lint:file-ignore SA1019 the client answers sampling, deprecated in the 2026-07-28 draft but still served.

package e2e

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests wrap remote upstreams (mcpwrap --url) on loopback: a go-sdk streamable HTTP
// server, a legacy HTTP+SSE one, and the reference server-everything in streamableHttp mode.

// samplingModel and samplingAnswer are what the test client's model answers.
const (
	samplingModel  = "e2e-model"
	samplingAnswer = "hello from the client's model"
)

// TestRemoteStreamableRelay drives a go-sdk streamable HTTP server through mcpwrap --url with a
// go-sdk client: tools, resources, prompts, a server→client sampling request in the middle of a
// tool call, and a tools/list_changed the server sends on its own (a tool added mid-session)
// all arrive, and every request mcpwrap sends after initialize carries Mcp-Protocol-Version.
func TestRemoteStreamableRelay(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()

	server := newRemoteFixture()
	httpLog := newHTTPLog()
	url := serveLoopback(t, httpLog.wrap(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)))

	changed, signal := signalOn()
	client := newClient(&mcp.ClientOptions{
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Role: "assistant", Model: samplingModel, Content: &mcp.TextContent{Text: samplingAnswer}}, nil
		},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { signal() },
	})
	session := sidecar{
		Name:     "remote",
		Config:   fastRetryConfig("remote", false, true),
		Upstream: remoteArgs(url),
		// 2025-11-25 opens with initialize and still allows sampling.
		Session: &mcp.ClientSessionOptions{ProtocolVersion: protocolVersionInitialize},
	}.connect(ctx, t, client)
	init := session.InitializeResult()
	require.Equal(t, remoteFixtureName, init.ServerInfo.Name, "the upstream's own handshake")
	require.Equal(t, protocolVersionInitialize, init.ProtocolVersion)

	tools, err := session.ListTools(ctx, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"ask_model", "echo"}, listedNames(tools))
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "over HTTP"}})
	require.NoError(t, err)
	require.False(t, res.IsError, "echo: %s", contentText(res.Content))
	assert.Equal(t, "over HTTP", contentText(res.Content))

	resources, err := session.ListResources(ctx, nil)
	require.NoError(t, err)
	require.Len(t, resources.Resources, 1)
	assert.Equal(t, "e2e://notes", resources.Resources[0].URI)
	read, err := session.ReadResource(ctx, &mcp.ReadResourceParams{URI: "e2e://notes"})
	require.NoError(t, err)
	require.Len(t, read.Contents, 1)
	assert.Equal(t, "remote notes", read.Contents[0].Text)

	prompts, err := session.ListPrompts(ctx, nil)
	require.NoError(t, err)
	require.Len(t, prompts.Prompts, 1)
	assert.Equal(t, "greet", prompts.Prompts[0].Name)
	prompt, err := session.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet", Arguments: map[string]string{"who": "mcpwrap"}})
	require.NoError(t, err)
	require.Len(t, prompt.Messages, 1)
	assert.Equal(t, "Hello, mcpwrap", contentText([]mcp.Content{prompt.Messages[0].Content}))

	asked, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "ask_model", Arguments: map[string]any{"question": "who is there?"}})
	require.NoError(t, err)
	require.False(t, asked.IsError, "ask_model: %s", contentText(asked.Content))
	assert.Equal(t, samplingModel+" says: "+samplingAnswer, contentText(asked.Content), "the sampling round trip")

	// A notification of the server's own travels on the standalone GET stream mcpwrap opens.
	select {
	case <-httpLog.streamOpen:
	case <-time.After(notificationTimeout):
		require.FailNow(t, "mcpwrap opened no standalone GET stream")
	}
	mcp.AddTool(server, &mcp.Tool{Name: "late_tool", Description: "Added after the client connected."},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "late"}}}, nil, nil
		})
	awaitChange(ctx, t, changed, "tools/list_changed")
	tools, err = session.ListTools(ctx, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"ask_model", "echo", "late_tool"}, listedNames(tools))

	requireProtocolVersionAfterInitialize(t, httpLog.requests(), protocolVersionInitialize)
}

// requireProtocolVersionAfterInitialize requires every request after the first initialize to
// carry Mcp-Protocol-Version: version.
func requireProtocolVersionAfterInitialize(t *testing.T, reqs []loggedRequest, version string) {
	t.Helper()
	first := -1
	for i, r := range reqs {
		if r.RPCMethod == "initialize" {
			first = i
			break
		}
	}
	require.GreaterOrEqual(t, first, 0, "no initialize request: %+v", reqs)
	after := reqs[first+1:]
	require.NotEmpty(t, after)
	var gets int
	for i, r := range after {
		assert.Equal(t, version, r.ProtocolVersion, "request %d after initialize: %s %s", i+1, r.HTTPMethod, r.RPCMethod)
		if r.HTTPMethod == http.MethodGet {
			gets++
		}
	}
	assert.Positive(t, gets, "the standalone GET stream is a request after initialize too")
}

// TestRemoteLegacySSE wraps a legacy HTTP+SSE server (go-sdk's SSE handler): the first POST is
// refused, mcpwrap falls back to the SSE transport, and tools, resources and sampling work.
func TestRemoteLegacySSE(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()

	server := newRemoteFixture()
	httpLog := newHTTPLog()
	url := serveLoopback(t, httpLog.wrap(mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return server }, nil)))

	client := newClient(&mcp.ClientOptions{
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Role: "assistant", Model: samplingModel, Content: &mcp.TextContent{Text: samplingAnswer}}, nil
		},
	})
	session := sidecar{Name: "legacy", Upstream: remoteArgs(url)}.connect(ctx, t, client)
	require.Equal(t, remoteFixtureName, session.InitializeResult().ServerInfo.Name, "the upstream's own handshake")

	tools, err := session.ListTools(ctx, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"ask_model", "echo"}, listedNames(tools))
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "over SSE"}})
	require.NoError(t, err)
	require.False(t, res.IsError, "echo: %s", contentText(res.Content))
	assert.Equal(t, "over SSE", contentText(res.Content))
	read, err := session.ReadResource(ctx, &mcp.ReadResourceParams{URI: "e2e://notes"})
	require.NoError(t, err)
	require.Len(t, read.Contents, 1)
	assert.Equal(t, "remote notes", read.Contents[0].Text)
	asked, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "ask_model", Arguments: map[string]any{"question": "anyone?"}})
	require.NoError(t, err)
	assert.Equal(t, samplingModel+" says: "+samplingAnswer, contentText(asked.Content), "the sampling round trip")

	// The fallback: refused POSTs to the URL (the era bridge's server/discover, which a
	// 2025 streamable server also refuses, then initialize), then the SSE stream's GET.
	reqs := httpLog.requests()
	require.GreaterOrEqual(t, len(reqs), 3)
	assert.Equal(t, loggedRequest{HTTPMethod: http.MethodPost, RPCMethod: "server/discover", ProtocolVersion: protocolVersionStateless}, reqs[0], "first contact: streamable HTTP, asking the era")
	assert.Equal(t, loggedRequest{HTTPMethod: http.MethodPost, RPCMethod: "initialize"}, reqs[1], "then the session era, still streamable HTTP")
	assert.Equal(t, http.MethodGet, reqs[2].HTTPMethod, "then the legacy SSE stream")
}

// loopbackPreload is a Node preload (node --require) that pins every listening socket without a
// host to 127.0.0.1 and reports the bound address on stderr.
const loopbackPreload = "testdata/loopback-listen.cjs"

// listeningLine is what loopbackPreload prints once a server listens: address and port.
var listeningLine = regexp.MustCompile(`mcpwrap-e2e-listening (\S+) (\d+)`)

// TestRemoteServerEverythingThroughInspector runs the reference server-everything in
// streamableHttp mode and reaches it with the inspector CLI both directly and through mcpwrap
// --url: the same tools, and a working call.
//
// server-everything listens on every interface, with only PORT to configure. A test must not
// open a port to the network, so it runs with loopbackPreload, which binds it to 127.0.0.1 (on
// a port the kernel picks) and reports the address; the test checks that address before
// connecting anything.
func TestRemoteServerEverythingThroughInspector(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	preload, err := filepath.Abs(loopbackPreload)
	require.NoError(t, err)
	everything := startProcess(ctx, t, processOptions{Env: []string{"PORT=0"}}, nodePath(t),
		"--require", preload, npmBin(t, "@modelcontextprotocol/server-everything", "mcp-server-everything"), "streamableHttp")

	var host, port string
	require.Eventually(t, func() bool {
		m := listeningLine.FindStringSubmatch(everything.Stderr())
		if m == nil {
			return false
		}
		host, port = m[1], m[2]
		return true
	}, 20*time.Second, pollEvery, "server-everything did not report its address:\n%s", everything.Stderr())
	require.Equal(t, "127.0.0.1", host, "server-everything must listen on loopback only")
	url := "http://" + net.JoinHostPort(host, port) + "/mcp"

	in := newInspector(t)
	wrappedURL := append([]string{mcpwrapPath}, sidecar{Name: "everything", Config: `{"defaults": {"approval": "off"}}`, Upstream: remoteArgs(url)}.args(t)...)

	direct := in.Run(ctx, []string{url}, "--method", "tools/list")
	require.Zero(t, direct.ExitCode, "direct tools/list: %s", direct.Error)
	through := in.Run(ctx, wrappedURL, "--method", "tools/list")
	require.Zero(t, through.ExitCode, "tools/list through mcpwrap: %s", through.Error)
	assert.JSONEq(t, string(direct.Result), string(through.Result), "tools/list through mcpwrap")
	assert.Contains(t, toolNames(t, through.Result), "echo")

	echo := in.Run(ctx, wrappedURL, "--method", "tools/call", "--tool-name", "echo", "--tool-arg", "message=hello over HTTP")
	require.Zero(t, echo.ExitCode, "echo: %s", echo.Error)
	assert.Equal(t, []string{"Echo: hello over HTTP"}, resultTexts(t, echo.Result))
}

// TestLoopbackPreloadPinsHost checks loopbackPreload itself on a plain Node server that asks to
// listen on every interface: it must end up on 127.0.0.1.
func TestLoopbackPreloadPinsHost(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	preload, err := filepath.Abs(loopbackPreload)
	require.NoError(t, err)
	script := filepath.Join(t.TempDir(), "listen.js")
	require.NoError(t, os.WriteFile(script, []byte(
		`require("http").createServer(() => {}).listen(0, () => process.exit(0));`+"\n"), 0o600))
	p := startProcess(ctx, t, processOptions{}, nodePath(t), "--require", preload, script)
	require.NoError(t, p.Wait(ctx), "node: %s", p.Stderr())
	m := listeningLine.FindStringSubmatch(p.Stderr())
	require.NotNil(t, m, "no address reported: %s", p.Stderr())
	assert.Equal(t, "127.0.0.1", m[1])
}
