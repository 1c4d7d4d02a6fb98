package mavlink_test

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"skyloop/components"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bluenviron/gomavlib/v3/pkg/dialect"
	"github.com/bluenviron/gomavlib/v3/pkg/dialects/common"
	"github.com/bluenviron/gomavlib/v3/pkg/tlog"

	"skyloop/engine"
	"skyloop/runner"
	"skyloop/scenario"
	"skyloop/scenarios"
)

// registry has every component skyloop ships with.
var registry = components.Registry()

func runScenario(t *testing.T, name string, text []byte, dir string) *runner.Summary {
	t.Helper()
	sc, err := scenario.Parse(name+".yaml", text, registry.Schema())
	if err != nil {
		t.Fatal(err)
	}
	r, err := engine.Build(sc, engine.Options{Registry: registry})
	if err != nil {
		t.Fatal(err)
	}
	res, err := runner.Execute(r, dir, runner.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return res.Summary
}

// agentData re-reads summary.json's agents section as plain JSON values.
func agentData(t *testing.T, s *runner.Summary) map[string]map[string]map[string]any {
	t.Helper()
	b, err := json.Marshal(s.Agents)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]map[string]map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestUbancChain(t *testing.T) {
	text, ok := scenarios.Lookup("ubanc-chain")
	if !ok {
		t.Fatal("no embedded ubanc-chain scenario")
	}
	dir := filepath.Join(t.TempDir(), "run")
	sum := runScenario(t, "ubanc-chain", text, dir)
	ag := agentData(t, sum)
	var prevLoiter float64
	for i, name := range []string{"drone-0", "drone-1", "drone-2"} {
		ms, _ := ag[name]["mavlink"]["milestones_s"].(map[string]any)
		var ts []float64
		for _, k := range []string{"ARM", "TAKEOFF", "LOITER", "LAND", "DISARM"} {
			v, ok := ms[k].(float64)
			if !ok {
				t.Fatalf("%s: no %s milestone (%v)", name, k, ms)
			}
			if len(ts) > 0 && v <= ts[len(ts)-1] {
				t.Fatalf("%s: %s at %.2f s is not after the previous milestone (%v)", name, k, v, ms)
			}
			ts = append(ts, v)
		}
		if i > 0 && !(ts[0] > prevLoiter && ts[0]-prevLoiter < 2) {
			t.Errorf("%s armed at %.2f s; the drone before started loitering at %.2f s", name, ts[0], prevLoiter)
		}
		// Loiter lasts 20 s (from reaching the loiter point to leaving it).
		if d := ts[3] - ts[2]; d < 20 || d > 23 {
			t.Errorf("%s: %.2f s between LOITER and LAND, want 20 s plus the approach", name, d)
		}
		prevLoiter = ts[2]
		v := sum.Vehicles[i]
		if dx := v.Final.X - v.Start.X; dx < 4.5 || dx > 5.5 || v.Final.Z > 0.05 || v.Mode != "disarmed" {
			t.Errorf("%s ended at %v from %v (mode %s); want landed 5 m east", name, v.Final, v.Start, v.Mode)
		}
	}
	ev, err := os.ReadFile(filepath.Join(dir, "events.csv"))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{",agent,ARM,", ",agent,TAKEOFF,", ",agent,LOITER,", ",agent,LAND,", ",agent,DISARM,"} {
		if n := strings.Count(string(ev), k); n != 3 {
			t.Errorf("events.csv has %d %q rows, want 3", n, k)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "profile.png")); err != nil {
		t.Error(err)
	}
	// The telemetry log reads back with gomavlib's tlog reader.
	f, err := os.Open(filepath.Join(dir, "mavlink-drone-1.tlog"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rw := &dialect.ReadWriter{Dialect: common.Dialect}
	if err := rw.Initialize(); err != nil {
		t.Fatal(err)
	}
	rd := &tlog.Reader{ByteReader: f, DialectRW: rw}
	if err := rd.Initialize(); err != nil {
		t.Fatal(err)
	}
	var n, hb int
	var last int64
	for {
		e, err := rd.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("tlog entry %d: %v", n, err)
		}
		if us := e.Time.UnixMicro(); us < last {
			t.Fatalf("tlog time goes back at entry %d", n)
		} else {
			last = us
		}
		if _, ok := e.Frame.GetMessage().(*common.MessageHeartbeat); ok && e.Frame.GetSystemID() == 2 {
			hb++
		}
		n++
	}
	if hb < 55 || n < 1000 {
		t.Fatalf("tlog: %d frames, %d heartbeats of system 2 in 60 s", n, hb)
	}
}

func TestMAVLinkRunIsDeterministic(t *testing.T) {
	text, _ := scenarios.Lookup("ubanc-chain")
	text = bytes.Replace(text, []byte("duration: 60s"), []byte("duration: 20s"), 1)
	a, b := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	runScenario(t, "ubanc-chain", text, a)
	runScenario(t, "ubanc-chain", text, b)
	ents, _ := os.ReadDir(a)
	checked := 0
	for _, e := range ents {
		if e.Name() == "meta.json" {
			continue
		}
		x, _ := os.ReadFile(filepath.Join(a, e.Name()))
		y, err := os.ReadFile(filepath.Join(b, e.Name()))
		if err != nil || !bytes.Equal(x, y) {
			t.Errorf("%s differs between two runs with the same seed", e.Name())
		}
		checked++
	}
	if checked < 8 {
		t.Fatalf("only %d files compared", checked)
	}
}

const lossy = `
name: mavlink-loss
seed: 3
duration: 60s
tick: 1ms
vehicles:
  - name: drone
    kind: multirotor
    count: 1
    spawn: {layout: explicit, positions: [[0, 0, 0]]}
    behaviors:
      - type: mavlink
        gcs: [gcs]
nodes:
  - name: gcs
    position: [0, -5, 1]
    behaviors:
      - type: mavlink_gcs
        start: 1s
        mission:
          - {cmd: takeoff, alt: 5}
          - {cmd: waypoint, offset: [10, 0, 5]}
          - {cmd: land}
network:
  backend: impair
  latency: 5ms
  loss: LOSS
`

// TestCommandsOverLossyNetwork: with 30% loss on the simulated network the
// ground station's commands and mission upload still complete, thanks to
// acknowledgements and resends, but later than without loss.
func TestCommandsOverLossyNetwork(t *testing.T) {
	var done, mission, sends [2]float64
	for i, loss := range []string{"0", "0.3"} {
		sum := runScenario(t, "mavlink-loss", []byte(strings.Replace(lossy, "LOSS", loss, 1)), "")
		g := agentData(t, sum)["gcs"]["mavlink_gcs"]["drone-0"].(map[string]any)
		if g["complete"] != true {
			t.Fatalf("loss %s: the script did not complete: %v", loss, g)
		}
		done[i], _ = g["commands_done_s"].(float64)
		mission[i], _ = g["mission_done_s"].(float64)
		sends[i], _ = g["sends"].(float64)
		if mission[i] == 0 {
			t.Fatalf("loss %s: no landing reported: %v", loss, g)
		}
		if loss != "0" && sum.Network.Total.Drops["rx_error"] == 0 {
			t.Fatalf("loss %s: the network dropped nothing", loss)
		}
	}
	if !(done[1] > done[0]) || !(sends[1] > sends[0]) {
		t.Fatalf("commands done after %.3f s at 0%% loss and %.3f s at 30%%, %v vs %v sends", done[0], done[1], sends[0], sends[1])
	}
	t.Logf("upload+arm+start done after %.3f s at 0%% loss, %.3f s at 30%% (%v and %v sends); mission done after %.1f s and %.1f s",
		done[0], done[1], sends[0], sends[1], mission[0], mission[1])
}

const coverageMission = `
name: mavlink-coverage
seed: 1
duration: 200s
tick: 1ms
vehicles:
  - name: drone
    kind: multirotor
    count: 1
    spawn: {layout: explicit, positions: [[5, 5, 0]]}
    behaviors:
      - type: mavlink
        gcs: [gcs]
nodes:
  - name: gcs
    position: [0, -5, 1]
    behaviors:
      - type: mavlink_gcs
        start: 1s
        coverage:
          area: [40, 30]
          cell: 10
          obstacles: [[1, 1], [2, 1]]
          altitude: 8
outputs: {sample_period: 100ms}
network:
  backend: impair
  latency: 5ms
  loss: 0.1
`

// TestCoverageAsMission: a ground station plans a coverage path and flies
// it as a MAVLink mission over a lossy network: the upload completes, the
// vehicle lands, and its track passed over the centre of every free cell
// (within 2 m) and over no obstacle cell.
func TestCoverageAsMission(t *testing.T) {
	dir := t.TempDir()
	sum := runScenario(t, "mavlink-coverage", []byte(coverageMission), dir)
	g := agentData(t, sum)["gcs"]["mavlink_gcs"]
	r := g["drone-0"].(map[string]any)
	if r["complete"] != true || r["mission_done_s"] == nil {
		t.Fatalf("the mission did not complete: %v", r)
	}
	pl := g["coverage_plan"].(map[string]any)
	t.Logf("plan %v; mission done after %.1f s", pl, r["mission_done_s"])
	if pl["cells"] != 10.0 || pl["crossings"] != 0.0 {
		t.Fatalf("plan %v: want the 10 free cells and no crossings", pl)
	}
	f, err := os.Open(filepath.Join(dir, "vehicles.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	ix, iy, iz := slices.Index(rows[0], "x"), slices.Index(rows[0], "y"), slices.Index(rows[0], "z")
	near := map[[2]int]bool{}
	for _, row := range rows[1:] {
		x, _ := strconv.ParseFloat(row[ix], 64)
		y, _ := strconv.ParseFloat(row[iy], 64)
		z, _ := strconv.ParseFloat(row[iz], 64)
		col, rw := int(math.Floor(x/10)), int(math.Floor(y/10))
		if z > 4 && (col == 1 || col == 2) && rw == 1 {
			t.Fatalf("flew over obstacle cell %d,%d at %.1f, %.1f, %.1f", col, rw, x, y, z)
		}
		if math.Hypot(x-(float64(col)*10+5), y-(float64(rw)*10+5)) < 2 && z > 4 {
			near[[2]int{col, rw}] = true
		}
	}
	if len(near) != 10 {
		t.Fatalf("passed over the centres of %d cells: %v; want the 10 free ones", len(near), near)
	}
}

const deafVehicle = `
name: mavlink-deaf
seed: 1
duration: 20s
tick: 1ms
vehicles:
  - name: drone
    kind: multirotor
    count: 1
    spawn: {layout: explicit, positions: [[0, 0, 0]]}
nodes:
  - name: gcs
    position: [0, -5, 1]
    behaviors:
      - type: mavlink_gcs
        ready_timeout: READY
        mission: [{cmd: takeoff, alt: 5}, {cmd: land}]
network: {backend: ideal}
`

// TestGCSFailsRunWhenVehicleNotReady: a ground station whose vehicle never
// answers (it runs no MAVLink endpoint) fails the run after ready_timeout,
// saying what was missing; a ready_timeout that is not a positive duration
// is refused, naming the key.
func TestGCSFailsRunWhenVehicleNotReady(t *testing.T) {
	sc, err := scenario.Parse("deaf.yaml", []byte(strings.Replace(deafVehicle, "READY", "5s", 1)), registry.Schema())
	if err != nil {
		t.Fatal(err)
	}
	r, err := engine.Build(sc, engine.Options{Registry: registry})
	if err != nil {
		t.Fatal(err)
	}
	_, err = runner.Execute(r, "", runner.Options{})
	const want = "vehicle 1 not ready after 5 s: no heartbeat heard (link down)"
	t.Log(err)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("run error %v, want one containing %q", err, want)
	}
	sc, err = scenario.Parse("deaf.yaml", []byte(strings.Replace(deafVehicle, "READY", "0s", 1)), registry.Schema())
	if err == nil {
		_, err = engine.Build(sc, engine.Options{Registry: registry})
	}
	t.Log(err)
	if err == nil || !strings.Contains(err.Error(), "ready_timeout") {
		t.Fatalf("ready_timeout 0s: %v, want an error naming ready_timeout", err)
	}
}
