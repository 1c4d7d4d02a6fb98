package multirotor

import (
	"math"
	"strings"
	"testing"

	"skyloop/geom"
	"skyloop/sim"
	"skyloop/vehicle"
	physics "skyloop/vehicle/multirotor"
)

// rig flies one multirotor at 1 kHz and records the true state.
type rig struct {
	v   *Multirotor
	t   sim.Time
	ev  vehicle.Events
	log []vehicle.Telemetry
}

func newRig(t testing.TB, preset string, pos geom.Vec3, tweak func(*Config)) *rig {
	t.Helper()
	c, ok := PresetConfig(preset)
	if !ok {
		t.Fatalf("no preset %s", preset)
	}
	cfg := &c
	if tweak != nil {
		tweak(cfg)
	}
	if bad := cfg.Validate(); len(bad) > 0 {
		t.Fatalf("invalid config: %v", bad)
	}
	sh := NewShared(cfg)
	return &rig{v: New(sh, pos, 0, sim.Stream(1, "turbulence", 0), sim.Stream(1, "sensors", 0))}
}

func (r *rig) fly(d sim.Duration) {
	for end := r.t.Add(d); r.t < end; r.t = r.t.Add(sim.Millisecond) {
		r.v.Control(r.t, &r.ev)
		r.v.Step(r.t, &r.ev)
		r.log = append(r.log, r.v.Telemetry())
	}
}

func (r *rig) cmd(c vehicle.Command) { r.v.Command(c) }

func (r *rig) events(name string) []vehicle.Event {
	var out []vehicle.Event
	for _, e := range r.ev.List {
		if e.Name == name {
			out = append(out, e)
		}
	}
	return out
}

func TestHoverThrustBalancesWeight(t *testing.T) {
	for _, preset := range []string{"iris", "crazyflie"} {
		r := newRig(t, preset, geom.V(0, 0, 10), nil)
		r.fly(4 * sim.Second)
		var sum float64
		for i := 0; i < 1000; i++ {
			r.fly(sim.Millisecond)
			sum += r.v.Phys.S.Thrust
		}
		p := r.v.Phys.Model().P
		weight := p.Mass * physics.Gravity
		if th := sum / 1000; math.Abs(th-weight)/weight > 0.01 {
			t.Errorf("%s: mean hover thrust %.4f N, weight %.4f N", preset, th, weight)
		}
		if d := r.v.Phys.S.Pos.Dist(geom.V(0, 0, 10)); d > 0.1 {
			t.Errorf("%s: drifted %.3f m while hovering", preset, d)
		}
	}
}

func TestTakeoffTo5m(t *testing.T) {
	for _, preset := range []string{"iris", "crazyflie"} {
		r := newRig(t, preset, geom.V(0, 0, 0), nil)
		r.fly(sim.Second)
		r.cmd(vehicle.Command{Kind: vehicle.CmdTakeoff, Alt: 5})
		r.fly(15 * sim.Second)
		maxZ := 0.0
		settle := -1.0
		for i, s := range r.log {
			maxZ = math.Max(maxZ, s.Pos.Z)
			if math.Abs(s.Pos.Z-5) > 0.2 {
				settle = -1
			} else if settle < 0 {
				settle = float64(i)/1000 - 1 // seconds after the command
			}
		}
		final := r.log[len(r.log)-1].Pos.Z
		t.Logf("%s: final %.3f m, peak %.3f m, settled (within 0.2 m for good) %.2f s after the command", preset, final, maxZ, settle)
		if settle < 0 || settle > 5 {
			t.Errorf("%s: settled after %.2f s, want within 5 s", preset, settle)
		}
		if math.Abs(final-5) > 0.2 {
			t.Errorf("%s: final altitude %.3f", preset, final)
		}
		if maxZ > 5.5 {
			t.Errorf("%s: overshoot to %.3f m (more than 10%%)", preset, maxZ)
		}
	}
}

