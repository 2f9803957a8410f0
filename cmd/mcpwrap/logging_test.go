package main

import (
	"bytes"
	"errors"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
)

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("closed") }

// TestServerStderr: with --log-file the server's stderr lines reach the log,
// one tagged record per line, as well as mcpwrap's stderr; without it they
// go to stderr only.
func TestServerStderr(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		file       string
		out        func(*bytes.Buffer) any
		writes     []string
		wantStderr string
		wantLog    string
	}{
		{name: "no log file", writes: []string{"Error: boom\n"}, wantStderr: "Error: boom\n"},
		{name: "log file", file: "/x/fs.log", writes: []string{"Error: boom\r\n", "\n", "at a\nat b\n"},
			wantStderr: "Error: boom\r\n\nat a\nat b\n",
			wantLog: `level=INFO msg="server stderr" stream=stderr line="Error: boom"` + "\n" +
				`level=INFO msg="server stderr" stream=stderr line="at a"` + "\n" +
				`level=INFO msg="server stderr" stream=stderr line="at b"` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var stderr, log bytes.Buffer
			logger := slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{ReplaceAttr: dropTime}))
			w := serverStderr(logOptions{file: tt.file}, &stderr, logger)
			for _, s := range tt.writes {
				n, err := w.Write([]byte(s))
				assert.NoError(t, err)
				assert.Equal(t, len(s), n)
			}
			assert.Equal(t, tt.wantStderr, stderr.String())
			assert.Equal(t, tt.wantLog, log.String())
		})
	}
}

// TestServerStderrSurvivesAFailingStderr: the log keeps the lines when
// mcpwrap's stderr is gone.
func TestServerStderrSurvivesAFailingStderr(t *testing.T) {
	t.Parallel()
	var log bytes.Buffer
	w := serverStderr(logOptions{file: "/x/fs.log"}, failingWriter{}, slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{ReplaceAttr: dropTime})))
	for range 2 {
		_, err := w.Write([]byte("line\n"))
		assert.NoError(t, err)
	}
	assert.Equal(t, `level=INFO msg="server stderr" stream=stderr line=line`+"\n"+
		`level=WARN msg="cannot pass the server's stderr on; it goes to the log file only" error=closed`+"\n"+
		`level=INFO msg="server stderr" stream=stderr line=line`+"\n", log.String())
}

func dropTime(_ []string, a slog.Attr) slog.Attr {
	if a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}
