package geom

import (
	"math"
	"math/rand/v2"
	"testing"
)

func near(a, b Vec3, tol float64) bool { return a.Sub(b).Norm() < tol }

func TestQuatRotateAndEuler(t *testing.T) {
	// Yaw 90 deg turns body forward (x) into world north (y).
	q := FromEuler(0, 0, math.Pi/2)
	if v := q.Rotate(V(1, 0, 0)); !near(v, V(0, 1, 0), 1e-12) {
		t.Fatalf("yaw 90: %v", v)
	}
	// Roll 90 deg (right wing down in FLU: rotation about +x) turns body y into world z.
	q = FromEuler(math.Pi/2, 0, 0)
	if v := q.Rotate(V(0, 1, 0)); !near(v, V(0, 0, 1), 1e-12) {
		t.Fatalf("roll 90: %v", v)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	for i := 0; i < 1000; i++ {
		r, p, y := (rng.Float64()-0.5)*3, (rng.Float64()-0.5)*3, (rng.Float64()-0.5)*6
		q := FromEuler(r, p, y)
		r2, p2, y2 := q.Euler()
		if math.Abs(r-r2) > 1e-9 || math.Abs(p-p2) > 1e-9 || math.Abs(WrapAngle(y-y2)) > 1e-9 {
			t.Fatalf("euler round trip %v %v %v -> %v %v %v", r, p, y, r2, p2, y2)
		}
		v := V(rng.Float64(), rng.Float64(), rng.Float64())
		if w := q.RotateInv(q.Rotate(v)); !near(w, v, 1e-12) {
			t.Fatalf("inverse rotation")
		}
		if z := q.AxisZ(); !near(z, q.Rotate(V(0, 0, 1)), 1e-12) {
			t.Fatalf("AxisZ %v vs %v", z, q.Rotate(V(0, 0, 1)))
		}
		// Mul composes: (q*s).Rotate = q.Rotate(s.Rotate)
		s := FromEuler(rng.Float64(), rng.Float64(), rng.Float64())
		if !near(q.Mul(s).Rotate(v), q.Rotate(s.Rotate(v)), 1e-12) {
			t.Fatal("Mul does not compose")
		}
	}
}

func TestQuatIntegrate(t *testing.T) {
	// Constant yaw rate 1 rad/s for 1 s in 1000 steps gives yaw 1 rad.
	q := Identity
	for i := 0; i < 1000; i++ {
		q = q.Integrate(V(0, 0, 1), 0.001)
	}
	if y := q.Yaw(); math.Abs(y-1) > 1e-9 {
		t.Fatalf("yaw %v", y)
	}
}

func TestWrapAngleAndBox(t *testing.T) {
	for _, c := range [][2]float64{{0, 0}, {math.Pi, math.Pi}, {-math.Pi, math.Pi}, {3 * math.Pi / 2, -math.Pi / 2}, {7, 7 - 2*math.Pi}} {
		if got := WrapAngle(c[0]); math.Abs(got-c[1]) > 1e-12 {
			t.Errorf("WrapAngle(%v) = %v, want %v", c[0], got, c[1])
		}
	}
	b := Box{Min: V(0, 0, 0), Max: V(1, 2, 3)}
	if !b.Contains(V(1, 2, 3)) || b.Contains(V(1.1, 0, 0)) || b.Dist(V(2, 1, 1)) != 1 || b.Dist(V(0.5, 0.5, 0.5)) != 0 {
		t.Fatal("box")
	}
}

func TestLayouts(t *testing.T) {
	l := Layout{Kind: "grid", Origin: V(1, 1, 5), Spacing: 2, Columns: 3}
	pts := l.Points(5)
	if pts[4] != V(3, 3, 5) {
		t.Fatalf("grid %v", pts)
	}
	l = Layout{Kind: "circle", Origin: V(0, 0, 1), Radius: 2}
	pts = l.Points(4)
	if !near(pts[1], V(0, 2, 1), 1e-12) {
		t.Fatalf("circle %v", pts)
	}
	if bad := (&Layout{Kind: "explicit", Positions: []Vec3{{}}}).Check(2); bad["positions"] == "" {
		t.Fatal("explicit count not checked")
	}
}

func TestGeodeticRoundTrip(t *testing.T) {
	o := Geodetic{Lat: 47.397742, Lon: 8.545594, Alt: 488}
	for _, p := range []Vec3{{}, V(5, 0, 5), V(-1200, 3400, -20), V(0, 10000, 0), V(7000, -7000, 100)} {
		g := o.ToGeodetic(p)
		back := o.ToLocal(g)
		if back.Dist(p) > 1e-6 {
			t.Errorf("%v -> %+v -> %v", p, g, back)
		}
	}
	// One degree of latitude is R*pi/180 m north of the origin.
	g := o.ToGeodetic(V(0, EarthRadius*math.Pi/180, 0))
	if math.Abs(g.Lat-(o.Lat+1)) > 1e-9 || math.Abs(g.Lon-o.Lon) > 1e-9 {
		t.Errorf("1 degree north: %+v", g)
	}
	// 100 m east at 47.4 deg N moves the longitude by 100/(R cos(lat)).
	g = o.ToGeodetic(V(100, 0, 0))
	want := 100 / (EarthRadius * math.Cos(o.Lat*math.Pi/180)) * 180 / math.Pi
	if math.Abs(g.Lon-o.Lon-want) > 1e-9 || math.Abs(g.Lat-o.Lat) > 1e-6 {
		t.Errorf("100 m east: dlon %.9f want %.9f, dlat %.9f", g.Lon-o.Lon, want, g.Lat-o.Lat)
	}
}

func TestFrames(t *testing.T) {
	if n := ENUToNED(V(1, 2, 3)); n != V(2, 1, -3) || NEDToENU(n) != V(1, 2, 3) {
		t.Fatalf("ENU->NED %v", n)
	}
	for _, c := range []struct{ yaw, hdg float64 }{{0, math.Pi / 2}, {math.Pi / 2, 0}, {math.Pi, 3 * math.Pi / 2}, {-math.Pi / 2, math.Pi}} {
		if h := YawToHeading(c.yaw); math.Abs(h-c.hdg) > 1e-12 {
			t.Errorf("yaw %v -> heading %v, want %v", c.yaw, h, c.hdg)
		}
		if y := HeadingToYaw(c.hdg); math.Abs(math.Remainder(y-c.yaw, 2*math.Pi)) > 1e-12 {
			t.Errorf("heading %v -> yaw %v, want %v", c.hdg, y, c.yaw)
		}
	}
}
