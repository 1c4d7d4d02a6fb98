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

// BenchmarkBeliefsSwarm is every node of a 10 000-node swarm on a 100 x
// 100 grid hearing its 24 nearest neighbours: each operation applies one
// update at one receiver, the receivers taken as the deliveries of a
// broadcast come (the neighbours of one sender after another), so the
// tables are cold as in a 10,000-drone run (bench-full10000).
func BenchmarkBeliefsSwarm(b *testing.B) {
	const side, n = 100, 100 * 100
	tables := make([]*Beliefs, n)
	for i := range tables {
		tables[i] = NewBeliefs(n, sim.Second)
	}
	type delivery struct{ src, dst netsim.NodeID }
	var ds []delivery
	for src := 0; src < n; src++ {
		x, y := src%side, src/side
		for dy := -2; dy <= 2; dy++ {
			for dx := -2; dx <= 2; dx++ {
				if (dx != 0 || dy != 0) && x+dx >= 0 && x+dx < side && y+dy >= 0 && y+dy < side {
					ds = append(ds, delivery{netsim.NodeID(src), netsim.NodeID((y+dy)*side + x + dx)})
				}
			}
		}
	}
	// Senders in a scattered order, as random phases make them.
	order := make([]int, n)
	for i := range order {
		order[i] = (i * 7919) % n
	}
	first := make([]int, n+1)
	for k, d := range ds {
		first[d.src+1] = k + 1
	}
	s := State{}
	for _, d := range ds { // every table at its full size
		tables[d.dst].Apply(0, d.src, &s)
	}
	b.ReportAllocs()
	i, seq := 0, uint32(1)
	for b.Loop() {
		src := order[(i/24)%n]
		d := ds[first[src]+i%24%(first[src+1]-first[src])]
		if i%(24*n) == 0 {
			seq++
		}
		s.ID, s.Seq = uint32(d.src), seq
		tables[d.dst].Apply(sim.Time(i), d.src, &s)
		i++
	}
}
