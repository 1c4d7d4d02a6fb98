package netbots

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"skyloop/scenario"
	"skyloop/sim"
)

const sweepYAML = `
experiment: small
seeds: 3
base: {duration: 6s, jitter: 50ms, loss: 0.1}
sweep: {param: latency, values: [1ms, 20ms]}
`

// TestSweepResumes interrupts a sweep after two runs, then runs it again:
// the finished runs are not redone, summary.csv has each variant x seed
// once, and the files equal those of an uninterrupted sweep.
func TestSweepResumes(t *testing.T) {
	e, err := ParseExperiment("small.yaml", []byte(sweepYAML))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var done atomic.Int32
	res, err := Sweep(e, SweepOptions{Out: dir, Workers: 1,
		Progress: func(p Progress) { done.Add(1) },
		Stop:     func() bool { return done.Load() >= 2 }})
	if !errors.Is(err, ErrStopped) {
		t.Fatalf("first pass: %v", err)
	}
	if res.Rows != 2 {
		t.Fatalf("summary after the interruption has %d rows, want 2", res.Rows)
	}
	res, err = Sweep(e, SweepOptions{Out: dir, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.Skipped != 2 || res.Ran != 4 || res.Rows != 6 {
		t.Fatalf("second pass: %+v", res)
	}
	sum, _ := os.ReadFile(filepath.Join(dir, "small", "summary.csv"))
	if n := bytes.Count(sum, []byte("\n")); n != 7 {
		t.Fatalf("summary.csv has %d lines, want a header and 6 rows", n)
	}
	for _, want := range []string{"small,latency=1ms,1ms,1,", "small,latency=20ms,20ms,3,"} {
		if !bytes.Contains(sum, []byte(want)) {
			t.Errorf("summary.csv lacks a row starting %q", want)
		}
	}
	// An uninterrupted sweep writes the same files.
	dir2 := t.TempDir()
	if _, err := Sweep(e, SweepOptions{Out: dir2, Workers: 3}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"summary.csv", "latency=20ms/seed2/trace.csv", "latency=1ms/seed1/deliveries.csv", "figures/aoi.png", "figures/latency_cdf.png"} {
		a, err1 := os.ReadFile(filepath.Join(dir, "small", f))
		b, err2 := os.ReadFile(filepath.Join(dir2, "small", f))
		if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
			t.Errorf("%s differs between the resumed and the uninterrupted sweep (%v %v)", f, err1, err2)
		}
	}
	// A third pass has nothing to do.
	res, err = Sweep(e, SweepOptions{Out: dir})
	if err != nil || res.Ran != 0 || res.Skipped != 6 {
		t.Fatalf("third pass: %+v %v", res, err)
	}
	var out strings.Builder
	if err := Summarize(&out, dir); err != nil || !strings.Contains(out.String(), "latency=20ms      3") {
		t.Fatalf("summarize: %v\n%s", err, out.String())
	}
}

// TestBuiltinExperimentsParse parses every shipped experiment file.
func TestBuiltinExperimentsParse(t *testing.T) {
	files, _ := filepath.Glob("../scenarios/netbots/*.yaml")
	if len(files) < 7 {
		t.Fatalf("only %d experiment files", len(files))
	}
	for _, f := range files {
		e, err := LoadExperiment(f)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if e.Seeds != 5 || e.Base.Duration != 60*sim.Second {
			t.Errorf("%s: %d seeds, %v", f, e.Seeds, e.Base.Duration)
		}
	}
}

func TestExperimentErrors(t *testing.T) {
	cases := []struct{ text, want string }{
		{"experiment: x\nsweep: {param: latencyy, values: [1ms]}\n", `x.yaml:2: sweep.values[0]: unknown parameter "latencyy"`},
		{"experiment: x\nbase: {loss: 2}\n", "base.loss: must be a probability in [0, 1], got 2"},
		{"experiment: x\nbase: {mode: replay, policy: event}\n", "base.policy: event-triggered sending depends on the robots' state"},
		{"experiment: x\nvariants: [{name: a, set: {robots: 1}}]\n", "variants[0].set.robots: must be 2..1000, got 1"},
		{"experiment: x\nbase: {rate: fast}\n", `x.yaml:2: base.rate: want a number, got the string "fast"`},
		{"experiment: x\nseeds: 0\n", "seeds: must be 1..1000, got 0"},
	}
	for _, c := range cases {
		_, err := ParseExperiment("x.yaml", []byte(c.text))
		var es scenario.Errors
		if !errors.As(err, &es) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %q", c.text, err, c.want)
		}
	}
}
