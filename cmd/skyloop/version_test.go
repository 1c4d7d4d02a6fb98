package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestVersionNamesTheCommit checks that skyloop version names the commit
// it was built from. A test binary carries no VCS stamp (like go run), so
// this checks the fallback that reads the source clone.
func TestVersionNamesTheCommit(t *testing.T) {
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not in a git clone (or no git): %v", err)
	}
	rev := strings.TrimSpace(string(head))
	code, stdout, stderr := capture(t, "version")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	first, _, _ := strings.Cut(stdout, "\n")
	if !strings.HasPrefix(first, "skyloop dev (commit "+rev[:12]+", ") {
		t.Errorf("first line %q does not name commit %s", first, rev[:12])
	}
	for _, want := range []string{"  vcs.revision: " + rev + "\n", "  vcs.time: ", "  vcs.modified: ", "  vcs.source: git at run time"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("version output lacks %q:\n%s", want, stdout)
		}
	}
}
