package audit

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readAll returns every line of path and its backups, each decoded.
func readAll(t *testing.T, path string, backups int) []Record {
	t.Helper()
	var out []Record
	for i := 0; i <= backups; i++ {
		p := path
		if i > 0 {
			p = backup(path, i)
		}
		f, err := os.Open(p)
		if os.IsNotExist(err) {
			continue
		}
		require.NoError(t, err)
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var r Record
			require.NoError(t, json.Unmarshal(sc.Bytes(), &r), "line %q", sc.Text())
			out = append(out, r)
		}
		require.NoError(t, sc.Err())
		f.Close()
	}
	return out
}

// Logs opened separately stand for separate processes: each has its own
// descriptor, and they rotate one file under its lock.
func TestConcurrentWritersLoseNoLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	const writers, lines = 6, 300
	var wg sync.WaitGroup
	for w := range writers {
		l, err := Open(path, "mcpwrap")
		require.NoError(t, err)
		l.MaxBytes = 64 << 10 // several rotations
		l.Backups = 50        // keep them all, to count
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer l.Close()
			for i := range lines {
				assert.NoError(t, l.Write(Record{Event: EventCall, Server: "s", Tool: strings.Repeat("t", w*10), Code: i}))
			}
		}()
	}
	wg.Wait()
	got := readAll(t, path, 50)
	require.Len(t, got, writers*lines)
	seen := map[[2]int]bool{}
	for _, r := range got {
		assert.Equal(t, Version, r.V)
		seen[[2]int{len(r.Tool), r.Code}] = true
	}
	assert.Len(t, seen, writers*lines, "every line once")
	_, err := os.Stat(backup(path, 2))
	assert.NoError(t, err, "the file was rotated")
}

func TestRecord(t *testing.T) {
	now := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		rec    Record
		want   []string // substrings of the line
		absent []string
	}{
		{name: "call", rec: Record{Event: EventCall, Server: "fs", Tool: "read", Verdict: VerdictAllowed, Outcome: "ok", DurationMS: 1.5, ArgsSHA256: HashArgs([]byte(`{"path":"/x"}`))},
			want: []string{`"v":1`, `"event":"call"`, `"verdict":"allowed"`, `"args_sha256":"`, `"by":{"pid":`, `"time":"2026-07-01T12:00:00Z"`}, absent: []string{`/x`}},
		{name: "detail redacted", rec: Record{Event: EventSignIn, Action: "failed", Detail: "cannot reach https://h/sk-SECRET/mcp?key=SECRET2"},
			want: []string{`https://h`}, absent: []string{"SECRET"}},
		{name: "long text shortened", rec: Record{Event: EventCall, Tool: strings.Repeat("é", 5000), Detail: strings.Repeat("x", 9000)},
			want: []string{`…`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "a.jsonl")
			l, err := Open(path, "mcpwrap")
			require.NoError(t, err)
			l.Now = func() time.Time { return now }
			require.NoError(t, l.Write(tt.rec))
			require.NoError(t, l.Close())
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Less(t, len(b), MaxLineBytes+1)
			assert.True(t, json.Valid(b[:len(b)-1]))
			for _, w := range tt.want {
				assert.Contains(t, string(b), w)
			}
			for _, a := range tt.absent {
				assert.NotContains(t, string(b), a)
			}
			fi, err := os.Stat(path)
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
		})
	}
}

func TestNilLogWritesNothing(t *testing.T) {
	var l *Log
	assert.NoError(t, l.Write(Record{Event: EventCall}))
	assert.NoError(t, l.Close())
}
