package agent

import (
	"testing"

	"skyloop/geom"
	"skyloop/netsim"
	"skyloop/sim"
)

// BenchmarkDecodeState measures decoding one 3D state update, the first
// step of every beacon reception (about 13 ns hot on the 2-core VM; 25-30
// ns inside a 100-vehicle run, where the receivers' tables are cold).
func BenchmarkDecodeState(b *testing.B) {
	s := State{ID: 3, Seq: 9, TGen: 12345, Pos: geom.V(1, 2, 3), Vel: geom.V(4, 5, 6), Yaw: 0.5}
	buf := s.Append3D(nil)
	var sink float64
	for i := 0; i < b.N; i++ {
		d, err := decodeState(buf)
		if err != nil {
			b.Fatal(err)
		}
		sink += d.V
	}
	_ = sink
}

// BenchmarkBeliefsApply is one node of a 10 000-node swarm applying the
// state updates of its 50 neighbours (ids spread over the swarm) in turn,
// and looking one up: the per-reception cost of the receiver rules.
func BenchmarkBeliefsApply(b *testing.B) {
	bs := NewBeliefs(10_000, sim.Second)
	var src [50]netsim.NodeID
	for i := range src {
		src[i] = netsim.NodeID((i*7919 + 13) % 10_000)
	}
	s := State{}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		k := i % len(src)
		s.ID, s.Seq = uint32(src[k]), uint32(i/len(src)+1)
		bs.Apply(sim.Time(i), src[k], &s)
		bs.Get(sim.Time(i), src[(k+25)%len(src)])
		i++
	}
}
