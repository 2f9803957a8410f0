package middleware

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCancellationInABatchEndsTheRequest is an attack on "every request is
// answered exactly once, and shutdown does not wait for a cancelled one":
// notifications/cancelled sent inside a batch was relayed without the
// sidecar noting it, so the cancelled request stayed in flight, and
// shutdown waited for an answer an upstream honouring the cancellation
// never sends.
func TestCancellationInABatchEndsTheRequest(t *testing.T) {
	h := start(t, 0, func(s *Session) { s.DrainTimeout = time.Hour })
	h.client.send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"hang"}}` + "\n")
	h.up.next()
	batch := `[{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}},{"jsonrpc":"2.0","method":"notifications/other"}]`
	h.client.send(batch + "\n")
	require.Equal(t, batch, string(h.up.next()), "the batch is relayed as it is")
	h.client.closeSend()
	select {
	case err := <-h.done:
		assert.NoError(t, err)
	case <-time.After(timeout):
		t.Fatal("shutdown waits for a request cancelled in a batch")
	}
}

// TestAnswersInABatchEndTheUpstreamsRequests is an attack on "memory stays
// bounded" and on the bound itself: the client's answers to the upstream's
// requests sent inside a batch were relayed without the sidecar noting
// them, so each request stayed in the link's table for good, and once
// MaxInFlight of them had piled up every later request of the upstream was
// refused.
func TestAnswersInABatchEndTheUpstreamsRequests(t *testing.T) {
	h := start(t, 0, func(s *Session) { s.MaxInFlight = 1 })
	for _, id := range []string{`"s1"`, `"s2"`, `"s3"`} {
		req := `{"jsonrpc":"2.0","id":` + id + `,"method":"roots/list"}`
		h.up.send(req + "\n")
		require.Equal(t, req, string(h.client.next()), "relayed: the client answered the one before")
		answer := `[{"jsonrpc":"2.0","id":` + id + `,"result":{"roots":[]}}]`
		h.client.send(answer + "\n")
		require.Equal(t, answer, string(h.up.next()))
	}
}
