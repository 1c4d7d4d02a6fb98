package report

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWriteFileWritesThroughNoLink: links left beside the file written
// (at its name, or at the temporary names a writer might use) are never
// written through: the file outside stays as it was.
func TestWriteFileWritesThroughNoLink(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	if err := os.WriteFile(victim, []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "run")
	if err := os.Mkdir(run, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"report.html", "report.html.tmp", ".report.html.tmp"} {
		if err := os.Symlink(victim, filepath.Join(run, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := WriteFile(filepath.Join(run, "report.html"), []byte("page")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious" {
		t.Errorf("the file a link pointed to now holds %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(run, "report.html")); string(b) != "page" {
		t.Errorf("report.html holds %q", b)
	}
	if st, err := os.Lstat(filepath.Join(run, "report.html")); err != nil || !st.Mode().IsRegular() {
		t.Errorf("report.html is not a file of its own: %v", err)
	}
}
