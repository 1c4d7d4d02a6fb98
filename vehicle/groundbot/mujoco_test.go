package groundbot

import (
	"math"
	"testing"

	"skyloop/geom"
	"skyloop/internal/mjtest"
	"skyloop/sim"
	"skyloop/vehicle"
	"skyloop/vehicle/mujoco"
)

// mjWorld returns a MuJoCo world with one robot per spawn pose, built.
func mjWorld(t *testing.T, p *Params, poses ...[2]geom.Vec3) (*mujoco.World, []*MuJoCoPhysics) {
	t.Helper()
	mjtest.Require(t)
	w := mujoco.NewWorld(mjtest.Lib(t), p.PhysicsPeriod)
	var bots []*MuJoCoPhysics
	for i, ps := range poses {
		bots = append(bots, NewMuJoCoPhysics(p, w, i, ps[0], ps[1].X))
	}
	if err := w.Build(nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	return w, bots
}

// drive steps the world for d with fixed wheel speed commands per robot,
// calling each after every step.
func drive(t *testing.T, w *mujoco.World, bots []*MuJoCoPhysics, wheels [][2]float64, d sim.Duration, each func(k int)) {
	t.Helper()
	n := int(d / w.Period())
	for k := 0; k < n; k++ {
		at := sim.Time(k) * sim.Time(w.Period())
		for i, b := range bots {
			b.Step(at, &vehicle.Actuators{WheelL: wheels[i][0], WheelR: wheels[i][1]}, nil)
		}
		if err := w.Step(at); err != nil {
			t.Fatal(err)
		}
		if each != nil {
			each(k)
		}
	}
}

// TestMuJoCoCircle: at constant wheel speeds the robot drives the circle of
// radius track/2 (wR+wL)/(wR-wL) (0.75 m at 8 and 12 rad/s), within 2%.
func TestMuJoCoCircle(t *testing.T) {
	p := DefaultParams()
	p.Physics = PhysicsMuJoCo
	w, bots := mjWorld(t, &p, [2]geom.Vec3{})
	var pts []geom.Vec3
	drive(t, w, bots, [][2]float64{{8, 12}}, 30*sim.Second, func(k int) {
		if k >= 2500 && k%10 == 0 { // after 5 s
			pts = append(pts, bots[0].Pos())
		}
	})
	want := p.Track / 2 * (12 + 8) / (12 - 8)
	cx, cy, r := fitCircle(pts)
	t.Logf("circle: centre (%.4f, %.4f), radius %.4f m (kinematics: %.4f m)", cx, cy, r, want)
	if math.Abs(r-want) > 0.02*want {
		t.Errorf("radius %.4f m, want %.4f m within 2%%", r, want)
	}
	var worst float64
	for _, q := range pts {
		worst = max(worst, math.Abs(math.Hypot(q.X-cx, q.Y-cy)-r))
	}
	if worst > 0.01 {
		t.Errorf("the path strays %.4f m from its circle", worst)
	}
}

// fitCircle fits a circle to points in the least-squares sense (Kasa).
func fitCircle(pts []geom.Vec3) (cx, cy, r float64) {
	var sx, sy, sxx, syy, sxy, sxz, syz, sz float64
	n := float64(len(pts))
	for _, p := range pts {
		z := p.X*p.X + p.Y*p.Y
		sx, sy, sz = sx+p.X, sy+p.Y, sz+z
		sxx, syy, sxy = sxx+p.X*p.X, syy+p.Y*p.Y, sxy+p.X*p.Y
		sxz, syz = sxz+p.X*z, syz+p.Y*z
	}
	// Solve [sxx sxy sx; sxy syy sy; sx sy n] [a b c] = [sxz syz sz], with
	// the circle x^2+y^2 = a x + b y + c.
	m := [3][4]float64{{sxx, sxy, sx, sxz}, {sxy, syy, sy, syz}, {sx, sy, n, sz}}
	for i := 0; i < 3; i++ {
		for j := i + 1; j < 3; j++ {
			f := m[j][i] / m[i][i]
			for k := i; k < 4; k++ {
				m[j][k] -= f * m[i][k]
			}
		}
	}
	var x [3]float64
	for i := 2; i >= 0; i-- {
		s := m[i][3]
		for k := i + 1; k < 3; k++ {
			s -= m[i][k] * x[k]
		}
		x[i] = s / m[i][i]
	}
	cx, cy = x[0]/2, x[1]/2
	return cx, cy, math.Sqrt(x[2] + cx*cx + cy*cy)
}

// TestMuJoCoDropComesToRest: a robot let go 0.2 m above the floor falls,
// and comes to rest on its wheels and casters (its position's height, the
// chassis centre less its height at rest, is then 0).
func TestMuJoCoDropComesToRest(t *testing.T) {
	p := DefaultParams()
	p.Physics = PhysicsMuJoCo
	w, bots := mjWorld(t, &p, [2]geom.Vec3{{X: 1, Y: 2, Z: 0.2}})
	start := bots[0].Pos().Z
	minZ := start
	drive(t, w, bots, [][2]float64{{0, 0}}, 3*sim.Second, func(int) { minZ = min(minZ, bots[0].Pos().Z) })
	tel := bots[0].Telemetry()
	t.Logf("from %.3f m: lowest %.4f m, at rest %.4f m (where it stands: 0 on the floor), speed %.2g m/s", start, minZ, tel.Pos.Z, tel.Vel.Norm())
	if math.Abs(tel.Pos.Z) > 0.005 || tel.Vel.Norm() > 1e-3 {
		t.Errorf("not at rest on the floor: z %.4f m, speed %.3g m/s", tel.Pos.Z, tel.Vel.Norm())
	}
	if math.Abs(tel.Pos.X-1) > 0.01 || math.Abs(tel.Pos.Y-2) > 0.01 {
		t.Errorf("landed at %v, not below where it was let go", tel.Pos)
	}
	if start-minZ < 0.19 {
		t.Errorf("fell only %.3f m", start-minZ)
	}
}

// TestMuJoCoRobotsCollide: two robots driven head-on into each other stop
// at their chassis' contact instead of passing through.
func TestMuJoCoRobotsCollide(t *testing.T) {
	p := DefaultParams()
	p.Physics = PhysicsMuJoCo
	w, bots := mjWorld(t, &p, [2]geom.Vec3{{X: 0}, {}}, [2]geom.Vec3{{X: 2}, {X: math.Pi}})
	closest := math.Inf(1)
	drive(t, w, bots, [][2]float64{{10, 10}, {10, 10}}, 8*sim.Second, func(int) {
		closest = min(closest, bots[0].Pos().Dist(bots[1].Pos()))
	})
	a, b := bots[0].Pos(), bots[1].Pos()
	t.Logf("closest centres %.4f m (chassis length %.2f m); final x %.3f and %.3f", closest, p.Length, a.X, b.X)
	if closest < p.Length-0.01 {
		t.Errorf("the chassis overlapped: centres %.4f m apart", closest)
	}
	if !(a.X < b.X) {
		t.Errorf("the robots passed through each other: x %.3f and %.3f", a.X, b.X)
	}
}

// stepResponse drives a robot of p, at rest for 1 s, with both wheels
// commanded to speed/wheel_radius for 1 s, and returns the time the body
// first reaches 90% of speed, its peak speed, its mean speed and the left
// wheel's over the last 0.5 s, and the largest pitch and rise of the
// chassis (how far it rocked).
func stepResponse(t *testing.T, p *Params, speed float64) (t90 sim.Duration, peak, steady, wheel, pitch, rise float64) {
	w, bots := mjWorld(t, p, [2]geom.Vec3{})
	b := bots[0]
	drive(t, w, bots, [][2]float64{{0, 0}}, sim.Second, nil)
	z0 := b.Pos().Z
	wc := speed / p.WheelRadius
	t90 = -1
	var n int
	drive(t, w, bots, [][2]float64{{wc, wc}}, sim.Second, func(k int) {
		v := b.ForwardSpeed()
		if t90 < 0 && v >= 0.9*speed {
			t90 = sim.Duration(k+1) * w.Period()
		}
		peak = max(peak, v)
		_, pt, _ := b.chassis.Quat(b.m).Euler()
		pitch, rise = max(pitch, math.Abs(pt)), max(rise, b.Pos().Z-z0)
		if k >= 250 {
			steady += v
			wheel += b.m.Qvel[b.dofL]
			n++
		}
	})
	return t90, peak, steady / float64(n), wheel / float64(n), pitch, rise
}

// TestNetbotsStepResponse: the netbots preset's response to a 0.5 m/s
// speed step, against what its model implies.
//   - Steady state: a velocity actuator needs no torque at constant speed
//     (no hinge damping, no rolling friction with condim 3), so the wheel
//     turns at its command, 10 rad/s, within 0.1%; the body's speed is that
//     times the rolling radius, the wheel's 0.05 m less the soft contact's
//     sinkage (about 0.6 mm at rest): within 1.5% below 0.5 m/s.
//   - Rise: the actuator asks kv * 10 rad/s = 20 N m and is clipped to
//     3 N m; two wheels at 3 N m would push with 120 N, but the floor gives
//     at most 1.5 g of friction, so 90% of the step takes at least
//     0.45 / (1.5 * 9.81) = 30.6 ms. The reaction of 6 N m on the chassis
//     is more than gravity's moment about its rear caster (2.5 kg * g *
//     0.135 m = 3.3 N m): the chassis tips back onto that caster (past the
//     0.85 degrees at which it touches) and lifts its wheels off the floor
//     for a moment, so it takes longer, but well under the classic robot's
//     290 ms: under 100 ms.
//   - Overshoot: with the wheels gripping, the servo is first order
//     (time constant 3 ms), so the speed does not overshoot: peak within
//     1% of the command.
//
// The classic preset, whose casters rest on the floor, does not rock.
func TestNetbotsStepResponse(t *testing.T) {
	p := NetbotsParams()
	t90, peak, steady, wheel, pitch, rise := stepResponse(t, &p, 0.5)
	t.Logf("netbots: 90%% in %v, peak %.4f m/s, steady %.4f m/s (wheel %.4f rad/s), pitch up to %.2f deg, rise %.2f mm",
		t90, peak, steady, wheel, pitch*180/math.Pi, rise*1000)
	if math.Abs(wheel-10) > 0.01 {
		t.Errorf("steady wheel speed %.4f rad/s, want 10 within 0.1%%", wheel)
	}
	if steady > 0.5 || steady < 0.5*0.985 {
		t.Errorf("steady speed %.4f m/s, want within 1.5%% below 0.5", steady)
	}
	if minT := sim.Seconds(0.45 / (1.5 * 9.81)); t90 < minT || t90 > 100*sim.Millisecond {
		t.Errorf("90%% of the step in %v, want between %v (friction) and 100ms", t90, minT)
	}
	if peak > 0.505 {
		t.Errorf("peak %.4f m/s: overshoot above 1%%", peak)
	}
	if touch := math.Atan(p.MuJoCo.CasterGap / (p.Length/2 - p.MuJoCo.CasterRadius)); pitch < touch || rise < 0.0005 {
		t.Errorf("pitch %.2f deg, rise %.2f mm: the chassis did not rock past its caster (%.2f deg) and lift", pitch*180/math.Pi, rise*1000, touch*180/math.Pi)
	}
	c := DefaultParams()
	c.Physics = PhysicsMuJoCo
	ct90, _, _, _, cpitch, _ := stepResponse(t, &c, 0.5)
	t.Logf("classic: 90%% in %v, pitch up to %.3f deg", ct90, cpitch*180/math.Pi)
	if cpitch > 0.1*math.Pi/180 {
		t.Errorf("the classic robot pitched %.3f deg on its casters", cpitch*180/math.Pi)
	}
}
