package pointmass

import (
	"math"
	physics "skyloop/vehicle/pointmass"
	"testing"

	"skyloop/geom"
	"skyloop/sim"
	"skyloop/vehicle"
)

// fly steps v for d of simulated time at its own periods and returns the
// samples of its telemetry after each physics step.
func fly(v *Vehicle, from sim.Time, d sim.Duration, ev *vehicle.Events) []vehicle.Telemetry {
	var out []vehicle.Telemetry
	tm := v.Timing()
	for t := from; t < from.Add(d); t = t.Add(tm.Physics) {
		if int64(t)%int64(tm.Control) == 0 {
			v.Control(t, ev)
		}
		v.Step(t, ev)
		out = append(out, v.Telemetry())
	}
	return out
}

func TestGotoArrivesWithDeceleration(t *testing.T) {
	p := physics.DefaultParams()
	v := New(&p, geom.V(0, 0, 10), 0)
	var ev vehicle.Events
	v.Command(vehicle.Command{Kind: vehicle.CmdGoto, Pos: geom.V(20, 0, 10), Yaw: math.NaN()})
	tr := fly(v, 0, 15*sim.Second, &ev)
	final := tr[len(tr)-1]
	if d := final.Pos.Dist(geom.V(20, 0, 10)); d > 0.3 {
		t.Fatalf("ended %.3f m from the target", d)
	}
	peak, peakAt := 0.0, 0
	for i, s := range tr {
		if sp := s.Speed(); sp > peak {
			peak, peakAt = sp, i
		}
		if s.Pos.X > 20.3 {
			t.Fatalf("overshot to x=%.3f", s.Pos.X)
		}
	}
	if peak > p.MaxSpeed+1e-9 || peak < 0.9*p.MaxSpeed {
		t.Fatalf("peak speed %.3f, limit %.1f", peak, p.MaxSpeed)
	}
	// Deceleration: after the peak the speed falls monotonically to ~0, at
	// no more than the acceleration limit.
	for i := peakAt + 1; i < len(tr); i++ {
		dv := tr[i-1].Speed() - tr[i].Speed()
		if dv < -1e-9 {
			t.Fatalf("speed rose again after the peak at step %d", i)
		}
		if dv > p.MaxAccel*p.PhysicsPeriod.Seconds()+1e-9 {
			t.Fatalf("braked at %.2f m/s^2, limit %.1f", dv/p.PhysicsPeriod.Seconds(), p.MaxAccel)
		}
	}
	found := false
	for _, e := range ev.List {
		found = found || e.Name == "arrived"
	}
	if !found {
		t.Fatalf("no arrived event in %v", ev.List)
	}
}

func TestTakeoffHoldLand(t *testing.T) {
	p := physics.DefaultParams()
	v := New(&p, geom.V(1, 2, 0), 0)
	if tel := v.Telemetry(); !tel.Landed || tel.Mode != vehicle.ModeIdle {
		t.Fatalf("spawned on the ground: %+v", tel)
	}
	var ev vehicle.Events
	v.Command(vehicle.Command{Kind: vehicle.CmdTakeoff, Alt: 5})
	tr := fly(v, 0, 10*sim.Second, &ev)
	if tel := tr[len(tr)-1]; math.Abs(tel.Pos.Z-5) > 0.05 || tel.Mode != vehicle.ModeHold {
		t.Fatalf("after takeoff: %+v", tel)
	}
	for _, s := range tr {
		if s.Vel.Z > p.MaxClimb+1e-9 {
			t.Fatalf("climbed at %.2f m/s", s.Vel.Z)
		}
	}
	v.Command(vehicle.Command{Kind: vehicle.CmdLand})
	tr = fly(v, 10*sim.Time(sim.Second), 10*sim.Second, &ev)
	tel := tr[len(tr)-1]
	if tel.Pos.Z != 0 || tel.Mode != vehicle.ModeDisarmed || tel.Armed {
		t.Fatalf("after landing: %+v", tel)
	}
	if tel.Pos.X != 1 || tel.Pos.Y != 2 {
		t.Fatalf("drifted while landing: %+v", tel.Pos)
	}
}

func TestVelocityRespectsAccelLimit(t *testing.T) {
	p := physics.DefaultParams()
	v := New(&p, geom.V(0, 0, 10), 0)
	var ev vehicle.Events
	v.Command(vehicle.Command{Kind: vehicle.CmdVelocity, Vel: geom.V(0, 3, 0)})
	tr := fly(v, 0, 3*sim.Second, &ev)
	// 3 m/s at 3 m/s^2 takes 1 s; after 0.5 s the speed is 1.5 m/s.
	if sp := tr[499].Speed(); math.Abs(sp-1.5) > 0.01 {
		t.Fatalf("speed after 0.5 s: %.3f", sp)
	}
	if sp := tr[len(tr)-1].Vel.Y; math.Abs(sp-3) > 1e-9 {
		t.Fatalf("final speed %.3f", sp)
	}
}

func TestStepDoesNotAllocate(t *testing.T) {
	p := physics.DefaultParams()
	v := New(&p, geom.V(0, 0, 10), 0)
	var ev vehicle.Events
	v.Command(vehicle.Command{Kind: vehicle.CmdGoto, Pos: geom.V(100, 50, 20)})
	v.Control(0, &ev)
	ev.List = make([]vehicle.Event, 0, 8)
	var tel vehicle.Telemetry
	if n := testing.AllocsPerRun(1000, func() {
		v.Control(0, &ev)
		v.Step(0, &ev)
		ev.List = ev.List[:0]
		tel = v.Telemetry()
		tel = v.Estimate()
	}); n != 0 || tel.Mode != vehicle.ModeGoto {
		t.Fatalf("%v allocations per step", n)
	}
}

func BenchmarkStep(b *testing.B) {
	p := physics.DefaultParams()
	v := New(&p, geom.V(0, 0, 10), 0)
	var ev vehicle.Events
	v.Command(vehicle.Command{Kind: vehicle.CmdGoto, Pos: geom.V(1e6, 50, 20)})
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if i%10 == 0 {
			v.Control(0, &ev)
		}
		v.Step(0, &ev)
	}
}
