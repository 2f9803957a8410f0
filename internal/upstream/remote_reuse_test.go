package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sseAnswers is a RoundTripper that answers every POST request with an SSE
// stream carrying its answer, and 202 to anything else. Each answer's body
// is an endBody, kept in order.
type sseAnswers struct {
	// more, when not nil, is read after the answer: the stream goes on.
	more func(ctx context.Context) io.Reader

	mu     sync.Mutex
	bodies []*endBody
}

func (a *sseAnswers) RoundTrip(r *http.Request) (*http.Response, error) {
	var msg struct {
		ID json.RawMessage `json:"id"`
	}
	if r.Body != nil {
		data, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		_ = json.Unmarshal(data, &msg)
	}
	if r.Method != http.MethodPost || msg.ID == nil {
		return &http.Response{StatusCode: http.StatusAccepted, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
	}
	stream := io.Reader(bytes.NewReader(fmt.Appendf(nil, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{}}\n\n", msg.ID)))
	if a.more != nil {
		stream = io.MultiReader(stream, a.more(r.Context()))
	}
	body := &endBody{r: stream, closed: make(chan struct{})}
	a.mu.Lock()
	a.bodies = append(a.bodies, body)
	a.mu.Unlock()
	return &http.Response{
		StatusCode: http.StatusOK,
		Header:     http.Header{"Content-Type": {"text/event-stream"}},
		Body:       body,
		Request:    r,
	}, nil
}

func (a *sseAnswers) taken() []*endBody {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.bodies
}

// endBody records whether it was read to its end before it was closed, as
// net/http's transport does to decide whether the connection under it can
// carry another request.
type endBody struct {
	r      io.Reader
	mu     sync.Mutex
	eof    bool
	atEnd  bool // closed after its end was read
	closed chan struct{}
	once   sync.Once
}

func (b *endBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err == io.EOF {
		b.mu.Lock()
		b.eof = true
		b.mu.Unlock()
	}
	return n, err
}

func (b *endBody) Close() error {
	b.once.Do(func() {
		b.mu.Lock()
		b.atEnd = b.eof
		b.mu.Unlock()
		close(b.closed)
	})
	return nil
}

// waitClosed waits for b to be closed and reports whether its end was read
// first.
func (b *endBody) waitClosed(t *testing.T) bool {
	t.Helper()
	waitFor(t, b.closed, "the answer's body to be closed")
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.atEnd
}

func TestRemoteAnsweredStreamIsReadToItsEnd(t *testing.T) {
	answers := &sseAnswers{}
	conn, err := DialRemote(t.Context(), Remote{URL: "http://mcp.test/mcp", HTTPClient: &http.Client{Transport: answers}})
	require.NoError(t, err)
	p := newPeer(t, conn)
	p.call(1, "tools/call", `{"name":"a"}`) // the first contact
	p.call(2, "tools/call", `{"name":"b"}`) // a POST once it is made

	bodies := answers.taken()
	require.Len(t, bodies, 2)
	for i, body := range bodies {
		// Closed before its end, a body's connection is closed too, and the
		// next request dials another.
		assert.True(t, body.waitClosed(t), "answer %d: the stream's end was read before it was closed", i+1)
	}
}

func TestRemoteStreamGoingOnAfterItsAnswerIsLeft(t *testing.T) {
	answers := &sseAnswers{more: func(ctx context.Context) io.Reader { return blockedReader{ctx} }}
	conn, err := DialRemote(t.Context(), Remote{URL: "http://mcp.test/mcp", HTTPClient: &http.Client{Transport: answers}})
	require.NoError(t, err)
	p := newPeer(t, conn)
	p.call(1, "tools/call", `{"name":"a"}`)
	p.call(2, "tools/call", `{"name":"b"}`)

	bodies := answers.taken()
	require.Len(t, bodies, 2)
	for i, body := range bodies {
		assert.False(t, body.waitClosed(t), "answer %d: a stream that does not end is closed all the same", i+1)
	}
}

// blockedReader blocks until its context ends, as a stream whose server
// sends nothing more and keeps it open, on a request that is cancelled.
type blockedReader struct{ ctx context.Context }

func (r blockedReader) Read([]byte) (int, error) {
	<-r.ctx.Done()
	return 0, r.ctx.Err()
}

func TestRemoteConnsShareTheirConnections(t *testing.T) {
	// Two waves of `calls` requests in flight at once, each on a RemoteConn
	// of its own (as the sessions of a --listen front are), the second once
	// the first is closed: the second finds every connection the first made
	// idle, whatever their number, and dials none.
	const calls = 32
	var (
		mu      sync.Mutex
		dialled int
		n       int
	)
	arrived := make(chan struct{}, 2*calls)
	release := []chan struct{}{make(chan struct{}), make(chan struct{})}
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var msg struct {
			ID json.RawMessage `json:"id"`
		}
		_ = json.NewDecoder(r.Body).Decode(&msg)
		mu.Lock()
		wave := n / calls
		n++
		mu.Unlock()
		// The headers go first: the first contact waits for them.
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		arrived <- struct{}{}
		<-release[wave]
		fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{}}\n\n", msg.ID)
	}))
	ts.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			mu.Lock()
			dialled++
			mu.Unlock()
		}
	}
	ts.Start()
	t.Cleanup(ts.Close)

	for wave := range 2 {
		conn, err := DialRemote(t.Context(), Remote{URL: ts.URL}) // the default client
		require.NoError(t, err)
		p := newPeer(t, conn)
		for i := range calls {
			p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"a"}}`, i))
		}
		for range calls {
			waitFor(t, arrived, "every call of the wave at the server")
		}
		close(release[wave])
		for range calls {
			p.next()
		}
		require.NoError(t, conn.Close()) // its answers' streams are read to their end, their connections idle
	}
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, calls, dialled, "connections dialled for two waves of %d calls", calls)
}
