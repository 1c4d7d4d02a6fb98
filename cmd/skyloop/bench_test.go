package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestBenchScenarioResizesTheGroup(t *testing.T) {
	sc, err := benchScenario("bench-swarm100", 7, nil)
	if err != nil {
		t.Fatal(err)
	}
	g := sc.Vehicles[0]
	if g.Count != 7 || g.Spawn.Kind != "grid" || g.Spawn.Columns != 3 || g.Spawn.Spacing != 5 {
		t.Fatalf("group: count %d, layout %s, %d columns, spacing %v; want 7, grid, 3, 5",
			g.Count, g.Spawn.Kind, g.Spawn.Columns, g.Spawn.Spacing)
	}
	if sc.Name != "bench-swarm100" || sc.Duration.Seconds() != 60 {
		t.Fatalf("the rest changed: name %q, duration %v", sc.Name, sc.Duration)
	}
	sc, err = benchScenario("bench-full100", 1000, nil)
	if err != nil {
		t.Fatal(err)
	}
	if g := sc.Vehicles[0]; g.Count != 1000 || g.Spawn.Columns != 32 || g.Spawn.Spacing != 6 || g.Kind != "multirotor" {
		t.Fatalf("group: count %d, %d columns, spacing %v, kind %s; want 1000, 32, 6, multirotor",
			g.Count, g.Spawn.Columns, g.Spawn.Spacing, g.Kind)
	}
	// --set changes any field, after --vehicles.
	sc, err = benchScenario("bench-swarm100", 9, []string{"duration=7s", "vehicles[uav].spawn.spacing=2.5", "vehicles[0].spawn.columns=9"})
	if err != nil {
		t.Fatal(err)
	}
	if g := sc.Vehicles[0]; g.Count != 9 || g.Spawn.Columns != 9 || g.Spawn.Spacing != 2.5 || sc.Duration.Seconds() != 7 {
		t.Fatalf("with --set: count %d, %d columns, spacing %v, duration %v", g.Count, g.Spawn.Columns, g.Spawn.Spacing, sc.Duration)
	}
	// Without --vehicles the scenario is the built-in one.
	sc, err = benchScenario("bench-swarm100", 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if g := sc.Vehicles[0]; g.Count != 100 || g.Spawn.Columns != 0 {
		t.Fatalf("unchanged scenario: count %d, %d columns", g.Count, g.Spawn.Columns)
	}
}

func TestBenchScenarioResizesALine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "line.yaml")
	os.WriteFile(path, []byte(`name: line
duration: 1s
vehicles:
  - name: uav
    kind: pointmass
    count: 3
    spawn: {layout: line, origin: [0, 0, 10], spacing: 4}
`), 0o644)
	sc, err := benchScenario(path, 12, nil)
	if err != nil {
		t.Fatal(err)
	}
	if g := sc.Vehicles[0]; g.Count != 12 || g.Spawn.Kind != "line" || g.Spawn.Columns != 0 || g.Spawn.Spacing != 4 {
		t.Fatalf("group: count %d, layout %s, %d columns, spacing %v", g.Count, g.Spawn.Kind, g.Spawn.Columns, g.Spawn.Spacing)
	}
	if sc.Dir != filepath.Dir(path) {
		t.Fatalf("dir %q, want %q", sc.Dir, filepath.Dir(path))
	}
}

