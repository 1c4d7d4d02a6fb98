package metrics

import (
	"math"
	"testing"

	"skyloop/geom"
	"skyloop/sim"
)

// TestFormationMeasure: in leader mode a follower's error is its distance
// from leader + offset; in flock mode |nearest-neighbour distance -
// spacing|; samples before the warm-up count for the closest approach and
// the settling time but not the mean.
func TestFormationMeasure(t *testing.T) {
	p := DefaultFormationParams()
	p.Group, p.Warmup, p.Period = "g", sim.Second, 100*sim.Millisecond
	slots := []geom.Vec3{{}, {Y: -10}, {Y: -20}}
	m := NewFormation(p, 3, slots, 10)
	// Before the warm-up: follower 2 is 3 m off (mean 1.5 m), not counted.
	m.Observe(sim.Time(500*sim.Millisecond), []geom.Vec3{{}, {Y: -10}, {Y: -17}})
	// Not a sample time: ignored.
	m.Observe(sim.Time(1050*sim.Millisecond), []geom.Vec3{{}, {Y: -1}, {Y: -2}})
	// After: follower 1 is 0.4 m off, follower 2 in its slot.
	m.Observe(sim.Time(1100*sim.Millisecond), []geom.Vec3{{X: 5}, {X: 5.4, Y: -10}, {X: 5, Y: -20}})
	m.Observe(sim.Time(1200*sim.Millisecond), []geom.Vec3{{X: 6}, {X: 6, Y: -10}, {X: 6, Y: -20}})
	r := m.Result()
	if r.Samples != 3 || r.ErrMeanM != 0.1 || r.ErrMaxM != 0.2 || r.ErrFinalM != 0 {
		t.Errorf("leader mode: %+v", r)
	}
	if r.SettledS != 0.6 {
		t.Errorf("settled %v s, want 0.6 (error 1.5 m at 0.5 s)", r.SettledS)
	}
	if r.ClosestM != 7 || r.ClosestPair != [2]int{1, 2} || r.ClosestTNs != sim.Time(500*sim.Millisecond) {
		t.Errorf("closest: %+v", r)
	}
	p.Mode, p.Warmup = "flock", 0
	m = NewFormation(p, 3, nil, 5)
	m.Observe(sim.Time(100*sim.Millisecond), []geom.Vec3{{}, {X: 4}, {X: 10}})
	// Nearest: 4, 4, 6 -> errors 1, 1, 1.
	r = m.Result()
	if math.Abs(r.ErrMeanM-1) > 1e-12 || r.SettledS != -1 || r.ClosestM != 4 {
		t.Errorf("flock mode: %+v", r)
	}
}
