package ardupilot_test

import (
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"skyloop/ardupilot"
	"skyloop/engine"
	"skyloop/geom"
	"skyloop/runner"
	"skyloop/scenario"
	"skyloop/scenarios"
)

// The real-firmware tests run ArduCopter SITL (SKYLOOP_ARDUPILOT_DIR: the
// ArduPilot tree it was built in) and skip without it. They run one at a
// time: instance numbers (ports, working directories) start from 0 in
// every run.

func needArduPilot(t *testing.T) {
	t.Helper()
	if os.Getenv(ardupilot.EnvDir) == "" {
		t.Skipf("%s is not set: the real-firmware tests need an ArduCopter SITL build (scripts/build-ardupilot-sitl.sh, docs/ardupilot.md); CI replays a transcript instead", ardupilot.EnvDir)
	}
}

func runText(t *testing.T, name, text string) (*runner.Result, string) {
	t.Helper()
	sc, err := scenario.Parse(name, []byte(text), registry.Check)
	if err != nil {
		t.Fatal(err)
	}
	r, err := engine.Build(sc, engine.Options{Registry: registry})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "run")
	res, err := runner.Execute(r, dir, runner.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return res, dir
}

// tracks reads vehicles.csv: per vehicle, its positions and whether its
// motors spun.
func tracks(t *testing.T, dir string) (map[int][]geom.Vec3, map[int]bool) {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "vehicles.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	pos, armed := map[int][]geom.Vec3{}, map[int]bool{}
	for _, row := range rows[1:] {
		id, _ := strconv.Atoi(row[1])
		x, _ := strconv.ParseFloat(row[2], 64)
		y, _ := strconv.ParseFloat(row[3], 64)
		z, _ := strconv.ParseFloat(row[4], 64)
		pos[id] = append(pos[id], geom.V(x, y, z))
		armed[id] = armed[id] || row[12] == "1"
	}
	return pos, armed
}

func highest(tr []geom.Vec3) float64 {
	h := 0.0
	for _, p := range tr {
		h = max(h, p.Z)
	}
	return h
}

// gcsComplete checks that the ground station's scripts all completed.
func gcsComplete(t *testing.T, res *runner.Result, node string, n int) {
	t.Helper()
	gcs, _ := res.Summary.Agents[node]["mavlink_gcs"].(map[string]any)
	scripts := 0
	for k, v := range gcs {
		if m, ok := v.(map[string]any); ok {
			scripts++
			if m["complete"] != true {
				t.Errorf("ground station %s's script for %s incomplete: %v", node, k, m)
			}
		}
	}
	if scripts != n {
		t.Errorf("ground station %s reports %d scripts, want %d", node, scripts, n)
	}
}

// TestArduCopterGuidedTakeoffLand: one ArduCopter passes its pre-arm
// checks, is armed in GUIDED by the built-in ground station across the
// Wi-Fi model, takes off to 5 m (relative), lands and disarms by itself.
func TestArduCopterGuidedTakeoffLand(t *testing.T) {
	needArduPilot(t)
	res, dir := runText(t, "ap.yaml", `
name: ap-takeoff-land
seed: 1
duration: 100s
tick: 1ms
vehicles:
  - name: copter
    kind: multirotor
    count: 1
    spawn: {layout: line, origin: [0, 0, 0], spacing: 5}
    params: {preset: iris, controller: ardupilot-sitl}
    behaviors:
      - {type: mavlink, gcs: [gcs]}
nodes:
  - name: gcs
    position: [-10, 10, 1]
    behaviors:
      - type: mavlink_gcs
        group: copter
        mission:
          - {cmd: takeoff, alt: 5}
          - {cmd: land}
network:
  backend: wifi
`)
	pos, armed := tracks(t, dir)
	if h := highest(pos[0]); !armed[0] || math.Abs(h-5) > 0.8 {
		t.Errorf("motors spun %v, highest %.2f m; want about 5 m", armed[0], h)
	}
	v := res.Summary.Vehicles[0]
	if v.Final.Z > 0.05 || math.Hypot(v.Final.X, v.Final.Y) > 2 || v.Mode != "disarmed" {
		t.Errorf("ended at %v in mode %s, want landed near home with the motors stopped", v.Final, v.Mode)
	}
	gcsComplete(t, res, "gcs", 1)
}

// TestArduPilotChain runs scenarios/ubanc-chain-ardupilot.yaml: the three
// drones fly in turn, each started by the one before across the network.
func TestArduPilotChain(t *testing.T) {
	needArduPilot(t)
	text, _ := scenarios.Lookup("ubanc-chain-ardupilot")
	res, dir := runText(t, "ubanc-chain-ardupilot.yaml", string(text))
	pos, _ := tracks(t, dir)
	for i := 0; i < 3; i++ {
		start := res.Summary.Vehicles[i].Start
		loiter := start.Add(geom.V(5, 0, 5))
		best := math.Inf(1)
		for _, p := range pos[i] {
			best = min(best, p.Dist(loiter))
		}
		if best > 1.5 {
			t.Errorf("drone %d came no closer than %.2f m to its loiter point %v", i, best, loiter)
		}
		if v := res.Summary.Vehicles[i]; v.Final.Z > 0.05 {
			t.Errorf("drone %d ended at %v, not landed", i, v.Final)
		}
	}
	gcsComplete(t, res, "gcs", 1)
	t.Logf("%s", fmt.Sprint(res.Summary.Agents))
}
