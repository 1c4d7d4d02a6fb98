package geom

import (
	"math"
	"testing"
)

// TestLayoutCountBound checks that a huge count is refused before anything
// is allocated in proportion to it (count: 1000000000 once built 24 GB of
// spawn points before being refused).
func TestLayoutCountBound(t *testing.T) {
	for _, l := range []Layout{
		{Kind: "grid", Spacing: 1},
		{Kind: "line", Spacing: 1},
		{Kind: "circle", Radius: 5},
		{Kind: "explicit"},
	} {
		for _, n := range []int{MaxPoints + 1, 1_000_000_000, -1} {
			allocs := testing.AllocsPerRun(3, func() {
				if bad := l.Check(n); bad["layout"] == "" {
					t.Errorf("%s layout of %d points: no problem reported (%v)", l.Kind, n, bad)
				}
			})
			if allocs > 10 {
				t.Errorf("%s layout of %d points: %v allocations to refuse it", l.Kind, n, allocs)
			}
			if pts := l.Points(n); pts != nil {
				t.Errorf("%s layout: Points(%d) gave %d points", l.Kind, n, len(pts))
			}
		}
	}
	// The largest accepted layout is checked without building its points.
	l := Layout{Kind: "grid", Spacing: 1}
	if allocs := testing.AllocsPerRun(3, func() { l.Check(MaxPoints) }); allocs > 10 {
		t.Errorf("checking %d points: %v allocations", MaxPoints, allocs)
	}
	if bad := (&Layout{Kind: "line", Spacing: 1e3}).Check(MaxPoints); bad["spacing"] == "" {
		t.Errorf("a line of %d points 1 km apart reaches 100,000 km: not reported", MaxPoints)
	}
}

// TestPointsUnchanged checks Points against the formulas it had before
// the range check stopped building points: outputs must not move.
func TestPointsUnchanged(t *testing.T) {
	l := Layout{Kind: "grid", Origin: V(1, 2, 3), Spacing: 2.5, Heading: 30}
	h := l.Heading * math.Pi / 180
	c, s := math.Cos(h), math.Sin(h)
	cols := int(math.Ceil(math.Sqrt(7)))
	for i, p := range l.Points(7) {
		x := float64(i%cols) * l.Spacing
		y := float64(i/cols) * l.Spacing
		if want := l.Origin.Add(Vec3{X: x*c - y*s, Y: x*s + y*c}); p != want {
			t.Errorf("grid point %d: %v, want %v", i, p, want)
		}
	}
	l = Layout{Kind: "circle", Origin: V(1, 2, 3), Radius: 4, Heading: 10}
	h = l.Heading * math.Pi / 180
	for i, p := range l.Points(5) {
		a := h + 2*math.Pi*float64(i)/5
		if want := l.Origin.Add(Vec3{X: l.Radius * math.Cos(a), Y: l.Radius * math.Sin(a)}); p != want {
			t.Errorf("circle point %d: %v, want %v", i, p, want)
		}
	}
}
