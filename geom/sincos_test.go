package geom

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSincosMatchesMath: Sincos must equal math.Sincos bit for bit, so
// that using it changes no output: over the small angles it computes
// itself (uniform, and normal with the sigmas of sensor noise), around
// its threshold, and on the special values math.Sincos handles.
func TestSincosMatchesMath(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	check := func(x float64) {
		s, c := Sincos(x)
		ws, wc := math.Sincos(x)
		if math.Float64bits(s) != math.Float64bits(ws) || math.Float64bits(c) != math.Float64bits(wc) {
			if !(math.IsNaN(s) && math.IsNaN(ws) && math.IsNaN(c) && math.IsNaN(wc)) {
				t.Fatalf("Sincos(%v) = %v, %v; math.Sincos gives %v, %v", x, s, c, ws, wc)
			}
		}
	}
	for i := 0; i < 2_000_000; i++ {
		check((rng.Float64()*2 - 1) * 0.8)
		check(rng.NormFloat64() * 0.002)
		check(rng.NormFloat64() * 1e-6)
		check((rng.Float64()*2 - 1) * 10)
	}
	for _, x := range []float64{0, math.Copysign(0, -1), 0.78, -0.78, math.Nextafter(0.78, 0), math.Pi / 4, -math.Pi / 4,
		5e-324, -5e-324, 1e-300, math.Inf(1), math.Inf(-1), math.NaN(), 1e300} {
		check(x)
	}
}

func BenchmarkSincos(b *testing.B) {
	xs := make([]float64, 1024)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range xs {
		xs[i] = rng.NormFloat64() * 0.002
	}
	var acc float64
	b.Run("geom", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			s, c := Sincos(xs[i&1023])
			acc += s + c
		}
	})
	b.Run("math", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			s, c := math.Sincos(xs[i&1023])
			acc += s + c
		}
	})
	if acc == 0 {
		b.Log(acc)
	}
}
