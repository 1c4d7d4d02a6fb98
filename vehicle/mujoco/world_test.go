package mujoco_test

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"skyloop/geom"
	"skyloop/internal/mjtest"
	"skyloop/sim"
	"skyloop/vehicle"
	. "skyloop/vehicle/mujoco"
)

// rockers returns a built world of rocker robots spawned at the given
// positions (heading +x), and the robots.
func rockers(t testing.TB, obstacles []geom.Box, at ...geom.Vec3) (*World, []*RobotPhysics) {
	t.Helper()
	mjtest.Require(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "rocker.xml"), []byte(mjtest.Rocker), 0o644); err != nil {
		t.Fatal(err)
	}
	p := DefaultRobotParams()
	p.Model, p.Body, p.Left, p.Right = "rocker.xml", "base", "lm", "rm"
	p.WheelRadius, p.Track, p.Telemetry.Position = 0.06, 0.25, "p"
	w := NewWorld(mjtest.Lib(t), p.PhysicsPeriod)
	rs := NewRobots(&p, w, dir)
	var bots []*RobotPhysics
	for i, pos := range at {
		bots = append(bots, rs.New(i, pos, 0))
	}
	if err := w.Build(obstacles); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	return w, bots
}

// wheels returns robot i's open-loop wheel speeds at step k: a weave whose
// size is gain.
func wheels(i, k int, gain float64) vehicle.Actuators {
	tt, ph := float64(k)*0.002, float64(i)
	return vehicle.Actuators{WheelL: 8 + gain*math.Sin(1.3*tt+ph), WheelR: 8 + gain*math.Cos(0.7*tt+2*ph)}
}

// stepAll gives every robot its wheel speeds and steps the world once.
func stepAll(t testing.TB, w *World, bots []*RobotPhysics, k int, gain float64) {
	t.Helper()
	at := sim.Time(k) * sim.Time(w.Period())
	for i, b := range bots {
		a := wheels(i, k, gain)
		b.Step(at, &a, nil)
	}
	if err := w.Step(at); err != nil {
		t.Fatal(err)
	}
}

// TestRobotsApartAreIndependent: a robot's path in a world with 2 or 5
// other robots that never come near it (spawned 1.5 m behind it and each
// other, driven with their own commands, weaves of two sizes; with the
// larger, some of them meet) is bit for bit its path alone. In one MuJoCo model the others' contacts, solved together
// with its own (one line search, one convergence test and one warm-start
// choice for the whole model in MuJoCo 2.2.2), change it from the second
// step (measured on the shared model: by up to 5e-11 m in 10 s with the
// small weave, 1.4 m with the large).
func TestRobotsApartAreIndependent(t *testing.T) {
	const steps = 5000 // 10 s
	shelf := []geom.Box{{Min: geom.V(4, -3, 0), Max: geom.V(5, -2, 1)}}
	for _, gain := range []float64{2, 6} {
		w, alone := rockers(t, shelf, geom.Vec3{})
		var ref []vehicle.Telemetry
		for k := 0; k < steps; k++ {
			stepAll(t, w, alone, k, gain)
			ref = append(ref, alone[0].Telemetry())
		}
		for _, n := range []int{2, 5} {
			at := []geom.Vec3{{}}
			for i := 1; i <= n; i++ {
				at = append(at, geom.V(-1.5*float64(i), 0, 0))
			}
			w, bots := rockers(t, shelf, at...)
			var worst float64
			first := -1
			for k := 0; k < steps; k++ {
				stepAll(t, w, bots, k, gain)
				got := bots[0].Telemetry()
				if g := w.Groups(); len(g[0]) != 1 {
					t.Fatalf("gain %v, %d others, step %d: the leader was put with others: %v", gain, n, k, g)
				}
				if got != ref[k] && first < 0 {
					first = k
				}
				worst = max(worst, got.Pos.Dist(ref[k].Pos))
			}
			t.Logf("gain %v, %d others: leader off its path alone by up to %.3g m (first at step %d); %d merges", gain, n, worst, first, w.Merges())
			if first >= 0 {
				t.Errorf("gain %v, %d others: the leader's telemetry differs from its run alone from step %d, by up to %.3g m", gain, n, first, worst)
			}
		}
	}
}

