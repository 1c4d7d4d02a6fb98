package runner

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"skyloop/engine"
	"skyloop/scenario"
	"skyloop/scenarios"
	"skyloop/twin"
)

// twinYAML has every kind of mission a twin compares: drones commanded by
// a ground station, drones on waypoints, and a platoon with its measure.
const twinYAML = `
name: twin-test
seed: 3
duration: 20s
tick: 1ms
vehicles:
  - name: drone
    kind: pointmass
    count: 4
    spawn: {layout: line, origin: [0, 0, 0], spacing: 3}
    behaviors:
      - {type: remote, gcs: gcs, telemetry: 200ms, stagger: 10ms}
  - name: quad
    kind: pointmass
    count: 2
    spawn: {layout: line, origin: [0, 10, 0], spacing: 3}
    behaviors:
      - {type: waypoints, relative: true, points: [[0, 0, 5], [5, 5, 5]], final: land}
  - name: robot
    kind: groundbot
    count: 3
    spawn: {layout: line, origin: [0, -10, 0], step: [-1, 0, 0]}
    yaw: 0
    behaviors:
      - {type: platoon, waypoints: [[0, -10], [12, -10]], speed: 0.5, gap: 1.0, period: 2ms}
      - {type: beacon, format: planar, period: 100ms, stagger: 10ms}
nodes:
  - name: gcs
    position: [5, -5, 1]
    behaviors:
      - type: gcs
        group: drone
        resend: 1s
        accept: 1.0
        final: land
        legs:
          - {layout: line, origin: [0, 0, 10], spacing: 3}
          - {layout: line, origin: [0, 20, 10], spacing: 3}
measures:
  - {type: platoon, group: robot, gap: 1.0, warmup: 2s, sample: 100ms}
outputs: {trace: false, deliveries: false, report: false}
`

