package middleware

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpwrap/mcpwrap/internal/framing"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStreamConnReportsAnOversizedMessageAsMessageTooLargeError(t *testing.T) {
	big := `{"jsonrpc":"2.0","id":7,"method":"ping","params":{"pad":"` + strings.Repeat("x", 2000) + `"}}`
	c := NewStreamConn(strings.NewReader(big+"\n"+`{"jsonrpc":"2.0","id":8,"method":"ping"}`+"\n"), io.Discard, nil, 1024)

	_, err := c.ReadMessage()
	require.ErrorIs(t, err, ErrMessageTooLarge)
	e, ok := errors.AsType[*MessageTooLargeError](err)
	require.True(t, ok, "want a *MessageTooLargeError, got %T", err)
	assert.Equal(t, int64(len(big)), e.Size)
	assert.Equal(t, 1024, e.Limit)
	assert.Equal(t, "7", string(e.ID))
	assert.Equal(t, "ping", e.Method)

	msg, err := c.ReadMessage()
	require.NoError(t, err, "the stream stays usable")
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":8,"method":"ping"}`, string(msg))
}

// scriptedConn is a client Conn that is not built on a byte stream: it
// hands out the reads a test scripts and records what the Session writes.
type scriptedConn struct {
	reads  chan scriptedRead
	writes chan []byte
	once   sync.Once
	closed chan struct{}
}

type scriptedRead struct {
	msg []byte
	err error
}

func newScriptedConn(reads ...scriptedRead) *scriptedConn {
	c := &scriptedConn{reads: make(chan scriptedRead, len(reads)), writes: make(chan []byte, 16), closed: make(chan struct{})}
	for _, r := range reads {
		c.reads <- r
	}
	close(c.reads)
	return c
}

func (c *scriptedConn) ReadMessage() ([]byte, error) {
	select {
	case r, ok := <-c.reads:
		if !ok {
			return nil, io.EOF
		}
		return r.msg, r.err
	case <-c.closed:
		return nil, io.EOF
	}
}

func (c *scriptedConn) WriteMessage(ctx context.Context, msg []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case c.writes <- append([]byte(nil), msg...):
		return nil
	case <-c.closed:
		return io.ErrClosedPipe
	}
}

func (c *scriptedConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}

// Any Conn can report a dropped message: with a *MessageTooLargeError,
// whose id names the request the Session answers, or with any error
// wrapping ErrMessageTooLarge. Neither ends the session.
func TestSessionTakesMessageTooLargeFromAnyConn(t *testing.T) {
	tests := []struct {
		name      string
		err       error
		wantID    string
		wantInMsg string
	}{
		{
			name:      "MessageTooLargeError with a head",
			err:       &MessageTooLargeError{Size: 5000, Limit: 4096, ID: json.RawMessage("7"), Method: "ping"},
			wantID:    "7",
			wantInMsg: "message of 5000 bytes exceeds the 4096-byte limit",
		},
		{
			name:   "a bare wrapped sentinel",
			err:    fmt.Errorf("websocket frame: %w", ErrMessageTooLarge),
			wantID: "null",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := newScriptedConn(
				scriptedRead{err: tt.err},
				// Still read after the drop: answered like any oversized request.
				scriptedRead{err: &MessageTooLargeError{Size: 9, Limit: 8, ID: json.RawMessage(`"next"`), Method: "x"}},
			)
			_, upConn := newPeer(t, 0)
			s := &Session{Name: "fixture", Client: client, Dial: dialOnce(upConn)}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- s.Run(ctx) }()

			for _, want := range []struct{ id, inMsg string }{{tt.wantID, tt.wantInMsg}, {`"next"`, "exceeds the 8-byte limit"}} {
				select {
				case msg := <-client.writes:
					var resp struct {
						ID    json.RawMessage `json:"id"`
						Error *RPCError       `json:"error"`
					}
					require.NoError(t, json.Unmarshal(msg, &resp))
					assert.Equal(t, want.id, string(resp.ID))
					require.NotNil(t, resp.Error, "an error answer: %s", msg)
					assert.Contains(t, resp.Error.Message, want.inMsg)
				case <-time.After(timeout):
					t.Fatalf("no answer for id %s", want.id)
				}
			}
			require.NoError(t, <-done)
		})
	}
}

// The framing reader's own error stays reachable under the Conn's, for
// code that inspects it.
func TestMessageTooLargeErrorUnwrapsTheReadersError(t *testing.T) {
	c := NewStreamConn(strings.NewReader(strings.Repeat("x", 2000)+"\n"), io.Discard, nil, 1024)
	_, err := c.ReadMessage()
	require.ErrorIs(t, err, ErrMessageTooLarge)
	require.ErrorIs(t, err, framing.ErrLineTooLong)
}

// A StreamConn writes nothing for a context already done: a Session's
// write after its end, or a request's after the request ended, is refused
// whole rather than written.
func TestStreamConnWriteMessageHonoursADoneContext(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancelExpired := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer cancelExpired()
	tests := []struct {
		name    string
		ctx     context.Context
		wantErr error
		want    string
	}{
		{name: "cancelled", ctx: cancelled, wantErr: context.Canceled},
		{name: "past its deadline", ctx: expired, wantErr: context.DeadlineExceeded},
		{name: "live", ctx: context.Background(), want: `{"jsonrpc":"2.0","method":"ping"}` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			c := NewStreamConn(strings.NewReader(""), &out, nil, 0)
			err := c.WriteMessage(tt.ctx, []byte(`{"jsonrpc":"2.0","method":"ping"}`))
			if tt.wantErr != nil {
				require.ErrorIs(t, err, tt.wantErr)
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, tt.want, out.String())
		})
	}
}
