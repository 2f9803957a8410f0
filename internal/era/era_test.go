package era

import (
	"go/ast"
	"go/token"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/mcpwrap/mcpwrap/internal/sourcetest"
)

// TestFactsHaveOneOwner keeps the era facts in this package: no other
// package's code spells a version this package names or a _meta key of
// the stateless era in a string literal. Tests are left out (they speak
// for a peer, which knows the wire, not mcpwrap's constants), and so is e2e.
func TestFactsHaveOneOwner(t *testing.T) {
	facts := []string{SessionVersion, StatelessVersion}
	var found []string
	sourcetest.Inspect(t, "internal/era", func(n ast.Node, at func(token.Pos) string) {
		lit, ok := n.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return
		}
		s, err := strconv.Unquote(lit.Value)
		if err != nil {
			return
		}
		for _, f := range facts {
			if strings.Contains(s, `"`+f+`"`) || s == f {
				found = append(found, at(lit.Pos())+": "+f)
			}
		}
		if strings.Contains(s, "io.modelcontextprotocol/") {
			found = append(found, at(lit.Pos())+": a _meta key")
		}
	})
	assert.Empty(t, found, "era facts spelled outside internal/era: import them")
}

func TestDescribe(t *testing.T) {
	tests := []struct {
		name, client, server, want string
	}{
		{name: "unknown", want: ""},
		{name: "one era", client: "2025-11-25", server: "2025-11-25", want: "2025-11-25"},
		{name: "bridged", client: "2025-11-25", server: "2026-07-28", want: "2025-11-25 -> 2026-07-28"},
		{name: "one side known", server: "2026-07-28", want: "2026-07-28"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Describe(tt.client, tt.server))
		})
	}
}
