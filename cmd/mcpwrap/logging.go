package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/lmittmann/tint"

	"github.com/mcpwrap/mcpwrap/internal/redact"
)

// logOptions are the logging flags shared by every subcommand.
type logOptions struct {
	level  string
	format string
	file   string
}

// newLogger builds the process's logger: tint on stderr (colour only on a
// terminal), JSON with --log-format json, to --log-file when set. It never
// writes to stdout, which carries the protocol. The returned closer closes
// the log file, if any.
func newLogger(o logOptions, stderr io.Writer) (*slog.Logger, io.Closer, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.level)); err != nil {
		return nil, nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", o.level)
	}
	w, closer := stderr, io.Closer(nopCloser{})
	if o.file != "" {
		// The directory too: `mcpwrap install` names a log file under the
		// state directory, which may not exist yet (or any more).
		if err := os.MkdirAll(filepath.Dir(o.file), 0o700); err != nil {
			return nil, nil, fmt.Errorf("--log-file: %w", err)
		}
		f, err := os.OpenFile(o.file, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return nil, nil, fmt.Errorf("--log-file: %w", err)
		}
		w, closer = f, f
	}
	var h slog.Handler
	switch strings.ToLower(o.format) {
	case "", "text":
		h = tint.NewTextHandler(w, &tint.Options{Level: level, TimeFormat: time.TimeOnly, NoColor: !isTerminal(w), ReplaceAttr: logAttr})
	case "json":
		h = slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: logAttr})
	default:
		closer.Close()
		return nil, nil, fmt.Errorf("--log-format %q: want text or json", o.format)
	}
	return slog.New(h), closer, nil
}

// maxLogValue bounds a string or error value in a log record. Records
// carry values a peer chooses (a tool name or method a client sends, a
// definition's error naming its tool, a line of the server's stderr), each
// up to the message size limit; cut, they cannot make a record, or the log
// file, grow with them.
const maxLogValue = 4 << 10

// logAttr makes an attribute fit for the log. An error value's text has
// the URLs in it reduced to their origin (redact.Text): a library's error
// may quote a URL with a credential in its query or path (the go-sdk's
// OAuth discovery quotes the issuer URL it derived from the server's), and
// this is where every error of every package is logged. Then a string or
// error value longer than maxLogValue is cut, saying how long it was.
func logAttr(_ []string, a slog.Attr) slog.Attr {
	var s string
	switch v := a.Value.Resolve(); {
	case v.Kind() == slog.KindString:
		s = v.String()
	case v.Kind() == slog.KindAny:
		err, ok := v.Any().(error)
		if !ok {
			return a
		}
		s = redact.Text(err.Error())
		a = slog.String(a.Key, s)
	default:
		return a
	}
	if len(s) <= maxLogValue {
		return a
	}
	cut := strings.ToValidUTF8(s[:maxLogValue], "")
	return slog.String(a.Key, fmt.Sprintf("%s… (%d bytes)", cut, len(s)))
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

type nopCloser struct{}

func (nopCloser) Close() error { return nil }

// serverStderr returns where a stdio server's stderr goes: mcpwrap's
// stderr and, with --log-file, the log too, one record per line tagged
// stream=stderr, so that the log file tells the whole story of a failure.
func serverStderr(o logOptions, stderr io.Writer, logger *slog.Logger) io.Writer {
	if o.file == "" {
		return stderr
	}
	return &stderrTee{out: stderr, log: logger}
}

// stderrTee copies a server's stderr to out and logs each line. Its
// Writes come one or more whole lines at a time (see upstream.Command's
// Stderr). A failing out is dropped, once, with a warning: the log goes on.
type stderrTee struct {
	mu  sync.Mutex
	out io.Writer
	log *slog.Logger
}

func (t *stderrTee) Write(p []byte) (int, error) {
	for line := range strings.SplitSeq(string(p), "\n") {
		if line = strings.TrimRight(line, "\r"); strings.TrimSpace(line) != "" {
			t.log.Info("server stderr", "stream", "stderr", "line", line)
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.out != nil {
		if _, err := t.out.Write(p); err != nil {
			t.log.Warn("cannot pass the server's stderr on; it goes to the log file only", "error", err)
			t.out = nil
		}
	}
	return len(p), nil
}
