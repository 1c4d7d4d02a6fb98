package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"skyloop/internal/hostile"
)

// TestReportHTMLOfHostileDirectories: report html and report clock on a
// run directory whose tables are endless (a link to /dev/zero) or one
// endless line (a sparse file) fail naming the file, at a bounded cost
// in memory, and write no report.
func TestReportHTMLOfHostileDirectories(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "summary.json"), []byte(`{"scenario":"s","seed":1,"duration_ns":1000000000,"nodes":1,"vehicles":[]}`), 0o644)
	for _, c := range []struct {
		cmd, file string
		make      func(p string) error
	}{
		{"html", "trace.csv", func(p string) error { return os.Symlink("/dev/zero", p) }},
		{"html", "deliveries.csv", func(p string) error {
			if err := os.WriteFile(p, nil, 0o644); err != nil {
				return err
			}
			return os.Truncate(p, 64<<20)
		}},
		{"clock", "clock.csv", func(p string) error { return os.Symlink("/dev/zero", p) }},
	} {
		t.Run(c.cmd+"/"+c.file, func(t *testing.T) {
			p := filepath.Join(dir, c.file)
			if err := c.make(p); err != nil {
				t.Fatal(err)
			}
			defer os.Remove(p)
			var code int
			var stderr string
			alloc := hostile.Allocated(func() { code, _, stderr = capture(t, "report", c.cmd, dir) })
			if code == 0 || !strings.Contains(stderr, c.file) {
				t.Errorf("exit %d: %s", code, stderr)
			}
			if alloc > hostile.MaxAlloc {
				t.Errorf("allocated %d MB", alloc>>20)
			}
			for _, out := range []string{"report.html", "clock.png"} {
				if _, err := os.Stat(filepath.Join(dir, out)); err == nil {
					t.Errorf("wrote %s", out)
				}
			}
		})
	}
}
