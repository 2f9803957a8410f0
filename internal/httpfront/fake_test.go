package httpfront

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpwrap/mcpwrap/middleware"
)

// fakeUpstream is a tiny MCP server behind an in-memory pipe; every dial
// starts a new one (like a stdio child per session).
//
// Its tools: echo (text), progress (a progress notification first, when the
// call carries a progress token; with arguments.hold, it then signals hung
// and answers once release is closed), sample (asks the client for a sampling
// completion and returns its text), slow (answers once release is closed
// or the connection ends), hang (like slow, but reads nothing meanwhile,
// as a server stuck without reading its stdin), big (a text of
// arguments.bytes bytes, signalling bigSent once the relay took it), flood
// (arguments.n progress notifications with a message of arguments.bytes
// bytes, then like progress with hold).
type fakeUpstream struct {
	conns   chan *fakeConn // every connection dialled, in order
	release chan struct{}  // closing it lets slow and hung calls answer
	hung    chan struct{}  // receives when a hang call stops reading
	bigSent chan struct{}  // receives when a big answer is written whole
	asked   chan string    // receives the id of each sampling request sent
	dials   atomic.Int32
	// holdInit, when set, makes initialize wait for release (a slow
	// server start), signalling hung.
	holdInit atomic.Bool
	// modern, when set, serves the 2026-07-28 protocol too: server/discover
	// and subscriptions/listen (acknowledged, then held open).
	modern atomic.Bool
	// rejectDiscovers counts the server/discover requests still to be
	// refused with an unsupported-version error offering 2026-07-28.
	rejectDiscovers atomic.Int32
	// rejectInvalid makes those refusals invalid-params errors instead,
	// and rejectNotFound method-not-found errors.
	rejectInvalid  atomic.Bool
	rejectNotFound atomic.Bool
}

func newFakeUpstream() *fakeUpstream {
	return &fakeUpstream{conns: make(chan *fakeConn, 256), release: make(chan struct{}), hung: make(chan struct{}, 16), bigSent: make(chan struct{}, 16), asked: make(chan string, 16)}
}

// fakeConn is one connection (one "child").
type fakeConn struct {
	up     *fakeUpstream
	w      *io.PipeWriter
	wmu    sync.Mutex
	closed chan struct{} // closed when the relay closed the connection
	once   sync.Once

	mu      sync.Mutex
	seq     int
	waiting map[string]chan json.RawMessage // server request id → its response
	lines   []string                        // every line received
}

func (f *fakeUpstream) dial(context.Context) (middleware.Conn, error) {
	f.dials.Add(1)
	upR, relayW := io.Pipe() // relay → fake
	relayR, upW := io.Pipe() // fake → relay
	fc := &fakeConn{up: f, w: upW, closed: make(chan struct{}), waiting: map[string]chan json.RawMessage{}}
	go fc.serve(upR)
	closer := closerFunc(func() error {
		fc.once.Do(func() { close(fc.closed) })
		relayW.Close()
		return relayR.Close()
	})
	f.conns <- fc
	return middleware.NewStreamConn(relayR, relayW, closer, 0), nil
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

// session returns a middleware.Session over this upstream, as NewSession.
func (f *fakeUpstream) session(client middleware.Conn, log *slog.Logger) *middleware.Session {
	return &middleware.Session{Name: "fake", Client: client, Dial: f.dial, Logger: log, DrainTimeout: 50 * time.Millisecond}
}

// next returns the next dialled connection.
func (f *fakeUpstream) next(t testing.TB) *fakeConn {
	t.Helper()
	select {
	case fc := <-f.conns:
		return fc
	case <-time.After(10 * time.Second):
		t.Fatal("no upstream connection dialled")
		return nil
	}
}

// Push sends an unsolicited message to the relay.
func (fc *fakeConn) Push(msg string) { fc.write(msg) }

func (fc *fakeConn) write(msg string) {
	fc.wmu.Lock()
	defer fc.wmu.Unlock()
	_, _ = io.WriteString(fc.w, msg+"\n")
}

// Lines returns the lines the upstream received so far.
func (fc *fakeConn) Lines() []string {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	return append([]string(nil), fc.lines...)
}

func (fc *fakeConn) serve(r io.Reader) {
	defer fc.w.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		fc.mu.Lock()
		fc.lines = append(fc.lines, line)
		fc.mu.Unlock()
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal([]byte(line), &m) != nil {
			continue
		}
		switch {
		case m.Method == "" && m.ID != nil: // a response to one of ours
			fc.mu.Lock()
			ch := fc.waiting[string(m.ID)]
			fc.mu.Unlock()
			if ch != nil {
				ch <- m.Result
			}
		case m.ID != nil:
			fc.handle(m.ID, m.Method, m.Params)
		}
	}
}

func (fc *fakeConn) reply(id json.RawMessage, result string) {
	fc.write(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, id, result))
}

func textResult(text string) string {
	b, _ := json.Marshal(text)
	return `{"content":[{"type":"text","text":` + string(b) + `}]}`
}

