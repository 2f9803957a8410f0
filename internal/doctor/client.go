package doctor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/mcpwrap/mcpwrap/internal/framing"
	"github.com/mcpwrap/mcpwrap/internal/jsonrpc"
	"github.com/mcpwrap/mcpwrap/internal/rpcclient"
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

// rpcClient is the doctor's side of a Session: a minimal JSON-RPC client
// that sends requests and notifications and routes responses by id (with
// the JSON-RPC client the Session uses for its own requests). It declines
// every request of the server's. Safe for concurrent use; close ends it
// and waits for its reader.
type rpcClient struct {
	conn  middleware.Conn
	done  chan struct{} // closed when the reader ended
	calls *rpcclient.Client
}

func newRPCClient(conn middleware.Conn) *rpcClient {
	c := &rpcClient{conn: conn, done: make(chan struct{}), calls: rpcclient.New("doctor-", rpcError)}
	go c.read()
	return c
}

// rpcError reads the error object of a response.
func rpcError(obj json.RawMessage) error {
	e := &middleware.RPCError{}
	if err := json.Unmarshal(obj, e); err != nil {
		return fmt.Errorf("malformed error response: %w", err)
	}
	return e
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
		env, err := framing.Peek(msg)
		if err != nil && !errors.Is(err, framing.ErrAmbiguous) {
			continue
		}
		switch env.Kind {
		case framing.Request:
			// The server asks the client something (roots, sampling): a
			// check has nothing to offer.
			reply := jsonrpc.ErrorResponse(env.ID, jsonrpc.CodeMethodNotFound, "not supported by mcpwrap doctor", nil)
			// Not bounded by a call's context: close ends a blocked write.
			_ = c.conn.WriteMessage(context.Background(), reply)
		case framing.Response:
			c.calls.Deliver(msg, env, err)
		}
		// Notifications tell the doctor nothing it does not ask for.
	}
}

// call sends a request and waits for its response, the end of the
// connection or ctx. A JSON-RPC error comes back as a *middleware.RPCError.
func (c *rpcClient) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	var raw json.RawMessage // no params member when nil
	if params != nil {
		var err error
		if raw, err = json.Marshal(params); err != nil {
			return nil, err
		}
	}
	r := c.calls.Call(ctx, c.conn.WriteMessage, c.done, method, raw)
	return r.Result, r.Err
}

// notify sends a notification, unless ctx is done.
func (c *rpcClient) notify(ctx context.Context, method string) error {
	msg, _ := json.Marshal(map[string]string{"jsonrpc": "2.0", "method": method})
	return c.conn.WriteMessage(ctx, msg)
}
