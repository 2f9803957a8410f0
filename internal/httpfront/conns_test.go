package httpfront

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// countingListener counts the connections it accepted that are still
// open, and the most open at once.
type countingListener struct {
	net.Listener
	mu         sync.Mutex
	open, peak int
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.open++
	l.peak = max(l.peak, l.open)
	l.mu.Unlock()
	return &countedConn{Conn: c, l: l}, nil
}

func (l *countingListener) Peak() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.peak
}

type countedConn struct {
	net.Conn
	l    *countingListener
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() {
		c.l.mu.Lock()
		c.l.open--
		c.l.mu.Unlock()
	})
	return c.Conn.Close()
}

// serveLimited serves h on a loopback listener within lim, as mcpwrap
// --listen does, and returns its address and the listener that counts its
// connections.
func serveLimited(t *testing.T, lim ConnLimits, h http.Handler) (string, *countingListener) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	counted := &countingListener{Listener: ln}
	hs := lim.NewHTTPServer(h, slog.New(slog.DiscardHandler))
	served := make(chan struct{})
	go func() {
		defer close(served)
		hs.Serve(lim.Listener(counted))
	}()
	t.Cleanup(func() {
		hs.Close()
		<-served
	})
	return ln.Addr().String(), counted
}

// limitedFront serves a Server with a fake upstream within lim.
func limitedFront(t *testing.T, lim ConnLimits, configure func(*Server)) (string, *countingListener) {
	t.Helper()
	up := newFakeUpstream()
	front := &Server{NewSession: up.session}
	if configure != nil {
		configure(front)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		assert.NoError(t, front.Shutdown(ctx))
	})
	return serveLimited(t, lim, front)
}

// errNeverCutOff: a trickling client was still connected after
// trickleLimit.
var errNeverCutOff = errors.New("the server did not cut the slow client off")

// trickleLimit is how long trickle keeps at it before it gives up.
const trickleLimit = 5 * time.Second

// trickle plays a slow client: it dials addr, writes head, then writes one
// more byte whenever 10 ms pass without a word from the server, until the
// server ends the connection. It returns what the server sent.
func trickle(addr, head string) (string, error) {
	giveUp := time.Now().Add(trickleLimit)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, head); err != nil {
		return "", err
	}
	var got strings.Builder
	buf := make([]byte, 4096)
	for {
		conn.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
		n, err := conn.Read(buf)
		got.Write(buf[:n])
		var ne net.Error
		switch {
		case errors.As(err, &ne) && ne.Timeout():
			if time.Now().After(giveUp) {
				return got.String(), errNeverCutOff
			}
			if _, err := conn.Write([]byte(" ")); err != nil { // JSON whitespace: the body stays valid
				// The server answered and closed meanwhile (with a reset,
				// as it left bytes unread): its answer is still to be read.
				conn.SetReadDeadline(giveUp)
				rest, _ := io.ReadAll(conn)
				got.Write(rest)
				return got.String(), nil
			}
		case err != nil:
			return got.String(), nil // EOF, or reset by the server
		}
	}
}

// postHead is the head of a POST to /mcp announcing a body of size bytes,
// followed by the body's first bytes.
func postHead(size int, header string) string {
	return fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json\r\n%sContent-Length: %d\r\n\r\n{\"jsonrpc\":", header, size)
}

// TestSlowClientIsCutOff: a client that trickles its headers or its body,
// a byte at a time, is cut off once the header or body timeout passes,
// even when its request is refused without its body being read.
func TestSlowClientIsCutOff(t *testing.T) {
	t.Parallel()
	const timeout = 100 * time.Millisecond
	tests := []struct {
		name       string
		lim        ConnLimits
		token      string
		head       string
		wantStatus string // the start of what the server sent, if anything
	}{
		{
			name: "headers trickled", lim: ConnLimits{HeaderTimeout: timeout, BodyTimeout: time.Hour},
			head: "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: a",
		},
		{
			name: "body trickled", lim: ConnLimits{HeaderTimeout: time.Hour, BodyTimeout: timeout},
			head: postHead(1<<20, ""), wantStatus: "HTTP/1.1 400 Bad Request",
		},
		{
			name: "refused body still trickling", lim: ConnLimits{HeaderTimeout: time.Hour, BodyTimeout: timeout}, token: "s3cret",
			head: postHead(1<<10, ""), wantStatus: "HTTP/1.1 401 Unauthorized",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			addr, _ := limitedFront(t, tt.lim, func(s *Server) { s.Token = tt.token })

			start := time.Now()
			got, err := trickle(addr, tt.head)
			elapsed := time.Since(start)

			require.NoError(t, err)
			assert.GreaterOrEqual(t, elapsed, timeout, "cut off only once its timeout passed")
			assert.Less(t, elapsed, trickleLimit, "cut off soon after its timeout")
			if tt.wantStatus != "" {
				assert.True(t, strings.HasPrefix(got, tt.wantStatus), "got %q", got)
			}
		})
	}
}