func (fc *fakeConn) handle(id json.RawMessage, method string, params json.RawMessage) {
	switch method {
	case "initialize":
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(params, &p)
		if fc.up.holdInit.Load() {
			fc.up.hung <- struct{}{}
			select {
			case <-fc.up.release:
			case <-fc.closed:
				return
			}
		}
		fc.reply(id, `{"protocolVersion":"`+p.ProtocolVersion+`","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"fake","version":"1"}}`)
	case "server/discover":
		if !fc.up.modern.Load() || !exactMetaVersion(params) {
			// As the go-sdk's server: a discover whose _meta (read
			// exactly, last duplicate wins) names no 2026-07-28 version is
			// of the session era, which has no server/discover.
			fc.write(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`, id))
			return
		}
		if fc.up.rejectDiscovers.Add(-1) >= 0 {
			if fc.up.rejectNotFound.Load() {
				fc.write(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`, id))
				return
			}
			if fc.up.rejectInvalid.Load() {
				fc.write(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32602,"message":"missing clientCapabilities"}}`, id))
				return
			}
			fc.write(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32022,"message":"unsupported","data":{"supported":["2026-07-28"],"requested":"x"}}}`, id))
			return
		}
		fc.reply(id, `{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{"listChanged":true}}}`)
	case "subscriptions/listen":
		fc.write(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"toolsListChanged":true},"_meta":{"io.modelcontextprotocol/subscriptionId":%s}}}`, id))
	case "ping":
		fc.reply(id, `{}`)
	case "tools/list":
		fc.reply(id, `{"tools":[{"name":"echo","inputSchema":{"type":"object"}},{"name":"sample","inputSchema":{"type":"object"}}]}`)
	case "tools/call":
		var p struct {
			Name      string            `json:"name"`
			Arguments map[string]string `json:"arguments"`
			Meta      struct {
				ProgressToken json.RawMessage `json:"progressToken"`
			} `json:"_meta"`
		}
		_ = json.Unmarshal(params, &p)
		switch p.Name {
		case "echo":
			fc.reply(id, textResult(p.Arguments["text"]))
		case "progress":
			if p.Meta.ProgressToken != nil {
				fc.write(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":%s,"progress":1,"total":2}}`, p.Meta.ProgressToken))
			}
			if p.Arguments["hold"] == "" {
				fc.reply(id, textResult("done"))
				return
			}
			fc.up.hung <- struct{}{}
			go func() {
				select {
				case <-fc.up.release:
					fc.reply(id, textResult("done"))
				case <-fc.closed:
				}
			}()
		case "sample":
			go fc.sample(id)
		case "hang":
			fc.up.hung <- struct{}{}
			select {
			case <-fc.up.release:
				fc.reply(id, textResult("hang done"))
			case <-fc.closed:
			}
		case "flood":
			n, _ := strconv.Atoi(p.Arguments["n"])
			size, _ := strconv.Atoi(p.Arguments["bytes"])
			for i := range n {
				fc.write(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":%s,"progress":%d,"message":%q}}`,
					p.Meta.ProgressToken, i, strings.Repeat("x", size)))
			}
			fc.up.hung <- struct{}{}
			go func() {
				select {
				case <-fc.up.release:
					fc.reply(id, textResult("flood done"))
				case <-fc.closed:
				}
			}()
		case "big":
			n, _ := strconv.Atoi(p.Arguments["bytes"])
			fc.reply(id, textResult(strings.Repeat("x", n)))
			fc.up.bigSent <- struct{}{}
		case "slow":
			go func() {
				select {
				case <-fc.up.release:
					fc.reply(id, textResult("slow done"))
				case <-fc.closed:
				}
			}()
		default:
			fc.write(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32602,"message":"unknown tool"}}`, id))
		}
	default:
		fc.write(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"method not found"}}`, id))
	}
}

// sample asks the client for a completion and answers call id with it.
func (fc *fakeConn) sample(id json.RawMessage) {
	fc.mu.Lock()
	fc.seq++
	reqID := fmt.Sprintf(`"up-%d"`, fc.seq)
	ch := make(chan json.RawMessage, 1)
	fc.waiting[reqID] = ch
	fc.mu.Unlock()
	fc.write(`{"jsonrpc":"2.0","id":` + reqID + `,"method":"sampling/createMessage","params":{"maxTokens":10,"messages":[{"role":"user","content":{"type":"text","text":"hi"}}]}}`)
	fc.up.asked <- reqID
	select {
	case res := <-ch:
		var r struct {
			Content struct {
				Text string `json:"text"`
			} `json:"content"`
		}
		_ = json.Unmarshal(res, &r)
		fc.reply(id, textResult("sampled: "+r.Content.Text))
	case <-fc.closed:
	}
}

// exactMetaVersion reports whether params' "_meta" (its member names
// matched exactly, as the go-sdk's server reads them) names a 2026-07-28
// protocol version.
func exactMetaVersion(params json.RawMessage) bool {
	var p, meta map[string]json.RawMessage
	if json.Unmarshal(params, &p) != nil || json.Unmarshal(p["_meta"], &meta) != nil {
		return false
	}
	var v string
	return json.Unmarshal(meta["io.modelcontextprotocol/protocolVersion"], &v) == nil && v >= "2026-07-28"
}
