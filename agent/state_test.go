package agent

import (
	"testing"

	"skyloop/geom"
	"skyloop/sim"
)

func TestStateRoundTrip(t *testing.T) {
	s := State{ID: 7, Seq: 42, TGen: 123456789, Pos: geom.V(1.5, -2.25, 0), Yaw: 0.5, V: 0.75, Omega: -0.1}
	b := s.AppendPlanar(nil)
	if len(b) != PlanarStateSize {
		t.Fatalf("planar size %d", len(b))
	}
	got, err := decodeState(b)
	if err != nil || got.ID != 7 || got.Seq != 42 || got.TGen != 123456789 || got.Pos != s.Pos || got.Yaw != 0.5 || got.V != 0.75 || got.Omega != -0.1 {
		t.Fatalf("planar round trip: %+v %v", got, err)
	}
	s3 := State{ID: 1, Seq: 2, TGen: 3, Pos: geom.V(1, 2, 3), Vel: geom.V(4, 5, 6), Yaw: 0.7}
	b = s3.Append3D(nil)
	if len(b) != State3DSize {
		t.Fatalf("3d size %d", len(b))
	}
	got, err = decodeState(b)
	if err != nil || got.Pos != s3.Pos || got.Vel != s3.Vel || got.Yaw != 0.7 {
		t.Fatalf("3d round trip: %+v %v", got, err)
	}
	if _, err := decodeState(b[:50]); err == nil {
		t.Fatal("a 50-byte update decoded")
	}
}

// TestReceiverRules exercises the netbots study's receiver rules
// (docs/scenario.md, State updates and beliefs) on synthetic input:
// duplicates and out-of-order updates are dropped, the newest is applied,
// and a belief older than the stale limit is withheld.
func TestReceiverRules(t *testing.T) {
	bs := NewBeliefs(3, sim.Second)
	ms := sim.Time(sim.Millisecond)
	upd := func(seq uint32, gen sim.Time) State {
		return State{Seq: seq, TGen: gen, Pos: geom.V(float64(seq), 0, 0)}
	}
	steps := []struct {
		now  sim.Time
		seq  uint32
		gen  sim.Time
		want Verdict
	}{
		{100 * ms, 0, 90 * ms, Applied},
		{200 * ms, 2, 190 * ms, Applied},    // gap: seq 1 lost
		{210 * ms, 2, 190 * ms, Duplicate},  // same (src, seq) again
		{220 * ms, 1, 95 * ms, OutOfOrder},  // late arrival of seq 1
		{230 * ms, 1, 95 * ms, Duplicate},   // and its duplicate
		{240 * ms, 0, 90 * ms, Duplicate},   // an old duplicate
		{300 * ms, 70, 290 * ms, Applied},   // jump beyond the 64-wide window
		{310 * ms, 5, 100 * ms, OutOfOrder}, // outside the window: out of order
	}
	for i, s := range steps {
		u := upd(s.seq, s.gen)
		if got := bs.Apply(s.now, 1, &u); got != s.want {
			t.Fatalf("step %d (seq %d): %v, want %v", i, s.seq, got, s.want)
		}
	}
	if bs.Counts != [3]uint64{3, 3, 2} {
		t.Fatalf("counts %v", bs.Counts)
	}
	b, ok := bs.Get(400*ms, 1)
	if !ok || b.Seq != 70 || b.Pos.X != 70 {
		t.Fatalf("belief %+v %v", b, ok)
	}
	// Generated at 290 ms: still fresh at 1.29 s, withheld after.
	if _, ok := bs.Get(1290*ms, 1); !ok {
		t.Fatal("belief withheld at exactly the stale limit")
	}
	if _, ok := bs.Get(1291*ms, 1); ok {
		t.Fatal("stale belief not withheld")
	}
	if _, ok := bs.Get(0, 2); ok {
		t.Fatal("belief about a silent node")
	}
	if _, ok := bs.Get(0, 9); ok {
		t.Fatal("belief about a node that does not exist")
	}
}

// decodeState decodes either format into a new State.
func decodeState(b []byte) (State, error) {
	var s State
	err := DecodeStateInto(b, &s)
	return s, err
}
