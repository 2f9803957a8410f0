package middleware

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestShutdownDrains: whichever way Run is told to stop — the client
// closing its side (stdin EOF) or Run's context ending (SIGTERM, SIGINT) —
// the upstream keeps running through the drain, a request in flight gets
// the upstream's real answer when it comes within the drain time and one
// error when it does not, and only then is the upstream closed.
func TestShutdownDrains(t *testing.T) {
	const (
		drain    = 2 * time.Second
		answer   = `{"jsonrpc":"2.0","id":7,"result":{"done":true}}`
		shutDown = `{"jsonrpc":"2.0","id":7,"error":{"code":-32603,"message":"the session ended before the request was answered"}}`
	)
	tests := []struct {
		name     string
		cancel   bool // stop by cancelling Run's context, else by closing the client's side
		answered bool // the upstream answers during the drain
		want     string
	}{
		{name: "context done, answered in time", cancel: true, answered: true, want: answer},
		{name: "client gone, answered in time", answered: true, want: answer},
		{name: "context done, not answered in time", cancel: true, want: shutDown},
		{name: "client gone, not answered in time", want: shutDown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				client, clientConn := newPeer(t, 0)
				up, upConn := newPeer(t, 0)
				s := &Session{Name: "fx", Client: clientConn, Dial: dialOnce(upConn), DrainTimeout: drain}
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				done := make(chan error, 1)
				go func() { done <- s.Run(ctx) }()
				handshake(t, client, up)
				client.send(`{"jsonrpc":"2.0","id":7,"method":"slow/op"}` + "\n")
				assert.Equal(t, `{"jsonrpc":"2.0","id":7,"method":"slow/op"}`, string(up.next()))

				if tt.cancel {
					cancel()
				} else {
					client.closeSend()
				}
				synctest.Wait()
				select {
				case err := <-done:
					require.FailNow(t, "Run returned with a request in flight", "error: %v", err)
				case msg, ok := <-up.recv:
					require.True(t, ok, "the upstream was closed with a request in flight")
					require.FailNow(t, "unexpected message to the upstream", "%s", msg)
				default:
				}

				start := time.Now()
				if tt.answered {
					up.send(answer + "\n")
				}
				assert.Equal(t, tt.want, string(client.next()))
				if !tt.answered {
					assert.Equal(t, drain, time.Since(start), "answered when the drain time is up")
				}
				require.NoError(t, <-done)
				up.closed()
				synctest.Wait()
				select {
				case msg, ok := <-client.recv:
					assert.False(t, ok, "answered more than once: %s", msg)
				default:
				}
			})
		})
	}
}