func TestGoto20m(t *testing.T) {
	for _, preset := range []string{"iris", "crazyflie"} {
		r := newRig(t, preset, geom.V(0, 0, 10), nil)
		r.fly(sim.Second)
		start := len(r.log)
		r.cmd(vehicle.Command{Kind: vehicle.CmdGoto, Pos: geom.V(20, 0, 10), Yaw: math.NaN()})
		r.fly(20 * sim.Second)
		tr := r.log[start:]
		peak, peakAt := 0.0, 0
		for i, s := range tr {
			if sp := s.Vel.NormXY(); sp > peak {
				peak, peakAt = sp, i
			}
		}
		final := tr[len(tr)-1]
		limit := r.v.Params().XYCruise
		t.Logf("%s: final error %.3f m, peak speed %.2f m/s at %.1f s, max x %.3f", preset, final.Pos.Dist(geom.V(20, 0, 10)), peak, float64(peakAt)/1000, maxX(tr))
		if d := final.Pos.Dist(geom.V(20, 0, 10)); d > 0.3 {
			t.Errorf("%s: arrived %.3f m from the target", preset, d)
		}
		if peak > limit*1.05 {
			t.Errorf("%s: peak speed %.2f above the %.1f m/s limit", preset, peak, limit)
		}
		// Visible deceleration: a metre before the target the vehicle is
		// below 60% of its peak speed.
		for _, s := range tr {
			if s.Pos.X > 19 {
				if sp := s.Vel.NormXY(); sp > 0.6*peak {
					t.Errorf("%s: %.2f m/s a metre before the target (peak %.2f)", preset, sp, peak)
				}
				break
			}
		}
		if maxX(tr) > 21 {
			t.Errorf("%s: overshot to x=%.2f", preset, maxX(tr))
		}
		if len(r.events("arrived")) != 1 {
			t.Errorf("%s: arrived events %v", preset, r.events("arrived"))
		}
	}
}

func maxX(tr []vehicle.Telemetry) float64 {
	m := math.Inf(-1)
	for _, s := range tr {
		m = math.Max(m, s.Pos.X)
	}
	return m
}

func TestHoldInWind(t *testing.T) {
	r := newRig(t, "iris", geom.V(0, 0, 10), func(c *Config) { c.Wind = geom.V(5, 0, 0) })
	r.fly(10 * sim.Second) // settle
	worst := 0.0
	start := len(r.log)
	r.fly(20 * sim.Second)
	for _, s := range r.log[start:] {
		worst = math.Max(worst, s.Pos.Dist(geom.V(0, 0, 10)))
	}
	_, pitch, _ := r.v.Phys.S.Att.Euler()
	t.Logf("5 m/s wind: worst deviation %.3f m after settling, roll %.3f rad, pitch %.3f rad", worst, r.log[len(r.log)-1].Roll, pitch)
	if worst > 0.5 {
		t.Errorf("held within %.3f m, want 0.5 m", worst)
	}
}

func TestLandDisarms(t *testing.T) {
	for _, preset := range []string{"iris", "crazyflie"} {
		r := newRig(t, preset, geom.V(3, 4, 6), nil)
		r.fly(sim.Second)
		r.cmd(vehicle.Command{Kind: vehicle.CmdLand})
		r.fly(20 * sim.Second)
		s := r.log[len(r.log)-1]
		if !s.Landed || s.Armed || s.Mode != vehicle.ModeDisarmed {
			t.Fatalf("%s: after landing %+v", preset, s)
		}
		if d := s.Pos.Sub(geom.V(3, 4, 0)).NormXY(); d > 0.3 {
			t.Errorf("%s: landed %.2f m off", preset, d)
		}
		if len(r.events("touchdown")) != 1 || len(r.events("disarm")) != 1 {
			t.Errorf("%s: events %v", preset, r.ev.List)
		}
	}
}

