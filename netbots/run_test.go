package netbots

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"skyloop/sim"
)

func TestSmoke(t *testing.T) {
	p := Defaults()
	p.Duration = 20 * sim.Second
	ref, err := RunReference(p)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Run(p, 1, "", Outputs{}, ref, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("ref gap %.4f; run %+v", ref.GapErrMeanM, *m)
}

// TestReplayMatchesCoupled: with periodic traffic, the same seed gives a
// byte-identical trace.csv and identical deliveries.csv (and robots.csv) in
// replay and coupled modes, with every impairment active.
func TestReplayMatchesCoupled(t *testing.T) {
	p := Defaults()
	p.Duration = 20 * sim.Second
	p.Jitter = 150 * sim.Millisecond
	p.Loss = 0.2
	p.LoadKbps = 2100
	base := t.TempDir()
	out := Outputs{Trace: true, Deliveries: true, Robots: true}
	files := map[string]map[string][]byte{}
	for _, mode := range []string{"coupled", "replay"} {
		p.Mode = mode
		dir := filepath.Join(base, mode)
		if _, err := Run(p, 7, dir, out, nil, nil, nil); err != nil {
			t.Fatal(err)
		}
		files[mode] = map[string][]byte{}
		for _, f := range []string{"trace.csv", "deliveries.csv", "robots.csv"} {
			b, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil {
				t.Fatal(err)
			}
			files[mode][f] = b
		}
	}
	for f, b := range files["coupled"] {
		if !bytes.Equal(b, files["replay"][f]) {
			t.Errorf("%s differs between coupled and replay", f)
		}
	}
	tr := files["coupled"]["trace.csv"]
	for _, w := range []string{",queue\n", ",rx_error\n", ",bg,", ",state,"} {
		if !bytes.Contains(tr, []byte(w)) {
			t.Errorf("trace has no %q: the test does not exercise it", w)
		}
	}
	// Replay refuses state-dependent sending.
	p.Mode, p.Policy = "replay", "event"
	if _, err := Run(p, 7, "", out, nil, nil, nil); err == nil {
		t.Fatal("replay accepted the event-triggered policy")
	}
}

// BenchmarkBaselineRun is one 60 s baseline run (3 robots, periodic 10 Hz,
// coupled mode, per-run files off).
func BenchmarkBaselineRun(b *testing.B) {
	p := Defaults()
	for b.Loop() {
		if _, err := Run(p, 1, "", Outputs{}, nil, nil, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoadRun is one 60 s run at 2100 kbit/s of background load per
// robot (about 23,000 packets and 46,000 receptions).
func BenchmarkLoadRun(b *testing.B) {
	p := Defaults()
	p.LoadKbps = 2100
	for b.Loop() {
		if _, err := Run(p, 1, "", Outputs{}, nil, nil, nil); err != nil {
			b.Fatal(err)
		}
	}
}
