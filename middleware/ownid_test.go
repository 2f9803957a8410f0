package middleware

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/mcpwrap/mcpwrap/internal/framing"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOwnIDPrefixIsPerSession: two Sessions (two mcpwraps in a chain) use
// different own-id prefixes, so the inner one does not refuse the outer
// one's requests as its own.
func TestOwnIDPrefixIsPerSession(t *testing.T) {
	a, b := &Session{}, &Session{}
	a.once.Do(a.init)
	b.once.Do(b.init)
	assert.NotEqual(t, a.ownID, b.ownID)
	id := []byte(`"` + a.ownID + `1"`)
	assert.True(t, a.isOwnID(id))
	assert.False(t, b.isOwnID(id), "another Session's own id is a client id like any other")
}

// slowCloseConn is a Conn whose Close waits for release, holding the
// supervisor between a failed handshake and the end of the load.
type slowCloseConn struct {
	Conn
	release chan struct{}
}

func (c *slowCloseConn) Close() error {
	<-c.release
	return c.Conn.Close()
}

// TestHandshakeErrorIsReportedInOneClass: when the upstream refuses the
// handshake with an error that will not be retried, a call the client sends
// right after learning of it is told the same class the log reports
// (permanent), never "still starting up; retry in a few seconds".
func TestHandshakeErrorIsReportedInOneClass(t *testing.T) {
	client, clientConn := newPeer(t, 0)
	up, upConn := newPeer(t, 0)
	slow := &slowCloseConn{Conn: upConn, release: make(chan struct{})}
	t.Cleanup(func() { close(slow.release) })
	s := &Session{Name: "inner", Client: clientConn, Dial: dialOnce(slow)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.Run(ctx)

	client.send(clientInitialize + "\n")
	env, err := framing.Peek(up.next())
	require.NoError(t, err)
	up.send(`{"jsonrpc":"2.0","id":` + string(env.ID) + `,"error":{"code":-32600,"message":"Invalid Request: ids starting with \"mcpwrap-\" are reserved"}}` + "\n")
	assert.Contains(t, string(client.next()), `"error"`, "the client gets the upstream's refusal")

	client.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}` + "\n")
	var resp struct {
		Result struct {
			Meta    map[string]any `json:"_meta"`
			IsError bool           `json:"isError"`
		} `json:"result"`
	}
	require.NoError(t, json.Unmarshal(client.next(), &resp))
	assert.True(t, resp.Result.IsError)
	assert.Equal(t, "permanent", resp.Result.Meta["class"])
	assert.Equal(t, false, resp.Result.Meta["retryable"])
}