// TestFailsafeOnLinkLoss: a vehicle that has heard the ground station holds
// when the heartbeats stop, then lands after the failsafe delay.
func TestFailsafeOnLinkLoss(t *testing.T) {
	r := newRig(t, "iris", geom.V(0, 0, 10), nil)
	r.cmd(vehicle.Command{Kind: vehicle.CmdHeartbeat})
	r.cmd(vehicle.Command{Kind: vehicle.CmdGoto, Pos: geom.V(30, 0, 10), Yaw: math.NaN()})
	for i := 0; i < 20; i++ { // 2 s of heartbeats at 10 Hz
		r.fly(100 * sim.Millisecond)
		r.cmd(vehicle.Command{Kind: vehicle.CmdHeartbeat})
	}
	lostAt := r.t
	r.fly(30 * sim.Second)
	fs := r.events("failsafe")
	if len(fs) != 2 {
		t.Fatalf("failsafe events %v", fs)
	}
	if d := fs[0].T.Sub(lostAt); d < sim.Second-100*sim.Millisecond || d > sim.Second+200*sim.Millisecond {
		t.Errorf("hold %v after the last heartbeat, want about 1 s", d)
	}
	if d := fs[1].T.Sub(fs[0].T); d < 5*sim.Second || d > 5*sim.Second+100*sim.Millisecond {
		t.Errorf("land %v after the hold, want 5 s", d)
	}
	// It held (stopped short of the goto target) and then landed.
	s := r.log[len(r.log)-1]
	if s.Pos.X > 25 || !s.Landed || s.Armed {
		t.Errorf("after the failsafe: %+v", s)
	}
	modes := ""
	for _, e := range r.events("mode") {
		modes += e.Detail + " "
	}
	if want := "hold->goto goto->hold hold->land land->idle idle->disarmed "; modes != want {
		t.Errorf("mode changes %q, want %q", modes, want)
	}
}

// TestEnergyAndHoverPower: energy never decreases, and hover power lies in
// a plausible band for each preset: Iris 120-250 W (3DR Iris+ flies 16-22
// min on a 3S 5100 mAh pack), Crazyflie 4-10 W (about 7 min on 250 mAh 1S).
func TestEnergyAndHoverPower(t *testing.T) {
	for _, c := range []struct {
		preset string
		lo, hi float64
	}{{"iris", 120, 250}, {"crazyflie", 4, 10}} {
		r := newRig(t, c.preset, geom.V(0, 0, 0), nil)
		r.cmd(vehicle.Command{Kind: vehicle.CmdTakeoff, Alt: 3})
		r.fly(15 * sim.Second)
		prev := 0.0
		for i, s := range r.log {
			if s.Energy < prev {
				t.Fatalf("%s: energy fell at step %d", c.preset, i)
			}
			prev = s.Energy
		}
		p := r.v.Phys.S.Power
		t.Logf("%s: hover power %.1f W, %.2f V, %.2f A, energy %.0f J", c.preset, p, r.v.Phys.S.Voltage, r.v.Phys.S.Current, prev)
		if p < c.lo || p > c.hi {
			t.Errorf("%s: hover power %.1f W outside %v-%v W", c.preset, p, c.lo, c.hi)
		}
	}
}

func TestControlStepDoesNotAllocate(t *testing.T) {
	r := newRig(t, "iris", geom.V(0, 0, 10), nil)
	r.fly(sim.Second)
	r.ev.List = make([]vehicle.Event, 0, 16)
	var sink vehicle.Telemetry
	n := testing.AllocsPerRun(2000, func() {
		r.v.Control(r.t, &r.ev)
		r.v.Step(r.t, &r.ev)
		r.t = r.t.Add(sim.Millisecond)
		sink = r.v.Telemetry()
		sink = r.v.Estimate()
	})
	if n != 0 {
		t.Fatalf("%v allocations per step (telemetry and estimate included)", n)
	}
	_ = sink
}

func BenchmarkStep(b *testing.B) {
	r := newRig(b, "iris", geom.V(0, 0, 10), func(c *Config) { c.TurbSigma = 1 })
	r.cmd(vehicle.Command{Kind: vehicle.CmdGoto, Pos: geom.V(1e4, 0, 10)})
	b.ReportAllocs()
	for b.Loop() {
		r.v.Control(r.t, &r.ev)
		r.v.Step(r.t, &r.ev)
		r.t = r.t.Add(sim.Millisecond)
		r.ev.List = r.ev.List[:0]
	}
}

func TestReturnToLaunch(t *testing.T) {
	r := newRig(t, "iris", geom.V(0, 0, 0), nil)
	r.cmd(vehicle.Command{Kind: vehicle.CmdGoto, Pos: geom.V(30, 10, 6), Yaw: math.NaN()})
	r.fly(15 * sim.Second)
	r.cmd(vehicle.Command{Kind: vehicle.CmdRTL})
	r.fly(40 * sim.Second)
	s := r.log[len(r.log)-1]
	maxZ := 0.0
	for _, l := range r.log[15000:] {
		maxZ = math.Max(maxZ, l.Pos.Z)
	}
	if d := s.Pos.NormXY(); d > 0.5 || !s.Landed || s.Armed {
		t.Fatalf("after RTL: %.2f m from home, %+v", d, s)
	}
	if maxZ < 9.5 {
		t.Errorf("did not climb to the return altitude (max %.2f m)", maxZ)
	}
}

