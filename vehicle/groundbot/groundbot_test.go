package groundbot

import (
	"math"
	"strings"
	"testing"

	"skyloop/fields"
	"skyloop/geom"
	"skyloop/sim"
	"skyloop/vehicle"
)

func run(v *Vehicle, from sim.Time, d sim.Duration, ev *vehicle.Events) sim.Time {
	tm := v.Timing()
	t := from
	for ; t < from.Add(d); t = t.Add(tm.Physics) {
		v.Control(t, ev)
		v.Step(t, ev)
	}
	return t
}

func TestDriveStraightAndTurn(t *testing.T) {
	p := DefaultParams()
	v := New(&p, geom.V(0, 0, 0), 0)
	var ev vehicle.Events
	v.Command(vehicle.Command{Kind: vehicle.CmdDrive, V: 0.5})
	now := run(v, 0, 2*sim.Second, &ev)
	tel := v.Telemetry()
	if math.Abs(tel.Vel.X-0.5) > 1e-3 || math.Abs(tel.Pos.Y) > 1e-9 {
		t.Fatalf("straight: %+v", tel)
	}
	// Motor lag: the robot covers less than 0.5 m/s * 2 s.
	if tel.Pos.X >= 1.0 || tel.Pos.X < 0.85 {
		t.Fatalf("distance after 2 s: %.3f", tel.Pos.X)
	}
	// A full circle at 0.5 m/s and 0.5 rad/s has radius 1 m and brings the
	// robot back to where it started turning.
	start := tel.Pos
	v.Command(vehicle.Command{Kind: vehicle.CmdDrive, V: 0.5, Omega: 0.5})
	run(v, now, sim.Seconds(2*math.Pi/0.5)+200*sim.Millisecond, &ev)
	tel = v.Telemetry()
	if math.Abs(tel.YawRate-0.5) > 1e-3 {
		t.Fatalf("turn rate %.4f", tel.YawRate)
	}
	if d := tel.Pos.Dist(start); d > 0.15 {
		t.Fatalf("circle did not close: %.3f m off", d)
	}
}

func TestWheelSaturationKeepsCurvature(t *testing.T) {
	p := DefaultParams()
	v := New(&p, geom.V(0, 0, 0), 0)
	c := v.Ctrl
	c.setWheels(5, 5) // far beyond the wheels' limit
	if math.Max(math.Abs(c.wlCmd), math.Abs(c.wrCmd)) > p.MaxWheelSpeed+1e-9 {
		t.Fatalf("wheel command above the limit: %v %v", c.wlCmd, c.wrCmd)
	}
	vv := p.WheelRadius * (c.wrCmd + c.wlCmd) / 2
	w := p.WheelRadius * (c.wrCmd - c.wlCmd) / p.Track
	if math.Abs(w/vv-1) > 1e-9 {
		t.Fatalf("curvature changed: v=%v w=%v", vv, w)
	}
}

func TestGotoArrives(t *testing.T) {
	p := DefaultParams()
	v := New(&p, geom.V(0, 0, 0), math.Pi/2) // facing north, target east
	var ev vehicle.Events
	v.Command(vehicle.Command{Kind: vehicle.CmdGoto, Pos: geom.V(3, -1, 0)})
	run(v, 0, 20*sim.Second, &ev)
	if d := v.Telemetry().Pos.Dist(geom.V(3, -1, 0)); d > p.AcceptRadius {
		t.Fatalf("ended %.3f m away", d)
	}
	if v.Telemetry().Speed() > 0.05 {
		t.Fatalf("still moving at %.3f m/s", v.Telemetry().Speed())
	}
}

func BenchmarkStep(b *testing.B) {
	p := DefaultParams()
	v := New(&p, geom.V(0, 0, 0), 0)
	var ev vehicle.Events
	v.Command(vehicle.Command{Kind: vehicle.CmdDrive, V: 0.5, Omega: 0.1})
	b.ReportAllocs()
	for b.Loop() {
		v.Control(0, &ev)
		v.Step(0, &ev)
	}
}

// TestPresets: both presets are valid and named as Presets lists them;
// the netbots preset's MuJoCo keys are checked with the key and the value
// in the message.
func TestPresets(t *testing.T) {
	for _, name := range Presets() {
		p, ok := Preset(name)
		if !ok || p.Preset != name {
			t.Fatalf("Preset(%q) = %q, %v", name, p.Preset, ok)
		}
		if name == PresetNetbots {
			continue // validating MuJoCo params loads the library
		}
		if bad := p.Validate(); len(bad) > 0 {
			t.Errorf("%s: %v", name, bad)
		}
	}
	if _, ok := Preset("turtle"); ok {
		t.Error("Preset(turtle) exists")
	}
	p := NetbotsParams()
	bad := fields.Errors{}
	p.validateMuJoCo(bad)
	delete(bad, "physics") // without the library
	if len(bad) > 0 {
		t.Errorf("netbots: %v", bad)
	}
	p.MuJoCo.Drive, p.MuJoCo.WheelShape, p.MuJoCo.CasterGap, p.MuJoCo.WheelArmature = "servo", "cube", 0.06, -1
	bad = fields.Errors{}
	p.validateMuJoCo(bad)
	for k, want := range map[string]string{"mujoco.drive": `pi or velocity, got "servo"`, "mujoco.wheel_shape": `sphere or cylinder, got "cube"`,
		"mujoco.caster_gap": "0.06 m leaves the casters above the axle", "mujoco.wheel_armature": "must be >= 0, got -1"} {
		if !strings.Contains(bad[k], want) {
			t.Errorf("%s: %q, want %q", k, bad[k], want)
		}
	}
	p = NetbotsParams()
	p.MuJoCo.WheelKv, p.MuJoCo.WheelWidth = 0, math.NaN()
	bad = fields.Errors{}
	p.validateMuJoCo(bad)
	if !strings.Contains(bad["mujoco.wheel_kv"], "positive") || !strings.Contains(bad["mujoco.wheel_width"], "positive") {
		t.Errorf("kv 0, width NaN: %v", bad)
	}
}
