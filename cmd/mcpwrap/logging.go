package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lmittmann/tint"
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
		h = tint.NewTextHandler(w, &tint.Options{Level: level, TimeFormat: time.TimeOnly, NoColor: !isTerminal(w)})
	case "json":
		h = slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level})
	default:
		closer.Close()
		return nil, nil, fmt.Errorf("--log-format %q: want text or json", o.format)
	}
	return slog.New(h), closer, nil
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
