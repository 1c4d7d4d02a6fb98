package behavior

import (
	"math"
	"strings"
	"testing"

	"skyloop/agent"
	"skyloop/geom"
)

// TestFormationSlots: every shape puts neighbouring slots spacing apart
// (line, column and echelon follower k-1 to k; vee along each arm and
// the first of each arm from the leader), in the world frame turned by
// heading.
func TestFormationSlots(t *testing.T) {
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	for _, shape := range []string{"line", "column", "echelon", "vee"} {
		for _, heading := range []float64{0, 90, 33} {
			g := FormationGeometry{Shape: shape, Spacing: 10, Heading: heading}
			if bad := g.Validate(); len(bad) > 0 {
				t.Fatalf("%s: %v", shape, bad)
			}
			s, err := g.Slots(5)
			if err != nil || len(s) != 5 || s[0] != (geom.Vec3{}) {
				t.Fatalf("%s: %v %v", shape, s, err)
			}
			step := 1
			if shape == "vee" {
				step = 2
			}
			for k := 1; k < 5; k++ {
				prev := max(k-step, 0)
				if d := s[k].Dist(s[prev]); !near(d, 10) {
					t.Errorf("%s heading %v: slot %d is %.6f m from slot %d", shape, heading, k, d, prev)
				}
				if s[k].Z != 0 {
					t.Errorf("%s: slot %d off the leader's altitude", shape, k)
				}
			}
		}
	}
	// Heading 0 (forward east): the line runs south (to the right), the
	// column west (behind).
	g := FormationGeometry{Shape: "line", Spacing: 10}
	if s, _ := g.Slots(3); s[2].Dist(geom.V(0, -20, 0)) > 1e-9 {
		t.Errorf("line: %v", s)
	}
	g.Shape = "column"
	if s, _ := g.Slots(3); s[2].Dist(geom.V(-20, 0, 0)) > 1e-9 {
		t.Errorf("column: %v", s)
	}
	// Explicit offsets replace the shape and must cover every follower.
	g = FormationGeometry{Spacing: 1, Offsets: []geom.Vec3{{X: 1, Y: 2, Z: 3}}}
	if bad := g.Validate(); len(bad) > 0 {
		t.Fatal(bad)
	}
	if s, err := g.Slots(2); err != nil || s[1] != geom.V(1, 2, 3) {
		t.Errorf("offsets: %v %v", s, err)
	}
	if _, err := g.Slots(3); err == nil {
		t.Error("1 offset accepted for 2 followers")
	}
	if bad := (&FormationGeometry{Shape: "blob", Spacing: 1}).Validate(); bad["shape"] == "" {
		t.Error("unknown shape accepted")
	}
}

// TestFormationLaw: in its slot, the follower flies the believed velocity;
// an old belief is moved on by its velocity times its age; the command is
// capped.
func TestFormationLaw(t *testing.T) {
	rel := geom.V(0, -10, 2)
	vel := geom.V(3, 0, 0)
	if v := FormationLaw(geom.V(0, -10, 12), geom.V(0, 0, 10), vel, 0, rel, 2, 8); v != vel {
		t.Errorf("in the slot: %v", v)
	}
	// 0.5 s old: the leader is 1.5 m further east by now.
	if v := FormationLaw(geom.V(1.5, -10, 12), geom.V(0, 0, 10), vel, 0.5, rel, 2, 8); v.Dist(vel) > 1e-12 {
		t.Errorf("extrapolated: %v", v)
	}
	// 1 m behind the slot: 2/s * 1 m more.
	if v := FormationLaw(geom.V(-1, -10, 12), geom.V(0, 0, 10), vel, 0, rel, 2, 8); v.Dist(geom.V(5, 0, 0)) > 1e-12 {
		t.Errorf("behind: %v", v)
	}
	if v := FormationLaw(geom.V(-100, -10, 12), geom.V(0, 0, 10), vel, 0, rel, 2, 8); math.Abs(v.Norm()-8) > 1e-12 {
		t.Errorf("not capped: %v", v)
	}
}

// TestBeaconSize: a size pads the update with zeros; size must be 0 or at
// least the format's.
func TestBeaconSize(t *testing.T) {
	p := beaconSpec.Params().(*BeaconParams)
	p.Size = 74
	if bad := p.Validate(); len(bad) > 0 {
		t.Fatal(bad)
	}
	b := &Beacon{p: p}
	if b.size() != 74 {
		t.Errorf("size %d", b.size())
	}
	p.Size = 60
	if bad := p.Validate(); bad["size"] == "" {
		t.Error("a 60-byte 3D update accepted")
	}
	p.Format, p.Size = Planar, 60
	if bad := p.Validate(); len(bad) > 0 {
		t.Errorf("a 60-byte planar update refused: %v", bad)
	}
}

