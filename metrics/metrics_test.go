package metrics

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"skyloop/netsim"
	"skyloop/sim"
)

func TestKthMatchesSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 300; trial++ {
		var a, b latStore
		var all []int64
		n := 1 + rng.IntN(3000)
		spread := int64(1 + rng.IntN(1<<uint(rng.IntN(40))))
		var prev int64
		toA := true
		for i := 0; i < n; i++ {
			v := rng.Int64N(spread)
			if rng.IntN(50) == 0 {
				v += 5e9 // beyond uint32: the overflow list
			}
			if i > 0 && rng.IntN(3) == 0 {
				v = prev // a run of equal values in the same store
			} else {
				toA = rng.IntN(2) == 0
			}
			if toA {
				a.add(v)
			} else {
				b.add(v)
			}
			all = append(all, v)
			prev = v
		}
		slices.Sort(all)
		k := rng.IntN(n)
		if got := kth([]*latStore{&a, &b}, uint64(k)); got != all[k] {
			t.Fatalf("trial %d n=%d k=%d spread=%d: got %d want %d", trial, n, k, spread, got, all[k])
		}
		// Several ranks at once, equal ones and the extremes included:
		// they share histograms while their ranges are the same.
		ks := []uint64{uint64(rng.IntN(n)), 0, uint64(n - 1), uint64(k), uint64(rng.IntN(n))}
		got := kths([]*latStore{&a, &b}, ks)
		for i, k := range ks {
			if got[i] != all[k] {
				t.Fatalf("trial %d n=%d ranks %v: rank %d got %d want %d", trial, n, ks, k, got[i], all[k])
			}
		}
	}
}

// TestKthsExtremeValues checks ranks over values that span the whole
// int64 range (negative and huge values go to the overflow list), where
// a histogram's bins are as wide as they get and the last one is cut
// short at the range's end.
func TestKthsExtremeValues(t *testing.T) {
	vals := []int64{math.MaxInt64, math.MinInt64, 0, -1, 1, math.MaxUint32, math.MaxUint32 + 1, math.MaxInt64 - 1, 7, 7, 7, math.MinInt64 + 1}
	var s latStore
	for _, v := range vals {
		s.add(v)
	}
	sorted := slices.Clone(vals)
	slices.Sort(sorted)
	ks := make([]uint64, len(sorted))
	for i := range ks {
		ks[i] = uint64(i)
	}
	got := kths([]*latStore{&s}, ks)
	if !slices.Equal(got, sorted) {
		t.Fatalf("got %v, want %v", got, sorted)
	}
}

// BenchmarkLatencyOver measures the summary's exact median and 95th
// percentile over ten million latencies (a long bench-full100 run holds
// about as many).
func BenchmarkLatencyOver(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	var s latStore
	for range 10_000_000 {
		s.add(200_000 + rng.Int64N(5_000_000))
	}
	b.ResetTimer()
	for range b.N {
		if l := latencyOver(&s); l.P50 <= 0 || l.P95 < l.P50 {
			b.Fatalf("got %+v", l)
		}
	}
}

func TestLatencyNearestRank(t *testing.T) {
	var s latStore
	for i := 100; i >= 1; i-- {
		s.add(int64(i))
	}
	l := latencyOver(&s)
	if l.P50 != 50 || l.P95 != 95 || l.Max != 100 || l.Mean != 50.5 || l.Count != 100 {
		t.Fatalf("got %+v", l)
	}
}

// TestAoISawtooth checks the exact time-average of the age sawtooth on a
// hand-made sequence. Receiver 0 hears source 1:
//
//	t=1s: update generated at 0.5s  -> age 0.5, grows to 1.5 at t=2
//	t=2s: update generated at 1.8s  -> age 0.2, grows to 2.2 at t=4
//	t=3s: stale update (gen 1.0s)   -> ignored, age keeps growing
//	end at t=4s.
//
// Integral over [1,4]: [1,2]: (0.5+1.5)/2*1 = 1.0; [2,4]: (0.2+2.2)/2*2 = 2.4.
// Average = 3.4 / 3.
func TestAoISawtooth(t *testing.T) {
	c := New(3)
	s := sim.Second
	send := func(gen, at sim.Duration) {
		p := &netsim.Packet{Src: 1, Dst: netsim.Broadcast, Kind: netsim.KindState, TGen: sim.Time(gen), TSend: sim.Time(gen), Size: 56}
		c.Trace(&netsim.TraceEvent{Type: netsim.EvTx, T: sim.Time(gen), P: p})
		c.Delivered(&netsim.Delivery{P: p, Dst: 0, At: sim.Time(at)}, sim.Time(at))
	}
	send(s/2, s)
	send(18*s/10, 2*s)
	send(s, 3*s)
	sum := c.Summary(sim.Time(4 * s))
	if sum.AoI == nil || sum.AoI.Pairs != 1 {
		t.Fatalf("AoI %+v", sum.AoI)
	}
	if want := 3.4 / 3; math.Abs(sum.AoI.MeanS-want) > 1e-12 {
		t.Fatalf("AoI mean %v, want %v", sum.AoI.MeanS, want)
	}
	// Source 1 was heard by receiver 0 only; receiver 2 never heard it.
	if sum.AoI.PairsNever != 1 {
		t.Fatalf("pairs never = %d, want 1", sum.AoI.PairsNever)
	}
}

