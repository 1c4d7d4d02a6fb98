package edge

import (
	"io"
	"strings"
	"testing"
)

// TestProcFilesDirectories: a launched program works in the run
// directory's procs/<name> when the run writes files, else in the
// temporary directory TempDir makes, which Cleanup removes (and only that
// one); with neither, ProcFiles says so.
func TestProcFilesDirectories(t *testing.T) {
	var asked []string
	env := &Env{WorkDir: func(name string) (string, error) { asked = append(asked, name); return "/run/" + name, nil }}
	p, err := env.ProcFiles("px4-0")
	if err != nil || p.Dir != "/run/procs/px4-0" || len(asked) != 1 || asked[0] != "procs/px4-0" {
		t.Fatalf("WorkDir: %+v, %v, asked %q", p, err, asked)
	}
	if p.Stdout != io.Discard || p.Stderr != io.Discard {
		t.Errorf("outputs of a run without Output: %v %v", p.Stdout, p.Stderr)
	}
	p.Cleanup() // not a temporary directory: nothing to remove

	removed := 0
	env = &Env{TempDir: func(name string) (string, func(), error) {
		return "/tmp/skyloop-" + name, func() { removed++ }, nil
	}}
	if p, err = env.ProcFiles("px4-1"); err != nil || p.Dir != "/tmp/skyloop-px4-1" {
		t.Fatalf("TempDir: %+v, %v", p, err)
	}
	if removed != 0 {
		t.Fatal("removed before Cleanup")
	}
	p.Cleanup()
	if removed != 1 {
		t.Fatalf("Cleanup removed %d times", removed)
	}

	if _, err = (&Env{}).ProcFiles("px4-2"); err == nil || !strings.Contains(err.Error(), "the working directory of px4-2") {
		t.Fatalf("no directory: %v", err)
	}
}