func TestBenchJSON(t *testing.T) {
	code, stdout, stderr := capture(t, "bench", "bench-swarm100", "--vehicles", "7", "--duration", "1s", "--runs", "2", "--workers", "1", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var f map[string]any
	if err := json.Unmarshal([]byte(stdout), &f); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, stdout)
	}
	want := map[string]any{"scenario": "bench-swarm100", "vehicles": 7.0, "workers": 1.0, "sim_seconds": 1.0, "runs": 2.0}
	for k, v := range want {
		if f[k] != v {
			t.Errorf("%s = %v, want %v", k, f[k], v)
		}
	}
	// 7 vehicles beacon at 10 Hz to the 6 others for 1 s: at most 420
	// deliveries, a few fewer for the beacons still in flight at the end.
	if d := f["deliveries"].(float64); d < 400 || d > 420 {
		t.Errorf("deliveries = %v, want 400..420", d)
	}
	for _, k := range []string{"wall_median_s", "wall_min_s", "wall_max_s", "x_realtime", "ns_per_vehicle_tick",
		"ns_per_delivery", "allocs_per_tick", "heap_bytes_per_vehicle", "heap_end_bytes_per_vehicle"} {
		if v, ok := f[k].(float64); !ok || v <= 0 {
			t.Errorf("%s = %v, want a positive number", k, f[k])
		}
	}
	if f["wall_min_s"].(float64) > f["wall_median_s"].(float64) || f["wall_median_s"].(float64) > f["wall_max_s"].(float64) {
		t.Errorf("wall times out of order: %v", stdout)
	}
	ns := f["wall_median_s"].(float64) * 1e9 / 1000 / 7
	if v := f["ns_per_vehicle_tick"].(float64); v < ns*0.999 || v > ns*1.001 {
		t.Errorf("ns_per_vehicle_tick = %v, want wall median / ticks / vehicles = %v", v, ns)
	}

	// With a warm-up, the figures cover the rest of the run.
	code, stdout, stderr = capture(t, "bench", "bench-swarm100", "--vehicles", "5", "--duration", "3s", "--warmup", "2s", "--runs", "1", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	f = nil
	if err := json.Unmarshal([]byte(stdout), &f); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, stdout)
	}
	if f["warmup_s"] != 2.0 || f["sim_seconds"] != 3.0 {
		t.Errorf("warmup_s %v, sim_seconds %v; want 2, 3", f["warmup_s"], f["sim_seconds"])
	}
	wall := f["wall_median_s"].(float64)
	if v, want := f["ns_per_vehicle_tick"].(float64), wall*1e9/1000/5; v < want*0.999 || v > want*1.001 {
		t.Errorf("ns_per_vehicle_tick = %v, want the last second's wall time / 1000 ticks / 5 vehicles = %v", v, want)
	}
	if v, want := f["x_realtime"].(float64), 1/wall; v < want*0.999 || v > want*1.001 {
		t.Errorf("x_realtime = %v, want 1 s / %v s", v, wall)
	}

	if _, ok := f["arrivals_per_s"]; ok {
		t.Errorf("arrivals_per_s from the impair backend, which does not count its work: %v", stdout)
	}

	// Over the native Wi-Fi model, the radio model's work in the measured
	// second: 4 drones 20 m apart beacon at 10 Hz, each frame arriving at
	// the 3 others.
	code, stdout, stderr = capture(t, "bench", "bench-full100", "--vehicles", "4", "--duration", "2s", "--warmup", "1s", "--runs", "1", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	f = nil
	if err := json.Unmarshal([]byte(stdout), &f); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, stdout)
	}
	tx, _ := f["transmissions_per_s"].(float64)
	arr, _ := f["arrivals_per_s"].(float64)
	if tx < 36 || tx > 44 || arr != 3*tx {
		t.Errorf("transmissions_per_s %v, arrivals_per_s %v; want about 40 and 3 times that", tx, arr)
	}
	if v, want := f["ns_per_arrival"].(float64), f["wall_median_s"].(float64)*1e9/arr; arr > 0 && (v < want*0.999 || v > want*1.001) {
		t.Errorf("ns_per_arrival = %v, want the measured wall time / arrivals = %v", v, want)
	}

	// The text output names the memory per vehicle.
	code, stdout, stderr = capture(t, "bench", "bench-swarm100", "--vehicles", "4", "--duration", "500ms", "--runs", "1")
	if code != 0 || !strings.Contains(stdout, "bench-swarm100: 4 vehicles, 500ms simulated") || !strings.Contains(stdout, "memory per vehicle: ") {
		t.Fatalf("exit %d: %s %s", code, stdout, stderr)
	}
}

