package runner

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"skyloop/engine"
	"skyloop/internal/mjtest"
	"skyloop/scenario/scenariofile"
)

// TestMJCFRobotsDriveTheSquare runs the MJCF example (two robots of
// examples/mujoco/diffbot.xml in one MuJoCo world with a shelf): both
// finish the square and come back to where they started, on the floor.
func TestMJCFRobotsDriveTheSquare(t *testing.T) {
	mjtest.Require(t)
	sc, err := scenariofile.Load(filepath.Join("..", "examples", "mujoco", "diffbot.yaml"), registry.Schema())
	if err != nil {
		t.Fatal(err)
	}
	r, err := engine.Build(sc, engine.Options{Registry: registry})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	res, err := Execute(r, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	events, err := os.ReadFile(filepath.Join(dir, "events.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(events), ",mission_done,"); n != 2 {
		t.Errorf("%d robots finished the square, want 2:\n%s", n, events)
	}
	for _, v := range res.Summary.Vehicles {
		t.Logf("%s: %.2f m driven, final %.3f, wheel work %.2f J", v.Name, v.DistanceM, v.Final, v.EnergyJ)
		if v.DistanceM < 5.5 || v.DistanceM > 7 {
			t.Errorf("%s drove %.2f m; the square is 6 m", v.Name, v.DistanceM)
		}
		if d := v.Final.Sub(v.Start); d.Norm() > 0.15 {
			t.Errorf("%s ended %.3f m from its start", v.Name, d.Norm())
		}
		// The wheels' work: at least the kinetic energy of the eight
		// starts and stops at 0.4 m/s of a 3.2 kg robot (about 2 J), far
		// below what motors at their 0.5 N m limit at the cruise's 10 rad/s
		// would do over the 18 s (180 J).
		if v.EnergyJ < 2 || v.EnergyJ > 30 {
			t.Errorf("%s: wheel work %.2f J, want 2-30 J", v.Name, v.EnergyJ)
		}
		if z := v.Final.Z; z < -0.01 || z > 0.01 {
			t.Errorf("%s: z %.4f m, want the wheels on the floor (z 0)", v.Name, z)
		}
	}
	if res.Summary.Separation.Collisions != 0 {
		t.Errorf("%d collisions", res.Summary.Separation.Collisions)
	}
}

// TestMJCFBadInput: a missing model, a body or actuator the model does
// not have, and a model that is not MJCF are reported with the file and
// the parameter to fix.
func TestMJCFBadInput(t *testing.T) {
	mjtest.Require(t)
	src, xml := diffbotExample(t)
	for _, c := range []struct{ from, to, file, content, want string }{
		{"model: diffbot.xml", "model: nothere.xml", "", "", "nothere.xml"},
		{"body: base", "body: chassis", "", "", `no body "chassis" (params.body)`},
		{"right: right_motor", "right: rmotor", "", "", `no actuators "left_motor" and "rmotor"`},
		{"model: diffbot.xml", "model: bad.xml", "bad.xml", "<robot/>", "the root element is <robot>, want <mujoco>"},
		{"body: base", "", "", "", "body: missing"},
	} {
		files := map[string]string{"diffbot.xml": xml}
		if c.file != "" {
			files[c.file] = c.content
		}
		r, err := buildMJCF(t, files, strings.Replace(src, c.from, c.to, 1))
		if err == nil {
			r.Close()
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s -> %q: got %v, want %q", c.from, c.to, err, c.want)
		}
	}
}

// TestMJCFRobotsCollide: two MJCF robots sent through each other's place
// meet chassis to chassis and do not pass through (one MuJoCo world, so
// they touch).
func TestMJCFRobotsCollide(t *testing.T) {
	mjtest.Require(t)
	src, xml := diffbotExample(t)
	text := src
	for _, r := range [][2]string{
		{"duration: 40s", "duration: 10s"},
		{"    count: 2\n    spawn: {layout: line, origin: [0, 0, 0], step: [0, -0.6, 0]}",
			"    count: 1\n    spawn: {layout: explicit, positions: [[0, 0, 0]]}"},
		// Each drives to the other's start: head on.
		{"      - {type: waypoints, relative: true, points: [[2, 0, 0], [2, 1, 0], [0, 1, 0], [0, 0, 0]], accept: 0.1}",
			"      - {type: waypoints, points: [[1.5, 0, 0]], accept: 0.05}\n  - name: other\n    kind: mujoco\n    count: 1\n    spawn: {layout: explicit, positions: [[1.5, 0, 0]], heading: 180}\n" +
				"    params: {model: diffbot.xml, body: base, left: left_motor, right: right_motor, wheel_radius: 0.04, track: 0.24, max_wheel_speed: 15, max_speed: 0.4, radius: 0.2}\n" +
				"    behaviors:\n      - {type: waypoints, points: [[0, 0, 0]], accept: 0.05}"},
	} {
		if !strings.Contains(text, r[0]) {
			t.Fatalf("the example changed: no %q", r[0])
		}
		text = strings.Replace(text, r[0], r[1], 1)
	}
	r, err := buildMJCF(t, map[string]string{"diffbot.xml": xml}, text)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Execute(r, "", Options{})
	if err != nil {
		t.Fatal(err)
	}
	a, b := res.Summary.Vehicles[0], res.Summary.Vehicles[1]
	gap := b.Final.Sub(a.Final).Norm()
	t.Logf("final %v and %v, %.3f m apart; closest %.3f m", a.Final, b.Final, gap, res.Summary.Separation.MinM)
	// The chassis are 0.3 m long and 0.2 m wide: robots that pass through
	// each other come closer than 0.2 m (the separation check samples every
	// 10 ms, 8 mm of their closing); robots that meet get near 0.3 m, then
	// push and may slide along each other.
	if m := res.Summary.Separation.MinM; m < 0.19 || m > 0.4 {
		t.Errorf("closest approach %.3f m: the robots should meet chassis to chassis", m)
	}
	if gap > 0.5 {
		t.Errorf("the robots ended %.3f m apart: they did not meet", gap)
	}
}

// TestMJCFTelemetryFromSensors: with params.telemetry naming the model's
// sensors of a site 0.1 m ahead of the body (a GPS antenna), the robot
// steers that point through the square: it ends where the body-based run
// ends, shifted by the antenna's offset; a sensor that is missing or of
// the wrong size is refused with the file and the parameter.
func TestMJCFTelemetryFromSensors(t *testing.T) {
	mjtest.Require(t)
	src, xml := diffbotExample(t)
	model := strings.Replace(xml, `<geom name="chassis"`, `<site name="gps" pos="0.1 0 0.05"/>
      <geom name="chassis"`, 1)
	model = strings.Replace(model, `<framepos name="base_pos" objtype="body" objname="base"/>`,
		`<framepos name="base_pos" objtype="body" objname="base"/>
    <framepos name="gps_pos" objtype="site" objname="gps"/>
    <framelinvel name="gps_vel" objtype="site" objname="gps"/>
    <framequat name="gps_quat" objtype="site" objname="gps"/>`, 1)
	if model == xml || !strings.Contains(model, "gps_quat") {
		t.Fatal("the example model changed")
	}
	run := func(telemetry string) (*Result, error) {
		r, err := buildMJCF(t, map[string]string{"diffbot.xml": model},
			strings.Replace(src, "      radius: 0.2\n", "      radius: 0.2\n"+telemetry, 1))
		if err != nil {
			return nil, err
		}
		return Execute(r, "", Options{})
	}
	body, err := run("")
	if err != nil {
		t.Fatal(err)
	}
	gps, err := run("      telemetry: {position: gps_pos, velocity: gps_vel, orientation: gps_quat}\n")
	if err != nil {
		t.Fatal(err)
	}
	for i := range gps.Summary.Vehicles {
		b, g := body.Summary.Vehicles[i], gps.Summary.Vehicles[i]
		t.Logf("%s: body-steered final %v, antenna-steered final %v", g.Name, b.Final, g.Final)
		// Both runs end at their start, each measured at its own point.
		if d := g.Final.Sub(g.Start); d.Norm() > 0.15 || math.Abs(g.Final.Z) > 0.01 {
			t.Errorf("%s: the antenna ended %.3f m from its start (z %.3f)", g.Name, d.Norm(), g.Final.Z)
		}
		if math.Abs(g.DistanceM-b.DistanceM) > 1 || g.DistanceM < 5 {
			t.Errorf("%s: %.2f m by the antenna, %.2f m by the body", g.Name, g.DistanceM, b.DistanceM)
		}
	}
	if gps.Summary.Vehicles[0].Final == body.Summary.Vehicles[0].Final {
		t.Error("the telemetry sensors changed nothing")
	}
	for tel, want := range map[string]string{
		"      telemetry: {position: nope}\n":       `no sensor "nope" (params.telemetry.position)`,
		"      telemetry: {orientation: gps_pos}\n": `sensor "gps_pos" gives 3 values; params.telemetry.orientation needs 4 (framequat)`,
	} {
		if _, err := run(tel); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "diffbot.xml") {
			t.Errorf("%s: got %v, want %q", strings.TrimSpace(tel), err, want)
		}
	}
}

// diffbotExample returns examples/mujoco's scenario and robot model.
func diffbotExample(t *testing.T) (yaml, xml string) {
	t.Helper()
	y, err := os.ReadFile(filepath.Join("..", "examples", "mujoco", "diffbot.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	x, err := os.ReadFile(filepath.Join("..", "examples", "mujoco", "diffbot.xml"))
	if err != nil {
		t.Fatal(err)
	}
	return string(y), string(x)
}

// buildMJCF writes files (name: content) and the scenario text into a
// fresh directory, and loads and builds the scenario from there.
func buildMJCF(t *testing.T, files map[string]string, text string) (*engine.Run, error) {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	sc, err := scenariofile.Load(path, registry.Schema())
	if err != nil {
		return nil, err
	}
	return engine.Build(sc, engine.Options{Registry: registry})
}
