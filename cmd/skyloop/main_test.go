package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// capture runs the CLI with args and returns its exit code, stdout and
// stderr.
func capture(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	oldOut, oldErr := os.Stdout, os.Stderr
	ro, wo, _ := os.Pipe()
	re, we, _ := os.Pipe()
	os.Stdout, os.Stderr = wo, we
	var bo, be bytes.Buffer
	done := make(chan struct{}, 2)
	go func() { io.Copy(&bo, ro); done <- struct{}{} }()
	go func() { io.Copy(&be, re); done <- struct{}{} }()
	code := run(args)
	wo.Close()
	we.Close()
	<-done
	<-done
	os.Stdout, os.Stderr = oldOut, oldErr
	return code, bo.String(), be.String()
}

func TestRunQuickstart(t *testing.T) {
	out := filepath.Join(t.TempDir(), "q")
	code, stdout, stderr := capture(t, "run", "quickstart", "--out", out, "--duration", "30s")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"quickstart seed 1", "PDR", "ground station gcs: 10 of 10 vehicles completed all 3 legs", "results: " + out} {
		if !strings.Contains(stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, stdout)
		}
	}
	for _, f := range []string{"config.json", "meta.json", "summary.json", "trace.csv", "deliveries.csv", "vehicles.csv", "events.csv"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

func TestBadInputExitsTwoAndWritesNothing(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("name: bad\nvehicles:\n  - name: a\n    kind: pointmass\n    count: 0\n    spawn: {layout: line, spacing: 1}\n"), 0o644)
	out := filepath.Join(dir, "out")
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"run", bad, "--out", out}, "bad.yaml:5: vehicles[0].count: must be >= 1, got 0"},
		{[]string{"run", "no-such-scenario", "--out", out}, "no scenario file \"no-such-scenario\""},
		{[]string{"run", "quickstart", "--out", out, "--duration", "10"}, "needs a unit"},
		{[]string{"run", "quickstart", "--out", out, "--duration", "1500us"}, "whole number of ticks"},
		{[]string{"run", "quickstart", "--out", out, "--bogus"}, "unknown flag: --bogus"},
		{[]string{"run", "quickstart", "--out", out, "--seed", "-3"}, `"-3" is not a seed: want an integer in 0..18446744073709551615`},
		{[]string{"run", "quickstart", "--out", out, "--realtime", "NaN"}, "--realtime must be a real-time factor"},
		{[]string{"run", "quickstart", "--out", out, "--realtime", "+Inf"}, "--realtime must be a real-time factor"},
		{[]string{"run"}, "exactly one scenario"},
		{[]string{"run", "quickstart", "--out", out, "--realtime", "-1"}, "--realtime must be a real-time factor"},
		{[]string{"run", "mavlink-sitl", "--out", out, "--mavlink-udp", "--mavlink-bind-base", "70000"}, "--mavlink-bind-base must be a UDP port"},
		{[]string{"validate", bad}, "vehicles[0].count"},
	}
	for _, c := range cases {
		code, _, stderr := capture(t, c.args...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2 (stderr %q)", c.args, code, stderr)
		}
		if !strings.Contains(stderr, c.want) {
			t.Errorf("%v: stderr %q lacks %q", c.args, stderr, c.want)
		}
		ents, _ := os.ReadDir(dir)
		if len(ents) != 1 {
			t.Fatalf("%v: something was written: %v", c.args, ents)
		}
	}
}

func TestValidateAndLists(t *testing.T) {
	code, stdout, stderr := capture(t, "validate", "quickstart")
	if code != 0 || !strings.Contains(stdout, "quickstart: ok (10 vehicles, 1 fixed nodes, impair network") {
		t.Fatalf("validate: %d %q %q", code, stdout, stderr)
	}
	code, stdout, _ = capture(t, "validate", "--effective", "quickstart")
	if code != 0 || !strings.Contains(stdout, "\n      max_speed: 5\n") || !strings.Contains(stdout, "\n  latency: 10ms\n") {
		t.Fatalf("validate --effective: %d %s", code, stdout)
	}
	// What it prints is a scenario that validate accepts.
	eff := filepath.Join(t.TempDir(), "eff.yaml")
	if err := os.WriteFile(eff, []byte(stdout), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, stdout, stderr := capture(t, "validate", eff); code != 0 {
		t.Fatalf("validate of validate --effective: %d %s %s", code, stdout, stderr)
	}
	code, stdout, _ = capture(t, "validate", "--effective", "--json", "quickstart")
	if code != 0 || !strings.Contains(stdout, `"max_speed": 5`) || !strings.Contains(stdout, `"latency": "10ms"`) {
		t.Fatalf("validate --effective --json: %d %s", code, stdout)
	}
	code, stdout, _ = capture(t, "scenarios")
	if code != 0 || !strings.Contains(stdout, "quickstart") {
		t.Fatalf("scenarios: %d %s", code, stdout)
	}
	// Every name is followed by at least two spaces, however long.
	for _, line := range strings.Split(stdout, "\n") {
		if name, _, ok := strings.Cut(line, " "); ok && strings.HasPrefix(line, "netbots-classic/") && !strings.HasPrefix(line, name+"  ") {
			t.Errorf("scenarios: the description runs into the name: %q", line)
		}
	}
	code, stdout, _ = capture(t, "behaviors")
	if code != 0 || !strings.Contains(stdout, "platoon") || !strings.Contains(stdout, "defaults:") {
		t.Fatalf("behaviors: %d %s", code, stdout)
	}
	code, stdout, _ = capture(t, "version")
	if code != 0 || !strings.Contains(stdout, "skyloop ") || !strings.Contains(stdout, "go: go1.") {
		t.Fatalf("version: %d %s", code, stdout)
	}
	code, stdout, _ = capture(t, "bench", "quickstart", "--runs", "1")
	if code != 0 || !strings.Contains(stdout, "x real time") || !strings.Contains(stdout, "ns per delivery") {
		t.Fatalf("bench: %d %s", code, stdout)
	}
	code, stdout, _ = capture(t, "run", "--help")
	if code != 0 || !strings.Contains(stdout, "trace.csv") || !strings.Contains(stdout, "--seed") {
		t.Fatalf("run --help: %d %s", code, stdout)
	}
}

func TestOutNeverReplacesForeignDirectory(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "thesis.tex"), []byte("x"), 0o644)
	code, _, stderr := capture(t, "run", "quickstart", "--duration", "1s", "--out", dir)
	if code != 2 || !strings.Contains(stderr, "exists and is not a skyloop run directory") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "thesis.tex")); err != nil || string(b) != "x" {
		t.Fatal("the user's file was touched")
	}
	// A run directory, on the other hand, is replaced by the next run.
	out := filepath.Join(t.TempDir(), "r")
	for i := 0; i < 2; i++ {
		if code, _, stderr := capture(t, "run", "quickstart", "--duration", "1s", "--out", out, "-q"); code != 0 {
			t.Fatalf("run %d: exit %d %s", i, code, stderr)
		}
	}
	if code, _, _ := capture(t, "run", t.TempDir()); code != 2 {
		t.Fatalf("a directory as scenario: exit %d", code)
	}
}

