package e2e

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpwrap/mcpwrap/internal/syncbuf"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

const (
	// testTimeout bounds one test's conversation with its peers.
	testTimeout = 60 * time.Second
	// terminateAfter is how long a go-sdk client waits after closing stdin before it signals.
	terminateAfter = 2 * time.Second
	// protocolVersionInitialize is the newest protocol version that opens with initialize.
	protocolVersionInitialize = "2025-11-25"
	// protocolVersionStateless is the draft that opens with server/discover instead.
	protocolVersionStateless = "2026-07-28"
)

// mcpwrapEnv returns the environment entries that make an mcpwrap run hermetic: its config file
// (holding configJSON) and its state directory live in a fresh temporary directory, so the
// developer's own config and tool approvals never leak into a test.
func mcpwrapEnv(t testing.TB, configJSON string) []string {
	t.Helper()
	dir := t.TempDir()
	config := filepath.Join(dir, "config.json")
	require.NoError(t, os.WriteFile(config, []byte(configJSON), 0o600))
	return []string{
		"MCPWRAP_CONFIG=" + config,
		"MCPWRAP_STATE_DIR=" + filepath.Join(dir, "state"),
	}
}

// transparentConfig turns tool-definition pinning off: a wrapped server whose catalog changes
// mid-session (the everything-server's test_trigger_tool_change does) then stays unlocked, and
// the relay must be fully transparent.
const transparentConfig = `{"defaults": {"approval": "off"}}`

// wrapArgs returns mcpwrap's arguments to wrap upstream (a command line) under name.
func wrapArgs(name string, upstream ...string) []string {
	return append([]string{"--name", name, "--"}, upstream...)
}

// connect starts cmd and connects client to it over stdio with the go-sdk CommandTransport,
// recording every message the client reads into rec (nil records nothing). t.Cleanup closes
// the session and kills whatever is left of the process group.
func connect(ctx context.Context, t testing.TB, client *mcp.Client, opts *mcp.ClientSessionOptions, rec *transcript, cmd *exec.Cmd) *mcp.ClientSession {
	t.Helper()
	stderr := &syncbuf.Buffer{}
	cmd.Stderr = stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return killGroup(cmd.Process.Pid) }
	cmd.WaitDelay = waitDelay

	var transport mcp.Transport = &mcp.CommandTransport{Command: cmd, TerminateDuration: terminateAfter}
	if rec != nil {
		transport = &recordingTransport{Transport: transport, rec: rec}
	}
	session, err := client.Connect(ctx, transport, opts)
	if err != nil {
		t.Logf("%s stderr:\n%s", filepath.Base(cmd.Path), stderr)
		if cmd.Process != nil {
			_ = killGroup(cmd.Process.Pid)
		}
	}
	require.NoError(t, err, "connect to %s", cmd.Args)

	t.Cleanup(func() {
		_ = killGroup(cmd.Process.Pid)
		if t.Failed() {
			t.Logf("%s stderr:\n%s", filepath.Base(cmd.Path), stderr)
		}
	})
	t.Cleanup(func() { _ = session.Close() })
	return session
}

// wrapOptions tunes connectWrapped. The zero value wraps under the name "upstream" with an empty
// config, default session options and no recording.
type wrapOptions struct {
	Name    string   // --name
	Config  string   // the config file's content (see mcpwrapEnv)
	Flags   []string // more mcpwrap flags, before "--"
	Session *mcp.ClientSessionOptions
	Record  *transcript // receives every message the client reads
}

// connectWrapped connects client to `mcpwrap [flags] -- upstream...`, hermetic (see mcpwrapEnv).
func connectWrapped(ctx context.Context, t testing.TB, client *mcp.Client, opts wrapOptions, upstream ...string) *mcp.ClientSession {
	t.Helper()
	name, config := cmp.Or(opts.Name, "upstream"), cmp.Or(opts.Config, `{}`)
	args := append(slices.Clone(opts.Flags), wrapArgs(name, upstream...)...)
	cmd := exec.CommandContext(ctx, mcpwrapPath, args...)
	cmd.Env = append(os.Environ(), mcpwrapEnv(t, config)...)
	return connect(ctx, t, client, opts.Session, opts.Record, cmd)
}

// transcript records the JSON-RPC messages a client reads, in order. Safe for concurrent use.
type transcript struct {
	mu   sync.Mutex
	msgs []json.RawMessage
}

