package vehicle

import (
	"math"
	"math/rand/v2"
	"testing"

	"skyloop/geom"
)

// TestFramesNED: NED, FRD and AttitudeNED agree with each other for any
// attitude and vector, and a level vehicle facing east (yaw 0 here) has a
// 90 degree heading, no roll and no pitch in NED.
func TestFramesNED(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 1000; i++ {
		q := geom.FromEuler(r.Float64()*6-3, r.Float64()*3-1.5, r.Float64()*6-3)
		v := geom.V(r.NormFloat64(), r.NormFloat64(), r.NormFloat64())
		if d := NED(q.Rotate(v)).Dist(AttitudeNED(q).Rotate(FRD(v))); d > 1e-12 {
			t.Fatalf("q %v, v %v: NED(q v) and AttitudeNED(q) FRD(v) differ by %g", q, v, d)
		}
	}
	roll, pitch, yaw := AttitudeNED(geom.Identity).Euler()
	if math.Abs(roll) > 1e-12 || math.Abs(pitch) > 1e-12 || math.Abs(yaw-math.Pi/2) > 1e-12 {
		t.Fatalf("facing east: roll %v, pitch %v, heading %v in NED", roll, pitch, yaw)
	}
	// Facing north (yaw 90 degrees here), pitched nose up 10 degrees:
	// heading 0 and pitch +10 degrees in NED/FRD too.
	_, pitch, yaw = AttitudeNED(geom.FromEuler(0, -10*math.Pi/180, math.Pi/2)).Euler()
	if math.Abs(yaw) > 1e-12 || math.Abs(pitch-10*math.Pi/180) > 1e-12 {
		t.Fatalf("facing north nose up: pitch %v, heading %v in NED", pitch, yaw)
	}
	if NED(geom.V(1, 2, 3)) != geom.V(2, 1, -3) || FRD(geom.V(1, 2, 3)) != geom.V(1, -2, -3) {
		t.Fatal("vector conversions")
	}
}
