//lint:file-ignore SA1019 the demo shows sampling, deprecated in the 2026-07-28 draft but still served.

// Package demo is the narrated showcase behind `mcpwrap demo`: real go-sdk
// clients talk to mcpwrap wrapping the built-in demo server, and every step
// is explained on the narration writer. Everything it writes (config, user
// state) lives in a temporary directory, removed at the end.
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

	"github.com/mcpwrap/mcpwrap/internal/era"
)

// Run plays the demo. self is the path of the mcpwrap binary; out receives
// the narration.
func Run(ctx context.Context, self string, out io.Writer) error {
	dir, err := os.MkdirTemp("", "mcpwrap-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	d := &demo{n: &narrator{w: out}, self: self, dir: dir}
	d.n.title("mcpwrap demo: a transparent, resilient wrapper for any MCP server")
	d.n.say("Each act runs a real go-sdk MCP client against mcpwrap wrapping the built-in demo")
	d.n.say("server. mcpwrap's config and user state live in %s for the demo.", dir)
	d.n.say("mcpwrap's own log lines go to stderr; they appear here prefixed with 'log |'.")
	for _, act := range []func(context.Context) error{d.transparency, d.resilience, d.policy, d.signIn, d.traces} {
		if err := act(ctx); err != nil {
			return err
		}
	}
	d.n.say("\nDone. Try it on a real server:  mcpwrap -- npx -y @modelcontextprotocol/server-everything")
	return nil
}

type demo struct {
	n    *narrator
	self string
	dir  string
}

// connection is a client session through mcpwrap and its log pipe.
type connection struct {
	*mcp.ClientSession
	logs io.Closer
}

func (c *connection) Close() error {
	err := c.ClientSession.Close()
	c.logs.Close()
	return err
}

// connect starts `mcpwrap [wrapArgs] -- self demo-server [serverArgs]` for a
// client with the given options.
func (d *demo) connect(ctx context.Context, wrapArgs, serverArgs []string, opts *mcp.ClientOptions) (*connection, error) {
	return d.connectEnv(ctx, nil, wrapArgs, serverArgs, opts)
}

// connectEnv is connect with mcpwrap's environment env (nil: the demo's).
func (d *demo) connectEnv(ctx context.Context, env, wrapArgs, serverArgs []string, opts *mcp.ClientOptions) (*connection, error) {
	args := append([]string{"--config", filepath.Join(d.dir, "config.json"), "--state-dir", filepath.Join(d.dir, "state")}, wrapArgs...)
	args = append(append(args, "--", d.self, "demo-server"), serverArgs...)
	d.n.say("  $ mcpwrap %s", strings.Join(quoteAll(shorten(args, d.dir, d.self)), " "))
	cmd := exec.CommandContext(ctx, d.self, args...)
	cmd.Env = env
	logs := d.n.prefixWriter("    log | ")
	cmd.Stderr = logs
	client := mcp.NewClient(&mcp.Implementation{Name: "demo-client", Version: "1.0.0"}, opts)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: era.SessionVersion})
	if err != nil {
		logs.Close()
		return nil, fmt.Errorf("connect: %w", err)
	}
	return &connection{ClientSession: cs, logs: logs}, nil
}

func (d *demo) writeConfig(config string) error {
	return os.WriteFile(filepath.Join(d.dir, "config.json"), []byte(config), 0o600)
}