// runTwin runs twinYAML with the network given into a fresh directory
// with its twin and returns the directory and summary.json's twin section.
func runWithTwin(t *testing.T, network string) (string, *twin.Report) {
	t.Helper()
	text := []byte(twinYAML + "network: " + network + "\n")
	sc, err := scenario.Parse("twin.yaml", text, registry.Schema())
	if err != nil {
		t.Fatal(err)
	}
	r, err := engine.Build(sc, engine.Options{Registry: registry})
	if err != nil {
		t.Fatal(err)
	}
	tsc, err := twin.Scenario("twin.yaml", text, "", registry.Schema())
	if err != nil {
		t.Fatal(err)
	}
	tw, err := engine.Build(tsc, engine.Options{Registry: registry})
	if err != nil {
		t.Fatal(err)
	}
	if err := twin.Check(r, tw); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "run")
	if _, err := Execute(r, dir, Options{Twin: tw}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Twin *twin.Report `json:"twin"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	if s.Twin == nil {
		t.Fatal("summary.json has no twin section")
	}
	return dir, s.Twin
}

func TestTwinOfIdealNetworkCostsNothing(t *testing.T) {
	dir, tw := runWithTwin(t, "{backend: ideal}")
	for _, f := range []string{"twin.png", "twin/summary.json", "twin/config.json", "twin/vehicles.csv", "trajectory.png"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	o := tw.Overall
	if tw.Dir != "twin" || tw.Network != "ideal" {
		t.Errorf("dir %q, network %q", tw.Dir, tw.Network)
	}
	if o.Missions != 6 || o.Completed != 6 || o.TwinCompleted != 6 {
		t.Errorf("missions %d, completed %d and %d, want 6 (4 commanded, 2 on waypoints)", o.Missions, o.Completed, o.TwinCompleted)
	}
	if o.CompletionDeltaS == nil || *o.CompletionDeltaS != 0 || o.CompletionS == nil || *o.CompletionS <= 0 {
		t.Errorf("completion %v, delta %v", o.CompletionS, o.CompletionDeltaS)
	}
	if o.ExtraDistanceM != 0 || o.ExtraEnergyJ != 0 {
		t.Errorf("extra distance %v, energy %v", o.ExtraDistanceM, o.ExtraEnergyJ)
	}
	if o.TrajDevMeanM == nil || *o.TrajDevMeanM != 0 || *o.TrajDevMaxM != 0 {
		t.Errorf("deviation %v %v", o.TrajDevMeanM, o.TrajDevMaxM)
	}
	ex, ok := tw.Measures["platoon"]
	if !ok || len(ex) != 2 {
		t.Fatalf("measure excess %v, want gap_err_mean_m and gap_err_max_m of platoon", tw.Measures)
	}
	for k, v := range ex {
		if v != 0 {
			t.Errorf("platoon %s excess %v", k, v)
		}
	}
	if len(tw.Vehicles) != 9 {
		t.Fatalf("%d vehicles", len(tw.Vehicles))
	}
	for _, v := range tw.Vehicles {
		if v.ExtraDistanceM != 0 || v.ExtraEnergyJ != 0 || v.TrajDevMeanM == nil || *v.TrajDevMeanM != 0 || *v.TrajDevMaxM != 0 {
			t.Errorf("%s: %+v", v.Name, v)
		}
		if mission := !strings.HasPrefix(v.Name, "robot"); mission != (v.CompletionDeltaS != nil) || mission && *v.CompletionDeltaS != 0 {
			t.Errorf("%s: completion delta %v", v.Name, v.CompletionDeltaS)
		}
	}
}

func TestTwinOfLossyNetworkShowsTheCost(t *testing.T) {
	_, tw := runWithTwin(t, "{backend: impair, latency: 20ms, loss: 0.4}")
	o := tw.Overall
	if tw.Network != "ideal" {
		t.Errorf("twin network %q", tw.Network)
	}
	if o.TrajDevMaxM == nil || !(*o.TrajDevMaxM > 0.1) {
		t.Errorf("deviation from the twin %v, want > 0.1 m", o.TrajDevMaxM)
	}
	if o.CompletionDeltaS == nil || !(*o.CompletionDeltaS > 0) {
		t.Errorf("completion delta %v, want > 0: lost commands and telemetry delay the legs", o.CompletionDeltaS)
	}
	if x := tw.Measures["platoon"]["gap_err_mean_m"]; !(x > 0) {
		t.Errorf("gap error excess %v, want > 0", x)
	}
	devs := 0
	for _, v := range tw.Vehicles {
		if v.TrajDevMaxM != nil && *v.TrajDevMaxM > 0 {
			devs++
		}
	}
	if devs < 4 {
		t.Errorf("only %d vehicles deviate from the twin", devs)
	}
}

func TestTwinIsDeterministic(t *testing.T) {
	a, _ := runWithTwin(t, "{backend: impair, latency: 20ms, loss: 0.4}")
	b, _ := runWithTwin(t, "{backend: impair, latency: 20ms, loss: 0.4}")
	for _, f := range []string{"summary.json", "twin/summary.json", "twin.png"} {
		x, err1 := os.ReadFile(filepath.Join(a, f))
		y, err2 := os.ReadFile(filepath.Join(b, f))
		if err1 != nil || err2 != nil || !bytes.Equal(x, y) {
			t.Errorf("%s differs between two runs (%v, %v)", f, err1, err2)
		}
	}
}

// BenchmarkTwin runs the quickstart scenario (60 s) into a run directory
// without (twin=off) and with (twin=on) its ideal-network twin: the twin
// should cost at most one more run.
func BenchmarkTwin(b *testing.B) {
	text, _ := scenarios.Lookup("quickstart")
	for _, on := range []bool{false, true} {
		b.Run(fmt.Sprintf("twin=%v", map[bool]string{false: "off", true: "on"}[on]), func(b *testing.B) {
			for b.Loop() {
				sc, err := scenario.Parse("quickstart.yaml", text, registry.Schema())
				if err != nil {
					b.Fatal(err)
				}
				sc.Outputs.Report = false
				r, err := engine.Build(sc, engine.Options{Registry: registry})
				if err != nil {
					b.Fatal(err)
				}
				var opt Options
				if on {
					tsc, err := twin.Scenario("quickstart.yaml", text, "", registry.Schema())
					if err != nil {
						b.Fatal(err)
					}
					tsc.Outputs.Report = false
					if opt.Twin, err = engine.Build(tsc, engine.Options{Registry: registry}); err != nil {
						b.Fatal(err)
					}
				}
				if _, err := Execute(r, b.TempDir()+"/run", opt); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
