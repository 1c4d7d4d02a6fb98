package wifi

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"skyloop/geom"
	"skyloop/netsim"
	"skyloop/sim"
)

// recorder is a tracer that keeps every event as a line, in the order the
// backend reports them; with bulk set it takes drop counts in bulk.
type recorder struct {
	bulk  bool
	lines []string
}

func (r *recorder) Trace(e *netsim.TraceEvent) {
	r.lines = append(r.lines, fmt.Sprintf("%v %d %d %d %d %.6f", e.Type, e.T, e.P.ID, e.Node, e.Reason, e.RxPower))
}

func (r *recorder) CountsDrops() bool { return r.bulk }

func (r *recorder) TraceDrops(e *netsim.TraceEvent, n int) {
	r.lines = append(r.lines, fmt.Sprintf("drops %d %d %d x%d", e.T, e.P.ID, e.Reason, n))
}

// TestReceiversIndependentOfCells: which receivers a transmission reaches,
// and the order in which the backend reports them, do not depend on the
// size of the spatial index's cells: 150 nodes spread over 1.5 km
// (beyond the 220 m the default channel reaches above the sensitivity
// and the 600 m cutoff) broadcast for 2 s, and every trace event comes
// out the same, in the same order, with cells 1x, 2.5x and 4x the range
// a transmission looks at. Checked with every drop traced, with drops
// counted in bulk, and with Rayleigh fading (where only the cutoff range
// bounds the receivers).
func TestReceiversIndependentOfCells(t *testing.T) {
	pos, sends := randomBroadcast(150, 1500, 56, 2*sim.Second, false, 7)
	fading := DefaultParams()
	fading.Fading = Rayleigh
	for _, c := range []struct {
		name string
		p    Params
		bulk bool
	}{{"traced", DefaultParams(), false}, {"counted", DefaultParams(), true}, {"rayleigh", fading, false}} {
		t.Run(c.name, func(t *testing.T) {
			var want []string
			for _, scale := range []float64{1, 2.5, 4} {
				r := &recorder{bulk: c.bulk}
				b := nativeBackend(t, c.p, r)
				b.cellScale = scale
				o := drive(t, b, pos, sends, sim.Time(2*sim.Second), nil)
				if scale == 1 {
					want = r.lines
					if pdr(o) <= 0 || pdr(o) >= 1 {
						t.Fatalf("PDR %v: the layout should reach some receivers and not others", pdr(o))
					}
					continue
				}
				if !slices.Equal(r.lines, want) {
					i := 0
					for i < min(len(r.lines), len(want)) && r.lines[i] == want[i] {
						i++
					}
					t.Fatalf("cells x%v: %d trace events, want %d; first difference at %d", scale, len(r.lines), len(want), i)
				}
			}
		})
	}
}

// bulkCounter counts events, drops in bulk, as a run's metrics do.
type bulkCounter struct{ events, drops int }

func (c *bulkCounter) Trace(*netsim.TraceEvent)               { c.events++ }
func (c *bulkCounter) CountsDrops() bool                      { return true }
func (c *bulkCounter) TraceDrops(_ *netsim.TraceEvent, n int) { c.drops += n }

