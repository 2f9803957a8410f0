package upstream

import (
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recordingWriter keeps each Write separately and announces it.
type recordingWriter struct {
	writes   []string
	notify   chan string // optional
	failWith error
}

func (w *recordingWriter) Write(p []byte) (int, error) {
	if w.failWith != nil {
		return 0, w.failWith
	}
	w.writes = append(w.writes, string(p))
	if w.notify != nil {
		w.notify <- string(p)
	}
	return len(p), nil
}

var discardLogger = slog.New(slog.DiscardHandler)

func TestPumpStderrWritesLines(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("z", 3*stderrChunk+100)
	tests := []struct {
		name  string
		input string
		want  []string
	}{
		{name: "lines", input: "a\nbb\n", want: []string{"a\n", "bb\n"}},
		{name: "unterminated end", input: "a\nrest", want: []string{"a\n", "rest"}},
		{
			name:  "long line in chunks",
			input: long + "\nnext\n",
			want: []string{
				long[:stderrChunk], long[stderrChunk : 2*stderrChunk], long[2*stderrChunk : 3*stderrChunk],
				long[3*stderrChunk:] + "\n", "next\n",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out := &recordingWriter{}
			tail := newLineRing(5, 10)

			pumpStderr(strings.NewReader(tt.input), out, tail, discardLogger)

			assert.Equal(t, tt.want, out.writes)
			assert.Equal(t, tt.input, strings.Join(out.writes, ""))
		})
	}
}

func TestPumpStderrPassesLinesAsTheyArrive(t *testing.T) {
	t.Parallel()
	r, w := io.Pipe()
	out := &recordingWriter{notify: make(chan string, 1)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		pumpStderr(r, out, newLineRing(5, 100), discardLogger)
	}()

	_, err := w.Write([]byte("starting\n"))
	require.NoError(t, err)
	assert.Equal(t, "starting\n", <-out.notify, "a line is passed on before the stream ends")

	require.NoError(t, w.Close())
	<-done
}

func TestPumpStderrKeepsTailWhenOutputFails(t *testing.T) {
	t.Parallel()
	out := &recordingWriter{failWith: errors.New("stderr closed")}
	tail := newLineRing(5, 100)

	pumpStderr(strings.NewReader("one\ntwo\nthree\n"), out, tail, discardLogger)

	assert.Equal(t, []string{"one", "two", "three"}, tail.Lines())
}

func TestPumpStderrNilOutput(t *testing.T) {
	t.Parallel()
	tail := newLineRing(5, 100)

	pumpStderr(strings.NewReader("only the tail\n"), nil, tail, discardLogger)

	assert.Equal(t, []string{"only the tail"}, tail.Lines())
}