// TestOffboardLoss: velocity setpoints that stop arriving make the vehicle
// hold after the failsafe timeout.
func TestOffboardLoss(t *testing.T) {
	r := newRig(t, "iris", geom.V(0, 0, 10), nil)
	for i := 0; i < 30; i++ {
		r.cmd(vehicle.Command{Kind: vehicle.CmdVelocity, Vel: geom.V(2, 0, 0)})
		r.fly(100 * sim.Millisecond)
	}
	last := r.t - sim.Time(100*sim.Millisecond)
	r.fly(5 * sim.Second)
	fs := r.events("failsafe")
	if len(fs) == 0 || fs[0].Detail != "offboard setpoints lost: hold" {
		t.Fatalf("failsafe events %v", fs)
	}
	if d := fs[0].T.Sub(last); d < sim.Second || d > 1100*sim.Millisecond {
		t.Errorf("held %v after the last setpoint", d)
	}
	if v := r.log[len(r.log)-1].Vel.Norm(); v > 0.2 {
		t.Errorf("still moving at %.2f m/s", v)
	}
}

func TestArmedOnGroundDisarmsAfterPreflightDelay(t *testing.T) {
	r := newRig(t, "iris", geom.V(0, 0, 0), nil)
	r.fly(3 * sim.Second) // arming late in the run must not disarm at once
	r.cmd(vehicle.Command{Kind: vehicle.CmdArm})
	r.fly(9 * sim.Second)
	if len(r.events("disarm")) != 0 || !r.v.Estimate().Armed {
		t.Fatalf("disarmed %v after arming, before COM_DISARM_PRFLT (10 s)", r.events("disarm"))
	}
	r.fly(2 * sim.Second)
	d := r.events("disarm")
	if len(d) != 1 || d[0].T < sim.Time(13*sim.Second) {
		t.Fatalf("disarm events %v, want one at 13 s", d)
	}
}

func TestSetParamsLimitsSpeed(t *testing.T) {
	top := func(lim float64) float64 {
		r := newRig(t, "iris", geom.V(0, 0, 0), nil)
		if lim > 0 {
			p := r.v.Params()
			p.XYVelMax, p.XYCruise = lim, lim
			if err := r.v.SetParams(p); err != nil {
				t.Fatal(err)
			}
		}
		r.cmd(vehicle.Command{Kind: vehicle.CmdTakeoff, Alt: 5})
		r.fly(6 * sim.Second)
		r.cmd(vehicle.Command{Kind: vehicle.CmdGoto, Pos: geom.V(40, 0, 5), Yaw: math.NaN()})
		r.fly(15 * sim.Second)
		v := 0.0
		for _, s := range r.log {
			v = math.Max(v, math.Hypot(s.Vel.X, s.Vel.Y))
		}
		return v
	}
	if fast, slow := top(0), top(2); !(fast > 4.5 && slow < 2.3) {
		t.Fatalf("top speed %.2f m/s with defaults, %.2f m/s with MPC_XY_VEL_MAX 2", fast, slow)
	}
	r := newRig(t, "iris", geom.V(0, 0, 0), nil)
	p := r.v.Params()
	p.TiltMax = 95
	if err := r.v.SetParams(p); err == nil {
		t.Fatal("tilt 95 accepted")
	}
	p = r.v.Params()
	p.PosEvery = 7
	if err := r.v.SetParams(p); err == nil {
		t.Fatal("loop rate change accepted")
	}
}