// transparency is act 1: the wire is untouched.
func (d *demo) transparency(ctx context.Context) error {
	n := d.n
	n.act(1, "A perfect wire")
	if err := d.writeConfig(`{}`); err != nil {
		return err
	}
	c, err := d.connect(ctx, []string{"--name", "demo", "--log-level", "warn"},
		[]string{"--banner", "demo-server v1.0 starting (a stray print on stdout)"},
		&mcp.ClientOptions{CreateMessageHandler: func(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			q := ""
			if len(req.Params.Messages) > 0 {
				if t, ok := req.Params.Messages[0].Content.(*mcp.TextContent); ok {
					q = t.Text
				}
			}
			n.say("  <- the server asks the client's model (sampling/createMessage): %q", q)
			return &mcp.CreateMessageResult{Role: "assistant", Model: "demo-model", Content: &mcp.TextContent{Text: "4"}}, nil
		}})
	if err != nil {
		return err
	}
	defer c.Close()
	init := c.InitializeResult()
	n.step("Handshake: connected to %q version %s, protocol %s.", init.ServerInfo.Name, init.ServerInfo.Version, init.ProtocolVersion)
	n.say("  The banner the server printed on stdout went to stderr (the log line above);")
	n.say("  the client never saw it.")

	n.step("Tools, listed through mcpwrap byte for byte:")
	tools, err := c.ListTools(ctx, nil)
	if err != nil {
		return fmt.Errorf("tools/list: %w", err)
	}
	for _, t := range tools.Tools {
		n.say("  - %-11s %s", t.Name, t.Description)
	}
	n.step("A tool call:")
	if err := d.call(ctx, c, "echo", map[string]any{"text": "hello through mcpwrap"}); err != nil {
		return err
	}
	n.step("A server->client round trip (sampling):")
	if err := d.call(ctx, c, "ask_llm", map[string]any{"text": "What is 2+2?"}); err != nil {
		return err
	}
	n.step("Clean shutdown:")
	start := time.Now()
	if err := c.Close(); err != nil {
		return fmt.Errorf("close: %w", err)
	}
	n.say("  the client closed stdin; mcpwrap drained, stopped the server and exited in %s.", time.Since(start).Round(time.Millisecond))
	return nil
}

// resilience is act 2: retries, then a crash and its recovery.
func (d *demo) resilience(ctx context.Context) error {
	n := d.n
	n.act(2, "A flaky server")
	n.say("This server fails its first two starts with a transient error (its backend is not")
	n.say("reachable yet). mcpwrap classifies each failure and retries with jittered backoff:")
	if err := d.writeConfig(`{"servers":{"flaky":{"retry":{"initial":"200ms"}}}}`); err != nil {
		return err
	}
	changed := make(chan struct{}, 8)
	c, err := d.connect(ctx, []string{"--name", "flaky", "--log-level", "info"},
		[]string{"--flaky-file", filepath.Join(d.dir, "starts"), "--flaky-starts", "2"},
		&mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			changed <- struct{}{}
		}})
	if err != nil {
		return err
	}
	defer c.Close()
	n.step("The client's handshake succeeded on the third start; its session never noticed.")
	if err := d.call(ctx, c, "echo", map[string]any{"text": "still here"}); err != nil {
		return err
	}
	n.step("Now the server crashes in the middle of a call:")
	if err := d.call(ctx, c, "crash", nil); err != nil {
		n.say("  crash -> error: %v", err)
	}
	n.say("  mcpwrap answered the call in flight with an error (no hang), restarted the server,")
	n.say("  replayed the client's handshake, and told the client its tools changed:")
	for range 2 {
		if err := waitChanged(changed, 10*time.Second, "after the crash"); err != nil {
			return err
		}
		n.say("  <- notifications/tools/list_changed")
	}
	n.step("The next call just works:")
	return d.call(ctx, c, "echo", map[string]any{"text": "after the crash"})
}

// call calls a tool and narrates the result.
func (d *demo) call(ctx context.Context, c *connection, name string, args map[string]any) error {
	res, err := c.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return fmt.Errorf("tools/call %s: %w", name, err)
	}
	mark := ""
	if res.IsError {
		mark = " (isError)"
	}
	d.n.say("  %s -> %s%s", name, compact(resultText(res)), mark)
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

// shorten makes a command line readable: the temp dir and binary path become
// short placeholders.
func shorten(args []string, dir, self string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		a = strings.ReplaceAll(a, dir, "$DEMO")
		out[i] = strings.ReplaceAll(a, self, "mcpwrap")
	}
	return out
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
// the log prefixers write from other goroutines.
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

func (n *narrator) act(i int, s string) {
	t := fmt.Sprintf("Act %d. %s", i, s)
	n.say("\n%s\n%s", t, strings.Repeat("-", len(t)))
}

func (n *narrator) step(format string, args ...any) { n.say("\n* "+format, args...) }

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
	return &closeWaiter{PipeWriter: pw, done: done}
}

type closeWaiter struct {
	*io.PipeWriter
	done chan struct{}
	once sync.Once
}

func (c *closeWaiter) Close() error {
	var err error
	c.once.Do(func() {
		err = c.PipeWriter.Close()
		<-c.done
	})
	return err
}
