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

// TestFormationChainMeasure: in chain mode the error is the mean |distance
// to the predecessor - spacing|; the spacing extremes count from the start,
// the behind figure after the warm-up, from the predecessors' motion
// between samples; leader and flock results carry none of the chain
// fields.
func TestFormationChainMeasure(t *testing.T) {
	p := DefaultFormationParams()
	p.Group, p.Mode, p.Warmup, p.Period = "g", "chain", 150*sim.Millisecond, 100*sim.Millisecond
	m := NewFormation(p, 3, nil, 10)
	at := func(ms int64) sim.Time { return sim.Time(ms * int64(sim.Millisecond)) }
	// A column flying east at 1 m/s: 1 behind 0, 2 behind 1 but 2 m short.
	m.Observe(at(100), []geom.Vec3{{X: 0}, {X: -10}, {X: -18}})
	m.Observe(at(200), []geom.Vec3{{X: 0.1}, {X: -9.9}, {X: -17.9}})
	// Follower 2 abreast of follower 1 (north of it), both moving east.
	m.Observe(at(300), []geom.Vec3{{X: 0.2}, {X: -9.8}, {X: -9.8, Y: 11}})
	r := m.Result()
	if r.Mode != "chain" || r.SpacingMinM == nil || *r.SpacingMinM != 8 || *r.SpacingMaxM != 11 || *r.SpacingErrMaxM != 2 {
		t.Fatalf("spacing: %+v", r)
	}
	// Errors after the warm-up: (0 + 2) / 2 at 200 ms, (0 + 1) / 2 at 300 ms.
	if math.Abs(r.ErrMeanM-0.75) > 1e-12 || r.ErrFinalM != 0.5 {
		t.Errorf("error: %+v", r)
	}
	// Behind: 1, 1 at 200 ms; 1, 0 at 300 ms.
	if r.BehindMean == nil || *r.BehindMean != 0.75 {
		t.Errorf("behind %v, want 0.75", r.BehindMean)
	}
	p.Mode = "leader"
	m = NewFormation(p, 3, []geom.Vec3{{}, {X: -10}, {X: -20}}, 10)
	m.Observe(at(100), []geom.Vec3{{X: 0}, {X: -10}, {X: -18}})
	if r := m.Result(); r.SpacingMinM != nil || r.BehindMean != nil {
		t.Errorf("leader mode reports chain figures: %+v", r)
	}
}
