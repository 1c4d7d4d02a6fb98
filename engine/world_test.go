package engine

import (
	"math"
	"math/rand/v2"
	"testing"

	"skyloop/geom"
	"skyloop/netsim"
	"skyloop/sim"
	"skyloop/vehicle"
)

// newTestWorld is a world check for n vehicles of radius r at mo.
func newTestWorld(mo []vehicle.Motion, r float64) worldCheck {
	n := len(mo)
	c := worldCheck{MinSep: math.Inf(1), contact: map[[2]int]bool{}, next: map[[2]int]bool{}, maxR: r,
		radius: make([]float64, n), inObs: make([]int, n), outside: make([]bool, n), order: make([]int, n),
		rank: make([]int, n), sorder: make([]int, n), strip: make([]float64, n), maxSpeed: make([]float64, n),
		start: make([]geom.Vec3, n), turnDeg: make([]float64, n), lastYaw: make([]float64, n)}
	for i := range mo {
		c.radius[i], c.inObs[i], c.order[i], c.sorder[i] = r, -1, i, i
	}
	return c
}

// bruteClosest is the closest pair by measuring every pair, ties going
// to the pair that comes first in the x order (rank), and every pair in
// contact.
func bruteClosest(mo []vehicle.Motion, rank []int, r float64) (closest, map[[2]int]bool) {
	best := closest{d: math.Inf(1)}
	contacts := map[[2]int]bool{}
	for a := range mo {
		for b := a + 1; b < len(mo); b++ {
			d := mo[a].Pos.Dist(mo[b].Pos)
			if d < 2*r {
				contacts[[2]int{a, b}] = true
			}
			lo, hi := min(rank[a], rank[b]), max(rank[a], rank[b])
			if d < best.d || d == best.d && (lo < best.lo || lo == best.lo && hi < best.hi) {
				best = closest{d: d, pair: [2]int{a, b}, lo: lo, hi: hi}
			}
		}
	}
	return best, contacts
}

// TestWorldClosestPairExact: the world check's closest pair and contacts
// (found in strips after the first sample, by a sweep when nothing is
// closer than the strips' width) equal those of measuring every pair, on
// swarms that move between samples: a grid with many equally distant
// pairs (ties), kept still but for spreading out and back (exact powers
// of two, so the ties stay), a grid that moves, random points with a close cluster, vehicles that spread
// out far past the strips and come back together, and a single column.
func TestWorldClosestPairExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	layouts := map[string]func(i int) geom.Vec3{
		"grid":   func(i int) geom.Vec3 { return geom.V(float64(i%17)*20, float64(i/17)*20, 10) },
		"random": func(i int) geom.Vec3 { return geom.V(rng.Float64()*500, rng.Float64()*500, rng.Float64()*50) },
		"column": func(i int) geom.Vec3 { return geom.V(5, float64(i)*3, 10) },
		"still":  func(i int) geom.Vec3 { return geom.V(float64(i%17)*20, float64(i/17)*20, 10) },
		"cluster": func(i int) geom.Vec3 {
			if i < 10 {
				return geom.V(100+rng.Float64(), 100+rng.Float64(), 10)
			}
			return geom.V(rng.Float64()*2000, rng.Float64()*2000, 10)
		},
	}
	for name, at := range layouts {
		t.Run(name, func(t *testing.T) {
			const n, r = 300, 0.6
			mo := make([]vehicle.Motion, n)
			for i := range mo {
				mo[i].Pos = at(i)
			}
			c := newTestWorld(mo, r)
			strips := 0
			for k := 0; k < 40; k++ {
				if k > 0 {
					for i := range mo {
						scale := 1.0
						switch {
						case k == 20:
							scale = 8 // spread out: the strips are too narrow
						case k == 25:
							scale = 1.0 / 8
						}
						mo[i].Pos = mo[i].Pos.Scale(scale)
						if name != "still" {
							mo[i].Pos = mo[i].Pos.Add(geom.V(rng.NormFloat64(), rng.NormFloat64(), 0.1*rng.NormFloat64()))
						}
					}
				}
				hadStrips := c.h > 0
				c.MinSep = math.Inf(1)
				var events []string
				c.sample(sim.Time(k), mo, func(_ sim.Time, _ netsim.NodeID, _, name, detail string) { events = append(events, name+" "+detail) })
				want, contacts := bruteClosest(mo, c.rank, r)
				if c.MinSep != want.d || c.MinSepPair != want.pair {
					t.Fatalf("sample %d: closest %v %v, want %v %v", k, c.MinSep, c.MinSepPair, want.d, want.pair)
				}
				if len(c.contact) != len(contacts) {
					t.Fatalf("sample %d: %d contacts, want %d", k, len(c.contact), len(contacts))
				}
				for p := range contacts {
					if !c.contact[p] {
						t.Fatalf("sample %d: contact %v missed", k, p)
					}
				}
				if hadStrips && c.h > 0 {
					strips++
				}
			}
			if strips < 20 {
				t.Errorf("strips used in %d of 40 samples: the test does not exercise them", strips)
			}
		})
	}
}
