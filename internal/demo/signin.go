package demo

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpwrap/mcpwrap/internal/era"
	"github.com/mcpwrap/mcpwrap/internal/oauthtest"
)

// freeLoopbackPort returns a loopback port that is free now, for the
// sign-in redirect: the default port, derived from the server's name, may
// be taken on this machine (by another sidecar, or a test beside the demo).
func freeLoopbackPort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("no free loopback port for the sign-in redirect: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// signIn is act 4: a remote server that needs a sign-in. An authorization
// server and resource server run inside the demo; a headless stand-in for
// the browser (`mcpwrap demo-browser`) "signs in" when the demo says so.
func (d *demo) signIn(ctx context.Context) error {
	n := d.n
	n.act(4, "A server that needs you to sign in")
	as, err := oauthtest.Start(oauthtest.Options{})
	if err != nil {
		return err
	}
	defer as.Close()
	n.say("A remote MCP server protected by OAuth runs at %s/mcp, with its authorization", as.URL)
	n.say("server. mcpwrap signs in itself (discovery, registration, PKCE), in a browser it opens.")
	n.say("Here the browser is a headless stand-in that waits until the demo lets the user finish.")
	if err := d.writeConfig(`{}`); err != nil {
		return err
	}
	signal := filepath.Join(d.dir, "user-signs-in")
	port, err := freeLoopbackPort()
	if err != nil {
		return err
	}
	args := []string{"--config", filepath.Join(d.dir, "config.json"), "--state-dir", filepath.Join(d.dir, "state"),
		"--name", "linear", "--url", as.URL + "/mcp", "--oauth-redirect-port", strconv.Itoa(port),
		"--log-level", "warn", "--ready-timeout", "10s"}
	n.say("  $ mcpwrap %s", strings.Join(quoteAll(shorten(args, d.dir, d.self)), " "))
	cmd := exec.CommandContext(ctx, d.self, args...)
	cmd.Env = append(os.Environ(),
		"MCPWRAP_BROWSER="+d.self+" demo-browser --wait "+signal,
		"MCPWRAP_TOKEN_STORE=file")
	logs := n.prefixWriter("    log | ")
	cmd.Stderr = logs
	changed := make(chan struct{}, 8)
	client := mcp.NewClient(&mcp.Implementation{Name: "demo-client", Version: "1.0.0"},
		&mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} }})
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: era.SessionVersion})
	if err != nil {
		logs.Close()
		return fmt.Errorf("connect: %w", err)
	}
	c := &connection{ClientSession: cs, logs: logs}
	defer c.Close()

	n.step("The server answered 401. mcpwrap opened the browser, gave it a moment, then told the agent:")
	n.say("  %s", c.InitializeResult().Instructions)
	n.step("What the agent sees meanwhile:")
	tools, err := c.ListTools(ctx, nil)
	if err != nil {
		return fmt.Errorf("tools/list: %w", err)
	}
	for _, t := range tools.Tools {
		n.say("  - %s", t.Name)
	}
	n.step("The user signs in in the browser tab:")
	if err := os.WriteFile(signal, nil, 0o600); err != nil {
		return err
	}
	if err := waitChanged(changed, 20*time.Second, "after the sign-in"); err != nil {
		return err
	}
	n.say("  <- notifications/tools/list_changed")
	n.step("The server's tools are there, and calls carry the token:")
	if tools, err = c.ListTools(ctx, nil); err != nil {
		return fmt.Errorf("tools/list: %w", err)
	}
	for _, t := range tools.Tools {
		n.say("  - %-8s %s", t.Name, t.Description)
	}
	if err := d.call(ctx, c, "whoami", nil); err != nil {
		return err
	}
	n.say("  The token is stored for the user (OS keychain, else a 0600 file), refreshed when it")
	n.say("  expires, and shared by every sidecar of the server; `mcpwrap logout linear` forgets it.")
	return nil
}

// Browse is the hidden `mcpwrap demo-browser [--wait FILE] URL`: the demo's
// stand-in for a browser. It waits until FILE exists (the user "finishes"),
// then follows URL's redirects, back to mcpwrap's sign-in callback.
func Browse(args []string, stderr io.Writer) int {
	wait := ""
	if len(args) == 3 && args[0] == "--wait" {
		wait, args = args[1], args[2:]
	}
	if len(args) != 1 {
		fmt.Fprintln(stderr, "usage: mcpwrap demo-browser [--wait FILE] URL")
		return 2
	}
	for deadline := time.Now().Add(time.Minute); wait != ""; {
		if _, err := os.Stat(wait); err == nil {
			break
		}
		if time.Now().After(deadline) {
			return 1
		}
		time.Sleep(50 * time.Millisecond) // a stand-in for a person: polling is fine
	}
	resp, err := http.Get(args[0])
	if err != nil {
		fmt.Fprintln(stderr, "demo-browser:", err)
		return 1
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return 0
}
