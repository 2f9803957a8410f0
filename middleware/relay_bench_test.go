package middleware_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/mcpwrap/mcpwrap/internal/erabridge"
	"github.com/mcpwrap/mcpwrap/internal/framing"
	"github.com/mcpwrap/mcpwrap/internal/gate"
	"github.com/mcpwrap/mcpwrap/internal/policy"
	"github.com/mcpwrap/mcpwrap/internal/state"
	"github.com/mcpwrap/mcpwrap/middleware"
	"github.com/stretchr/testify/require"
)

// The relay benchmarks run a Session in process, with the real gate, over
// OS pipes to an upstream that answers at once, so that a CPU profile
// (-cpuprofile) shows the relay's own hot path. e2e's BenchmarkRelay is the
// yardstick across processes; these are for finding where the time goes.
// Each has a Bridged twin whose upstream Conn is behind the era bridge, as
// cmd dials it: client and server of one era, which must cost nothing.

// benchUpstream answers like e2e's raw server: initialize, tools/list with
// one tool, and "ok" to every tools/call; "blob" answers with size bytes of
// text.
func benchUpstream(r io.Reader, w io.WriteCloser, blobBytes int) {
	defer w.Close()
	br := bufio.NewReaderSize(r, 1<<20)
	bw := bufio.NewWriterSize(w, 64<<10)
	blob := `,"result":{"content":[{"type":"text","text":"` + strings.Repeat("x", blobBytes) + `"}]}}` + "\n"
	for {
		line, err := br.ReadBytes('\n')
		if err != nil {
			bw.Flush()
			return
		}
		env, err := framing.Peek(bytes.TrimSpace(line))
		if err != nil || env.ID == nil {
			continue
		}
		bw.WriteString(`{"jsonrpc":"2.0","id":`)
		bw.Write(env.ID)
		switch {
		case env.Method == "initialize":
			bw.WriteString(`,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"raw","version":"1"}}}` + "\n")
		case env.Method == "tools/list":
			bw.WriteString(`,"result":{"tools":[{"name":"echo","description":"Answers ok.","inputSchema":{"type":"object"}},{"name":"blob","description":"Answers a blob.","inputSchema":{"type":"object"}}]}}` + "\n")
		case bytes.Contains(env.Params, []byte(`"blob"`)):
			bw.WriteString(blob)
		default:
			bw.WriteString(`,"result":{"content":[{"type":"text","text":"ok"}]}}` + "\n")
		}
		if br.Buffered() == 0 {
			bw.Flush()
		}
	}
}

// benchClient is the client end of a benchmarked Session.
type benchClient struct {
	in  *bufio.Writer
	out *bufio.Reader
}

// startBenchSession starts a Session; bridged puts its upstream Conn behind
// erabridge.Wrap.
func startBenchSession(b *testing.B, blobBytes int, bridged bool) *benchClient {
	b.Helper()
	clientR, toSession, err := os.Pipe()
	require.NoError(b, err)
	fromSession, clientW, err := os.Pipe()
	require.NoError(b, err)
	upR, toUp, err := os.Pipe()
	require.NoError(b, err)
	fromUp, upW, err := os.Pipe()
	require.NoError(b, err)
	go benchUpstream(upR, upW, blobBytes)

	eval, err := policy.NewEvaluator(policy.Options{})
	require.NoError(b, err)
	g := gate.New("bench", eval, state.Open(b.TempDir(), nil), nil)
	g.Reload(context.Background())
	s := &middleware.Session{
		Name:   "bench",
		Client: middleware.NewStreamConn(clientR, clientW, clientW, 0),
		Dial: func(context.Context) (middleware.Conn, error) {
			conn := middleware.NewStreamConn(fromUp, toUp, toUp, 0)
			if bridged {
				return erabridge.Wrap(conn, erabridge.Options{}), nil
			}
			return conn, nil
		},
		Tools: g,
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = s.Run(ctx) }()
	b.Cleanup(func() { toSession.Close(); cancel(); wg.Wait(); fromSession.Close() })

	c := &benchClient{in: bufio.NewWriterSize(toSession, 64<<10), out: bufio.NewReaderSize(fromSession, 64<<10)}
	c.roundTrip(b, []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`+"\n"))
	c.send(b, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"))
	c.roundTrip(b, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`+"\n"))
	return c
}

