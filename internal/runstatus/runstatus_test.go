package runstatus

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/middleware"
	"github.com/mcpwrap/mcpwrap/resilience"
)

// fakeSource is a session whose status the test sets.
type fakeSource struct {
	mu    sync.Mutex
	out   resilience.Outcome
	stats middleware.Stats
}

func (f *fakeSource) Status() resilience.Outcome {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.out
}

func (f *fakeSource) Stats() middleware.Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stats
}

func (f *fakeSource) set(out resilience.Outcome, stats middleware.Stats) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.out, f.stats = out, stats
}

func readStatus(t *testing.T, path string) Status {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var s Status
	require.NoError(t, json.Unmarshal(data, &s))
	return s
}

func TestPublisher(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "state", DirName)
		src := &fakeSource{} // not started yet: the zero Outcome
		p := &Publisher{Dir: dir, Server: "fs", Source: src, PID: 4242}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() {
			defer close(done)
			p.Run(ctx)
		}()
		start := time.Now().UTC()

		synctest.Wait()
		path := filepath.Join(dir, "4242.json")
		assert.Equal(t, path, p.Path())
		got := readStatus(t, path)
		assert.Equal(t, Status{
			Server: "fs", PID: 4242, StartedAt: start, UpdatedAt: start, Session: Session{Status: "transient"},
		}, got, "a session that has not started is starting, not failed")

		// A change is published within one interval.
		src.set(resilience.Outcome{Server: "fs", Class: resilience.Permanent, Attempts: 1,
			Err: &resilience.Error{Class: resilience.Permanent, Reason: `cannot start "npx": command not found`, Hint: "Install Node.js"}},
			middleware.Stats{Calls: 3, Rejections: 1, IncludeDisabledQueries: 2, Restarts: 4, ClientProtocol: "2025-11-25", ServerProtocol: "2026-07-28"})
		time.Sleep(DefaultInterval)
		synctest.Wait()
		got = readStatus(t, path)
		assert.Equal(t, "permanent", got.Status)
		assert.Equal(t, 1, got.Attempts)
		assert.Equal(t, `cannot start "npx": command not found`, got.Error)
		assert.Equal(t, "Install Node.js", got.Hint, "the fix hint, as doctor gives it, for the panel")
		assert.Contains(t, got.Message, "Server 'fs' failed to load and needs attention")
		assert.Equal(t, [4]int{3, 1, 2, 4}, [4]int{got.Calls, got.Rejections, got.IncludeDisabledQueries, got.Restarts})
		assert.Equal(t, [2]string{"2025-11-25", "2026-07-28"}, [2]string{got.ClientProtocol, got.ServerProtocol}, "each side's protocol")
		assert.Equal(t, start, got.StartedAt)
		changedAt := got.UpdatedAt

		// Nothing changes: the file is left alone until the refresh is due.
		time.Sleep(DefaultRefresh - DefaultInterval)
		synctest.Wait()
		assert.Equal(t, changedAt, readStatus(t, path).UpdatedAt)
		time.Sleep(DefaultInterval)
		synctest.Wait()
		assert.Equal(t, changedAt.Add(DefaultRefresh), readStatus(t, path).UpdatedAt, "refreshed as a heartbeat")

		src.set(resilience.Outcome{Server: "fs", Class: resilience.Available, Attempts: 2, Elapsed: 2345*time.Millisecond + time.Microsecond}, middleware.Stats{})
		time.Sleep(DefaultInterval)
		synctest.Wait()
		got = readStatus(t, path)
		assert.Equal(t, "available", got.Status)
		assert.Empty(t, got.Error)
		assert.Empty(t, got.Message)
		assert.EqualValues(t, 2346, got.LoadMS, "the load time, from the load's start to available, in whole milliseconds rounded up")

		cancel()
		<-done
		assert.NoFileExists(t, path, "removed on exit")
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		assert.Empty(t, entries, "no temporary file left")
	})
}

// TestSnapshotOfAnIdleSession: a session whose upstream is not started
// yet (it starts on the client's first request) is published as idle,
// with no attempt and no error, and the sentence the agent would be told;
// not as a load failing transiently.
func TestSnapshotOfAnIdleSession(t *testing.T) {
	got := snapshot(&fakeSource{out: resilience.Outcome{Server: "fs", Class: resilience.Idle}})
	assert.Equal(t, Status{Session: Session{Status: "idle"},
		Message: "Server 'fs' is not started yet; it starts on the first request that needs it."}, got)
}

func TestStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		src := &fakeSource{out: resilience.Outcome{Server: "x", Class: resilience.Available, Attempts: 1}}
		stop := Start(t.Context(), dir, "x", src, nil)
		synctest.Wait()
		path := filepath.Join(dir, itoa(os.Getpid())+".json")
		assert.Equal(t, "available", readStatus(t, path).Status)
		stop()
		assert.NoFileExists(t, path, "removed by the time stop returns")
	})
}

