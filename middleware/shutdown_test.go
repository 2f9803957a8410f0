package middleware

import (
	"context"
	"fmt"
	"io"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/mcpwrap/mcpwrap/resilience"
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

// TestRunLeavesNoGoroutineBehind: every goroutine Run starts (pumps,
// supervisor, catalog loads, calls judged off the client pump, timers) has
// ended when Run returns, however the session ends. Each case ends it with
// a call waiting for a catalog load and one in flight at the upstream.
func TestRunLeavesNoGoroutineBehind(t *testing.T) {
	tests := []struct {
		name string
		end  func(t *testing.T, h *rawHarness)
	}{
		{name: "client closes its side", end: func(t *testing.T, h *rawHarness) { h.client.closeSend() }},
		{name: "context cancelled", end: func(t *testing.T, h *rawHarness) { h.cancel() }},
		{name: "upstream crashes", end: func(t *testing.T, h *rawHarness) {
			h.up.closeSend()
			require.Eventually(t, func() bool { return h.session.Status().Class == resilience.Permanent }, timeout, tick)
			h.cancel()
		}},
		{name: "client stops reading", end: func(t *testing.T, h *rawHarness) {
			go func() { // ends when the upstream's side is closed
				for i := 0; ; i++ {
					if _, err := io.WriteString(h.up.in, fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/n%d"}`+"\n", i)); err != nil {
						return
					}
				}
			}()
			require.Eventually(t, func() bool { return len(h.client.recv) == cap(h.client.recv) }, timeout, tick)
			h.cancel()
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := goleak.IgnoreCurrent()
			h := startRaw(t, rawOptions{policy: lockedSecret, catalog: secretCatalog, drain: 50 * time.Millisecond})
			h.client.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"open"}}` + "\n")
			h.expect("tools/call")
			h.client.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ghost"}}` + "\n")
			h.expect("tools/list")

			tt.end(t, h)
			select {
			case <-h.done:
			case <-time.After(timeout):
				t.Fatal("Run did not return")
			}
			// Checked before the test's peers hang up, which would free a
			// goroutine of Run's still blocked on a Conn; their readers
			// (peer.read) are the test's.
			goleak.VerifyNone(t, before, goleak.IgnoreAnyFunction("github.com/mcpwrap/mcpwrap/middleware.(*peer).read"))
			h.client.hangUp()
			h.up.hangUp()
			goleak.VerifyNone(t, before)
		})
	}
}
