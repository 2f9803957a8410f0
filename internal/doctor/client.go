package doctor

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"sync"

	"github.com/mcpwrap/mcpwrap/middleware"
)

// pipe returns two connected in-memory [middleware.Conn]s: what one writes
// the other reads. Closing either ends both.
func pipe() (a, b *middleware.StreamConn) {
	aReads, bWrites := io.Pipe()
	bReads, aWrites := io.Pipe()
	closeAll := closerFunc(func() error {
		aReads.Close()
		bReads.Close()
		aWrites.Close()
		bWrites.Close()
		return nil
	})
	return middleware.NewStreamConn(aReads, aWrites, closeAll, 0),
		middleware.NewStreamConn(bReads, bWrites, closeAll, 0)
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

// errClosed is returned by calls after the client's connection ended.
var errClosed = errors.New("connection closed")

// rpcClient is the doctor's side of a Session: a minimal JSON-RPC client
// that sends requests and notifications and routes responses by id. It
// declines every request of the server's. Safe for concurrent use; close
// ends it and waits for its reader.
type rpcClient struct {
	conn middleware.Conn
	done chan struct{} // closed when the reader ended

	mu      sync.Mutex
	next    int
	pending map[string]chan response
}

type response struct {
	Result json.RawMessage      `json:"result"`
	Error  *middleware.RPCError `json:"error"`
}

func newRPCClient(conn middleware.Conn) *rpcClient {
	c := &rpcClient{conn: conn, done: make(chan struct{}), pending: make(map[string]chan response)}
	go c.read()
	return c
}

// close closes the connection and waits for the reader to return.
func (c *rpcClient) close() {
	_ = c.conn.Close()
	<-c.done
}

func (c *rpcClient) read() {
	defer close(c.done)
	for {
		msg, err := c.conn.ReadMessage()
		if err != nil {
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			response
		}
		if json.Unmarshal(msg, &m) != nil || len(m.ID) == 0 {
			continue // notifications tell the doctor nothing it does not ask for
		}
		if m.Method != "" {
			// The server asks the client something (roots, sampling): a
			// check has nothing to offer.
			reply, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m.ID,
				"error": middleware.RPCError{Code: -32601, Message: "not supported by mcpwrap doctor"}})
			// Not bounded by a call's context: close ends a blocked write.
			_ = c.conn.WriteMessage(context.Background(), reply)
			continue
		}
		c.mu.Lock()
		ch, ok := c.pending[string(m.ID)]
		delete(c.pending, string(m.ID))
		c.mu.Unlock()
		if ok {
			ch <- m.response
		}
	}
}

// call sends a request and waits for its response, the end of the
// connection or ctx. A JSON-RPC error comes back as a *middleware.RPCError.
func (c *rpcClient) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	c.mu.Lock()
	c.next++
	id := strconv.Itoa(c.next)
	ch := make(chan response, 1)
	c.pending[id] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
	}()
	msg, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(id), "method": method, "params": params})
	if err != nil {
		return nil, err
	}
	if err := c.conn.WriteMessage(ctx, msg); err != nil {
		return nil, err
	}
	select {
	case r := <-ch:
		if r.Error != nil {
			return nil, r.Error
		}
		return r.Result, nil
	case <-c.done:
		return nil, errClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// notify sends a notification, unless ctx is done.
func (c *rpcClient) notify(ctx context.Context, method string) error {
	msg, _ := json.Marshal(map[string]string{"jsonrpc": "2.0", "method": method})
	return c.conn.WriteMessage(ctx, msg)
}
