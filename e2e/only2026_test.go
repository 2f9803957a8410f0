package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// A server that speaks only 2026-07-28 and refuses the session era, initialize included, made
// from the go-sdk everything-server (which serves both eras) by refusing, in front of it, every
// message that does not carry the 2026 _meta, and by offering only 2026-07-28 in its
// server/discover answer, as the conformance suite's 2026-only scenario servers do. Over stdio
// it is the test binary run as `e2e.test mcpwrap-e2e-only-2026 COMMAND...`; over HTTP,
// startOnly2026HTTP in front of the everything-server's stateless mode.
const only2026Arg = "mcpwrap-e2e-only-2026"

// The _meta keys that every 2026-07-28 request carries (SEP-2575).
const (
	metaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	metaClientInfo         = "io.modelcontextprotocol/clientInfo"
	metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
)

// only2026Refusal returns the JSON-RPC error for a client message, or nil when the message is a
// 2026-07-28 one (or a response, which carries no _meta). headerVersion is the
// MCP-Protocol-Version header over HTTP, nil over stdio. The codes and messages are those of the
// conformance suite's stateless mock (0.2.0-alpha.12).
func only2026Refusal(msg []byte, headerVersion *string) (id json.RawMessage, refusal map[string]any) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		} `json:"params"`
	}
	if err := json.Unmarshal(msg, &m); err != nil {
		return nil, map[string]any{"code": -32700, "message": "Parse error"}
	}
	if m.Method == "" {
		return m.ID, nil // a response to the server
	}
	if headerVersion != nil && *headerVersion == "" {
		return m.ID, map[string]any{"code": -32020, "message": "Missing MCP-Protocol-Version header"}
	}
	var missing []string
	for _, key := range []string{metaProtocolVersion, metaClientCapabilities} {
		if _, ok := m.Params.Meta[key]; !ok {
			missing = append(missing, key)
		}
	}
	if len(missing) > 0 {
		return m.ID, map[string]any{"code": -32602, "message": fmt.Sprintf("Invalid params: missing _meta keys: %v", missing)}
	}
	var version string
	_ = json.Unmarshal(m.Params.Meta[metaProtocolVersion], &version)
	if headerVersion != nil && *headerVersion != version {
		return m.ID, map[string]any{"code": -32020, "message": "MCP-Protocol-Version header does not match _meta.protocolVersion"}
	}
	if version != protocolVersionStateless {
		return m.ID, map[string]any{"code": -32022, "message": "Unsupported protocol version",
			"data": map[string]any{"supported": []string{protocolVersionStateless}, "requested": version}}
	}
	return m.ID, nil
}

// isDiscover reports whether msg is a server/discover request.
func isDiscover(msg []byte) bool {
	var m struct {
		Method string `json:"method"`
	}
	return json.Unmarshal(msg, &m) == nil && m.Method == "server/discover"
}

// only2026Offer returns the answer to a server/discover with only 2026-07-28 among its
// supportedVersions (msg unchanged when it is not such an answer).
func only2026Offer(msg []byte) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(msg, &m) != nil || m["result"] == nil {
		return msg
	}
	var result map[string]json.RawMessage
	if json.Unmarshal(m["result"], &result) != nil || result["supportedVersions"] == nil {
		return msg
	}
	result["supportedVersions"], _ = json.Marshal([]string{protocolVersionStateless})
	m["result"], _ = json.Marshal(result)
	out, err := json.Marshal(m)
	if err != nil {
		return msg
	}
	return out
}

// runOnly2026 relays newline-delimited messages between stdio and argv's process, answering
// every client request that is not a 2026-07-28 one with its refusal, dropping such
// notifications, and narrowing the server's discover answers to 2026-07-28; it returns the exit
// code.
func runOnly2026(argv []string) int {
	if len(argv) == 0 {
		fmt.Fprintf(os.Stderr, "usage: %s COMMAND [ARGS...]\n", only2026Arg)
		return 2
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return 1
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 1
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var discovers sync.Map // the ids (as JSON) of the client's server/discover requests in flight
	var stdout sync.Mutex  // both directions write to our stdout: refusals and the server's lines
	write := func(line []byte) {
		stdout.Lock()
		defer stdout.Unlock()
		_, _ = os.Stdout.Write(line)
	}
	// The client side: until our stdin ends, then the server's stdin is closed. It is not
	// waited for: when the server is gone, so is this process, as any server's.
	go func() {
		defer in.Close()
		r := bufio.NewReaderSize(os.Stdin, 64<<10)
		for {
			line, err := r.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) > 0 {
				id, refusal := only2026Refusal(line, nil)
				switch {
				case refusal == nil:
					if isDiscover(line) {
						discovers.Store(string(id), true)
					}
					if _, err := in.Write(line); err != nil {
						return
					}
				case id != nil:
					reply, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": refusal})
					write(append(reply, '\n'))
				}
			}
			if err != nil {
				return
			}
		}
	}()
	r := bufio.NewReaderSize(out, 64<<10)
	for {
		line, err := r.ReadBytes('\n')
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(line, &m) == nil && m.Method == "" && m.ID != nil {
			if _, ok := discovers.LoadAndDelete(string(m.ID)); ok {
				line = append(only2026Offer(line), '\n')
			}
		}
		if len(line) > 0 {
			write(line)
		}
		if err != nil {
			break
		}
	}
	if err := cmd.Wait(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", only2026Arg, err)
		return 1
	}
	return 0
}

// only2026Command returns the command line of a stdio server that speaks only 2026-07-28: the
// go-sdk everything-server behind runOnly2026.
func only2026Command(t testing.TB) []string {
	t.Helper()
	self, err := os.Executable()
	require.NoError(t, err)
	return []string{self, only2026Arg, everythingServerPath}
}

// startOnly2026HTTP serves, on a loopback httptest server, a streamable HTTP server that speaks
// only 2026-07-28: POSTs that are not 2026-07-28 requests are refused with HTTP 400 and their
// error (as the suite's 2026-only scenario servers do), the rest are proxied to target (the
// everything-server in stateless mode); GET and DELETE, which the 2026 era does not use, get 405.
// It returns the server's URL.
func startOnly2026HTTP(t testing.TB, target string) string {
	t.Helper()
	upstream, err := url.Parse(target)
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: upstream.Scheme, Host: upstream.Host})
	proxy.FlushInterval = -1 // SSE events pass at once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 16<<20))
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		header := r.Header.Get("MCP-Protocol-Version")
		if id, refusal := only2026Refusal(body, &header); refusal != nil {
			if id == nil {
				id = json.RawMessage("null")
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": id, "error": refusal})
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		if !isDiscover(body) {
			proxy.ServeHTTP(w, r)
			return
		}
		// The answer to server/discover, JSON or one SSE event, narrowed to 2026-07-28.
		rec := httptest.NewRecorder()
		proxy.ServeHTTP(rec, r)
		answer := rec.Body.Bytes()
		if strings.HasPrefix(rec.Header().Get("Content-Type"), "text/event-stream") {
			var b bytes.Buffer
			for line := range strings.Lines(string(answer)) {
				if data, ok := strings.CutPrefix(line, "data: "); ok {
					line = "data: " + string(only2026Offer([]byte(strings.TrimRight(data, "\r\n")))) + "\n"
				}
				b.WriteString(line)
			}
			answer = b.Bytes()
		} else {
			answer = only2026Offer(answer)
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.Header().Del("Content-Length")
		w.WriteHeader(rec.Code)
		_, _ = w.Write(answer)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}
