package main

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLogValuesAreBounded is an attack on "memory stays bounded" (and the
// disk under --log-file): log records carry values a peer chooses (a tool
// name a client calls, a method, a definition's error naming its tool, a
// line of the server's stderr) of up to the message limit each, and each
// was written whole. Every string or error value is cut to maxLogValue
// bytes, saying how long it was.
func TestLogValuesAreBounded(t *testing.T) {
	huge := strings.Repeat("x", 1<<20)
	tests := []struct {
		name   string
		format string
	}{
		{name: "text", format: "text"},
		{name: "json", format: "json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			logger, closer, err := newLogger(logOptions{level: "info", format: tt.format}, &out)
			require.NoError(t, err)
			defer closer.Close()
			logger.Info("call to a tool the upstream does not list answered as unknown", "tool", huge)
			logger.With("server", huge).Warn("malformed tool definition", "error", errors.New("tooldef: "+huge))
			logger.Info("short", "tool", "echo")
			assert.Less(t, out.Len(), 4*maxLogValue+1024, "records of a bounded size")
			assert.Contains(t, out.String(), "1048576 bytes")
			assert.Contains(t, out.String(), "echo", "short values are untouched")
		})
	}
}

// TestLoggedErrorsCarryNoURLSecret: an error value is logged with every
// URL in its text reduced to its origin, whichever package logs it: a
// library's error quoting the server's URL with its API key (query, path
// or user info) never reaches the log.
func TestLoggedErrorsCarryNoURLSecret(t *testing.T) {
	err := fmt.Errorf("sign-in failed: %w", errors.New(`metadata issuer "http://127.0.0.1:1" does not match issuer URL "http://u:SECRET@127.0.0.1:1/sk-SECRET?api_key=SECRET"`))
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			var out bytes.Buffer
			logger, closer, lerr := newLogger(logOptions{level: "info", format: format}, &out)
			require.NoError(t, lerr)
			defer closer.Close()
			logger.With("server", "notes").Warn("sign-in failed", "error", err)
			assert.NotContains(t, out.String(), "SECRET")
			assert.Contains(t, out.String(), "does not match issuer URL", "the rest of the error is kept")
			assert.Contains(t, out.String(), "127.0.0.1:1", "the URL's origin is kept")
		})
	}
}
