package groundbot

import (
	"math"
	"testing"

	"skyloop/geom"
	"skyloop/sim"
	"skyloop/vehicle"
	physics "skyloop/vehicle/groundbot"
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
	p := physics.DefaultParams()
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

func TestGotoArrives(t *testing.T) {
	p := physics.DefaultParams()
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
	p := physics.DefaultParams()
	v := New(&p, geom.V(0, 0, 0), 0)
	var ev vehicle.Events
	v.Command(vehicle.Command{Kind: vehicle.CmdDrive, V: 0.5, Omega: 0.1})
	b.ReportAllocs()
	for b.Loop() {
		v.Control(0, &ev)
		v.Step(0, &ev)
	}
}
