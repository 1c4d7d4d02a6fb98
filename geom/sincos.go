package geom

import "math"

// Sincos returns math.Sincos(x) bit for bit, about twice as fast for the
// small angles of the hot loops (sensor noise rotations, one physics
// step's turn): for 0 < |x| < 0.78 (below pi/4, where math.Sincos needs no
// argument reduction) it evaluates the same minimax polynomials (Cephes'
// coefficients, as package math uses) inline of math.Sincos's special-case
// and reduction branches; other arguments go to math.Sincos.
// TestSincosMatchesMath checks the equality over millions of arguments.
func Sincos(x float64) (sin, cos float64) {
	a := math.Abs(x)
	if !(a < 0.78) || x == 0 {
		return math.Sincos(x)
	}
	zz := a * a
	cos = 1.0 - 0.5*zz + zz*zz*((((((cosC0*zz)+cosC1)*zz+cosC2)*zz+cosC3)*zz+cosC4)*zz+cosC5)
	sin = a + a*zz*((((((sinC0*zz)+sinC1)*zz+sinC2)*zz+sinC3)*zz+sinC4)*zz+sinC5)
	if x < 0 {
		sin = -sin
	}
	return sin, cos
}

// The minimax coefficients of sin and cos on [-pi/4, pi/4] (Cephes
// library, sin.c; the values package math uses).
const (
	sinC0 = 1.58962301576546568060e-10
	sinC1 = -2.50507477628578072866e-8
	sinC2 = 2.75573136213857245213e-6
	sinC3 = -1.98412698295895385996e-4
	sinC4 = 8.33333333332211858878e-3
	sinC5 = -1.66666666666666307295e-1

	cosC0 = -1.13585365213876817300e-11
	cosC1 = 2.08757008419747316778e-9
	cosC2 = -2.75573141792967388112e-7
	cosC3 = 2.48015872888517045348e-5
	cosC4 = -1.38888888888730564116e-3
	cosC5 = 4.16666666666665929218e-2
)
