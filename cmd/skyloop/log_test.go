package main

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"skyloop/internal/syncbuf"
	"skyloop/sweep"
)

// TestRunProgressOffTerminal runs the CLI with stderr to a pipe (as in CI,
// Slurm or nohup) and checks the periodic progress line's content: one log
// style (slog text), the simulated time, the real-time factor and an ETA.
// The interval is made tiny so that the test does not depend on timing.
func TestRunProgressOffTerminal(t *testing.T) {
	out := t.TempDir() + "/q"
	code, _, stderr := capture(t, "run", "quickstart", "--duration", "5s", "--out", out, "--progress-every", "1ns")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	line := regexp.MustCompile(`(?m)^time=\S+ level=INFO msg=progress run=quickstart simulated=(\S+) of=5s percent=\d+ speed=[0-9.]+x elapsed=\S+ eta=\S+$`)
	m := line.FindAllStringSubmatch(stderr, -1)
	if len(m) == 0 {
		t.Fatalf("no progress line in stderr:\n%s", stderr)
	}
	if m[0][1] != "1s" {
		t.Errorf("first progress line at simulated %s, want 1s", m[0][1])
	}
	if strings.Contains(stderr, "\r") || strings.Contains(stderr, "\033[") {
		t.Errorf("terminal control characters in a log off a terminal: %q", stderr)
	}
	// --progress-every 0 turns them off; -q too.
	for _, args := range [][]string{{"--progress-every", "0"}, {"-q", "--progress-every", "1ns"}} {
		code, _, stderr = capture(t, append([]string{"run", "quickstart", "--duration", "2s", "--out", t.TempDir() + "/q"}, args...)...)
		if code != 0 || strings.Contains(stderr, "msg=progress") {
			t.Errorf("%v: exit %d, stderr %q", args, code, stderr)
		}
	}
}

// TestWarningsInTheLogStyle checks that warnings come out in the same
// format as the progress lines, not as bare text or log's default.
func TestWarningsInTheLogStyle(t *testing.T) {
	code, _, stderr := capture(t, "run", "quickstart", "--duration", "1s", "--out", t.TempDir()+"/q", "--serve=127.0.0.1:0")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !regexp.MustCompile(`(?m)^time=\S+ level=WARN msg="--serve without --realtime: the run may end before the page connects"$`).MatchString(stderr) {
		t.Errorf("the --serve warning is not in the log style:\n%s", stderr)
	}
}

// TestSweepTracker checks a sweep's lines off a terminal: one per finished
// run with an ETA, and periodic ones between runs.
func TestSweepTracker(t *testing.T) {
	var buf syncbuf.Buffer
	tr := newSweepTracker(newLogger(&buf, nil), "netbots/delay", time.Millisecond)
	tr.Progress(sweep.Progress{Done: 1, Total: 4, Variant: "delay=10ms", Seed: 2})
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(buf.String(), "msg=progress") && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	tr.Close()
	s := buf.String()
	for _, re := range []string{
		`(?m)^time=\S+ level=INFO msg="run finished" sweep=netbots/delay runs=1/4 elapsed=\S+ eta=\S+ variant="delay=10ms" seed=2 state=done$`,
		`(?m)^time=\S+ level=INFO msg=progress sweep=netbots/delay runs=1/4 elapsed=\S+ eta=\S+$`,
	} {
		if !regexp.MustCompile(re).MatchString(s) {
			t.Errorf("no line matching %s in\n%s", re, s)
		}
	}
	if eta(10*time.Second, 1, 4) != 30*time.Second {
		t.Errorf("eta(10s, 1 of 4) = %v, want 30s", eta(10*time.Second, 1, 4))
	}
}
