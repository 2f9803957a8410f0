package upstream

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/internal/framing"
)

func TestSSEScanner(t *testing.T) {
	type event struct{ Name, Data string }
	tests := []struct {
		name   string
		stream string
		want   []event
		lastID string
		retry  time.Duration
	}{
		{
			name:   "unnamed event is a message",
			stream: "data: {}\n\n",
			want:   []event{{Name: "message", Data: "{}"}},
		},
		{
			name:   "named event, CRLF lines, comments",
			stream: ": keep-alive\r\nevent: endpoint\r\ndata: /messages?sessionid=1\r\n\r\n",
			want:   []event{{Name: "endpoint", Data: "/messages?sessionid=1"}},
		},
		{
			name:   "data lines join with newlines; one leading space is dropped",
			stream: "data:a\ndata:  b\ndata\n\n",
			want:   []event{{Name: "message", Data: "a\n b\n"}},
		},
		{
			name:   "events without data only update id and retry",
			stream: "id: 7\nretry: 1500\n\nevent: x\n\ndata: 1\n\n",
			want:   []event{{Name: "message", Data: "1"}},
			lastID: "7",
			retry:  1500 * time.Millisecond,
		},
		{
			name:   "the last event id persists; an id with NUL is ignored",
			stream: "id: a\ndata: 1\n\nid: b\x00\ndata: 2\n\n",
			want:   []event{{Name: "message", Data: "1"}, {Name: "message", Data: "2"}},
			lastID: "a",
		},
		{
			name:   "a byte-order mark is skipped",
			stream: "\uFEFFdata: 1\n\n",
			want:   []event{{Name: "message", Data: "1"}},
		},
		{
			name:   "an unterminated last event is discarded",
			stream: "data: 1\n\ndata: 2\n",
			want:   []event{{Name: "message", Data: "1"}},
		},
		{
			// A resumed stream starts after Last-Event-ID: an event cut
			// before its blank line must not have moved it.
			name:   "the id of a cut event is not the last event id",
			stream: "id: 1\ndata: 1\n\nid: 2\ndata: {\"partial",
			want:   []event{{Name: "message", Data: "1"}},
			lastID: "1",
		},
		{
			name:   "an id-only event dispatched by its blank line sets the id",
			stream: "id: 1\ndata: 1\n\nid: 2\n\nid: 3\n",
			want:   []event{{Name: "message", Data: "1"}},
			lastID: "2",
		},
		{
			name:   "an invalid retry is ignored",
			stream: "retry: soon\ndata: 1\n\n",
			want:   []event{{Name: "message", Data: "1"}},
		},
		{
			name:   "a retry past the cap is capped",
			stream: "id: 1\nretry: 2147483647\n\ndata: 1\n\n",
			want:   []event{{Name: "message", Data: "1"}},
			lastID: "1",
			retry:  maxSSERetry,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := newSSEScanner(strings.NewReader(tt.stream), 0)
			var got []event
			for {
				ev, err := sc.next()
				if errors.Is(err, io.EOF) {
					break
				}
				require.NoError(t, err)
				got = append(got, event{Name: ev.name, Data: string(ev.data)})
			}
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.lastID, sc.lastID)
			assert.Equal(t, tt.retry, sc.retry)
		})
	}
}

func TestSSEScannerDropsOversizedEvents(t *testing.T) {
	tests := []struct {
		name    string
		event   string
		size    int64
		bufSize int // how the event's bytes arrive
	}{
		{name: "one long line", event: "data: " + strings.Repeat("x", 200) + "\n\n", size: 200},
		{name: "many short lines", event: strings.Repeat("data: xxxxxxxxx\n", 20) + "\n", size: 20*10 - 1},
		{name: "a line longer than the read buffer", event: "data: " + strings.Repeat("y", 3*sseBufferBytes) + "\n\n", size: 3 * sseBufferBytes},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := newSSEScanner(strings.NewReader(tt.event+"data: after\n\n"), 100)
			_, err := sc.next()
			tooLong, ok := errors.AsType[*framing.LineTooLongError](err)
			require.True(t, ok, "want a LineTooLongError, got %v", err)
			assert.Equal(t, tt.size, tooLong.Size)
			assert.Equal(t, 100, tooLong.Limit)
			assert.NotEmpty(t, tooLong.Head)
			assert.LessOrEqual(t, len(tooLong.Head), framing.HeadBytes)

			ev, err := sc.next()
			require.NoError(t, err, "the stream goes on")
			assert.Equal(t, "after", string(ev.data))
		})
	}
}

// BenchmarkSSEAnswer reads one POST's answer stream as readStream does: a
// scanner, its one event, and its release.
func BenchmarkSSEAnswer(b *testing.B) {
	const stream = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"hi\"}]}}\n\n"
	r := strings.NewReader(stream)
	b.ReportAllocs()
	for b.Loop() {
		r.Reset(stream)
		sc := newSSEScanner(r, 0)
		if _, err := sc.next(); err != nil {
			b.Fatal(err)
		}
		sc.release()
	}
}
