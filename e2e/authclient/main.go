// Command authclient drives `mcpwrap --url` over stdio the way the official
// conformance suite's client auth scenarios expect of a client: the suite
// runs it with the scenario server's URL as its last argument, and it signs
// in through mcpwrap (open the session, wait for the tools to appear,
// tools/list, call test-tool). It speaks one protocol era only, and is never
// told which era the scenario's server speaks, as a user's client is not:
//
//	authclient [-era 2025-11-25] SERVER_URL   initialize, as desktop clients do
//	authclient -era 2026-07-28 SERVER_URL     server/discover and per-request _meta
//	authclient browse URL                     follow URL's redirects (to mcpwrap's callback)
//
// Environment: MCPWRAP_BIN (the binary under test), MCP_CONFORMANCE_CONTEXT
// (client_id and client_secret for pre-registration), AUTHCLIENT_STATE_DIR
// (mcpwrap's state directory; a fresh one when empty), AUTHCLIENT_BROWSER_LOG
// (a file each browse appends a line to), AUTHCLIENT_BROWSE_NOOP (browse
// only logs: a user who ignores the tab).
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

func main() {
	if len(os.Args) == 3 && os.Args[1] == "browse" {
		if err := browse(os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, "authclient browse:", err)
			os.Exit(1)
		}
		return
	}
	era := flag.String("era", eraSession, "the one protocol version this client speaks: "+eraSession+" or "+eraStateless)
	flag.Parse()
	if flag.NArg() < 1 || (*era != eraSession && *era != eraStateless) {
		fmt.Fprintln(os.Stderr, "usage: authclient [-era "+eraSession+"|"+eraStateless+"] SERVER_URL | authclient browse URL")
		os.Exit(2)
	}
	if err := run(flag.Arg(flag.NArg()-1), *era); err != nil {
		fmt.Fprintln(os.Stderr, "authclient:", err)
		os.Exit(1)
	}
}

// browse is the headless browser: the authorization server redirects at
// once to mcpwrap's loopback callback, which the default client follows.
func browse(url string) error {
	if log := os.Getenv("AUTHCLIENT_BROWSER_LOG"); log != "" {
		f, err := os.OpenFile(log, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		fmt.Fprintln(f, "open")
		f.Close()
	}
	if os.Getenv("AUTHCLIENT_BROWSE_NOOP") != "" {
		return nil // a user who ignores the tab
	}
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return nil
}

const waitForTools = 15 * time.Second

// The two eras: a session opened with initialize, and 2026-07-28, where
// every request carries its version, client info and capabilities in _meta.
const (
	eraSession   = "2025-11-25"
	eraStateless = "2026-07-28"
)

func run(serverURL, era string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	stateDir := os.Getenv("AUTHCLIENT_STATE_DIR")
	if stateDir == "" {
		if stateDir, err = os.MkdirTemp("", "authclient-"); err != nil {
			return err
		}
		defer os.RemoveAll(stateDir)
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	args := []string{"--name", "conformance", "--url", serverURL, "--state-dir", stateDir,
		"--oauth-redirect-port", strconv.Itoa(port),
		// As the go-sdk's reference client: a client ID metadata document
		// when the server supports them.
		"--oauth-client-metadata-url", "https://conformance-test.local/client-metadata.json",
		"--log-level", "debug"}
	env := append(os.Environ(), "MCPWRAP_BROWSER="+self+" browse", "MCPWRAP_TOKEN_STORE=file")
	var cc struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	_ = json.Unmarshal([]byte(os.Getenv("MCP_CONFORMANCE_CONTEXT")), &cc)
	if cc.ClientID != "" {
		args = append(args, "--oauth-client-id", cc.ClientID)
		if cc.ClientSecret != "" {
			args = append(args, "--oauth-client-secret-env", "AUTHCLIENT_CLIENT_SECRET")
			env = append(env, "AUTHCLIENT_CLIENT_SECRET="+cc.ClientSecret)
		}
	}
	cmd := exec.Command(os.Getenv("MCPWRAP_BIN"), args...)
	cmd.Env = env
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() {
		stdin.Close()
		_ = cmd.Wait()
	}()

	msgs := make(chan map[string]json.RawMessage)
	failed := make(chan string, 1)
	signedIn := make(chan struct{}, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			var m map[string]json.RawMessage
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				msgs <- m
			}
		}
		close(msgs)
	}()
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(os.Stderr, line)
			if strings.Contains(line, "INF signed in ") {
				select {
				case signedIn <- struct{}{}:
				default:
				}
			}
			if strings.Contains(line, "sign-in failed") {
				select {
				case failed <- line:
				default:
				}
			}
		}
	}()
	c := &conn{in: stdin, msgs: msgs, failed: failed, signedIn: signedIn}

	meta := ""
	if era == eraStateless {
		if meta, err = c.discover(); err != nil {
			return err
		}
	} else if err := c.initialize(); err != nil {
		return err
	}
	if _, err := c.call("tools/list", `{`+meta+`}`, 30*time.Second); err != nil {
		return err
	}
	if meta != "" {
		meta = "," + meta
	}
	res, err := c.call("tools/call", `{"name":"test-tool","arguments":{}`+meta+`}`, 30*time.Second)
	if err != nil {
		return err
	}
	var cr struct {
		IsError bool `json:"isError"`
	}
	_ = json.Unmarshal(res, &cr)
	if cr.IsError {
		return fmt.Errorf("test-tool failed: %s", res)
	}
	return nil
}

