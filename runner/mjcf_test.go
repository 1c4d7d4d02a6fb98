package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"skyloop/engine"
	"skyloop/internal/mjtest"
	"skyloop/scenario"
)

// TestMJCFRobotsDriveTheSquare runs the MJCF example (two robots of
// examples/mujoco/diffbot.xml in one MuJoCo world with a shelf): both
// finish the square and come back to where they started, on the floor.
func TestMJCFRobotsDriveTheSquare(t *testing.T) {
	mjtest.Require(t)
	sc, err := scenario.Load(filepath.Join("..", "examples", "mujoco", "diffbot.yaml"))
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
	src, err := os.ReadFile(filepath.Join("..", "examples", "mujoco", "diffbot.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	xml, err := os.ReadFile(filepath.Join("..", "examples", "mujoco", "diffbot.xml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ from, to, file, content, want string }{
		{"model: diffbot.xml", "model: nothere.xml", "", "", "nothere.xml"},
		{"body: base", "body: chassis", "", "", `no body "chassis" (params.body)`},
		{"right: right_motor", "right: rmotor", "", "", `no actuators "left_motor" and "rmotor"`},
		{"model: diffbot.xml", "model: bad.xml", "bad.xml", "<robot/>", "the root element is <robot>, want <mujoco>"},
		{"body: base", "", "", "", "body: missing"},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "diffbot.xml"), xml, 0o644); err != nil {
			t.Fatal(err)
		}
		if c.file != "" {
			if err := os.WriteFile(filepath.Join(dir, c.file), []byte(c.content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		path := filepath.Join(dir, "s.yaml")
		if err := os.WriteFile(path, []byte(strings.Replace(string(src), c.from, c.to, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		sc, err := scenario.Load(path)
		if err == nil {
			var r *engine.Run
			r, err = engine.Build(sc, engine.Options{Registry: registry})
			if err == nil {
				r.Close()
			}
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s -> %q: got %v, want %q", c.from, c.to, err, c.want)
		}
	}
}
