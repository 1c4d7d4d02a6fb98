package spatial

import (
	"math/rand/v2"
	"slices"
	"testing"

	"skyloop/geom"
)

// TestCollectFindsExactlyTheNodesInRange: for random swarms (spread out,
// clustered, far from the origin, some at the same place), Collect (and
// Append) hands
// over exactly the nodes within the range, themselves excepted, in
// increasing node order with their squared distances, for cells as large
// as the range and larger, after moving the nodes and building again.
func TestCollectFindsExactlyTheNodesInRange(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		name   string
		n      int
		spread float64
		at     geom.Vec3
	}{{"spread", 500, 2000, geom.Vec3{}}, {"cluster", 300, 50, geom.Vec3{}}, {"far", 200, 500, geom.V(-3e6, 7e6, 100)}} {
		pos := make([]geom.Vec3, c.n)
		for round := 0; round < 3; round++ {
			for i := range pos {
				pos[i] = c.at.Add(geom.V(rng.Float64()*c.spread, rng.Float64()*c.spread, rng.Float64()*c.spread/10))
			}
			pos[1] = pos[0] // two nodes at one place
			for _, scale := range []float64{1, 1.7, 5} {
				const reach = 120.0
				g := New(reach * scale)
				g.Build(pos)
				for _, q := range []int{0, 1, c.n / 2, c.n - 1} {
					var got []int32
					g.Collect(pos[q], int32(q), reach*reach, pos, func(r int32, d2 float64) {
						if d := pos[r].Sub(pos[q]); d.Norm2() != d2 {
							t.Fatalf("node %d: squared distance %v, want %v", r, d2, d.Norm2())
						}
						got = append(got, r)
					})
					var want []int32
					for i := range pos {
						if i != q && pos[i].Sub(pos[q]).Norm2() <= reach*reach {
							want = append(want, int32(i))
						}
					}
					if !slices.Equal(got, want) {
						t.Fatalf("%s, round %d, cells x%v, node %d: got %v, want %v", c.name, round, scale, q, got, want)
					}
					// Append finds the same, after what dst held.
					near := g.Append([]Near{{-1, 0}}, pos[q], int32(q), reach*reach, pos)
					if len(near) != len(want)+1 || near[0].Node != -1 {
						t.Fatalf("%s, round %d, cells x%v, node %d: Append gave %d nodes after the one given, want %d", c.name, round, scale, q, len(near)-1, len(want))
					}
					for k, nr := range near[1:] {
						if d := pos[nr.Node].Sub(pos[q]); nr.Node != want[k] || d.Norm2() != nr.D2 {
							t.Fatalf("%s, round %d, cells x%v, node %d: Append's %dth is %+v, want node %d at %v", c.name, round, scale, q, k, nr, want[k], d.Norm2())
						}
					}
				}
			}
		}
	}
}
