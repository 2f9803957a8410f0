//lint:file-ignore SA1019 the demo shows sampling, deprecated in the 2026-07-28 draft but still served.

// Package demo is the narrated showcase behind `mcpwrap demo`: a go-sdk
// client talks to mcpwrap wrapping the built-in demo server, and every step
// is explained on the narration writer.
package demo

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Run plays the demo. self is the path of the mcpwrap binary; out receives
// the narration.
func Run(ctx context.Context, self string, out io.Writer) error {
	n := &narrator{w: out}
	dir, err := os.MkdirTemp("", "mcpwrap-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	config := filepath.Join(dir, "config.json")
	if err := os.WriteFile(config, []byte(`{}`), 0o600); err != nil {
		return err
	}
	n.title("mcpwrap demo: a transparent, resilient wrapper for any MCP server")
	n.say("The client below is a real go-sdk MCP client. Instead of starting the server")
	n.say("directly, it starts:")
	args := []string{"--name", "demo", "--log-level", "warn", "--config", config, "--state-dir", filepath.Join(dir, "state"), "--", self, "demo-server",
		"--banner", "demo-server v1.0 starting (a stray print on stdout)"}
	n.say("  mcpwrap %s", strings.Join(quoteAll(args), " "))
	n.say("(its config and user state live in a temporary directory: %s)", dir)
	n.say("mcpwrap's own log lines go to stderr; they appear here prefixed with 'log |'.")

	cmd := exec.CommandContext(ctx, self, args...)
	logs := n.prefixWriter("    log | ")
	cmd.Stderr = logs
	defer logs.Close()

	client := mcp.NewClient(&mcp.Implementation{Name: "demo-client", Version: "1.0.0"}, &mcp.ClientOptions{
		CreateMessageHandler: func(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			q := ""
			if len(req.Params.Messages) > 0 {
				if t, ok := req.Params.Messages[0].Content.(*mcp.TextContent); ok {
					q = t.Text
				}
			}
			n.say("  <- the server asks the client's model (sampling/createMessage): %q", q)
			return &mcp.CreateMessageResult{Role: "assistant", Model: "demo-model",
				Content: &mcp.TextContent{Text: "4"}}, nil
		},
	})

	n.step(1, "Handshake")
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer session.Close()
	init := session.InitializeResult()
	n.say("  connected to %q version %s, protocol %s", init.ServerInfo.Name, init.ServerInfo.Version, init.ProtocolVersion)
	n.say("  the banner the server printed on stdout was moved to stderr (see the log line above);")
	n.say("  the client never saw it.")

	n.step(2, "Tools, listed through mcpwrap byte for byte")
	tools, err := session.ListTools(ctx, nil)
	if err != nil {
		return fmt.Errorf("tools/list: %w", err)
	}
	for _, t := range tools.Tools {
		n.say("  - %-11s %s", t.Name, t.Description)
	}

	n.step(3, "A tool call")
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hello through mcpwrap"}})
	if err != nil {
		return fmt.Errorf("tools/call echo: %w", err)
	}
	n.say("  echo -> %s", resultText(res))

	n.step(4, "A server->client round trip (sampling)")
	res, err = session.CallTool(ctx, &mcp.CallToolParams{Name: "ask_llm", Arguments: map[string]any{"text": "What is 2+2?"}})
	if err != nil {
		return fmt.Errorf("tools/call ask_llm: %w", err)
	}
	n.say("  ask_llm -> %s", resultText(res))

	n.step(5, "Clean shutdown")
	start := time.Now()
	if err := session.Close(); err != nil {
		return fmt.Errorf("close: %w", err)
	}
	n.say("  the client closed stdin; mcpwrap drained, stopped the server and exited in %s.",
		time.Since(start).Round(time.Millisecond))
	n.say("")
	n.say("Done. Try it on a real server:  mcpwrap -- npx -y @modelcontextprotocol/server-everything")
	return nil
}

func resultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		} else {
			b, _ := json.Marshal(c)
			parts = append(parts, string(b))
		}
	}
	return strings.Join(parts, " ")
}

func quoteAll(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, " ()") {
			a = "'" + a + "'"
		}
		out[i] = a
	}
	return out
}

// narrator writes the demo's story. It is safe for concurrent use, since
// the log prefixer writes from another goroutine.
type narrator struct {
	mu sync.Mutex
	w  io.Writer
}

func (n *narrator) say(format string, args ...any) {
	n.mu.Lock()
	defer n.mu.Unlock()
	fmt.Fprintf(n.w, format+"\n", args...)
}

func (n *narrator) title(s string) { n.say("%s\n%s", s, strings.Repeat("=", len(s))) }

func (n *narrator) step(i int, s string) { n.say("\n%d. %s", i, s) }

// prefixWriter returns a writer that narrates each line written to it with
// prefix. Close flushes it.
func (n *narrator) prefixWriter(prefix string) io.WriteCloser {
	pr, pw := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			n.say("%s%s", prefix, sc.Text())
		}
	}()
	return closeWaiter{pw, done}
}

type closeWaiter struct {
	*io.PipeWriter
	done chan struct{}
}

func (c closeWaiter) Close() error {
	err := c.PipeWriter.Close()
	<-c.done
	return err
}