// TestStatusFileFormat pins the file's JSON: `mcpwrap status` reads files
// that sidecars of other versions wrote, so a field's name or place must
// not change with the Go types behind it.
func TestStatusFileFormat(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	s := Status{
		Server: "fs", PID: 7, Upstream: "npx x", UpstreamDigest: "d", StartedAt: at, UpdatedAt: at.Add(time.Second),
		Session: Session{Status: "permanent", Attempts: 2, Restarts: 3, Calls: 4, Rejections: 5, IncludeDisabledQueries: 6, Error: "boom",
			ClientProtocol: "2025-11-25", ServerProtocol: "2026-07-28"},
		Message: "msg", Listen: "http://127.0.0.1:1/mcp",
		Sessions: []Session{{Status: "available", Attempts: 1, Restarts: 2, Calls: 3, Rejections: 4, IncludeDisabledQueries: 5, LoadMS: 1200}},
	}
	want := `{"server":"fs","pid":7,"upstream":"npx x","upstream_digest":"d",` +
		`"started_at":"2026-05-01T12:00:00Z","updated_at":"2026-05-01T12:00:01Z",` +
		`"status":"permanent","attempts":2,"restarts":3,"calls":4,"rejections":5,"include_disabled_queries":6,"error":"boom",` +
		`"client_protocol":"2025-11-25","server_protocol":"2026-07-28",` +
		`"message":"msg","listen":"http://127.0.0.1:1/mcp",` +
		`"sessions":[{"status":"available","attempts":1,"restarts":2,"calls":3,"rejections":4,"include_disabled_queries":5,"load_ms":1200}]}`
	got, err := json.Marshal(s)
	require.NoError(t, err)
	assert.Equal(t, want, string(got))

	var back Status
	require.NoError(t, json.Unmarshal(got, &back))
	assert.Equal(t, s, back)
}

func TestPublisherUnwritableDir(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "file")
		require.NoError(t, os.WriteFile(file, nil, 0o600))
		p := &Publisher{Dir: filepath.Join(file, DirName), Server: "x", Source: &fakeSource{}, PID: 7}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() {
			defer close(done)
			p.Run(ctx)
		}()
		synctest.Wait()
		cancel()
		<-done // it waited for the end without failing the sidecar
	})
}

func TestList(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	put := func(name string, s any) {
		data, err := json.Marshal(s)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), data, 0o600))
	}
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	put("300.json", Status{Server: "b", PID: 300, StartedAt: at, Session: Session{Status: "available"}})
	put("100.json", Status{Server: "b", PID: 100, StartedAt: at, Session: Session{Status: "transient"}})
	put("200.json", Status{Server: "a", PID: 200, StartedAt: at, Session: Session{Status: "denied"}})
	put("666.json", Status{Server: "dead", PID: 666})                                    // SIGKILLed sidecar
	put("666.json.tmp-123", Status{Server: "dead", PID: 666})                            // and its torn write
	put("400.json", Status{Server: "liar", PID: 1})                                      // pid does not match the name
	require.NoError(t, os.WriteFile(filepath.Join(dir, "500.json"), []byte("{"), 0o600)) // unparsable
	put("100.json.tmp-9", Status{Server: "b", PID: 100})                                 // a write in progress
	put("notes.txt", "not ours")
	put("x.json", "not ours either")

	alive := map[int]bool{100: true, 200: true, 300: true, 400: true, 500: true}
	got, err := List(dir, func(pid int) bool { return alive[pid] })
	require.NoError(t, err)
	var names []string
	for _, s := range got {
		names = append(names, s.Server+"/"+itoa(s.PID)+"/"+s.Status)
	}
	assert.Equal(t, []string{"a/200/denied", "b/100/transient", "b/300/available"}, names)

	for _, gone := range []string{"666.json", "666.json.tmp-123"} {
		assert.NoFileExists(t, filepath.Join(dir, gone), "stale files are cleaned")
	}
	for _, kept := range []string{"100.json.tmp-9", "500.json", "notes.txt", "x.json"} {
		assert.FileExists(t, filepath.Join(dir, kept), "files of live processes and foreign files are kept")
	}
}

func TestListMissingDir(t *testing.T) {
	t.Parallel()
	got, err := List(filepath.Join(t.TempDir(), "none"), nil)
	require.NoError(t, err)
	assert.Empty(t, got)
}

func TestListUnreadableDir(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	_, err := List(file, nil)
	require.Error(t, err)
	assert.False(t, errors.Is(err, os.ErrNotExist))
}

func TestParseName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		wantPID  int
		wantTemp bool
		wantOK   bool
	}{
		{name: "12.json", wantPID: 12, wantOK: true},
		{name: "12.json.tmp-abc", wantPID: 12, wantTemp: true, wantOK: true},
		{name: "12.jsonx", wantOK: false},
		{name: "0.json", wantOK: false},
		{name: "-3.json", wantOK: false},
		{name: "a.json", wantOK: false},
		{name: "12.txt", wantOK: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pid, temp, ok := parseName(tt.name)
			assert.Equal(t, tt.wantOK, ok)
			if ok {
				assert.Equal(t, tt.wantPID, pid)
				assert.Equal(t, tt.wantTemp, temp)
			}
		})
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestNameClashes(t *testing.T) {
	t.Parallel()
	list := []Status{
		{Server: "fs", PID: 1, UpstreamDigest: "aaaa"},
		{Server: "fs", PID: 2, UpstreamDigest: "bbbb"},
		{Server: "fs", PID: 3}, // an older sidecar that publishes no digest
		{Server: "mem", PID: 4, UpstreamDigest: "cccc"},
	}
	tests := []struct {
		name, server, digest string
		want                 []int
	}{
		{name: "another server under the name", server: "fs", digest: "aaaa", want: []int{2}},
		{name: "a new server under the name", server: "fs", digest: "dddd", want: []int{1, 2}},
		{name: "nobody else", server: "git", digest: "aaaa"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var pids []int
			for _, s := range NameClashes(list, tt.server, tt.digest) {
				pids = append(pids, s.PID)
			}
			assert.Equal(t, tt.want, pids)
		})
	}
}
