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
	w := mujoco.NewWorld(p.PhysicsPeriod)
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
