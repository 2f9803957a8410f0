package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"

	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// The test binary doubles as BenchmarkRelay's floor: `e2e.test
// mcpwrap-e2e-line-relay COMMAND ARGS...` starts COMMAND and relays
// newline-delimited messages both ways, each line whole (store and forward,
// as a relay that must see a message before it passes it on), flushing when
// no more input is buffered. It is the least any line relay can do here.
const lineRelayArg = "mcpwrap-e2e-line-relay"

// tracedLineRelayArg is the line relay with tracing through the
// OpenTelemetry SDK, configured from the OTEL_* environment as mcpwrap's is
// (autoexport, a batch span processor): BenchmarkRelay's "traced floor",
// the least any relay making the conventions' two spans per call costs.
const tracedLineRelayArg = "mcpwrap-e2e-traced-line-relay"

// runLineRelay relays between stdio and argv's process and returns the exit
// code.
func runLineRelay(argv []string) int {
	return lineRelay(argv, nil, nil)
}

// runTracedLineRelay is runLineRelay with, for each request line, a server
// span and a client span under it, carrying the attributes mcpwrap gives a
// tools/call (known here, not parsed), ended by the next response line.
// It reads nothing of the lines but whether they carry an "id", and
// propagates no context: it is a floor, the SDK's own part of the cost.
func runTracedLineRelay(argv []string) int {
	ctx := context.Background()
	exp, err := autoexport.NewSpanExporter(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp))
	defer tp.Shutdown(ctx)
	tracer := tp.Tracer("floor")
	attrs := []attribute.KeyValue{
		attribute.String("mcp.method.name", "tools/call"),
		attribute.String("jsonrpc.request.id", "1"),
		attribute.String("mcpwrap.server", "bench"),
		attribute.String("mcp.protocol.version", "2025-11-25"),
		attribute.String("gen_ai.operation.name", "execute_tool"),
		attribute.String("gen_ai.tool.name", "echo"),
		attribute.String("network.transport", "pipe"),
	}
	var mu sync.Mutex
	var open [][2]trace.Span // started, oldest first
	request := func(line []byte) {
		if !hasID(line) {
			return
		}
		sctx, server := tracer.Start(ctx, "tools/call echo", trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
		_, client := tracer.Start(sctx, "tools/call echo", trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs[:len(attrs)-1]...))
		mu.Lock()
		open = append(open, [2]trace.Span{server, client})
		mu.Unlock()
	}
	response := func(line []byte) {
		if !hasID(line) {
			return
		}
		mu.Lock()
		if len(open) == 0 {
			mu.Unlock()
			return
		}
		spans := open[0]
		open = open[1:]
		mu.Unlock()
		spans[1].End()
		spans[0].End()
	}
	return lineRelay(argv, request, response)
}

// hasID reports whether a line's head has an "id" member: a request or a
// response, not a notification.
func hasID(line []byte) bool {
	return bytes.Contains(line[:min(len(line), 64)], []byte(`"id"`))
}

// lineRelay relays between stdio and argv's process, calling request with
// each line relayed to the process and response with each line relayed
// back (nil: none), and returns the exit code.
func lineRelay(argv []string, request, response func(line []byte)) int {
	if len(argv) == 0 {
		fmt.Fprintf(os.Stderr, "usage: %s COMMAND [ARGS...]\n", lineRelayArg)
		return 2
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return 1
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 1
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); relayLines(in, os.Stdin, request); in.Close() }()
	go func() { defer wg.Done(); relayLines(os.Stdout, out, response) }()
	wg.Wait()
	cmd.Wait()
	return 0
}

// relayLines copies whole lines from src to dst until src ends, calling
// seen (unless nil) with each line before it is written.
func relayLines(dst io.Writer, src io.Reader, seen func(line []byte)) {
	r := bufio.NewReaderSize(src, 64<<10)
	w := bufio.NewWriterSize(dst, 64<<10)
	var long []byte // a line longer than r's buffer, gathered; its room is kept
	gathering := false
	for {
		chunk, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long, chunk...)
			gathering = true
			continue
		}
		if err != nil {
			w.Flush()
			return
		}
		if gathering {
			long = append(long, chunk...)
			chunk, long, gathering = long, long[:0], false
		}
		if seen != nil {
			seen(chunk)
		}
		if _, err := w.Write(chunk); err != nil {
			return
		}
		if r.Buffered() == 0 && w.Flush() != nil {
			return
		}
	}
}