// meta2026 is the _meta member of every 2026-07-28 request.
const meta2026 = `"_meta":{"io.modelcontextprotocol/protocolVersion":"` + eraStateless + `","io.modelcontextprotocol/clientInfo":{"name":"authclient","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`

// discover opens a 2026-07-28 session with server/discover. When mcpwrap
// answers for a server that wants a sign-in, it waits for the sign-in and
// asks again. It returns the _meta member later requests carry.
func (c *conn) discover() (string, error) {
	for attempt := 0; attempt < 100; attempt++ {
		res, err := c.call("server/discover", `{`+meta2026+`}`, 30*time.Second)
		if err != nil {
			return "", err
		}
		if !strings.Contains(string(res), "mcpwrap-degraded") {
			return meta2026, nil
		}
		if attempt == 0 {
			fmt.Fprintf(os.Stderr, "authclient: told: %s\n", res)
			if err := c.waitSignIn(waitForTools); err != nil {
				return "", err
			}
		}
		// Signed in: mcpwrap loads the server again; ask until it has.
		time.Sleep(50 * time.Millisecond)
	}
	return "", errors.New("mcpwrap never loaded the server after the sign-in")
}

// initialize opens a 2025-11-25 session; when mcpwrap answers for a server
// that wants a sign-in, it waits for the tools to appear.
func (c *conn) initialize() error {
	init, err := c.call("initialize", `{"protocolVersion":"`+eraSession+`","capabilities":{},"clientInfo":{"name":"authclient","version":"1"}}`, 30*time.Second)
	if err != nil {
		return err
	}
	if err := c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil {
		return err
	}
	var ir struct {
		ServerInfo struct {
			Version string `json:"version"`
		} `json:"serverInfo"`
		Instructions string `json:"instructions"`
	}
	_ = json.Unmarshal(init, &ir)
	if ir.ServerInfo.Version == "mcpwrap-degraded" {
		fmt.Fprintln(os.Stderr, "authclient: told:", ir.Instructions)
		return c.waitNotification("notifications/tools/list_changed", waitForTools)
	}
	return nil
}

// waitSignIn waits for mcpwrap to log that the sign-in completed.
func (c *conn) waitSignIn(timeout time.Duration) error {
	select {
	case <-c.signedIn:
		return nil
	case line := <-c.failed:
		return fmt.Errorf("mcpwrap: %s", line)
	case <-time.After(timeout):
		return fmt.Errorf("mcpwrap did not sign in within %s", timeout)
	}
}

type conn struct {
	signedIn chan struct{}
	in       io.Writer
	msgs     chan map[string]json.RawMessage
	failed   chan string
	id       int
}

func (c *conn) send(line string) error {
	_, err := io.WriteString(c.in, line+"\n")
	return err
}

func (c *conn) call(method, params string, timeout time.Duration) (json.RawMessage, error) {
	c.id++
	id := strconv.Itoa(c.id)
	if err := c.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"` + method + `","params":` + params + `}`); err != nil {
		return nil, err
	}
	deadline := time.After(timeout)
	for {
		select {
		case m, ok := <-c.msgs:
			if !ok {
				return nil, errors.New("mcpwrap closed its stdout")
			}
			if !bytes.Equal(m["id"], []byte(id)) {
				continue
			}
			if e, ok := m["error"]; ok {
				return nil, fmt.Errorf("%s: %s", method, e)
			}
			return m["result"], nil
		case <-deadline:
			return nil, fmt.Errorf("%s: no answer in %s", method, timeout)
		}
	}
}

func (c *conn) waitNotification(method string, timeout time.Duration) error {
	deadline := time.After(timeout)
	for {
		select {
		case m, ok := <-c.msgs:
			if !ok {
				return errors.New("mcpwrap closed its stdout")
			}
			if string(m["method"]) == `"`+method+`"` {
				return nil
			}
		case line := <-c.failed:
			return fmt.Errorf("mcpwrap: %s", line)
		case <-deadline:
			return fmt.Errorf("no %s in %s", method, timeout)
		}
	}
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