func (c *benchClient) send(b *testing.B, line []byte) {
	if _, err := c.in.Write(line); err != nil {
		b.Fatal(err)
	}
	if err := c.in.Flush(); err != nil {
		b.Fatal(err)
	}
}

func (c *benchClient) receive(b *testing.B) {
	for {
		line, err := c.out.ReadSlice('\n')
		isResponse := bytes.Contains(line[:min(len(line), 64)], []byte(`"id"`))
		for err == bufio.ErrBufferFull {
			_, err = c.out.ReadSlice('\n')
		}
		if err != nil {
			b.Fatalf("reading a response: %v", err)
		}
		if isResponse {
			return
		}
	}
}

func (c *benchClient) roundTrip(b *testing.B, req []byte) {
	c.send(b, req)
	c.receive(b)
}

const benchCall = `,"method":"tools/call","params":{"name":"echo","arguments":{"text":"ping"}}}` + "\n"

func BenchmarkSessionRoundTrip(b *testing.B)        { benchRoundTrip(b, false) }
func BenchmarkSessionRoundTripBridged(b *testing.B) { benchRoundTrip(b, true) }

func benchRoundTrip(b *testing.B, bridged bool) {
	c := startBenchSession(b, 0, bridged)
	req := []byte(`{"jsonrpc":"2.0","id":1` + benchCall)
	b.ReportAllocs()
	for b.Loop() {
		c.roundTrip(b, req)
	}
}

func BenchmarkSessionInFlight64(b *testing.B)        { benchInFlight64(b, false) }
func BenchmarkSessionInFlight64Bridged(b *testing.B) { benchInFlight64(b, true) }

func benchInFlight64(b *testing.B, bridged bool) {
	c := startBenchSession(b, 0, bridged)
	b.ReportAllocs()
	const window = 64
	slots := make(chan struct{}, window)
	var wg sync.WaitGroup
	wg.Add(1)
	b.ResetTimer()
	go func() {
		defer wg.Done()
		for range b.N {
			c.receive(b)
			<-slots
		}
	}()
	var line []byte
	for i := range b.N {
		slots <- struct{}{}
		line = append(strconv.AppendInt(append(line[:0], `{"jsonrpc":"2.0","id":`...), int64(i+2), 10), benchCall...)
		if _, err := c.in.Write(line); err != nil {
			b.Fatal(err)
		}
		if len(slots) == window || c.out.Buffered() == 0 {
			if err := c.in.Flush(); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := c.in.Flush(); err != nil {
		b.Fatal(err)
	}
	wg.Wait()
}

func BenchmarkSessionRequest10MiB(b *testing.B)        { benchRequest10MiB(b, false) }
func BenchmarkSessionRequest10MiBBridged(b *testing.B) { benchRequest10MiB(b, true) }

func benchRequest10MiB(b *testing.B, bridged bool) {
	c := startBenchSession(b, 0, bridged)
	req := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"data":"` + strings.Repeat("x", 10<<20) + `"}}}` + "\n")
	b.SetBytes(int64(len(req)))
	b.ReportAllocs()
	for b.Loop() {
		c.roundTrip(b, req)
	}
}

func BenchmarkSessionResult10MiB(b *testing.B)        { benchResult10MiB(b, false) }
func BenchmarkSessionResult10MiBBridged(b *testing.B) { benchResult10MiB(b, true) }

func benchResult10MiB(b *testing.B, bridged bool) {
	c := startBenchSession(b, 10<<20, bridged)
	req := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"blob","arguments":{}}}` + "\n")
	b.SetBytes(10 << 20)
	b.ReportAllocs()
	for b.Loop() {
		c.roundTrip(b, req)
	}
}