func TestBenchBadInput(t *testing.T) {
	two := filepath.Join(t.TempDir(), "two.yaml")
	os.WriteFile(two, []byte(`name: two
duration: 1s
vehicles:
  - {name: a, kind: pointmass, count: 2, spawn: {layout: line, spacing: 3}}
  - {name: b, kind: pointmass, count: 2, spawn: {layout: line, origin: [0, 10, 0], spacing: 3}}
`), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--vehicles", "0"}, "--vehicles must be >= 1, got 0"},
		{[]string{"--memprofilerate", "0"}, "--memprofilerate must be >= 1, got 0"},
		{[]string{"--vehicles", "-3"}, "--vehicles must be >= 1, got -3"},
		{[]string{two, "--vehicles", "5"}, "--vehicles needs a scenario with exactly one vehicle group; two has 2"},
		{[]string{"--vehicles", "100000000"}, "count"},
		{[]string{"--duration", "soon"}, "--duration: "},
		{[]string{"--duration", "1500us"}, "whole number of ticks"},
		{[]string{"--duration", "-1s"}, "--duration"},
		{[]string{"--duration", "2s", "--warmup", "500ms"}, "--warmup 500ms must be a whole number of seconds, less than the 2s simulated"},
		{[]string{"--duration", "2s", "--warmup", "2s"}, "--warmup 2s must be a whole number of seconds"},
		{[]string{"--set", "nope"}, `--set "nope": want PATH=VALUE`},
		{[]string{"--set", "vehicles[4].count=3"}, "--set vehicles[4].count:1: vehicles[4].count: vehicles: no element [4] (the list has 1)"},
		{[]string{"--set", "vehicles[0].behaviors[beacon].jitter=150ms"}, "jitter: must be below the period 100ms"},
	} {
		args := append([]string{"bench", "--runs", "1"}, c.args...)
		code, _, stderr := capture(t, args...)
		if code != 2 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", c.args, code, stderr, c.want)
		}
	}
}

// TestBenchPhases: --phases reports every phase of the tick, in the order
// they run, with exactly the calls of the measured span (after the
// warm-up, over both runs), and wall times that add up to no more than
// the runs' measured wall time.
func TestBenchPhases(t *testing.T) {
	code, stdout, stderr := capture(t, "bench", "bench-swarm100", "--vehicles", "5", "--duration", "3s", "--warmup", "2s",
		"--runs", "2", "--workers", "1", "--phases", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var f struct {
		WallMedian float64      `json:"wall_median_s"`
		WallMax    float64      `json:"wall_max_s"`
		Phases     []benchPhase `json:"phases"`
	}
	if err := json.Unmarshal([]byte(stdout), &f); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, stdout)
	}
	// 1 s measured per run at a 1 ms tick; world checks and position
	// updates every 10 ms; one progress report per simulated second.
	want := map[string]int64{"world": 200, "network": 2000, "agents": 2000, "vehicles": 2000, "positions": 200, "progress": 2}
	var order []string
	var sum float64
	for _, ph := range f.Phases {
		if n, ok := want[ph.Name]; ok {
			order = append(order, ph.Name)
			if ph.Calls != n {
				t.Errorf("%s: %d calls, want %d", ph.Name, ph.Calls, n)
			}
		}
		if ph.WallS < 0 || ph.Share < 0 || ph.Share > 1 {
			t.Errorf("%s: wall %v s, share %v", ph.Name, ph.WallS, ph.Share)
		}
		if ph.Calls > 0 && ph.UsPerCall*float64(ph.Calls) < ph.UsPerTick*2000*0.999 {
			t.Errorf("%s: %v µs per call over %d calls, %v µs per tick over 2000 ticks: not the same wall time", ph.Name, ph.UsPerCall, ph.Calls, ph.UsPerTick)
		}
		sum += ph.WallS
	}
	if got := strings.Join(order, " "); got != "world network agents vehicles positions progress" {
		t.Errorf("phases %q, want world, network, agents, vehicles, positions, progress in that order:\n%s", got, stdout)
	}
	if sum > 2*f.WallMax {
		t.Errorf("the phases took %v s, more than the two runs' measured wall time (at most %v s)", sum, 2*f.WallMax)
	}

	// As text: a line per phase.
	code, stdout, stderr = capture(t, "bench", "bench-swarm100", "--vehicles", "5", "--duration", "1s", "--runs", "1", "--phases")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "phases (wall time per tick") || !regexp.MustCompile(`(?m)^  vehicles +[0-9.]+ µs`).MatchString(stdout) {
		t.Errorf("no phase table in:\n%s", stdout)
	}
}