// TestRobotsNearShareAModel: two robots driven head on are put in one
// model before they touch, push each other instead of passing through,
// and, backing off, get their own models again; a robot passing far away
// meanwhile stays alone.
func TestRobotsNearShareAModel(t *testing.T) {
	w, bots := rockers(t, nil, geom.Vec3{}, geom.V(1.5, 0, 0), geom.V(0, 5, 0))
	// The second robot faces the first: spawned at yaw 0, it drives
	// backwards.
	cmd := func(k int) [3]vehicle.Actuators {
		v := 6.0
		if k >= 2500 {
			v = -6 // back off after 5 s
		}
		return [3]vehicle.Actuators{{WheelL: v, WheelR: v}, {WheelL: -v, WheelR: -v}, {WheelL: 8, WheelR: 8}}
	}
	closest, together, apart := math.Inf(1), -1, -1
	for k := 0; k < 4500; k++ {
		c := cmd(k)
		at := sim.Time(k) * sim.Time(w.Period())
		for i, b := range bots {
			b.Step(at, &c[i], nil)
		}
		if err := w.Step(at); err != nil {
			t.Fatal(err)
		}
		d := bots[0].Pos().Dist(bots[1].Pos())
		closest = min(closest, d)
		g := w.Groups()
		switch {
		case together < 0 && len(g) == 2:
			together = k
			t.Logf("step %d: robots 0 and 1 together (%.3f m apart): %v", k, d, g)
			if d < 0.35 {
				t.Errorf("merged only %.3f m apart: the chassis (0.3 m long) may already touch", d)
			}
		case together >= 0 && apart < 0 && len(g) == 3:
			apart = k
			t.Logf("step %d: apart again (%.3f m): %v", k, d, g)
		}
		for _, grp := range g {
			for _, i := range grp {
				if i == 2 && len(grp) != 1 {
					t.Fatalf("step %d: the far robot was put with others: %v", k, g)
				}
			}
		}
	}
	t.Logf("closest centres %.3f m; %d merges", closest, w.Merges())
	if together < 0 || apart < 0 {
		t.Fatalf("merged at step %d, apart at %d: want both", together, apart)
	}
	if closest < 0.29 {
		t.Errorf("centres %.3f m apart: the 0.3 m chassis passed into each other", closest)
	}
}

// TestMoveKeepsMotion: a robot moved into a model with another robot and
// straight back (no step between) continues exactly as a robot never
// moved: its state and what the last step computed of it are copied
// whole, and binding it again changes nothing it reports.
func TestMoveKeepsMotion(t *testing.T) {
	const gain, steps, at = 4, 1500, 700
	w0, alone := rockers(t, nil, geom.Vec3{})
	w1, bots := rockers(t, nil, geom.Vec3{}, geom.V(0, 20, 0))
	for k := 0; k < steps; k++ {
		stepAll(t, w0, alone, k, gain)
		stepAll(t, w1, bots[:1], k, gain)
		if k == at {
			before := bots[0].Telemetry()
			for _, join := range []bool{true, false} {
				sets := [][]int{{0}, {1}}
				if join {
					sets = [][]int{{0, 1}}
				}
				if err := SetGroups(w1, sets...); err != nil {
					t.Fatal(err)
				}
				if got := len(w1.Groups()); got != map[bool]int{true: 1, false: 2}[join] {
					t.Fatalf("join %v: %d groups", join, got)
				}
				if tel := bots[0].Telemetry(); tel != before {
					t.Fatalf("join %v: telemetry %+v, was %+v", join, tel, before)
				}
			}
		}
		if a, b := alone[0].Telemetry(), bots[0].Telemetry(); a != b {
			t.Fatalf("step %d: moved %+v, never moved %+v", k, b, a)
		}
	}
	if w1.Merges() != 1 {
		t.Errorf("%d merges, want 1", w1.Merges())
	}
}

// TestTooManyContactsIsAnError: 40 robots side by side, in one model
// since they are near each other, need more contacts than MuJoCo's model
// holds (nconmax 100); MuJoCo would drop the rest and let robots fall
// through the floor, so the step fails instead, naming the limit.
func TestTooManyContactsIsAnError(t *testing.T) {
	// MuJoCo writes its warning to MUJOCO_LOG.TXT in the working directory.
	t.Chdir(t.TempDir())
	var at []geom.Vec3
	for i := 0; i < 40; i++ {
		at = append(at, geom.V(float64(i%8)*0.35, float64(i/8)*0.3, 0))
	}
	w, bots := rockers(t, nil, at...)
	if g := w.Groups(); len(g) != 1 {
		t.Fatalf("groups %v, want one", g)
	}
	var err error
	for k := 0; k < 10 && err == nil; k++ {
		for _, b := range bots {
			b.Step(0, &vehicle.Actuators{}, nil)
		}
		err = w.Step(sim.Time(k) * sim.Time(w.Period()))
	}
	t.Log(err)
	if err == nil || !strings.Contains(err.Error(), "more than the 100 contacts") {
		t.Fatalf("error %v, want one about the contact limit", err)
	}
}
