package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests hold what one greedy client can take of `mcpwrap --listen` as a whole: its memory
// and its session slots. They speak HTTP by hand, as such a client would.

// rawPost POSTs body to url with the transport's headers and sessionID (when not empty), and
// returns the response with its body read.
func rawPost(ctx context.Context, client *http.Client, url, sessionID string, body io.Reader, length int64) (*http.Response, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, body)
	if err != nil {
		return nil, nil, err
	}
	req.ContentLength = length // -1: chunked
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sessionID != "" {
		req.Header.Set("Mcp-Session-Id", sessionID)
		req.Header.Set("Mcp-Protocol-Version", protocolVersionInitialize)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	return resp, out, err
}

// openRawSession opens a session-era session with initialize (and notifications/initialized)
// and returns its id.
func openRawSession(ctx context.Context, t *testing.T, client *http.Client, url string) (string, error) {
	t.Helper()
	id, _, err := initializeRaw(ctx, client, url)
	return id, err
}

// initializeRaw opens a session-era session with initialize (and notifications/initialized)
// and returns its id and the initialize answer's message.
func initializeRaw(ctx context.Context, client *http.Client, url string) (id string, answer []byte, err error) {
	init := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, protocolVersionInitialize)
	resp, body, err := rawPost(ctx, client, url, "", strings.NewReader(init), int64(len(init)))
	if err != nil {
		return "", nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return "", nil, fmt.Errorf("initialize: %s: %s", resp.Status, body)
	}
	id, answer = resp.Header.Get("Mcp-Session-Id"), sseData(body)
	note := `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	if resp, body, err = rawPost(ctx, client, url, id, strings.NewReader(note), int64(len(note))); err != nil {
		return "", nil, err
	}
	if resp.StatusCode != http.StatusAccepted {
		return "", nil, fmt.Errorf("notifications/initialized: %s: %s", resp.Status, body)
	}
	return id, answer, nil
}

// TestListenLargeBodiesKeepMemoryBounded sends 32 POSTs of 63 MiB at once (tool calls of the raw
// server's sink, which takes anything), each a message under the 64 MiB limit, to one session,
// from 4 clients (loopback addresses), so that the budget as a whole binds before any client's
// share of it (129 MiB: 2 bodies): mcpwrap holds only as many bodies as its budget for bodies
// allows (256 MiB: 4 of them) and refuses the others at once with 503 and Retry-After, reading
// them only to drop them, so its peak RSS stays bounded whatever the number of connections:
// 4.0 GiB before the budget (127 MiB a body, read into buffers grown by copying), 269 MiB with
// it. Every POST is answered.
func TestListenLargeBodiesKeepMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("sends 2 GiB")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	self, err := os.Executable()
	require.NoError(t, err)
	srv := startListen(ctx, t, listenOptions{}, self, rawServerArg)
	sid, err := openRawSession(ctx, t, http.DefaultClient, srv.URL)
	require.NoError(t, err)

	const posts, size = 32, 63 << 20
	head := `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"sink","arguments":{"pad":"`
	pad := bytes.Repeat([]byte("x"), size-len(head)-16)
	body := func(id int) []byte {
		return append(append(fmt.Appendf(nil, head, id), pad...), `"}}}`...)
	}
	type outcome struct {
		status     int
		retryAfter string
		body       []byte
		err        error
	}
	out := make([]outcome, posts)
	clients := []*http.Client{clientFrom("127.0.0.1"), clientFrom("127.0.0.2"), clientFrom("127.0.0.3"), clientFrom("127.0.0.4")}
	var wg sync.WaitGroup
	for i := range posts {
		wg.Go(func() {
			b := body(i + 2)
			resp, got, err := rawPost(ctx, clients[i%len(clients)], srv.URL, sid, bytes.NewReader(b), int64(len(b)))
			if err != nil {
				out[i].err = err
				return
			}
			out[i] = outcome{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After"), body: got}
		})
	}
	wg.Wait()
	hwm, err := procStatusKiB(srv.Pid(), "VmHWM:")
	require.NoError(t, err)

	served, refused := 0, 0
	for i, o := range out {
		if !assert.NoError(t, o.err, "POST %d", i) {
			continue
		}
		switch o.status {
		case http.StatusOK:
			var msg struct {
				Result *json.RawMessage `json:"result"`
			}
			assert.NoError(t, json.Unmarshal(sseData(o.body), &msg), "POST %d: %.300s", i, o.body)
			assert.NotNil(t, msg.Result, "POST %d: %.300s", i, o.body)
			served++
		case http.StatusServiceUnavailable:
			assert.NotEmpty(t, o.retryAfter, "POST %d refused without Retry-After", i)
			refused++
		default:
			t.Errorf("POST %d: %d %.300s", i, o.status, o.body)
		}
	}
	t.Logf("%d POSTs of %d bytes at once: %d served, %d refused; mcpwrap's peak RSS %d KiB", posts, size, served, refused, hwm)
	assert.Positive(t, served, "some calls are served")
	// The budget counts the bodies held; a body released waits for the collector, whose heap goal
	// is twice what is live (GOGC=100). So the bound is twice the budget, plus the process's own
	// 96 MiB (runtime, binary, stacks, buffers): 8 bodies served at once reached 531 MiB in a CI
	// run, against 4 GiB before the budget.
	assert.Less(t, hwm, (2*256+96)<<10, "mcpwrap's peak RSS must stay under twice the budget for bodies and its own 96 MiB")
}

// sseData returns the data of the one event of an SSE answer, or body itself when it is JSON.
func sseData(body []byte) []byte {
	var data []byte
	for _, line := range bytes.Split(body, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
			data = append(data, rest...)
		} else if rest, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			data = append(data, rest...)
		}
	}
	if data == nil {
		return body
	}
	return data
}

