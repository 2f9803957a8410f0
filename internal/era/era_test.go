package era

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFactsHaveOneOwner keeps the era facts in this package: no other
// package's code spells a version this package names or a _meta key of
// the stateless era in a string literal. Tests are left out (they speak
// for a peer, which knows the wire, not mcpwrap's constants), and so is e2e.
func TestFactsHaveOneOwner(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	facts := []string{SessionVersion, StatelessVersion}
	var found []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			switch rel {
			case ".git", "e2e", "node_modules", filepath.Join("internal", "era"):
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		file, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(file, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				return true
			}
			for _, f := range facts {
				if strings.Contains(s, `"`+f+`"`) || s == f {
					found = append(found, fset.Position(lit.Pos()).String()+": "+f)
				}
			}
			if strings.Contains(s, "io.modelcontextprotocol/") {
				found = append(found, fset.Position(lit.Pos()).String()+": a _meta key")
			}
			return true
		})
		return nil
	})
	require.NoError(t, err)
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