// TestPDRWithQueueDrops: a broadcast among 4 nodes dropped at the queue
// counts once per receiver it would have reached.
func TestPDRWithQueueDrops(t *testing.T) {
	c := New(4)
	p1 := &netsim.Packet{Src: 0, Dst: netsim.Broadcast, Kind: netsim.KindBG, Size: 1000}
	p2 := &netsim.Packet{Src: 0, Dst: netsim.Broadcast, Kind: netsim.KindBG, Size: 1000, Seq: 1}
	tr := func(typ netsim.EventType, p *netsim.Packet, node netsim.NodeID, r netsim.DropReason) {
		c.Trace(&netsim.TraceEvent{Type: typ, P: p, Node: node, Reason: r})
	}
	tr(netsim.EvTx, p1, netsim.Broadcast, 0)
	for n := netsim.NodeID(1); n < 4; n++ {
		tr(netsim.EvRx, p1, n, 0)
		c.Delivered(&netsim.Delivery{P: p1, Dst: n, At: 1000}, 1000)
	}
	tr(netsim.EvTx, p2, netsim.Broadcast, 0)
	for n := netsim.NodeID(1); n < 4; n++ {
		tr(netsim.EvDrop, p2, n, netsim.DropQueue)
	}
	s := c.Summary(sim.Time(sim.Second))
	bg := s.ByKind["bg"]
	if bg.Tx != 2 || bg.Expected != 6 || bg.Rx != 3 || bg.PDR != 0.5 || bg.Drops["queue"] != 3 {
		t.Fatalf("bg %+v", bg)
	}
	if bg.Overhead.PayloadBytesPerS != 2000 || bg.Overhead.IPBytesPerS != 2056 || bg.Overhead.PacketsPerS != 2 {
		t.Fatalf("overhead %+v", bg.Overhead)
	}
	if bg.Latency.Count != 3 || bg.Latency.Max != 1000 {
		t.Fatalf("latency %+v", bg.Latency)
	}
}

// TestAoISparseMatchesDense: above denseLimit nodes the AoI pairs live in
// a hash table; fed the same updates among the same pairs (enough for the
// table to grow twice), it gives the dense table's figures.
func TestAoISparseMatchesDense(t *testing.T) {
	const k = 70 // 70*69 = 4830 pairs: more than one slab
	small, big := New(k), New(denseLimit+500)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 60000; i++ {
		src, dst := rng.IntN(k), rng.IntN(k)
		if src == dst {
			continue
		}
		gen := sim.Time(i) * sim.Time(sim.Millisecond)
		at := gen.Add(sim.Duration(rng.IntN(50)) * sim.Millisecond)
		p := &netsim.Packet{Src: netsim.NodeID(src), Dst: netsim.Broadcast, Kind: netsim.KindState, TGen: gen, TSend: gen, Size: 72}
		for _, c := range []*Collector{small, big} {
			c.Trace(&netsim.TraceEvent{Type: netsim.EvTx, T: gen, P: p})
			c.Delivered(&netsim.Delivery{P: p, Dst: netsim.NodeID(dst), At: at}, at)
		}
	}
	end := sim.Time(70 * sim.Second)
	a, b := small.Summary(end).AoI, big.Summary(end).AoI
	if a == nil || b == nil || a.Pairs != b.Pairs || a.MeanS != b.MeanS || a.MinS != b.MinS || a.MaxS != b.MaxS {
		t.Fatalf("dense %+v, sparse %+v", a, b)
	}
	if a.Pairs <= 2*sparseStart {
		t.Fatalf("only %d pairs: the test should make the table grow", a.Pairs)
	}
	if len(big.aoi.sparse) < 4*sparseStart || big.aoi.dense != nil || big.aoi.used != a.Pairs {
		t.Fatalf("the big table should be sparse, grown, with an entry per pair: %d entries, %d used", len(big.aoi.sparse), big.aoi.used)
	}
}

// kth returns the k-th smallest value over the stores.
func kth(stores []*latStore, k uint64) int64 { return kths(stores, []uint64{k})[0] }

// BenchmarkLatStoreAdd measures recording one delivery's latency, which
// the network's goroutine does for every delivery of a run.
func BenchmarkLatStoreAdd(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	vals := make([]int64, 1<<16)
	for i := range vals {
		vals[i] = 200_000 + rng.Int64N(5_000_000)
	}
	var s latStore
	b.ResetTimer()
	for i := range b.N {
		if i&(1<<22-1) == 0 {
			s = latStore{} // bound the memory a long benchmark holds
		}
		s.add(vals[i&(len(vals)-1)])
	}
}