// clientFrom returns an HTTP client whose connections come from ip, a loopback address: to
// mcpwrap, another client than one from 127.0.0.1.
func clientFrom(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
}

// TestListenOneClientCannotTakeEverySession floods `mcpwrap --listen --max-sessions 10` with
// initialize POSTs from one client (127.0.0.2), which never uses the sessions it opens, then
// measures what is left for another client (127.0.0.1): how many sessions it can open and keep,
// and whether a 2026-07-28 client is served. Before, the flood took every slot for the idle
// timeout (10 minutes): the other client opened 0 and the 2026-07-28 client got 503. Now the
// flood holds at most its share (half the slots: past it, each initialize ends the flood's own
// idle session used least recently), the other client keeps its 5 and the 2026-07-28 client,
// whose session's slot is kept, is served.
func TestListenOneClientCannotTakeEverySession(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const slots = 10
	srv := startListen(ctx, t, listenOptions{Flags: []string{"--max-sessions", fmt.Sprint(slots)}}, fixtureCommand(t, fixtureBanner)...)

	flooder := clientFrom("127.0.0.2")
	flooded := 0
	for range slots + 5 {
		if _, err := openRawSession(ctx, t, flooder, srv.URL); err == nil {
			flooded++
		}
	}

	other := clientFrom("127.0.0.1")
	var opened []string
	for range slots {
		if id, err := openRawSession(ctx, t, other, srv.URL); err == nil {
			opened = append(opened, id)
		}
	}
	kept := 0
	for i, id := range opened {
		ping := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, 100+i)
		if resp, _, err := rawPost(ctx, other, srv.URL, id, strings.NewReader(ping), int64(len(ping))); err == nil && resp.StatusCode == http.StatusOK {
			kept++
		}
	}

	client := mcp.NewClient(&mcp.Implementation{Name: "stateless", Version: "1"}, nil)
	cs, statelessErr := connectHTTP(ctx, t, client, &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: other, DisableStandaloneSSE: true}, "")
	if statelessErr == nil {
		_, statelessErr = cs.ListTools(ctx, nil)
	}
	t.Logf("the flood opened %d sessions of %d slots; then the other client opened %d and kept %d; a 2026-07-28 client: %v",
		flooded, slots, len(opened), kept, statelessErr)
	assert.GreaterOrEqual(t, kept, slots/2, "the other client keeps at least its share of the slots")
	assert.NoError(t, statelessErr, "the 2026-07-28 client is served")
}

