package main

import (
	"os/exec"
	"path/filepath"
	"skyloop/internal/short"
	"testing"
)

// TestPackageDiagramIsCurrent: docs/architecture.md's package diagram is
// what scripts/package-diagram.sh makes of today's imports (run it after
// adding a package or an import between packages).
func TestPackageDiagramIsCurrent(t *testing.T) {
	short.Skip(t, "takes several seconds")
	script, _ := filepath.Abs(filepath.Join("..", "..", "scripts", "package-diagram.sh"))
	out, err := exec.Command("bash", script, "--check").CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s\nrun scripts/package-diagram.sh to update docs/architecture.md", err, out)
	}
}
