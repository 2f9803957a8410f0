// Package sourcetest reads the module's own Go source for tests that keep
// a fact in one package (an era's versions, the JSON-RPC codes): they walk
// every file of production code and fail on the fact spelled elsewhere.
package sourcetest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Inspect parses every non-test Go file of the module but those under
// e2e (whose tests speak for a peer, which knows the wire and not
// mcpwrap's constants) and under owner (the package that holds the fact,
// a path from the module's root), and calls visit with each node and
// where it stands ("file:line:col"). A file that does not parse fails t.
func Inspect(t *testing.T, owner string, visit func(n ast.Node, at func(token.Pos) string)) {
	t.Helper()
	_, self, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(self), "..", "..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			switch rel {
			case ".git", "e2e", "node_modules", filepath.FromSlash(owner):
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
		at := func(p token.Pos) string { return fset.Position(p).String() }
		ast.Inspect(file, func(n ast.Node) bool {
			if n != nil {
				visit(n, at)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatalf("reading the module's source: %v", err)
	}
}