// TestListenInitializeStartsNoServer: an initialize POST starts no server once mcpwrap remembers
// what the server answered to one (its last successful load, in the state store): the session's
// server starts on its first request the server must answer. A first session, with nothing
// remembered, starts its server at once; then 20 initialize POSTs start none, and each is
// answered with what the first session's server answered, and `mcpwrap status` shows them idle
// (before: "transient", 0 attempts, as if failing to load); a tools/list on one of them starts
// exactly one, and the session works. Before, every initialize started a server (21 for these
// 21), whether or not its session was ever used.
func TestListenInitializeStartsNoServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	startsFile := filepath.Join(t.TempDir(), "starts")
	srv := startListen(ctx, t, listenOptions{}, append(fixtureCommand(t, fixtureSlowRestart), startsFile, "0s")...)
	starts := func() int {
		data, _ := os.ReadFile(startsFile)
		return bytes.Count(data, []byte("start\n"))
	}
	result := func(answer []byte) string {
		var msg struct {
			Result json.RawMessage `json:"result"`
		}
		require.NoError(t, json.Unmarshal(answer, &msg), "%s", answer)
		require.NotNil(t, msg.Result, "%s", answer)
		return string(msg.Result)
	}

	_, answer, err := initializeRaw(ctx, http.DefaultClient, srv.URL)
	require.NoError(t, err)
	first := result(answer)
	require.Equal(t, 1, starts(), "nothing remembered yet: the first session's server starts on its initialize")
	require.Eventually(t, func() bool {
		data, err := os.ReadFile(filepath.Join(srv.StateDir, "servers", "upstream.json"))
		return err == nil && bytes.Contains(data, []byte(`"upstream"`))
	}, 10*time.Second, 50*time.Millisecond, "the load is remembered in the state dir")

	const flood = 20
	ids := make([]string, 0, flood)
	for range flood {
		id, answer, err := initializeRaw(ctx, http.DefaultClient, srv.URL)
		require.NoError(t, err)
		assert.JSONEq(t, first, result(answer), "the remembered answer is the server's")
		ids = append(ids, id)
	}
	flooded := starts() - 1
	t.Logf("%d initialize POSTs started %d servers", flood, flooded)
	assert.Zero(t, flooded, "the initializes started no server")

	// `mcpwrap status` tells the sessions not started as idle: no attempt, no error, not a load
	// failing ("transient, 0 attempts").
	sessions := func() map[string]int {
		p := startProcess(ctx, t, processOptions{Env: []string{"MCPWRAP_STATE_DIR=" + srv.StateDir}}, mcpwrapPath, "status", "--json")
		var fronts []struct {
			Sessions []struct {
				Status   string `json:"status"`
				Attempts int    `json:"attempts"`
				Error    string `json:"error"`
			} `json:"sessions"`
		}
		if p.Wait(ctx) != nil || json.Unmarshal([]byte(p.Output()), &fronts) != nil || len(fronts) != 1 {
			return nil
		}
		count := map[string]int{}
		for _, ss := range fronts[0].Sessions {
			count[fmt.Sprintf("%s/%d/%s", ss.Status, ss.Attempts, ss.Error)]++
		}
		return count
	}
	var got map[string]int
	want := map[string]int{"available/1/": 1, "idle/0/": flood}
	require.Eventually(t, func() bool { got = sessions(); return assert.ObjectsAreEqual(want, got) },
		10*time.Second, 100*time.Millisecond, "mcpwrap status --json sessions (status/attempts/error): %v", &got)

	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	resp, body, err := rawPost(ctx, http.DefaultClient, srv.URL, ids[0], strings.NewReader(list), int64(len(list)))
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	assert.Contains(t, string(sseData(body)), `"name":"`+fixturePIDTool+`"`, "the server's own tools")
	assert.Equal(t, 2, starts(), "a tools/list started exactly one server: the first session's and this one's")

	call := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"` + fixturePIDTool + `","arguments":{}}}`
	resp, body, err = rawPost(ctx, http.DefaultClient, srv.URL, ids[0], strings.NewReader(call), int64(len(call)))
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	assert.Contains(t, string(sseData(body)), `"pid"`, "the session works")
	assert.Equal(t, 2, starts(), "no other server started")
}

// TestListenDisabledServerIsNotGreetedFromMemory: once the config turns a server off
// (`enabled: false`), a new session's initialize is not answered with what the server answered
// in its last load, as if it would start: it is told the server is disabled, and its tools/list
// (the discovery tool alone) and tools/call (server_disabled) are the answers of a disabled
// server nothing is remembered of; no server starts. Before, the initialize was answered from
// memory and the session looked like one about to start.
func TestListenDisabledServerIsNotGreetedFromMemory(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	startsFile := filepath.Join(t.TempDir(), "starts")
	upstream := append(fixtureCommand(t, fixtureSlowRestart), startsFile, "0s")
	srv := startListen(ctx, t, listenOptions{}, upstream...)
	starts := func() int {
		data, _ := os.ReadFile(startsFile)
		return bytes.Count(data, []byte("start\n"))
	}
	_, _, err := initializeRaw(ctx, http.DefaultClient, srv.URL)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		data, err := os.ReadFile(filepath.Join(srv.StateDir, "servers", "upstream.json"))
		return err == nil && bytes.Contains(data, []byte(`"protocol_version"`))
	}, 10*time.Second, 50*time.Millisecond, "the load is remembered in the state dir")

	const disabled = `{"servers":{"upstream":{"enabled":false}}}`
	require.NoError(t, os.WriteFile(srv.ConfigPath, []byte(disabled), 0o600))
	type view struct{ instructions, list, call string }
	// initialize opens a session on url and returns its id and the instructions its initialize
	// was answered with.
	initialize := func(url string) (id, instructions string, err error) {
		id, answer, err := initializeRaw(ctx, http.DefaultClient, url)
		if err != nil {
			return "", "", err
		}
		var hs struct {
			Result struct {
				Instructions string `json:"instructions"`
			} `json:"result"`
		}
		if err := json.Unmarshal(answer, &hs); err != nil {
			return "", "", fmt.Errorf("%w: %s", err, answer)
		}
		return id, hs.Result.Instructions, nil
	}
	// agentView completes v with what the session id on url answers to tools/list and tools/call.
	agentView := func(url, id string, v view) view {
		post := func(msg string) string {
			resp, body, err := rawPost(ctx, http.DefaultClient, url, id, strings.NewReader(msg), int64(len(msg)))
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
			return string(sseData(body))
		}
		v.list = post(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
		v.call = post(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"` + fixturePIDTool + `","arguments":{}}}`)
		return v
	}
	var (
		got view
		id  string
	)
	require.Eventually(t, func() bool { // the front reloads its config within a moment
		var err error
		id, got.instructions, err = initialize(srv.URL)
		return err == nil && strings.Contains(got.instructions, "disabled")
	}, 20*time.Second, 200*time.Millisecond, "a session's initialize says the server is disabled: %+v", &got)
	assert.Contains(t, got.instructions, "Server 'upstream' is disabled in mcpwrap's config")
	got = agentView(srv.URL, id, got)
	assert.Equal(t, 1, starts(), "no server started")

	// The same as a disabled server nothing is remembered of.
	fresh := startListen(ctx, t, listenOptions{Config: disabled}, upstream...)
	var want view
	id, want.instructions, err = initialize(fresh.URL)
	require.NoError(t, err)
	want = agentView(fresh.URL, id, want)
	assert.Equal(t, want.instructions, got.instructions)
	assert.JSONEq(t, want.list, got.list, "tools/list: the discovery tool alone")
	assert.JSONEq(t, want.call, got.call, "tools/call: the disabled status")
	assert.Contains(t, got.list, `"name":"discover_tools"`)
	assert.Contains(t, got.call, `"status":"server_disabled"`)
	assert.Equal(t, 1, starts(), "no server started")
}
