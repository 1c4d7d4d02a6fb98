package agent

import (
	"math/rand/v2"
	"testing"

	"skyloop/netsim"
	"skyloop/sim"
)

// TestBeliefsKeepOnlyWhatIsHeard: a node of a million-node swarm that
// hears node 999 999 keeps one entry, not a million (a table indexed by
// id did), and beliefs about many sources, heard in any order, are found
// again exactly (checked against a map).
func TestBeliefsKeepOnlyWhatIsHeard(t *testing.T) {
	bs := NewBeliefs(1_000_000, sim.Second)
	bs.Apply(0, 999_999, &State{ID: 999_999, Seq: 1})
	if len(bs.b) != 1 || len(bs.index) > 16 {
		t.Errorf("one source heard: %d entries, an index of %d slots", len(bs.b), len(bs.index))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	want := map[netsim.NodeID]uint32{}
	for i := 0; i < 5000; i++ {
		src := netsim.NodeID(rng.IntN(1_000_000))
		seq := want[src] + 1
		if v := bs.Apply(sim.Time(i), src, &State{ID: uint32(src), Seq: seq}); v != Applied {
			t.Fatalf("update %d of %d: %v", seq, src, v)
		}
		want[src] = seq
	}
	want[999_999] = max(want[999_999], 1)
	for src, seq := range want {
		s, ok := bs.Get(5000, src)
		if !ok || s.Seq != seq || s.ID != uint32(src) {
			t.Fatalf("belief about %d: %+v %v, want seq %d", src, s, ok, seq)
		}
	}
	if _, ok := bs.Get(5000, 12345678); ok {
		t.Error("a belief about a node outside the swarm")
	}
	if len(bs.b) != len(want) {
		t.Errorf("%d entries for %d sources heard", len(bs.b), len(want))
	}
}
