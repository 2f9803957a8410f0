package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"strings"
)

// The test binary doubles as the raw server of BenchmarkRelay: `e2e.test
// mcpwrap-e2e-raw-server` answers MCP on stdio at the least cost it can,
// so that a benchmark measures the relay in front of it, not the server.
const rawServerArg = "mcpwrap-e2e-raw-server"

// rawBlobBytes is the size of the text the raw server's "blob" tool answers.
const rawBlobBytes = 10 << 20

// rawTools is the raw server's catalog: echo (a small answer), blob (a
// 10 MiB answer), sink (takes any arguments, a small answer) and huge (an
// answer of arguments.bytes of text, written as it is made).
const rawTools = `{"tools":[` +
	`{"name":"echo","description":"Answers ok.","inputSchema":{"type":"object"}},` +
	`{"name":"blob","description":"Answers 10 MiB of text.","inputSchema":{"type":"object"}},` +
	`{"name":"sink","description":"Takes anything, answers ok.","inputSchema":{"type":"object"}},` +
	`{"name":"huge","description":"Answers arguments.bytes of text.","inputSchema":{"type":"object","properties":{"bytes":{"type":"integer"}}}}]}`

// rawHugeChunk is what the huge tool's text is made of.
var rawHugeChunk = []byte(strings.Repeat("y", 1<<20))

// runRawServer serves the raw server on stdin/stdout until stdin ends and
// returns the process exit code. Requests are read by a minimal scan of
// their head: the benchmark's client writes "id" then "method" then
// params.name first, and relays keep the bytes as they are; small messages
// (the relay's own handshake and catalog requests) are decoded in full.
func runRawServer() int {
	r := bufio.NewReaderSize(os.Stdin, 1<<20)
	w := bufio.NewWriterSize(os.Stdout, 1<<20)
	blob := `,"result":{"content":[{"type":"text","text":"` + strings.Repeat("x", rawBlobBytes) + `"}]}}` + "\n"
	const ok = `,"result":{"content":[{"type":"text","text":"ok"}]}}` + "\n"
	for {
		line, err := r.ReadSlice('\n')
		if err == bufio.ErrBufferFull { // a large request: read the rest
			line = bytes.Clone(line)
			var rest []byte
			rest, err = r.ReadBytes('\n')
			line = append(line, rest...)
		}
		if err != nil {
			w.Flush()
			if err == io.EOF {
				return 0
			}
			return 1
		}
		id, method, tool, size := rawEnvelope(line)
		reply := func(tail string) {
			w.WriteString(`{"jsonrpc":"2.0","id":`)
			w.Write(id)
			w.WriteString(tail)
		}
		switch {
		case id == nil: // a notification
		case method == "initialize":
			reply(`,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"raw","version":"1"}}}` + "\n")
		case method == "tools/list":
			reply(`,"result":` + rawTools + "}\n")
		case method == "tools/call" && tool == "blob":
			reply(blob)
		case method == "tools/call" && tool == "huge":
			reply(`,"result":{"content":[{"type":"text","text":"`)
			for ; size > 0; size -= int64(len(rawHugeChunk)) {
				w.Write(rawHugeChunk[:min(size, int64(len(rawHugeChunk)))])
			}
			w.WriteString(`"}]}}` + "\n")
		case method == "tools/call", method == "ping":
			reply(ok)
		default:
			reply(`,"error":{"code":-32601,"message":"method not found"}}` + "\n")
		}
		if r.Buffered() == 0 {
			w.Flush()
		}
	}
}

// rawEnvelope returns a request's id (raw), method and, for tools/call, the
// tool's name and its arguments.bytes (small requests only).
func rawEnvelope(line []byte) (id json.RawMessage, method, tool string, size int64) {
	if len(line) < 64<<10 {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name      string `json:"name"`
				Arguments struct {
					Bytes int64 `json:"bytes"`
				} `json:"arguments"`
			} `json:"params"`
		}
		if json.Unmarshal(line, &m) != nil {
			return nil, "", "", 0
		}
		return m.ID, m.Method, m.Params.Name, m.Params.Arguments.Bytes
	}
	head := line[:256]
	field := func(key string, stop byte) []byte {
		i := bytes.Index(head, []byte(`"`+key+`":`))
		if i < 0 {
			return nil
		}
		v := head[i+len(key)+3:]
		if stop == '"' {
			v = v[1:]
		}
		return v[:bytes.IndexByte(v, stop)]
	}
	return field("id", ','), string(field("method", '"')), string(field("name", '"')), 0
}
