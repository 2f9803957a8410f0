package middleware

import (
	"context"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/mcpwrap/mcpwrap/internal/framing"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writeLog is a client's stdout that records each write call and passes
// the bytes on to a peer's reader.
type writeLog struct {
	mu     sync.Mutex
	writes []string
	w      io.Writer
}

func (l *writeLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	l.writes = append(l.writes, string(p))
	l.mu.Unlock()
	return l.w.Write(p)
}

func (l *writeLog) taken() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.writes
	l.writes = nil
	return w
}

func TestUpstreamMessagesThatArriveTogetherReachTheClientInOneWrite(t *testing.T) {
	toSession, fromClient := io.Pipe()
	toClient, fromSession := io.Pipe()
	log := &writeLog{w: fromSession}
	clientConn := NewStreamConn(toSession, log, closerFunc(func() error {
		toSession.Close()
		return fromSession.Close()
	}), 0)
	client := &peer{t: t, in: fromClient, out: framing.NewReader(toClient, 0), outR: toClient, recv: make(chan []byte, 64)}
	go func() {
		defer close(client.recv)
		for {
			line, err := client.out.Read()
			if err != nil {
				return
			}
			client.recv <- append([]byte(nil), line...)
		}
	}()
	t.Cleanup(func() { fromClient.Close(); toClient.Close() })
	up, upConn := newPeer(t, 0)
	s := &Session{Name: "fixture", Client: clientConn, Dial: dialOnce(upConn)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	handshake(t, client, up)
	log.taken()

	for _, id := range []string{"1", "2", "3"} {
		client.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}` + "\n")
		up.next()
	}
	run := []string{
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}`,
		`{"jsonrpc":"2.0","id":2,"result":{}}`,
		`not JSON: moved to the log`,
		`{"jsonrpc":"2.0","id":3,"result":{}}`,
	}
	up.send(strings.Join(run, "\n") + "\n") // one write: the session reads them together
	for _, i := range []int{0, 1, 2, 4} {
		require.Equal(t, run[i], string(client.next()), "byte for byte, in order")
	}
	assert.Equal(t, []string{run[0] + "\n" + run[1] + "\n" + run[2] + "\n" + run[4] + "\n"}, log.taken(),
		"the run reaches the client in one write")

	client.send(`{"jsonrpc":"2.0","id":4,"method":"ping"}` + "\n")
	up.next()
	up.send(`{"jsonrpc":"2.0","id":4,"result":{}}` + "\n" + `not JSON either` + "\n")
	require.Equal(t, `{"jsonrpc":"2.0","id":4,"result":{}}`, string(client.next()),
		"a message held for a next one that is then dropped still goes out")
}

func TestClientRequestsThatArriveTogetherReachTheUpstreamInOneWrite(t *testing.T) {
	client, clientConn := newPeer(t, 0)
	toSession, fromUp := io.Pipe()
	toUp, fromSession := io.Pipe()
	log := &writeLog{w: fromSession}
	upConn := NewStreamConn(toSession, log, closerFunc(func() error {
		toSession.Close()
		return fromSession.Close()
	}), 0)
	up := &peer{t: t, in: fromUp, out: framing.NewReader(toUp, 0), outR: toUp, recv: make(chan []byte, 64)}
	go func() {
		defer close(up.recv)
		for {
			line, err := up.out.Read()
			if err != nil {
				return
			}
			up.recv <- append([]byte(nil), line...)
		}
	}()
	t.Cleanup(func() { fromUp.Close(); toUp.Close() })
	s := &Session{Name: "fixture", Client: clientConn, Dial: dialOnce(upConn)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	handshake(t, client, up)
	log.taken()

	run := []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"file:///a"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"ping"}`,
	}
	client.send(strings.Join(run, "\n") + "\n") // one write: the session reads them together
	for _, msg := range run {
		require.Equal(t, msg, string(up.next()), "byte for byte, in order")
	}
	assert.Equal(t, []string{run[0] + "\n" + run[1] + "\n" + run[2] + "\n"}, log.taken(),
		"the run reaches the upstream in one write")

	client.send(`{"jsonrpc":"2.0","id":4,"method":"ping"}` + "\n" + `{"jsonrpc":"2.0","id":5,"method":"initialize","params":{}}` + "\n")
	require.Equal(t, `{"jsonrpc":"2.0","id":4,"method":"ping"}`, string(up.next()),
		"a request held for a next message that does not go to the upstream still goes out")
}

// turnConn is an upstream Conn that can hold messages back; onHold, when
// set, runs as a message is held, before it is kept.
type turnConn struct {
	Conn
	mu      sync.Mutex
	held    []string
	written []string
	onHold  func()
}

func (c *turnConn) WriteMessage(_ context.Context, msg []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.written = append(c.written, append(c.held, string(msg))...)
	c.held = nil
	return nil
}

func (c *turnConn) HoldMessage(msg []byte) error {
	if f := c.onHold; f != nil {
		c.onHold = nil
		f()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.held = append(c.held, string(msg))
	return nil
}

func (c *turnConn) Flush() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.written = append(c.written, c.held...)
	c.held = nil
	return nil
}

// TestTurnWriteOffThePumpIsFlushed holds the turn's protocol to its
// promise without a lock: a request written off the client pump while the
// pump's turn says more follows is held, and whichever way that write and
// the end of the turn interleave, it is written, never left held.
func TestTurnWriteOffThePumpIsFlushed(t *testing.T) {
	tests := []struct {
		name    string
		endTurn string // when the pump ends its turn: "before", "during" (between the write's look at the turn and its hold), "after"
	}{
		{name: "the turn ended before the write", endTurn: "before"},
		{name: "the turn ends as the write holds", endTurn: "during"},
		{name: "the turn ends after the write", endTurn: "after"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conn := &turnConn{}
			l := &link{conn: conn}
			s := &Session{Name: "fixture"}
			s.ready.Store(l)
			turn := &pumpTurn{}
			turn.set(true)
			ctx := context.WithValue(context.Background(), turnKey{}, turn)
			if tt.endTurn == "before" {
				s.endTurn(turn)
			}
			if tt.endTurn == "during" {
				conn.onHold = func() { s.endTurn(turn) }
			}
			require.NoError(t, s.writeRequest(ctx, l, []byte("call")))
			if tt.endTurn == "after" {
				s.endTurn(turn)
			}
			assert.Equal(t, []string{"call"}, conn.written)
			assert.Empty(t, conn.held)
		})
	}
}