func TestSweepAndSummarize(t *testing.T) {
	out := t.TempDir()
	// The classic robot's experiment: netbots/loss needs MuJoCo.
	code, stdout, stderr := capture(t, "sweep", "netbots-classic/loss", "--out", out, "--seeds", "2", "--duration", "5s")
	if code != 0 || !strings.Contains(stdout, "loss-classic: 6 runs done, 0 already finished, 6 rows") {
		t.Fatalf("sweep: %d %q %q", code, stdout, stderr)
	}
	code, stdout, _ = capture(t, "summarize", out)
	if code != 0 || !strings.Contains(stdout, "experiment loss-classic (6 runs") || !strings.Contains(stdout, "loss=0.8") {
		t.Fatalf("summarize: %d %s", code, stdout)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("experiment: b\nscenario: netbots/platoon\nbase: {network.loss: 3}\n"), 0o644)
	if code, _, stderr := capture(t, "sweep", bad); code != 2 || !strings.Contains(stderr, "bad.yaml:3: network.loss: must be a probability in [0, 1], got 3") {
		t.Fatalf("bad experiment: %d %s", code, stderr)
	}
	if code, _, _ := capture(t, "summarize", t.TempDir()); code != 2 {
		t.Fatalf("summarize of an empty directory: exit %d", code)
	}
}

// TestReportClock: the clock report summarises clock.csv per module and
// draws clock.png; a run without clock.csv is bad input.
func TestReportClock(t *testing.T) {
	dir := t.TempDir()
	csv := "t_ns,module,offset_ns\n"
	for i := 0; i < 300; i++ {
		csv += fmt.Sprintf("%d,wall,%d\n%d,tap,%d\n", i*10_000_000, 1000*(i%3), i*10_000_000, 500_000+1000*(i%5))
	}
	os.WriteFile(filepath.Join(dir, "clock.csv"), []byte(csv), 0o644)
	code, stdout, stderr := capture(t, "report", "clock", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"tap         300 samples  mean +0.502 ms  mean |offset| 0.502 ms  min +0.500 ms  max +0.504 ms",
		"wall        300 samples  mean +0.001 ms  mean |offset| 0.001 ms  min +0.000 ms  max +0.002 ms",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	png, err := os.ReadFile(filepath.Join(dir, "clock.png"))
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Errorf("clock.png: %v", err)
	}
	code, _, stderr = capture(t, "report", "clock", t.TempDir())
	if code != 2 || !strings.Contains(stderr, "has no clock.csv: only real-time runs") {
		t.Errorf("without clock.csv: exit %d: %s", code, stderr)
	}
}

// TestSweepAnyScenario: skyloop sweep expands any scenario, here the
// quickstart on the native Wi-Fi model (a component of the full registry,
// not of the core), and every run is an ordinary run directory.
func TestSweepAnyScenario(t *testing.T) {
	dir := t.TempDir()
	exp := filepath.Join(dir, "qs.yaml")
	os.WriteFile(exp, []byte("experiment: qs\nscenario: quickstart\nseeds: 1\nbase: {network: {backend: wifi}}\nsweep: {param: duration, values: [2s, 3s]}\n"), 0o644)
	out := t.TempDir()
	code, stdout, stderr := capture(t, "sweep", exp, "--out", out, "-q")
	if code != 0 {
		t.Fatalf("sweep: exit %d: %s %s", code, stdout, stderr)
	}
	for _, v := range []string{"duration=2s", "duration=3s"} {
		b, err := os.ReadFile(filepath.Join(out, "qs", v, "seed1", "summary.json"))
		if err != nil || !strings.Contains(string(b), `"backend": "wifi"`) {
			t.Errorf("%s: %v %.200s", v, err, b)
		}
	}
}
