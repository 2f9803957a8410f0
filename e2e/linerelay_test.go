package e2e

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
)

// The test binary doubles as BenchmarkRelay's floor: `e2e.test
// mcpwrap-e2e-line-relay COMMAND ARGS...` starts COMMAND and relays
// newline-delimited messages both ways, each line whole (store and forward,
// as a relay that must see a message before it passes it on), flushing when
// no more input is buffered. It is the least any line relay can do here.
const lineRelayArg = "mcpwrap-e2e-line-relay"

// runLineRelay relays between stdio and argv's process and returns the exit
// code.
func runLineRelay(argv []string) int {
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
	go func() { defer wg.Done(); relayLines(in, os.Stdin); in.Close() }()
	go func() { defer wg.Done(); relayLines(os.Stdout, out) }()
	wg.Wait()
	cmd.Wait()
	return 0
}

// relayLines copies whole lines from src to dst until src ends.
func relayLines(dst io.Writer, src io.Reader) {
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
		if _, err := w.Write(chunk); err != nil {
			return
		}
		if r.Buffered() == 0 && w.Flush() != nil {
			return
		}
	}
}
