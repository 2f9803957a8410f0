package middleware

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcpwrap/mcpwrap/resilience"
)

// losingConn is an upstream Conn whose transport loses answers: a line
// {"lost":ID} from the upstream peer is read as a *RequestFailedError for
// request ID, the connection cut mid-answer.
type losingConn struct{ Conn }

func (c losingConn) ReadMessage() ([]byte, error) {
	msg, err := c.Conn.ReadMessage()
	var lost struct {
		Lost json.RawMessage `json:"lost"`
	}
	if err == nil && json.Unmarshal(msg, &lost) == nil && lost.Lost != nil {
		return nil, &RequestFailedError{ID: lost.Lost, Err: io.ErrUnexpectedEOF}
	}
	return msg, err
}

func losingAnswers(s *Session) {
	dial := s.Dial
	s.Dial = func(ctx context.Context) (Conn, error) {
		c, err := dial(ctx)
		if err != nil {
			return nil, err
		}
		return losingConn{c}, nil
	}
}

// A request whose answer the upstream's Conn lost is settled by what was
// lost, and the session goes on: a client's request is answered with an
// error naming the cause and whether sending it again may help; an own
// request fails with the Conn's error, typed, so that a load is classified
// by it (transient), not by a JSON-RPC code standing for it.
func TestRequestFailedByTheConnIsSettled(t *testing.T) {
	h := start(t, 0, losingAnswers)

	h.client.send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"x"}}` + "\n")
	h.up.next()
	h.up.send(`{"lost":5}` + "\n")
	var resp struct {
		ID    json.RawMessage `json:"id"`
		Error RPCError        `json:"error"`
	}
	require.NoError(t, json.Unmarshal(h.client.next(), &resp))
	assert.Equal(t, "5", string(resp.ID))
	assert.Equal(t, codeInternalError, resp.Error.Code)
	assert.Contains(t, resp.Error.Message, "connection reset or closed mid-stream")
	assert.JSONEq(t, `{"class":"transient","retryable":true}`, string(resp.Error.Data))

	called := make(chan error, 1)
	go func() {
		_, err := h.session.Call(t.Context(), "ping", nil)
		called <- err
	}()
	var own struct {
		ID json.RawMessage `json:"id"`
	}
	require.NoError(t, json.Unmarshal(h.up.next(), &own))
	h.up.send(`{"lost":` + string(own.ID) + `}` + "\n")
	err := <-called
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	var rpcErr *RPCError
	assert.False(t, errors.As(err, &rpcErr), "not a JSON-RPC error: %v", err)
	assert.Equal(t, resilience.Transient, resilience.Classify(err).Class)

	// The session goes on.
	h.client.send(`{"jsonrpc":"2.0","id":6,"method":"ping"}` + "\n")
	h.up.next()
	h.up.send(`{"jsonrpc":"2.0","id":6,"result":{}}` + "\n")
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":6,"result":{}}`, string(h.client.next()))
}
