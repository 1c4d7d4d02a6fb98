package mavlink

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestOpensNothing: the endpoints and behaviours open no sockets, files
// or processes; package mavnet does (imports of the package's non-test
// files).
func TestOpensNothing(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	banned := map[string]bool{"net": true, "os": true, "os/exec": true, "syscall": true, "skyloop/edge": true}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		ast, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range ast.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); banned[p] {
				t.Errorf("%s imports %s: sockets, files and processes belong in package mavnet", f, p)
			}
		}
	}
}
