package metrics

import (
	"math"
	"testing"

	"skyloop/geom"
	"skyloop/sim"
)

// TestPlatoonGapError drives the measure with a synthetic platoon whose
// followers are at known distances: the gap error is the mean and maximum
// of |dist - gap| over followers and ticks after the warm-up (planar
// distances), and the trajectory is sampled every Sample.
func TestPlatoonGapError(t *testing.T) {
	const tick = 10 * sim.Millisecond
	p := PlatoonParams{Group: "g", Gap: 1, Warmup: sim.Second, Sample: 100 * sim.Millisecond}
	m := NewPlatoon(p, 3)
	end := sim.Time(3 * sim.Second)
	var samples []sim.Time
	for t := sim.Time(tick); t <= end; t = t.Add(tick) {
		x := t.Seconds() // the leader drives along x at 1 m/s
		var pos []geom.Vec3
		switch {
		case t < sim.Time(p.Warmup):
			// Before the warm-up the platoon is far from its gaps.
			pos = []geom.Vec3{{X: x}, {X: x - 10}, {X: x - 30}}
		case t == sim.Time(p.Warmup):
			// The warm-up's last instant does not count either.
			pos = []geom.Vec3{{X: x}, {X: x - 100}, {X: x - 200}}
		case t == sim.Time(2*sim.Second):
			// One tick with follower 1 at 1.9 m: error 0.9.
			pos = []geom.Vec3{{X: x}, {X: x - 1.9, Z: 7}, {X: x - 1.9, Y: -0.8}}
		default:
			// Follower 1 at 1.5 m (error 0.5; its height does not count),
			// follower 2 at 0.8 m from follower 1, sideways (error 0.2).
			pos = []geom.Vec3{{X: x}, {X: x - 1.5, Z: 7}, {X: x - 1.5, Y: -0.8}}
		}
		if m.Observe(t, pos) {
			samples = append(samples, t)
			s := make([]Planar, len(pos))
			for i, q := range pos {
				s[i] = Planar{X: q.X, Y: q.Y, Theta: 0.5, V: 1}
			}
			m.Sample(s)
		}
	}
	r := m.Result()
	// 200 ticks after the warm-up, 2 followers each: 199 ticks of
	// 0.5 + 0.2 and one of 0.9 + 0.2.
	wantMean := (199*0.7 + 1.1) / 400
	if r.Group != "g" || r.Vehicles != 3 || math.Abs(r.GapErrMeanM-wantMean) > 1e-12 || math.Abs(r.GapErrMaxM-0.9) > 1e-12 {
		t.Errorf("result %+v, want mean %v, max 0.9", r, wantMean)
	}
	// Samples at 100 ms, 200 ms, ... 3 s.
	if r.Samples != 30 || len(samples) != 30 {
		t.Fatalf("%d samples (%d sample times), want 30", r.Samples, len(samples))
	}
	for k, ts := range samples {
		if ts != sim.Time(k+1)*sim.Time(p.Sample) {
			t.Fatalf("sample %d at %v, want %v", k, ts, sim.Time(k+1)*sim.Time(p.Sample))
		}
	}
	tr := m.Track()
	if tr.Sample != p.Sample || len(tr.Positions) != 3 {
		t.Fatalf("track: sample %v, %d vehicles", tr.Sample, len(tr.Positions))
	}
	for i := range tr.Positions {
		if len(tr.Positions[i]) != 30 {
			t.Fatalf("vehicle %d: %d samples", i, len(tr.Positions[i]))
		}
	}
	// Sample k is at (k+1) * 100 ms; the leader is at x = t.
	for _, k := range []int{0, 9, 14, 29} {
		x := float64(k+1) * 0.1
		want := []geom.Vec3{{X: x}, {X: x - 10}, {X: x - 30}}
		if k >= 10 {
			want = []geom.Vec3{{X: x}, {X: x - 1.5}, {X: x - 1.5, Y: -0.8}}
		}
		if k == 9 {
			want = []geom.Vec3{{X: x}, {X: x - 100}, {X: x - 200}}
		}
		for i := range want {
			if got := tr.Positions[i][k]; got.Dist(want[i]) > 1e-9 {
				t.Errorf("vehicle %d sample %d: %v, want %v", i, k, got, want[i])
			}
		}
	}
}

