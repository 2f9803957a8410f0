package doctor

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/mcpwrap/mcpwrap/middleware"
	"github.com/mcpwrap/mcpwrap/resilience"
)

// fakeServer is an MCP server in memory. Its tools come in pages.
type fakeServer struct {
	pages     [][]string           // tool names, page by page
	delay     time.Duration        // before it answers initialize (a slow start)
	silent    bool                 // never answers initialize
	initError *middleware.RPCError // answers initialize with this error
	listError *middleware.RPCError // answers tools/list with this error
	listMute  bool                 // never answers tools/list
}

func (f fakeServer) dial(context.Context) (middleware.Conn, error) {
	ours, theirs := pipe()
	go f.serve(ours)
	return theirs, nil
}

func (f fakeServer) serve(c middleware.Conn) {
	defer c.Close()
	for {
		msg, err := c.ReadMessage()
		if err != nil {
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Cursor string `json:"cursor"`
			} `json:"params"`
		}
		if json.Unmarshal(msg, &m) != nil || m.ID == nil {
			continue
		}
		var result any
		var rpcErr *middleware.RPCError
		switch m.Method {
		case "initialize":
			if f.silent {
				continue
			}
			time.Sleep(f.delay) // simulates a slow server (fake time under synctest)
			rpcErr = f.initError
			result = map[string]any{"protocolVersion": protocolVersion,
				"capabilities": map[string]any{"tools": map[string]any{}},
				"serverInfo":   map[string]any{"name": "fake", "version": "1"}}
		case "tools/list":
			if f.listMute {
				continue
			}
			rpcErr = f.listError
			page, _ := strconv.Atoi(m.Params.Cursor)
			var tools []map[string]any
			if page < len(f.pages) {
				for _, name := range f.pages[page] {
					tools = append(tools, map[string]any{"name": name, "description": "the " + name + " tool",
						"inputSchema": map[string]any{"type": "object"}})
				}
			}
			r := map[string]any{"tools": tools}
			if page+1 < len(f.pages) {
				r["nextCursor"] = strconv.Itoa(page + 1)
			}
			result = r
		default:
			rpcErr = &middleware.RPCError{Code: -32601, Message: "method not found"}
		}
		reply := map[string]any{"jsonrpc": "2.0", "id": m.ID}
		if rpcErr != nil {
			reply["error"] = rpcErr
		} else {
			reply["result"] = result
		}
		out, _ := json.Marshal(reply)
		if c.WriteMessage(context.Background(), out) != nil {
			return
		}
	}
}

// exitedConn is a child that exited before saying anything.
type exitedConn struct{ err error }

func (c exitedConn) ReadMessage() ([]byte, error)             { return nil, c.err }
func (exitedConn) WriteMessage(context.Context, []byte) error { return nil }
func (exitedConn) Close() error                               { return nil }

// exits returns a dialer whose child exits at once with code and stderr.
func exits(code int, stderr ...string) middleware.Dialer {
	return func(context.Context) (middleware.Conn, error) {
		return exitedConn{&resilience.ExitError{Code: code, Stderr: stderr}}, nil
	}
}

// failing returns a dialer that fails with err.
func failing(err error) middleware.Dialer {
	return func(context.Context) (middleware.Conn, error) { return nil, err }
}

// flaky returns a dialer whose first n children exit with a transient
// signature on stderr, and whose next ones are srv.
func flaky(n int, srv fakeServer) middleware.Dialer {
	var dials atomic.Int32
	return func(ctx context.Context) (middleware.Conn, error) {
		if int(dials.Add(1)) <= n {
			return exits(1, "error: backend: read tcp 127.0.0.1:5432: connection reset by peer")(ctx)
		}
		return srv.dial(ctx)
	}
}

// lockPolicy locks the tools it names with the given status.
type lockPolicy map[string]string

func (p lockPolicy) Evaluate(tools []json.RawMessage) []middleware.Availability {
	out := make([]middleware.Availability, len(tools))
	for i, raw := range tools {
		var t struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal(raw, &t)
		out[i] = middleware.Availability{InScope: p[t.Name] != "out", Status: p[t.Name]}
		if out[i].Status == "out" {
			out[i].Status = ""
		}
	}
	return out
}

func (lockPolicy) Remediation(status, tool string) string { return "ask someone" }

func (lockPolicy) Rejection(status, tool, discovery string) string {
	return fmt.Sprintf("%s is %s", tool, status)
}
