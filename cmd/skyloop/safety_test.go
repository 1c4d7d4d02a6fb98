package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestUnreadableInputIsBadInput: a scenario or experiment path that exists
// but cannot be read (here a Unix socket, unreadable even by root) is bad
// input: exit 2, nothing written.
func TestUnreadableInputIsBadInput(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "s.yaml")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	out := filepath.Join(dir, "out")
	for _, args := range [][]string{{"run", sock, "--out", out}, {"validate", sock}, {"sweep", sock, "--out", out}} {
		code, _, stderr := capture(t, args...)
		if code != 2 || !strings.Contains(stderr, "s.yaml") {
			t.Errorf("%v: exit %d, want 2; stderr %q", args, code, stderr)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Fatal("something was written")
	}
}

// TestConcurrentRunsIntoOneDirectory: while one run writes a directory, a
// second run into the same place is refused at once (exit 1, naming the
// first one's pid), and the first one's results are intact.
func TestConcurrentRunsIntoOneDirectory(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "r")
	first := startRun(t, out, "40s")
	code, _, stderr := capture(t, "run", "quickstart", "--duration", "1s", "--out", out, "-q")
	if code != 1 || !strings.Contains(stderr, "is writing "+out) || !strings.Contains(stderr, "pid") {
		t.Fatalf("second run: exit %d, stderr %q", code, stderr)
	}
	if code := first.wait(t, time.Minute); code != 0 {
		t.Fatalf("first run: exit %d: %s", code, first.stderr.String())
	}
	if _, err := os.Stat(filepath.Join(out, "summary.json")); err != nil {
		t.Fatalf("first run's results: %v", err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("left next to the run: %v", ents)
	}
}

// TestDirectoryMadeDuringARunSurvives: a directory the user creates at
// --out while the run goes is not replaced when the run ends: the run
// fails (exit 1) and keeps its finished files in <out>.1.
func TestDirectoryMadeDuringARunSurvives(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "r")
	c := startRun(t, out, "20s")
	os.MkdirAll(out, 0o755)
	os.WriteFile(filepath.Join(out, "thesis.tex"), []byte("precious"), 0o644)
	if code := c.wait(t, time.Minute); code != 1 {
		t.Fatalf("exit %d, want 1: %s", code, c.stderr.String())
	}
	if b, err := os.ReadFile(filepath.Join(out, "thesis.tex")); err != nil || string(b) != "precious" {
		t.Fatalf("the user's file: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(out+".1", "summary.json")); err != nil {
		t.Fatalf("finished run not kept in %s.1: %v", out, err)
	}
	if msg := c.stderr.String(); !strings.Contains(msg, out+".1") || strings.Contains(msg, ".tmp-") {
		t.Fatalf("message should name %s.1 and no temporary path: %s", out, msg)
	}
}

// startRun starts quickstart at 20x real time for duration d into out and
// returns once the run is writing its temporary directory.
func startRun(t *testing.T, out, d string) *child {
	t.Helper()
	c := startCLI(t, "run", "quickstart", "--duration", d, "--realtime", "20", "--out", out, "-q")
	if !eventually(time.Minute, func() bool {
		m, _ := filepath.Glob(filepath.Join(filepath.Dir(out), "."+filepath.Base(out)+".tmp-*"))
		return len(m) > 0
	}) {
		t.Fatalf("the run did not start: %s", c.stderr.String())
	}
	return c
}