// TestHoldBrakesWithoutFlyingBack: a hold (commanded, or the link-loss
// failsafe's) while cruising stops the vehicle at its braking point. Holding
// at the position of the moment instead overshot it by about 4 m at 5 m/s
// and flew back through whatever followed on the same path (munils-50 over
// Wi-Fi: UAVs 20, 21 and 22 collided that way).
func TestHoldBrakesWithoutFlyingBack(t *testing.T) {
	for _, how := range []string{"command", "failsafe"} {
		r := newRig(t, "iris", geom.V(0, 0, 10), nil)
		r.cmd(vehicle.Command{Kind: vehicle.CmdHeartbeat})
		r.cmd(vehicle.Command{Kind: vehicle.CmdGoto, Pos: geom.V(100, 0, 10), Yaw: math.NaN()})
		for i := 0; i < 80; i++ { // 8 s: cruising at 5 m/s
			r.fly(100 * sim.Millisecond)
			r.cmd(vehicle.Command{Kind: vehicle.CmdHeartbeat})
		}
		if v := r.log[len(r.log)-1].Vel.X; v < 4.5 {
			t.Fatalf("%s: cruising at %.2f m/s, want about 5", how, v)
		}
		if how == "command" {
			r.cmd(vehicle.Command{Kind: vehicle.CmdHold})
		}
		from := len(r.log)
		r.fly(4 * sim.Second) // the failsafe holds 1 s after the last heartbeat and lands 5 s later
		if how == "failsafe" && len(r.events("failsafe")) != 1 {
			t.Fatalf("failsafe events %v", r.events("failsafe"))
		}
		r.fly(8 * sim.Second)
		if how == "failsafe" {
			from += 1000 // it cruised on until the failsafe
		}
		maxX, back := math.Inf(-1), 0.0
		for _, s := range r.log[from : from+10000] {
			maxX = math.Max(maxX, s.Pos.X)
			back = math.Max(back, maxX-s.Pos.X)
		}
		if back > 0.3 {
			t.Errorf("%s: flew %.2f m back after stopping at x=%.2f", how, back, maxX)
		}
	}
}

// TestFailsafeFinishesGoto: with failsafe_goto finish, a vehicle that loses
// the link during a goto flies on to its target, holds there and lands
// there after the failsafe delay.
func TestFailsafeFinishesGoto(t *testing.T) {
	r := newRig(t, "iris", geom.V(0, 0, 10), func(c *Config) { c.Autopilot.FailsafeGoto = "finish" })
	target := geom.V(30, 5, 12)
	r.cmd(vehicle.Command{Kind: vehicle.CmdHeartbeat})
	r.cmd(vehicle.Command{Kind: vehicle.CmdGoto, Pos: target, Yaw: math.NaN()})
	r.fly(32 * sim.Second) // no heartbeat after the first
	fs := r.events("failsafe")
	if len(fs) != 3 || !strings.HasSuffix(fs[0].Detail, ": finishing the goto") || !strings.HasSuffix(fs[1].Detail, ": hold") || fs[2].Detail != "still no link: land" {
		t.Fatalf("failsafe events %v", fs)
	}
	if d := sim.Duration(fs[0].T); d < sim.Second || d > 1100*sim.Millisecond {
		t.Errorf("link loss noticed %v after the last heartbeat, want about 1 s", d)
	}
	arr := r.events("arrived")
	if len(arr) != 1 || arr[0].T > fs[1].T {
		t.Fatalf("arrived %v, held at %v: the hold must follow the arrival", arr, fs[1].T)
	}
	if d := fs[2].T.Sub(fs[1].T); d < 5*sim.Second || d > 5100*sim.Millisecond {
		t.Errorf("landed %v after holding, want 5 s", d)
	}
	s := r.log[len(r.log)-1]
	if d := math.Hypot(s.Pos.X-target.X, s.Pos.Y-target.Y); d > 0.5 || !s.Landed {
		t.Errorf("touched down %.2f m from below the target (landed %v)", d, s.Landed)
	}
	// A heartbeat while it finishes ends the failsafe: the goto goes on.
	r = newRig(t, "iris", geom.V(0, 0, 10), func(c *Config) { c.Autopilot.FailsafeGoto = "finish" })
	r.cmd(vehicle.Command{Kind: vehicle.CmdHeartbeat})
	r.cmd(vehicle.Command{Kind: vehicle.CmdGoto, Pos: geom.V(60, 0, 10), Yaw: math.NaN()})
	r.fly(2500 * sim.Millisecond)
	r.cmd(vehicle.Command{Kind: vehicle.CmdHeartbeat})
	r.fly(100 * sim.Millisecond)
	fs = r.events("failsafe")
	if len(fs) != 2 || fs[1].Detail != "link restored" || r.v.Ctrl.Mode() != vehicle.ModeGoto {
		t.Fatalf("failsafe events %v, mode %v", fs, r.v.Ctrl.Mode())
	}
}