// BenchmarkSwarm10000 is the network of bench-full10000: 10,000 nodes on
// a 20 m grid (2 km square) broadcasting 56-byte state every 100 ms from
// random phases, drops counted in bulk, for 300 ms simulated per
// operation (about 30,000 frames, each reaching some 380 nodes above
// the sensitivity). Reported: ns per frame.
func BenchmarkSwarm10000(b *testing.B) {
	const side = 100
	pos := make([]geom.Vec3, side*side)
	for i := range pos {
		pos[i] = geom.V(float64(i%side)*20, float64(i/side)*20, 10)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	var sends []send
	for i := range pos {
		ph := sim.Time(rng.Int64N(int64(100 * sim.Millisecond)))
		for k := sim.Time(0); k < 3; k++ {
			sends = append(sends, send{t: ph + k*sim.Time(100*sim.Millisecond), src: netsim.NodeID(i), dst: netsim.Broadcast, size: 56})
		}
	}
	slices.SortStableFunc(sends, func(a, b send) int { return int(a.t - b.t) })
	nodes := make([]netsim.NodeInfo, len(pos))
	for i := range pos {
		nodes[i] = netsim.NodeInfo{ID: netsim.NodeID(i), Pos: pos[i], Vehicle: true}
	}
	b.ReportAllocs()
	for b.Loop() {
		c := &bulkCounter{}
		nb := nativeBackend(b, DefaultParams(), c)
		if err := nb.Start(nodes); err != nil {
			b.Fatal(err)
		}
		var pool netsim.PacketPool
		k := 0
		for now := sim.Time(0); now <= sim.Time(300*sim.Millisecond); now = now.Add(sim.Millisecond) {
			if _, err := nb.AdvanceTo(now); err != nil {
				b.Fatal(err)
			}
			if now%sim.Time(10*sim.Millisecond) == 0 {
				nb.SetPositions(now, pos) // as the engine's position phase
			}
			for ; k < len(sends) && sends[k].t < now.Add(sim.Millisecond); k++ {
				p := pool.Get(0)
				p.ID, p.Src, p.Dst, p.Size, p.TSend, p.TGen = uint64(k), sends[k].src, sends[k].dst, sends[k].size, sends[k].t, sends[k].t
				nb.Send(p)
			}
		}
		if err := nb.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(sends)), "ns/frame")
}

// rxCounter is a recorder that also counts receptions in bulk
// (netsim.ReceptionCounter).
type rxCounter struct {
	recorder
	rx    map[uint64]int // receptions per packet id
	calls int
}

func (r *rxCounter) CountsReceptions() bool { return true }

func (r *rxCounter) TraceReceptions(e *netsim.TraceEvent, n int) {
	if e.Type != netsim.EvRx {
		panic("TraceReceptions with a " + e.Type.String() + " event")
	}
	r.rx[e.P.ID] += n
	r.calls++
}

// TestReceptionsCountedInBulk: with a tracer that counts receptions in
// bulk, the deliveries, every other event and the number of receptions of
// each packet are those of a tracer that gets each reception, and a
// broadcast's receptions come in few calls.
func TestReceptionsCountedInBulk(t *testing.T) {
	pos, sends := randomBroadcast(60, 400, 56, sim.Second, false, 3)
	each := &recorder{bulk: true}
	oe := drive(t, nativeBackend(t, DefaultParams(), each), pos, sends, sim.Time(sim.Second), nil)
	bulk := &rxCounter{recorder: recorder{bulk: true}, rx: map[uint64]int{}}
	ob := drive(t, nativeBackend(t, DefaultParams(), bulk), pos, sends, sim.Time(sim.Second), nil)
	if pdr(oe) <= 0 {
		t.Fatal("no receptions")
	}
	if !reflect.DeepEqual(ob.rx, oe.rx) || !reflect.DeepEqual(ob.lat, oe.lat) {
		t.Error("deliveries differ with receptions counted in bulk")
	}
	want := map[uint64]int{}
	var others []string
	for _, l := range each.lines {
		var id uint64
		if _, err := fmt.Sscanf(l, "rx %d %d", new(int64), &id); err == nil {
			want[id]++
		} else {
			others = append(others, l)
		}
	}
	if len(want) == 0 {
		t.Fatal("no rx lines: the recorder's format changed?")
	}
	if !maps.Equal(bulk.rx, want) {
		t.Errorf("receptions per packet differ: %d packets counted in bulk, %d one by one", len(bulk.rx), len(want))
	}
	if !slices.Equal(bulk.lines, others) {
		t.Errorf("other events differ: %d vs %d", len(bulk.lines), len(others))
	}
	n := 0
	for _, row := range ob.rx {
		for _, k := range row {
			n += k
		}
	}
	if bulk.calls == 0 || 2*bulk.calls > n {
		t.Errorf("%d bulk calls for %d receptions: not counted in bulk", bulk.calls, n)
	}
}
