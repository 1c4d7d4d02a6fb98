package runner

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"skyloop/engine"
	"skyloop/internal/hostile"
	"skyloop/scenarios"
)

// TestDiskFullDuringARun: a run whose disk fills up fails with the system's
// message, keeps its partial files with the reason, and commits nothing.
func TestDiskFullDuringARun(t *testing.T) {
	text, _ := scenarios.Lookup("quickstart")
	dest := filepath.Join(t.TempDir(), "q")
	_, err := Execute(buildYAML(t, string(text), engine.Options{Registry: registry}), dest, Options{FS: &hostile.Disk{Space: 200 << 10}})
	if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), dest+".incomplete") {
		t.Fatalf("run on a full disk: %v", err)
	}
	if _, err := os.Stat(dest); !os.IsNotExist(err) {
		t.Fatal("a failed run was committed")
	}
	if b, _ := os.ReadFile(filepath.Join(dest+".incomplete", "ERROR.txt")); !strings.Contains(string(b), "no space left") {
		t.Fatalf("ERROR.txt = %q", b)
	}
}
