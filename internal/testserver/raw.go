package testserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// runRaw serves a minimal MCP server over stdio whose tools/list result
// holds the JSON array in o.RawTools byte for byte, for catalogs the SDK
// cannot produce (a member spelled twice, in another case or escaped). It
// answers initialize, tools/list, tools/call (with a text naming the tool
// it ran, as a JSON reader that matches member names case-insensitively
// and lets the last win reads it) and any other request with an empty
// result, one message at a time, until stdin closes. It records what it
// receives as Record does.
func runRaw(o Options, stdin io.Reader, stdout io.Writer) error {
	raw, err := os.ReadFile(o.RawTools)
	if err != nil {
		return err
	}
	var tools bytes.Buffer // one line; Compact keeps every member, spelled as written
	if err := json.Compact(&tools, raw); err != nil {
		return fmt.Errorf("%s: %w", o.RawTools, err)
	}
	sc := bufio.NewScanner(stdin)
	sc.Buffer(make([]byte, 64*1024), 16<<20)
	for sc.Scan() {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(sc.Bytes(), &msg) != nil || msg.Method == "" {
			continue
		}
		if o.Record != "" {
			if err := appendRecord(o.Record, msg.Method, msg.Params); err != nil {
				return err
			}
		}
		if msg.ID == nil {
			continue
		}
		var result []byte
		switch msg.Method {
		case "initialize":
			var p struct {
				ProtocolVersion string `json:"protocolVersion"`
			}
			_ = json.Unmarshal(msg.Params, &p)
			result, _ = json.Marshal(map[string]any{
				"protocolVersion": p.ProtocolVersion,
				"capabilities":    map[string]any{"tools": map[string]any{}},
				"serverInfo":      map[string]any{"name": o.Name, "version": "1.0.0"},
			})
		case "tools/list":
			result = append(append([]byte(`{"tools":`), tools.Bytes()...), '}')
		case "tools/call":
			var p struct {
				Name string `json:"name"`
			}
			_ = json.Unmarshal(msg.Params, &p)
			result, _ = json.Marshal(text("ran " + p.Name))
		default:
			result = []byte(`{}`)
		}
		if _, err := fmt.Fprintf(stdout, `{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", msg.ID, result); err != nil {
			return err
		}
	}
	return sc.Err()
}

// appendRecord appends one "method params" line to the record file.
func appendRecord(path, method string, params json.RawMessage) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	if len(params) == 0 {
		params = json.RawMessage("null")
	}
	_, err = fmt.Fprintf(f, "%s %s\n", method, params)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
