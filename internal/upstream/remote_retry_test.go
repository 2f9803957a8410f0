package upstream

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/middleware"
	"github.com/mcpwrap/mcpwrap/resilience"
)

// roundTripFunc is an in-process HTTP server: no socket, so that a
// synctest bubble can hold every goroutine of the exchange.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// sseResponse is a 200 event stream with body, which ends after it.
func sseResponse(r *http.Request, body string) *http.Response {
	return &http.Response{
		StatusCode: http.StatusOK, Status: "200 OK", Request: r,
		Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body:   io.NopCloser(strings.NewReader(body)),
	}
}

// TestRemoteSSERetryIsCapped: a server that primes a response stream with
// the largest retry the event-stream format allows (2^31-1 ms, about 25
// days) and closes it, resuming each time the same way, cannot park the
// request: the resume waits at most resilience.DefaultMaxRequestedDelay,
// and the request, with no call timeout above it, is still answered.
func TestRemoteSSERetryIsCapped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const priming = "id: ev-1\nretry: 2147483647\ndata:\n\n"
		start := time.Now()
		var mu sync.Mutex
		var resumed []time.Duration // when each GET came, from start
		client := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.Method == http.MethodGet {
				mu.Lock()
				resumed = append(resumed, time.Since(start))
				mu.Unlock()
			}
			return sseResponse(r, priming), nil
		})}
		conn, err := DialRemote(t.Context(), Remote{URL: "http://mcp.test/mcp", HTTPClient: client})
		require.NoError(t, err)
		defer conn.Close()

		require.NoError(t, conn.WriteMessage(t.Context(), []byte(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"slow"}}`)))
		msg, err := conn.ReadMessage()
		answered := time.Since(start)

		failed, ok := errors.AsType[*middleware.RequestFailedError](err)
		require.True(t, ok, "want the request's failure, got %s, %v", msg, err)
		assert.Equal(t, "9", string(failed.ID))
		mu.Lock()
		defer mu.Unlock()
		require.NotEmpty(t, resumed, "the stream was never resumed")
		assert.LessOrEqual(t, resumed[0], resilience.DefaultMaxRequestedDelay, "the first resume waited for the server's retry uncapped")
		// The resumes that make no progress back off on mcpwrap's own
		// schedule (seconds), never on the server's retry again.
		assert.Less(t, answered, resilience.DefaultMaxRequestedDelay+time.Minute, "the request waited %s", answered)
	})
}
