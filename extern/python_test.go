package extern_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"skyloop/engine"
	"skyloop/runner"
	"skyloop/scenario"
	"skyloop/sim"
)

// python returns the Python 3 interpreter, skipping (or failing under
// SKYLOOP_REQUIRE_PYTHON) when there is none.
func python(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("SKYLOOP_REQUIRE_PYTHON") != "" {
			t.Fatalf("python3 is required (SKYLOOP_REQUIRE_PYTHON) but missing: %v", err)
		}
		t.Skipf("skipping: no python3 (%v); install Python 3 (CI does)", err)
	}
	return p
}

// TestPythonClientFliesOneUAV: the standard-library Python client takes a
// multirotor through takeoff, go-to and landing.
func TestPythonClientFliesOneUAV(t *testing.T) {
	py := python(t)
	script, _ := filepath.Abs(filepath.Join("testdata", "fly_one.py"))
	text := `
name: python-one
seed: 1
duration: 40s
tick: 1ms
vehicles:
  - name: uav
    kind: multirotor
    count: 1
    spawn: {layout: explicit, positions: [[0, 0, 0]]}
    behaviors:
      - {type: extern, period: 10ms, command: "` + py + ` ` + script + `"}
network:
  backend: ideal
`
	dir := filepath.Join(t.TempDir(), "run")
	res, err := runner.Execute(build(t, text), dir, runner.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ev, _ := os.ReadFile(filepath.Join(dir, "events.csv"))
	for _, e := range []string{"py_start", "py_airborne", "py_arrived", "py_landed"} {
		if !strings.Contains(string(ev), ","+e+",") {
			t.Errorf("events.csv lacks %s", e)
		}
	}
	v := res.Summary.Vehicles[0]
	if d := v.Final.Sub(v.Start); d.X < 9.6 || d.X > 10.4 || v.Final.Z > 0.05 || v.Mode != "disarmed" {
		t.Fatalf("the UAV ended at %v (mode %s), want landed 10 m east", v.Final, v.Mode)
	}
}

// TestFlockingExample runs examples/flocking for 20 s: ten Python processes
// flock over the Wi-Fi model without collisions.
func TestFlockingExample(t *testing.T) {
	python(t)
	sc, err := scenario.Load(filepath.Join("..", "examples", "flocking", "flocking.yaml"), registry.Check)
	if err != nil {
		t.Fatal(err)
	}
	d := 20 * sim.Second
	r, err := engine.Build(sc, engine.Options{Registry: registry, Duration: &d, NoFiles: true})
	if err != nil {
		t.Fatal(err)
	}
	res, err := runner.Execute(r, "", runner.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := res.Summary
	if s.Network.Total.PDR < 0.9 || s.Separation == nil || s.Separation.Collisions != 0 || s.Separation.MinM < 1 {
		t.Fatalf("PDR %.3f, separation %+v", s.Network.Total.PDR, s.Separation)
	}
	for _, v := range s.Vehicles {
		if v.Final.Z < 8 || v.DistanceM < 40 {
			t.Errorf("%s: at %v after %.0f m; the flock should cruise at 10 m", v.Name, v.Final, v.DistanceM)
		}
	}
}
