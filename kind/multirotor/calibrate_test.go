package multirotor

import (
	"math"
	"testing"

	"skyloop/geom"
	"skyloop/plan"
)

// copter35StopGoLoss is ArduCopter 3.5's waypoint arithmetic, written out
// on its own: the time a vehicle that flies AC_WPNav's and AC_PosControl's
// velocity command exactly loses, against flying the same length straight
// at speed v, when it stops at a waypoint (arriving within r m of it) and
// starts again along the next leg. Per leg: the intermediate target
// accelerates at 2a (limited to the vehicle's speed +- a/kP while that is
// below a/kP), slows down with speed sqrt(4 a d) from v^2/(4a) before the
// end, and stays within the leash a/(2kP^2) + v^2/(2a) of the vehicle; the
// vehicle's velocity is kP e within 2 x a/(2kP^2) of the target and
// sqrt(2a(e - a/(2kP^2))) beyond, e its distance to the target. kP = 1.
func copter35StopGoLoss(leg, v, a, r float64) float64 {
	const kP, dt = 1.0, 0.0025
	leash := a/(2*kP*kP) + v*v/(2*a)
	fly := func(length float64) float64 {
		var t, x, vx, desired, lim float64
		slowing := false
		for length-x > r {
			maxDesired := x + leash
			atLeash := desired > maxDesired
			if !atLeash {
				lim += 2 * a * dt
			}
			lim = math.Min(v, math.Max(0, lim))
			toGo := length - desired
			slowing = slowing || toGo <= v*v/(4*a)
			if slowing {
				lim = math.Min(lim, math.Max(0.5, math.Sqrt(4*a*math.Max(toGo, 0))))
			}
			if vx < a/kP {
				lim = math.Min(lim, vx+a/kP)
			}
			if !atLeash {
				desired = math.Min(length, desired+lim*dt)
			}
			e := desired - x
			vx = kP * e
			if lin := a / (2 * kP * kP); e > 2*lin {
				vx = math.Sqrt(2 * a * (e - lin))
			}
			vx = math.Min(vx, v)
			x += vx * dt
			t += dt
		}
		return t
	}
	return 2*fly(leg) - fly(2*leg)
}

// TestArduCopterTurnCost: with wp_nav: arducopter the iris loses as much
// time in a 90 degree waypoint turn at 5 m/s as ArduCopter 3.5 at its
// WPNAV defaults does by its own arithmetic (within 20%); the PX4-like
// default loses less than half of it (the "more than twice").
func TestArduCopterTurnCost(t *testing.T) {
	const v, leg = 5.0, 40.0
	want := copter35StopGoLoss(leg, v, 1, 0.5)
	if want < 4.5 || want > 6.5 {
		t.Fatalf("the reference loses %.2f s per stop, want about 5.4 s", want)
	}
	loss := func(nav string) float64 {
		c, _ := PresetConfig("iris")
		c.Autopilot.WPNav = nav
		if bad := c.Validate(); len(bad) > 0 {
			t.Fatalf("wp_nav %s: %v", nav, bad)
		}
		p0 := geom.V(0, 0, 10)
		straight, err := FlyPath(&c, []geom.Vec3{p0, geom.V(2*leg, 0, 10)}, v, 0.5, 1)
		if err != nil {
			t.Fatal(err)
		}
		turn, err := FlyPath(&c, []geom.Vec3{p0, geom.V(leg, 0, 10), geom.V(leg, leg, 10)}, v, 0.5, 1)
		if err != nil {
			t.Fatal(err)
		}
		return turn.Seconds - straight.Seconds
	}
	ac, px := loss("arducopter"), loss("px4")
	t.Logf("90 deg turn at 5 m/s: ArduCopter 3.5 arithmetic %.2f s, wp_nav arducopter %.2f s, px4 %.2f s", want, ac, px)
	if math.Abs(ac-want) > 0.2*want {
		t.Errorf("wp_nav arducopter loses %.2f s in the turn, ArduCopter %.2f s: more than 20%% apart", ac, want)
	}
	if px > want/2 {
		t.Errorf("wp_nav px4 loses %.2f s, want less than half of ArduCopter's %.2f s", px, want)
	}
}

// TestWPNavValidate: bad wp_nav and wp_accel values are named.
func TestWPNavValidate(t *testing.T) {
	c, _ := PresetConfig("iris")
	c.Autopilot.WPNav, c.Autopilot.WPAccel = "ardupilot", 50
	bad := c.Validate()
	if bad["autopilot.wp_nav"] == "" || bad["autopilot.wp_accel"] == "" {
		t.Errorf("want autopilot.wp_nav and autopilot.wp_accel errors, got %v", bad)
	}
}

// TestSolve3 recovers known coefficients from exact data.
func TestSolve3(t *testing.T) {
	rows := [][3]float64{{20, 0, 1}, {80, 90, 1}, {120, 270, 1}, {160, 0, 1}}
	want := [3]float64{33, 4, 300}
	var ata [3][3]float64
	var atb [3]float64
	for _, r := range rows {
		y := want[0]*r[0] + want[1]*r[1] + want[2]
		for a := 0; a < 3; a++ {
			for b := 0; b < 3; b++ {
				ata[a][b] += r[a] * r[b]
			}
			atb[a] += r[a] * y
		}
	}
	got, err := solve3(ata, atb)
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if math.Abs(got[i]-want[i]) > 1e-6*math.Abs(want[i]) {
			t.Errorf("coefficient %d: got %v, want %v", i, got[i], want[i])
		}
	}
	if _, err := solve3([3][3]float64{{1, 2, 0}, {2, 4, 0}, {0, 0, 1}}, [3]float64{}); err == nil {
		t.Error("a singular system gave no error")
	}
}

// TestEmbeddedCalibration flies each preset's calibration again and checks
// that plan's embedded models are the fit (within 1%), that the fit
// explains every calibration flight within 12%, and that turning costs
// energy.
func TestEmbeddedCalibration(t *testing.T) {
	for _, tc := range []struct {
		model, preset, nav string
	}{{"iris", "iris", ""}, {"iris-arducopter", "iris", "arducopter"}, {"crazyflie", "crazyflie", ""}} {
		m, err := plan.EnergyModel(tc.model)
		if err != nil {
			t.Fatal(err)
		}
		c, _ := PresetConfig(tc.preset)
		c.Autopilot.WPNav = tc.nav
		cal, err := Calibrate(&c, m.Speed, m.Altitude, 1)
		if err != nil {
			t.Fatalf("%s: %v", tc.model, err)
		}
		t.Logf("%s: %.4f J/m, %.4f J/deg, %.1f J per path", tc.model, cal.PerMetre, cal.PerDegree, cal.Fixed)
		if math.Abs(cal.PerMetre-m.PerMetre) > 0.01*m.PerMetre || math.Abs(cal.PerDegree-m.PerDegree) > 0.01*m.PerDegree {
			t.Errorf("%s: fitted %.4f J/m %.4f J/deg, embedded %.4f J/m %.4f J/deg: run `skyloop calibrate` and update plan/energy.go",
				tc.model, cal.PerMetre, cal.PerDegree, m.PerMetre, m.PerDegree)
		}
		if !(cal.PerDegree > 0) {
			t.Errorf("%s: turning costs %.4f J/deg", tc.model, cal.PerDegree)
		}
		for _, f := range cal.Flights {
			if p := cal.Predict(f.Metres, f.TurnDeg) + cal.Fixed; math.Abs(p-f.Joules) > 0.12*f.Joules {
				t.Errorf("%s: %s: fit %.0f J, flown %.0f J", tc.model, f.Name, p, f.Joules)
			}
		}
	}
}