// TestBodyDeadlineEndsWithTheBody: once a request's body is read, its
// timeout no longer applies: an answer that takes longer (an SSE stream)
// is neither cut nor cancelled.
func TestBodyDeadlineEndsWithTheBody(t *testing.T) {
	t.Parallel()
	const timeout = 50 * time.Millisecond
	addr, _ := serveLimited(t, ConnLimits{BodyTimeout: timeout}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		select {
		case <-time.After(4 * timeout): // the answer outlasts the body's timeout
		case <-r.Context().Done():
		}
		fmt.Fprintf(w, "%s: %v", body, r.Context().Err())
	}))

	resp, err := http.Post("http://"+addr+"/mcp", "application/json", strings.NewReader("{}"))
	require.NoError(t, err)
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "{}: <nil>", string(got), "the request was not cancelled")
}

// TestTrickledBodiesHoldAtMostTheCap: 1,000 slow clients, trickling their
// bodies a byte at a time, never hold more connections than the cap, and
// a legitimate client's requests keep succeeding meanwhile: the timeouts
// free the slots, and a waiting connection gets the next one. (A slot is
// held about half a second past the body timeout: net/http lingers before
// closing a connection whose body it did not read, so that the client
// gets the error answer rather than a reset.)
func TestTrickledBodiesHoldAtMostTheCap(t *testing.T) {
	t.Parallel()
	const (
		attempts = 1000
		workers  = 100
		maxConns = 64
	)
	lim := ConnLimits{HeaderTimeout: 250 * time.Millisecond, BodyTimeout: 250 * time.Millisecond, MaxConns: maxConns}
	addr, counted := limitedFront(t, lim, nil)
	url := "http://" + addr + "/mcp"
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}} // a new connection each time
	post := func(session, body string) (*http.Response, error) {
		req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", acceptJSON)
		if session != "" {
			req.Header.Set(HeaderSessionID, session)
		}
		return client.Do(req)
	}
	resp, err := post("", initializeBody)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	session := resp.Header.Get(HeaderSessionID)

	var next atomic.Int32
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for next.Add(1) <= attempts {
				_, err := trickle(addr, postHead(1<<20, "Mcp-Session-Id: "+session+"\r\n"))
				assert.NoError(t, err)
			}
		})
	}
	attacked := make(chan struct{})
	go func() {
		wg.Wait()
		close(attacked)
	}()

	var ok, failed int
	for done := false; !done; {
		select {
		case <-attacked:
			done = true
		default:
		}
		resp, err := post(session, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, ok+failed+1))
		if err == nil {
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		if assert.NoError(t, err) && assert.Equal(t, http.StatusOK, resp.StatusCode) {
			ok++
		} else {
			failed++
		}
	}
	t.Logf("%d legitimate requests succeeded during %d trickled ones; at most %d connections open", ok, attempts, counted.Peak())
	assert.Greater(t, ok, 1, "legitimate requests kept working")
	assert.Zero(t, failed)
	assert.LessOrEqual(t, counted.Peak(), maxConns, "the process holds at most the cap")
}

// TestNewHTTPServerTakesANilLogger: a nil logger discards, as everywhere
// else in mcpwrap, instead of panicking.
func TestNewHTTPServerTakesANilLogger(t *testing.T) {
	require.NotPanics(t, func() { ConnLimits{}.NewHTTPServer(http.NotFoundHandler(), nil) })
}