func (r *transcript) add(msg jsonrpc.Message) {
	raw, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		raw, _ = json.Marshal(map[string]string{"unencodable": err.Error()})
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, raw)
}

// Take returns the messages recorded since the last Take and forgets them.
func (r *transcript) Take() []json.RawMessage {
	r.mu.Lock()
	defer r.mu.Unlock()
	msgs := r.msgs
	r.msgs = nil
	return msgs
}

// recordingTransport records every message read from its Transport's connections. Results and
// params stay raw JSON (jsonrpc.Response.Result is a json.RawMessage), so fields the SDK does not
// model are recorded too.
type recordingTransport struct {
	mcp.Transport
	rec *transcript
}

func (t *recordingTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &recordingConn{Connection: conn, rec: t.rec}, nil
}

type recordingConn struct {
	mcp.Connection
	rec *transcript
}

func (c *recordingConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err == nil {
		c.rec.add(msg)
	}
	return msg, err
}

// lineSession drives a process with raw newline-delimited JSON-RPC: what it writes is exactly
// what the process reads, and every line the process prints on stdout is kept.
type lineSession struct {
	proc  *process
	lines chan []byte // stdout lines in order; closed at EOF

	mu  sync.Mutex
	all [][]byte // every stdout line read so far
}

// startLineSession starts name with args (see startProcess) and reads its stdout line by line.
func startLineSession(ctx context.Context, t testing.TB, env []string, name string, args ...string) *lineSession {
	t.Helper()
	p := startProcess(ctx, t, processOptions{Env: env, PipeStdin: true, PipeStdout: true}, name, args...)
	s := &lineSession{proc: p, lines: make(chan []byte)}
	go func() {
		defer close(s.lines)
		sc := bufio.NewScanner(p.Stdout)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			line := append([]byte(nil), sc.Bytes()...)
			s.mu.Lock()
			s.all = append(s.all, line)
			s.mu.Unlock()
			select {
			case s.lines <- line:
			case <-ctx.Done():
				return
			}
		}
	}()
	return s
}

// Send writes msg as one JSON line.
func (s *lineSession) Send(t testing.TB, msg any) {
	t.Helper()
	line, err := json.Marshal(msg)
	require.NoError(t, err)
	_, err = s.proc.Stdin.Write(append(line, '\n'))
	require.NoError(t, err)
}

// Call sends a request with the given id and returns the raw response with that id, skipping
// (but keeping in All) whatever else arrives first.
func (s *lineSession) Call(ctx context.Context, t testing.TB, id any, method string, params any) json.RawMessage {
	t.Helper()
	s.Send(t, map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	wantID, err := json.Marshal(id)
	require.NoError(t, err)
	for {
		select {
		case line, ok := <-s.lines:
			require.True(t, ok, "stdout closed before the response to %s", method)
			var envelope struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if json.Unmarshal(line, &envelope) == nil && envelope.Method == "" && string(envelope.ID) == string(wantID) {
				return line
			}
		case <-ctx.Done():
			require.FailNow(t, "no response", "to %s: %v", method, ctx.Err())
		}
	}
}

// Initialize performs the initialize handshake at protocolVersionInitialize and returns the raw
// response.
func (s *lineSession) Initialize(ctx context.Context, t testing.TB) json.RawMessage {
	t.Helper()
	resp := s.Call(ctx, t, 0, "initialize", map[string]any{
		"protocolVersion": protocolVersionInitialize,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]any{"name": "mcpwrap-e2e-raw", "version": "1.0.0"},
	})
	s.Send(t, map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	return resp
}

// CloseAndDrain closes the process's stdin, reads stdout to EOF, waits for the process to exit
// and returns every stdout line.
func (s *lineSession) CloseAndDrain(ctx context.Context, t testing.TB) [][]byte {
	t.Helper()
	require.NoError(t, s.proc.Stdin.Close())
	for {
		select {
		case _, ok := <-s.lines:
			if !ok {
				err := s.proc.Wait(ctx)
				require.NotErrorIs(t, err, context.DeadlineExceeded, "process did not exit after stdin EOF")
				return s.All()
			}
		case <-ctx.Done():
			require.FailNow(t, "stdout not closed after stdin EOF", "%v", ctx.Err())
		}
	}
}

// All returns every stdout line read so far.
func (s *lineSession) All() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]byte(nil), s.all...)
}
