package runner

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"skyloop/engine"
)

// wideWifi is a line of 40 stations 20 m apart over native 802.11a: most
// pairs are beyond the sensitivity range (about 220 m) and many beyond the
// cutoff range (about 600 m), so drops at the sensitivity are most of the
// outcomes.
const wideWifi = `
name: wide-wifi
seed: 3
duration: 3s
tick: 1ms
vehicles:
  - name: p
    kind: pointmass
    count: 40
    spawn: {layout: line, origin: [0, 0, 10], spacing: 20}
    behaviors:
      - {type: beacon, period: 100ms, stagger: 3ms}
network:
  backend: wifi
`

// wideImpair is a 10 x 10 grid of point masses 10 m apart over impair
// with a 25 m range and some loss, moving: most pairs are out of range
// (counted in bulk through the spatial index when no trace file names
// them).
const wideImpair = `
name: wide-impair
seed: 4
duration: 3s
tick: 1ms
vehicles:
  - name: p
    kind: pointmass
    count: 100
    spawn: {layout: grid, origin: [0, 0, 10], spacing: 10}
    behaviors:
      - {type: waypoints, relative: true, loop: true, points: [[20, 0, 0], [20, 20, 5], [0, 20, 0], [0, 0, 0]]}
      - {type: beacon, period: 100ms}
network:
  backend: impair
  range: 25
  loss: 0.1
  latency: 2ms
`

// TestCountedDropsMatchTrace checks that a run whose drops are counted in
// bulk (no trace file) reports exactly the network figures of the same run
// writing every drop to trace.csv, and that trace.csv holds as many drops
// per reason as the summary says: over native Wi-Fi (drops at the
// sensitivity) and over impair with a range (drops out of range).
func TestCountedDropsMatchTrace(t *testing.T) {
	for _, c := range []struct{ yaml, reason string }{{wideWifi, "below_sensitivity"}, {wideImpair, "range"}} {
		countedDropsMatchTrace(t, c.yaml, c.reason)
	}
}

func countedDropsMatchTrace(t *testing.T, yaml, reason string) {
	withFiles := runYAML(t, yaml, engine.Options{Registry: registry, Workers: 1}, filepath.Join(t.TempDir(), "run"))
	counted := runYAML(t, yaml, engine.Options{Registry: registry, Workers: 1, NoFiles: true}, "")
	a, _ := json.Marshal(withFiles.Summary.Network)
	b, _ := json.Marshal(counted.Summary.Network)
	if string(a) != string(b) {
		t.Fatalf("network figures differ with and without trace.csv:\nfiles: %s\ncounted: %s", a, b)
	}
	drops := withFiles.Summary.Network.Total.Drops
	if drops[reason] == 0 || withFiles.Summary.Network.Total.Rx == 0 {
		t.Fatalf("the scenario should have receptions and drops %s: %s", reason, a)
	}
	f, err := os.Open(filepath.Join(withFiles.Dir, "trace.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]uint64{}
	for _, row := range rows[1:] {
		if row[0] == "drop" {
			got[row[len(row)-1]]++
		}
	}
	for why, n := range drops {
		if got[why] != n {
			t.Errorf("drops %s: trace.csv has %d, the summary %d", why, got[why], n)
		}
	}
}

// fullLoop is a small bench-full100: multirotors with the PX4-like stack
// in turbulent wind, beaconing over native 802.11a, with every file on.
const fullLoop = `
name: full-loop
seed: 5
duration: 3s
tick: 1ms
vehicles:
  - name: uav
    kind: multirotor
    count: 40
    spawn: {layout: grid, origin: [0, 0, 10], spacing: 6}
    params: {preset: iris, wind: [3, 0, 0], turbulence_sigma: 0.5}
    behaviors:
      - {type: waypoints, relative: true, loop: true, points: [[20, 0, 0], [20, 20, 5], [0, 20, 0], [0, 0, 0]]}
      - {type: beacon, period: 100ms, stagger: 1ms, format: planar}
network:
  backend: wifi
`

// TestDeterminismNetworkAhead: with several workers the network steps to
// the next tick while the workers step the vehicles; the files must be
// byte-identical to those of one worker, which never overlaps.
func TestDeterminismNetworkAhead(t *testing.T) {
	base := t.TempDir()
	var ref map[string][]byte
	for i, workers := range []int{1, 2, 3} {
		dir := filepath.Join(base, strconv.Itoa(i))
		runYAML(t, fullLoop, engine.Options{Registry: registry, Workers: workers, AlwaysParallel: true}, dir)
		files := readDir(t, dir)
		delete(files, "meta.json")
		if i == 0 {
			ref = files
			if n := bytes.Count(files["deliveries.csv"], []byte("\n")); n < 10000 {
				t.Fatalf("deliveries.csv has only %d lines", n)
			}
			continue
		}
		for name, b := range ref {
			if !bytes.Equal(files[name], b) {
				t.Errorf("workers=%d: %s differs from one worker's", workers, name)
			}
		}
	}
}
