package demo

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestPrintTree: each span under its parent, siblings in the order they
// started, a span whose parent is not in the trace a root.
func TestPrintTree(t *testing.T) {
	at := time.Unix(1000, 0)
	ms := func(n int) time.Time { return at.Add(time.Duration(n) * time.Millisecond) }
	tests := []struct {
		name  string
		spans []span
		want  []string
	}{
		{
			name: "client, mcpwrap's two spans, the server's, given in any order",
			spans: []span{
				{service: "demo-server", kind: "server", name: "tools/call", id: "4", parent: "3", start: ms(3), end: ms(4)},
				{service: "mcpwrap", kind: "client", name: "tools/call echo", id: "3", parent: "2", start: ms(2), end: ms(5),
					attrs: [][2]string{{"mcp.method.name", "tools/call"}, {"gen_ai.tool.name", "echo"}}},
				{service: "demo-client", kind: "client", name: "tools/call echo", id: "1", start: ms(0), end: ms(7)},
				{service: "mcpwrap", kind: "server", name: "tools/call echo", id: "2", parent: "1", start: ms(1), end: ms(6),
					events: []string{"mcpwrap.verdict"}},
			},
			want: []string{
				"  demo-client              client tools/call echo              7ms",
				"  └─ mcpwrap               server tools/call echo              5ms",
				"       event mcpwrap.verdict",
				"     └─ mcpwrap            client tools/call echo              3ms",
				"          mcp.method.name=tools/call gen_ai.tool.name=echo",
				"        └─ demo-server     server tools/call                   1ms",
			},
		},
		{
			name: "a parent not exported is no parent; roots by start",
			spans: []span{
				{service: "b", kind: "server", name: "second", id: "2", parent: "9", start: ms(2), end: ms(3)},
				{service: "a", kind: "server", name: "first", id: "1", parent: "8", start: ms(1), end: ms(2)},
			},
			want: []string{
				"  a                        server first                        1ms",
				"  b                        server second                       1ms",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			printTree(&narrator{w: &out}, tt.spans)
			assert.Equal(t, tt.want, strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n"))
		})
	}
}
