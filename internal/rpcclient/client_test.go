package rpcclient

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/mcpwrap/mcpwrap/internal/framing"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rpcErr is the error a test's rpcError decodes.
type rpcErr struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *rpcErr) Error() string { return e.Message }

func decode(obj json.RawMessage) error {
	e := &rpcErr{}
	if err := json.Unmarshal(obj, e); err != nil {
		return err
	}
	return e
}

// peer is the far end of a connection: what the Client writes goes to
// sent, and the test answers through the Client's Deliver as a reader
// would.
type peer struct {
	sent   chan []byte
	closed chan struct{}
}

func newPeer() *peer {
	return &peer{sent: make(chan []byte, 1), closed: make(chan struct{})}
}

func (p *peer) write(_ context.Context, msg []byte) error {
	p.sent <- msg
	return nil
}

// call runs c.Call in the background and returns the request it sent and
// a channel of its Reply.
func (p *peer) call(t *testing.T, ctx context.Context, c *Client, method string, params json.RawMessage) (framing.Envelope, <-chan Reply) {
	t.Helper()
	out := make(chan Reply, 1)
	go func() { out <- c.Call(ctx, p.write, p.closed, method, params) }()
	msg := <-p.sent
	env, err := framing.Peek(msg)
	require.NoError(t, err)
	return env, out
}

func TestCall(t *testing.T) {
	tests := []struct {
		name       string
		answer     string // the response, with ID for the request's id
		wantResult string
		wantErr    string
	}{
		{name: "result", answer: `{"jsonrpc":"2.0","id":ID,"result":{"ok":true}}`, wantResult: `{"ok":true}`},
		{name: "error", answer: `{"jsonrpc":"2.0","id":ID,"error":{"code":-32601,"message":"no such method"}}`, wantErr: "no such method"},
		{name: "ambiguous", answer: `{"jsonrpc":"2.0","id":ID,"result":{},"result":{}}`, wantErr: framing.ErrAmbiguous.Error()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, p := New("own-x-", decode), newPeer()
			req, reply := p.call(t, context.Background(), c, "tools/list", json.RawMessage(`{"cursor":"c"}`))
			assert.Equal(t, "tools/list", req.Method)
			assert.JSONEq(t, `{"cursor":"c"}`, string(req.Params))
			assert.True(t, c.Owns(req.ID))

			msg := []byte(replaceID(tt.answer, req.ID))
			env, err := framing.Peek(msg)
			assert.True(t, c.Deliver(msg, env, err))
			r := <-reply
			if tt.wantErr != "" {
				require.Error(t, r.Err)
				assert.Contains(t, r.Err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, r.Err)
			assert.JSONEq(t, tt.wantResult, string(r.Result))
			assert.Equal(t, string(msg), string(r.Msg))
			assert.False(t, c.Deliver(msg, env, err), "a second answer finds no request")
		})
	}
}

func replaceID(s string, id []byte) string {
	out := []byte{}
	for i := 0; i < len(s); i++ {
		if i+2 <= len(s) && s[i:i+2] == "ID" {
			out = append(out, id...)
			i++
			continue
		}
		out = append(out, s[i])
	}
	return string(out)
}

func TestCallEnds(t *testing.T) {
	t.Run("the connection closes", func(t *testing.T) {
		c, p := New("own-x-", decode), newPeer()
		_, reply := p.call(t, context.Background(), c, "ping", nil)
		close(p.closed)
		assert.ErrorIs(t, (<-reply).Err, ErrClosed)
	})
	t.Run("ctx is done", func(t *testing.T) {
		c, p := New("own-x-", decode), newPeer()
		ctx, cancel := context.WithCancel(context.Background())
		_, reply := p.call(t, ctx, c, "ping", nil)
		cancel()
		assert.ErrorIs(t, (<-reply).Err, context.Canceled)
	})
	t.Run("the write fails", func(t *testing.T) {
		c := New("own-x-", decode)
		broken := errors.New("broken pipe")
		r := c.Call(context.Background(), func(context.Context, []byte) error { return broken }, nil, "ping", nil)
		assert.ErrorIs(t, r.Err, broken)
	})
	t.Run("failed by its reader", func(t *testing.T) {
		c, p := New("own-x-", decode), newPeer()
		req, reply := p.call(t, context.Background(), c, "ping", nil)
		tooLarge := errors.New("too large")
		assert.True(t, c.Fail(req.ID, tooLarge))
		assert.ErrorIs(t, (<-reply).Err, tooLarge)
		assert.False(t, c.Fail(req.ID, tooLarge), "once")
	})
}

func TestOwns(t *testing.T) {
	c := New("own-x-", decode)
	tests := []struct {
		id   string
		want bool
	}{
		{id: `"own-x-1"`, want: true},
		{id: `"own\u002dx-1"`, want: true}, // spelled otherwise
		{id: `"own-x-"`, want: true},       // the whole space is reserved
		{id: `"own-y-1"`, want: false},
		{id: `1`, want: false},
		{id: `"x"`, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			assert.Equal(t, tt.want, c.Owns([]byte(tt.id)))
		})
	}
}
