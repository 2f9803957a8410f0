package upstream

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRemoteRequestHeaderFromContext: the headers a message is written
// with (WithRequestHeader: mcpwrap's traceparent, when traced) go on the
// HTTP request that carries it, and on no other.
func TestRemoteRequestHeaderFromContext(t *testing.T) {
	ts, rec := streamableServer(t, fixture(), nil)
	conn := dial(t, ts.URL)
	p := newPeer(t, conn)
	p.handshake()

	const traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	ctx := WithRequestHeader(t.Context(), http.Header{"Traceparent": {traceparent}})
	require.NoError(t, conn.WriteMessage(ctx, []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"traced"}}}`)))
	_, m := p.next()
	require.Equal(t, "7", string(m.ID))
	p.call(8, "tools/call", `{"name":"echo","arguments":{"text":"not traced"}}`)

	var with, without []string
	for _, req := range rec.requests() {
		switch {
		case strings.Contains(req.Body, `"traced"`):
			with = append(with, req.Header.Get("Traceparent"))
		case req.Body != "":
			without = append(without, req.Header.Get("Traceparent"))
		}
	}
	assert.Equal(t, []string{traceparent}, with)
	assert.NotEmpty(t, without)
	for _, h := range without {
		assert.Empty(t, h, "a message written without the header")
	}
}