// TestPlatoonSamplePeriod checks that Observe reports the sample times
// of other periods and ticks, and counts from the first tick without a
// warm-up.
func TestPlatoonSamplePeriod(t *testing.T) {
	for _, c := range []struct {
		tick, sample sim.Duration
		n            int
	}{
		{2 * sim.Millisecond, 100 * sim.Millisecond, 10},
		{10 * sim.Millisecond, 30 * sim.Millisecond, 33},
		{sim.Millisecond, sim.Millisecond, 1000},
		{25 * sim.Millisecond, sim.Second, 1},
	} {
		m := NewPlatoon(PlatoonParams{Group: "g", Gap: 2, Sample: c.sample}, 2)
		n := 0
		ticks := 0
		for ts := sim.Time(c.tick); ts <= sim.Time(sim.Second); ts = ts.Add(c.tick) {
			ticks++
			if m.Observe(ts, []geom.Vec3{{X: 3}, {}}) {
				if int64(ts)%int64(c.sample) != 0 {
					t.Errorf("tick %v sample %v: a sample at %v", c.tick, c.sample, ts)
				}
				n++
				m.Sample([]Planar{{X: 3}, {}})
			}
		}
		r := m.Result()
		if n != c.n || r.Samples != c.n {
			t.Errorf("tick %v sample %v: %d samples (result %d), want %d", c.tick, c.sample, n, r.Samples, c.n)
		}
		// No warm-up: every tick counts, each with an error of |3 - 2|.
		if r.GapErrMeanM != 1 || r.GapErrMaxM != 1 {
			t.Errorf("tick %v: gap error %v / %v over %d ticks, want 1", c.tick, r.GapErrMeanM, r.GapErrMaxM, ticks)
		}
		if m.Observe(0, []geom.Vec3{{}, {}}) {
			t.Errorf("time 0 is a sample time")
		}
	}
	// A platoon of one has no gaps; nothing observed yet, no figures.
	m := NewPlatoon(PlatoonParams{Group: "g", Gap: 1, Sample: sim.Millisecond}, 1)
	if r := m.Result(); r.GapErrMeanM != 0 || r.Samples != 0 || r.Vehicles != 1 {
		t.Errorf("empty: %+v", r)
	}
	m.Observe(sim.Time(sim.Millisecond), []geom.Vec3{{X: 5}})
	if r := m.Result(); r.GapErrMeanM != 0 || r.GapErrMaxM != 0 {
		t.Errorf("one vehicle: %+v", r)
	}
}

// TestDeviation compares tracks with hand-computed distances.
func TestDeviation(t *testing.T) {
	ref := &Track{Sample: 100 * sim.Millisecond, Positions: [][]geom.Vec3{
		{{X: 0}, {X: 1}, {X: 2}},
		{{X: -1}, {X: 0}, {X: 1}},
	}}
	run := &Track{Sample: 100 * sim.Millisecond, Positions: [][]geom.Vec3{
		{{X: 3, Y: 4}, {X: 1}, {X: 2, Y: 1}},
		{{X: -1}, {X: 0, Y: 2}}, // one sample short: compared where both have one
	}}
	mean, mx, ok := Deviation(run, ref)
	if !ok || math.Abs(mean-(5+0+1+0+2)/5.0) > 1e-12 || mx != 5 {
		t.Errorf("deviation %v %v %v, want 1.6, 5", mean, mx, ok)
	}
	// The other way round: the reference is the shorter.
	if mean2, mx2, ok := Deviation(ref, run); !ok || mean2 != mean || mx2 != mx {
		t.Errorf("reversed: %v %v %v, want %v %v", mean2, mx2, ok, mean, mx)
	}
	if mean, mx, ok := Deviation(ref, ref); !ok || mean != 0 || mx != 0 {
		t.Errorf("a track against itself: %v %v %v", mean, mx, ok)
	}
	other := &Track{Sample: 200 * sim.Millisecond, Positions: run.Positions}
	if _, _, ok := Deviation(other, ref); ok {
		t.Errorf("tracks of other sample periods compared")
	}
	fewer := &Track{Sample: ref.Sample, Positions: run.Positions[:1]}
	if _, _, ok := Deviation(fewer, ref); ok {
		t.Errorf("tracks of other vehicle counts compared")
	}
}

func TestPlatoonParamsValidate(t *testing.T) {
	good := DefaultPlatoonParams()
	good.Group = "robot"
	if bad := good.Validate(); len(bad) != 0 {
		t.Errorf("defaults: %v", bad)
	}
	p := PlatoonParams{Gap: math.Inf(1), Warmup: -1, Sample: 0}
	bad := p.Validate()
	for _, k := range []string{"group", "gap", "warmup", "sample"} {
		if bad[k] == "" {
			t.Errorf("%s accepted: %v", k, bad)
		}
	}
	p = PlatoonParams{Group: "g", Gap: math.NaN(), Sample: 1}
	if p.Validate()["gap"] == "" {
		t.Errorf("NaN gap accepted")
	}
}
