package resilience_test

import (
	"errors"
	"io"
	"log"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/resilience"
)

func discardLog() *log.Logger { return log.New(io.Discard, "", 0) }

func TestNewHTTPStatusError(t *testing.T) {
	const date = "Sun, 22 Nov 2026 05:00:00 GMT"
	tests := []struct {
		name           string
		status         int
		header         http.Header
		body           string
		wantRetryAfter time.Duration
		wantBody       string
		wantError      string
	}{
		{name: "seconds", status: 429, header: http.Header{"Retry-After": {"7"}}, wantRetryAfter: 7 * time.Second, wantError: "HTTP 429 Too Many Requests"},
		{name: "http date relative to Date header", status: 503, header: http.Header{"Retry-After": {"Sun, 22 Nov 2026 05:01:30 GMT"}, "Date": {date}}, wantRetryAfter: 90 * time.Second},
		{name: "date in the past", status: 503, header: http.Header{"Retry-After": {"Sun, 22 Nov 2026 04:00:00 GMT"}, "Date": {date}}},
		{name: "negative seconds", status: 503, header: http.Header{"Retry-After": {"-3"}}},
		{name: "garbage", status: 503, header: http.Header{"Retry-After": {"soon"}}},
		{name: "body kept for signatures", status: 403, body: "upstream call timeout", wantBody: "upstream call timeout", wantError: "HTTP 403 Forbidden"},
		{name: "body capped at 4 KiB", status: 502, body: strings.Repeat("x", 10000), wantBody: strings.Repeat("x", 4096)},
		{name: "invalid UTF-8 made valid", status: 500, body: "bad \xff byte", wantBody: "bad \uFFFD byte"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			header := tt.header
			if header == nil {
				header = http.Header{}
			}
			resp := &http.Response{
				StatusCode: tt.status,
				Status:     strconv.Itoa(tt.status) + " " + http.StatusText(tt.status),
				Header:     header,
				Body:       io.NopCloser(strings.NewReader(tt.body)),
			}

			got := resilience.NewHTTPStatusError(resp)
			require.NotNil(t, got)
			assert.Equal(t, tt.status, got.StatusCode)
			assert.Equal(t, tt.wantRetryAfter, got.RetryAfter)
			assert.Equal(t, tt.wantBody, got.Body)
			if tt.wantError != "" {
				assert.Equal(t, tt.wantError, got.Error())
			}
			if tt.body != "" {
				assert.NotContains(t, got.Error(), tt.body, "the body never appears in the message")
			}
		})
	}
}

func TestNewHTTPStatusErrorEdges(t *testing.T) {
	assert.Nil(t, resilience.NewHTTPStatusError(nil))

	far := time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)
	got := resilience.NewHTTPStatusError(&http.Response{StatusCode: 503, Header: http.Header{"Retry-After": {far}}})
	assert.InDelta(t, time.Hour, got.RetryAfter, float64(5*time.Second), "without a Date header the local clock is the base")
	assert.Equal(t, "HTTP 503 Service Unavailable", got.Error(), "an empty Status falls back to the standard text")

	assert.Equal(t, "HTTP 599", (&resilience.HTTPStatusError{StatusCode: 599}).Error())
}

func TestErrorTypes(t *testing.T) {
	cause := errors.New("exec: not found")
	spawn := &resilience.SpawnError{Command: "npx", Err: cause}
	assert.Equal(t, `start "npx": exec: not found`, spawn.Error())
	assert.ErrorIs(t, spawn, cause)

	assert.Equal(t, "JSON-RPC error -32601: Method not found", (&resilience.RPCError{Code: -32601, Message: "Method not found"}).Error())
	assert.Equal(t, "exited with code 3 before completing the handshake", (&resilience.ExitError{Code: 3}).Error())
	assert.Equal(t, "killed by signal terminated after it was ready", (&resilience.ExitError{Code: -1, Signal: "terminated", Ready: true}).Error())

	exit := &resilience.ExitError{Code: 1, Ready: true}
	loop := &resilience.CrashLoopError{Restarts: 5, Window: 5 * time.Minute, Err: exit}
	assert.ErrorIs(t, loop, resilience.ErrCrashLoop)
	assert.ErrorIs(t, loop, exit)
	assert.Equal(t, "crash loop: 5 restarts in 5m; last: exited with code 1 after it was ready", loop.Error())
}
