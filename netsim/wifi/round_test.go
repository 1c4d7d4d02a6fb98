package wifi

import (
	"math"
	"math/rand/v2"
	"testing"

	"skyloop/sim"
)

// TestRoundNs: roundNs is math.Round for every value a propagation delay
// can take and the edges of its fast path: halves and their neighbours,
// integers and their neighbours, powers of two and the values around
// them, the largest value below 0.5, negatives, huge values, infinities,
// and millions of random delays over up to 100 km.
func TestRoundNs(t *testing.T) {
	check := func(x float64) {
		t.Helper()
		if got, want := roundNs(x), sim.Duration(math.Round(x)); got != want && !math.IsNaN(x) {
			t.Fatalf("roundNs(%v) = %d, math.Round gives %d", x, got, want)
		}
	}
	var edges []float64
	for k := 0; k < 4000; k++ {
		for _, v := range []float64{float64(k), float64(k) + 0.5} {
			edges = append(edges, v, math.Nextafter(v, 0), math.Nextafter(v, math.Inf(1)))
		}
	}
	for e := -60; e <= 60; e++ {
		p := math.Ldexp(1, e)
		for _, v := range []float64{p, p - 0.5, p + 0.5, p * 1.5} {
			edges = append(edges, v, math.Nextafter(v, 0), math.Nextafter(v, math.Inf(1)))
		}
	}
	edges = append(edges, 0, math.Copysign(0, -1), 0.49999999999999994, -0.5, -1.5, 1<<52, 1<<53, math.MaxFloat64, math.Inf(1), math.Inf(-1), math.NaN())
	for _, x := range edges {
		check(x)
		check(-x)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 3_000_000; i++ {
		d := rng.Float64() * math.Ldexp(1, -rng.IntN(30)) * 1e5 // metres, over 30 scales
		check(d / speedOfLight * 1e9)
	}
}
