package upstream

import (
	"encoding/json"

	"github.com/mcpwrap/mcpwrap/internal/framing"
	"github.com/mcpwrap/mcpwrap/internal/paramheader"
)

// The RemoteConn learns the tool-designated headers (SEP-2243, see package
// paramheader) from the tools/list results it relays and adds them to the
// 2026-07-28 tools/call requests it POSTs, as the spec says a client must.

// learnTools records the header bindings of the tools of a tools/list
// result msg. A page replaces what was known of its tools; tools of other
// pages stay. A tool with invalid annotations gets none: a client must not
// call it, and its calls carry no header a gateway could misread.
func (c *RemoteConn) learnTools(msg []byte) {
	env, err := framing.Peek(msg)
	if err != nil || env.Kind != framing.Response || env.Result == nil {
		return
	}
	var r struct {
		Tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"tools"`
	}
	if json.Unmarshal(env.Result, &r) != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range r.Tools {
		if b, err := paramheader.Bindings(t.InputSchema); err == nil && len(b) > 0 {
			c.paramHeaders[t.Name] = b
		} else {
			delete(c.paramHeaders, t.Name)
		}
	}
}
