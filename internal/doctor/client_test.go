package doctor

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRPCClientCloseWaitsForItsReader(t *testing.T) {
	t.Parallel()
	ours, theirs := pipe()
	t.Cleanup(func() { _ = theirs.Close() })
	c := newRPCClient(ours)

	c.close()
	select {
	case <-c.done:
	default:
		t.Fatal("close returned while the reader still ran")
	}
	_, err := c.call(t.Context(), "ping", nil)
	assert.Error(t, err, "a call after close fails at once")
}

func TestRPCClientDeclinesServerRequests(t *testing.T) {
	t.Parallel()
	ours, theirs := pipe()
	c := newRPCClient(ours)
	t.Cleanup(func() {
		_ = theirs.Close()
		c.close()
	})

	require.NoError(t, theirs.WriteMessage(t.Context(), []byte(`{"jsonrpc":"2.0","id":"srv-1","method":"roots/list"}`)))
	reply, err := theirs.ReadMessage()
	require.NoError(t, err)
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":"srv-1","error":{"code":-32601,"message":"not supported by mcpwrap doctor"}}`, string(reply))
}
