package runner

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"skyloop/engine"
	"skyloop/internal/mjtest"
	"skyloop/scenario"
	"skyloop/scenarios"
)

// builtinText returns the built-in scenario name with each old string
// replaced by its new one (once each; the test fails if one is missing).
func builtinText(t *testing.T, name string, repl ...string) string {
	t.Helper()
	b, ok := scenarios.Lookup(name)
	if !ok {
		t.Fatalf("no built-in %s", name)
	}
	s := string(b)
	for i := 0; i < len(repl); i += 2 {
		if !strings.Contains(s, repl[i]) {
			t.Fatalf("%s has no %q", name, repl[i])
		}
		s = strings.Replace(s, repl[i], repl[i+1], 1)
	}
	return s
}

// platoons are the netbots impairment study's two platoon scenarios: the classic robot
// (native physics) and the netbots paper's (in MuJoCo).
var platoons = []struct{ name, scenario string }{{"classic", "netbots/platoon"}, {"paper", "netbots/paper"}}

// platoonScenario returns a platoon scenario with the replacements, first
// skipping t when it needs MuJoCo and MuJoCo is not there.
func platoonScenario(t *testing.T, name string, repl ...string) string {
	t.Helper()
	if name == "netbots/paper" {
		mjtest.Require(t)
	}
	return builtinText(t, name, repl...)
}

// TestReplayMatchesCoupled: with periodic traffic, the same seed gives a
// byte-identical trace.csv, deliveries.csv and robots.csv whether the
// network advances in lockstep epochs with the robots (coupled) or runs
// first and is replayed, with every impairment active (loss, jitter that
// reorders, a queue that overflows under background load). Replay refuses
// the event-triggered policy, whose sends depend on the robots' states.
func TestReplayMatchesCoupled(t *testing.T) {
	for _, pl := range platoons {
		t.Run(pl.name, func(t *testing.T) { replayMatchesCoupled(t, pl.scenario) })
	}
}

// replayMatchesCoupled is TestReplayMatchesCoupled on one platoon
// scenario.
func replayMatchesCoupled(t *testing.T, name string) {
	files := map[string]map[string][]byte{}
	for _, mode := range []string{"coupled", "replay"} {
		text := platoonScenario(t, name,
			"duration: 60s", "duration: 20s",
			"mode: coupled", "mode: "+mode,
			"jitter: 0s", "jitter: 150ms",
			"loss: 0\n", "loss: 0.2\n",
			"rate: 0\n", "rate: 2.1e6\n")
		seed := uint64(7)
		dir := filepath.Join(t.TempDir(), mode)
		runYAML(t, text, engine.Options{Registry: registry, Seed: &seed}, dir)
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
	text := platoonScenario(t, name, "mode: coupled", "mode: replay", "policy: periodic", "policy: event")
	sc, err := scenario.Parse("platoon.yaml", []byte(text), registry.Schema())
	if err != nil {
		t.Fatal(err)
	}
	_, err = engine.Build(sc, engine.Options{Registry: registry, NoFiles: true})
	if err == nil || !strings.Contains(err.Error(), "event-triggered sending depends on the vehicle's state, so the network cannot run first") {
		t.Fatalf("replay with the event policy: got %v", err)
	}
}

// TestDeterminismEpochs: the platoon in coupled 10 ms network epochs, with
// event-triggered sending, loss, jitter and background load, writes
// byte-identical files with 1, 2 and 4 workers (meta.json aside).
func TestDeterminismEpochs(t *testing.T) {
	for _, pl := range platoons {
		t.Run(pl.name, func(t *testing.T) { determinismEpochs(t, pl.scenario) })
	}
}

// determinismEpochs is TestDeterminismEpochs on one platoon scenario.
func determinismEpochs(t *testing.T, name string) {
	text := platoonScenario(t, name,
		"duration: 60s", "duration: 15s",
		"policy: periodic", "policy: event",
		"jitter: 0s", "jitter: 150ms",
		"loss: 0\n", "loss: 0.2\n",
		"rate: 0\n", "rate: 1.9e6\n",
		"vehicles: false, events: false", "vehicles: true, events: true")
	var ref map[string][]byte
	for i, workers := range []int{1, 2, 4} {
		dir := filepath.Join(t.TempDir(), "run")
		runYAML(t, text, engine.Options{Registry: registry, Workers: workers}, dir)
		files := readDir(t, dir)
		delete(files, "meta.json")
		if i == 0 {
			ref = files
			for _, want := range []string{"trace.csv", "deliveries.csv", "robots.csv", "platoon.json", "vehicles.csv", "events.csv", "summary.json"} {
				if len(files[want]) == 0 {
					t.Fatalf("%s missing or empty", want)
				}
			}
			continue
		}
		if len(files) != len(ref) {
			t.Fatalf("workers=%d wrote %d files, workers=1 wrote %d", workers, len(files), len(ref))
		}
		for name, b := range ref {
			if !bytes.Equal(files[name], b) {
				t.Errorf("workers=%d: %s differs from workers=1", workers, name)
			}
		}
	}
}
