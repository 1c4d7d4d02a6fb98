package px4like

import (
	"math"
	"testing"
)

// TestClampMatchesMinMax: the branchy clamps return the very bits that
// the math.Min/math.Max forms they replace return, for every special
// value.
func TestClampMatchesMinMax(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	negZero := math.Copysign(0, -1)
	xs := []float64{0, negZero, 1e-300, -1e-300, 0.3, -0.3, 0.5, -0.5, 1, -1, 1.5, -1.5, 1e300, -1e300, inf, -inf, nan}
	same := func(a, b float64) bool {
		return math.Float64bits(a) == math.Float64bits(b) || math.IsNaN(a) && math.IsNaN(b)
	}
	for _, lim := range []float64{0, 0.3, 0.5, 1, 1e300, inf} {
		for _, x := range xs {
			if got, want := clamp(x, lim), math.Max(-lim, math.Min(lim, x)); !same(got, want) {
				t.Errorf("clamp(%v, %v) = %v, want %v", x, lim, got, want)
			}
		}
	}
	for _, idle := range []float64{0, 0.0225, 0.5, 0.99} {
		for _, x := range xs {
			if got, want := clampMotor(x, idle), math.Max(idle, math.Min(1, x)); !same(got, want) {
				t.Errorf("clampMotor(%v, %v) = %v, want %v", x, idle, got, want)
			}
		}
	}
}