// TestTowLaw: at the tow length the follower flies the tracked vehicle's
// velocity along the line between them and ignores the rest (a leader
// turning away does not drag it sideways); off it, gain times the error
// along that line; the command is capped.
func TestTowLaw(t *testing.T) {
	ref, pos := geom.V(10, 0, 10), geom.V(0, 0, 10)
	if v := TowLaw(pos, ref, geom.V(3, 0, 0), 10, 1, 8); v.Dist(geom.V(3, 0, 0)) > 1e-12 {
		t.Errorf("in line: %v", v)
	}
	if v := TowLaw(pos, ref, geom.V(0, 3, 0), 10, 1, 8); v.Norm() > 1e-12 {
		t.Errorf("the leader turned north: the follower must not move sideways yet, got %v", v)
	}
	if v := TowLaw(geom.V(-2, 0, 10), ref, geom.V(0, 3, 0), 10, 1, 8); v.Dist(geom.V(2, 0, 0)) > 1e-12 {
		t.Errorf("2 m too far: %v", v)
	}
	if v := TowLaw(geom.V(5, 0, 10), ref, geom.V(0, 0, 0), 10, 1, 8); v.Dist(geom.V(-5, 0, 0)) > 1e-12 {
		t.Errorf("5 m too close: %v", v)
	}
	if v := TowLaw(geom.V(-100, 0, 10), ref, geom.V(3, 0, 0), 10, 1, 8); math.Abs(v.Norm()-8) > 1e-12 {
		t.Errorf("not capped: %v", v)
	}
	if v := TowLaw(ref, ref, geom.V(3, 0, 0), 10, 1, 8); v != (geom.Vec3{}) {
		t.Errorf("on top of the tracked vehicle: %v", v)
	}
}

// TestHeadingFrame: an offset in the heading frame turns with the tracked
// vehicle's course; the course comes from the believed velocity, is held
// below heading_speed, and is the believed yaw until the vehicle first
// moves.
func TestHeadingFrame(t *testing.T) {
	behind := geom.V(-10, 0, 0)
	if o := TurnXY(behind, math.Pi/2); o.Dist(geom.V(0, -10, 0)) > 1e-12 {
		t.Errorf("10 m behind a vehicle flying north: %v", o)
	}
	p := formationSpec.Params().(*FormationParams)
	f := &Formation{p: p}
	f.follow(&agent.State{Yaw: 0.3, Vel: geom.V(0.1, 0.1, 0)})
	if f.course != 0.3 || f.courseSet {
		t.Errorf("hovering, never moved: course %v, want the yaw 0.3", f.course)
	}
	f.follow(&agent.State{Yaw: 0.3, Vel: geom.V(0, 3, 0)})
	if math.Abs(f.course-math.Pi/2) > 1e-12 {
		t.Errorf("flying north: course %v", f.course)
	}
	f.follow(&agent.State{Yaw: 0.3, Vel: geom.V(0.3, -0.2, 0)})
	if math.Abs(f.course-math.Pi/2) > 1e-12 {
		t.Errorf("stopped (0.36 m/s < 0.5 m/s): course %v, want the last one held", f.course)
	}
}

// TestFormationFrameValidate: the new keys are checked, with errors naming
// the key and the value.
func TestFormationFrameValidate(t *testing.T) {
	for _, c := range []struct {
		set  func(*FormationParams)
		key  string
		want string
	}{
		{func(p *FormationParams) { p.Frame = "body" }, "frame", `got "body"`},
		{func(p *FormationParams) { p.Frame = FrameTow }, "frame", `follow: "leader"`},
		{func(p *FormationParams) { p.HeadingSpeed = 0 }, "heading_speed", "got 0"},
		{func(p *FormationParams) { p.HeadingSpeed = math.NaN() }, "heading_speed", "got NaN"},
		{func(p *FormationParams) { p.Ramp = -1 }, "ramp", ""},
	} {
		p := formationSpec.Params().(*FormationParams)
		p.Waypoints = []geom.Vec3{{X: 1, Y: 0, Z: 10}}
		if bad := p.Validate(); len(bad) > 0 {
			t.Fatalf("defaults: %v", bad)
		}
		c.set(p)
		bad := p.Validate()
		if msg, ok := bad[c.key]; !ok || !strings.Contains(msg, c.want) {
			t.Errorf("%s: got %v, want a %q error containing %q", c.key, bad, c.key, c.want)
		}
	}
	p := formationSpec.Params().(*FormationParams)
	p.Waypoints = []geom.Vec3{{X: 1, Y: 0, Z: 10}}
	p.Frame, p.Follow = FrameTow, "predecessor"
	if bad := p.Validate(); len(bad) > 0 {
		t.Errorf("a tow chain: %v", bad)
	}
}
