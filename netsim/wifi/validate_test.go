package wifi

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"skyloop/geom"
	"skyloop/netsim"
	"skyloop/netsim/ns3"
	"skyloop/sim"
)

// needNS3 skips (with the reason) when ns-3 is missing, unless
// SKYLOOP_REQUIRE_NS3 is set, as in CI.
func needNS3(t testing.TB) {
	t.Helper()
	if _, err := ns3.Binary(); err != nil {
		if os.Getenv("SKYLOOP_REQUIRE_NS3") != "" {
			t.Fatalf("ns-3 required: %v", err)
		}
		t.Skipf("skipping: %v", err)
	}
}

type send struct {
	t        sim.Time
	src, dst netsim.NodeID
	size     int
}

// outcome counts what a run delivered.
type outcome struct {
	rx       [][]int // [src][dst] receptions
	rxBytes  int64
	sent     int
	backend  netsim.Backend
	drops    map[netsim.DropReason]int
	tickLate int
}

// drive runs a backend like the kernel does (1 ms ticks) over sends.
func drive(t testing.TB, b netsim.Backend, pos []geom.Vec3, sends []send, end sim.Time, tr *counter) outcome {
	t.Helper()
	nodes := make([]netsim.NodeInfo, len(pos))
	for i := range pos {
		nodes[i] = netsim.NodeInfo{ID: netsim.NodeID(i), Pos: pos[i], Vehicle: true}
	}
	if err := b.Start(nodes); err != nil {
		t.Fatal(err)
	}
	o := outcome{rx: make([][]int, len(pos)), backend: b}
	for i := range o.rx {
		o.rx[i] = make([]int, len(pos))
	}
	var pool netsim.PacketPool
	k := 0
	for now := sim.Time(0); now <= end; now = now.Add(sim.Millisecond) {
		ds, err := b.AdvanceTo(now)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
			o.rx[d.P.Src][d.Dst]++
			o.rxBytes += int64(d.P.Size)
		}
		for k < len(sends) && sends[k].t < now.Add(sim.Millisecond) {
			s := sends[k]
			p := pool.Get(0)
			p.ID, p.Src, p.Dst, p.Size, p.TSend, p.TGen = uint64(k), s.src, s.dst, s.size, s.t, s.t
			b.Send(p)
			k++
		}
	}
	o.sent = k
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if pool.Live() != 0 {
		t.Fatalf("%T leaked %d packets", b, pool.Live())
	}
	return o
}

// counter is a tracer that counts events by type and drop reason.
type counter struct {
	tx, rx int
	drops  map[netsim.DropReason]int
}

func (c *counter) Trace(e *netsim.TraceEvent) {
	switch e.Type {
	case netsim.EvTx:
		c.tx++
	case netsim.EvRx:
		c.rx++
	case netsim.EvDrop:
		if c.drops == nil {
			c.drops = map[netsim.DropReason]int{}
		}
		c.drops[e.Reason]++
	}
}

func nativeBackend(t testing.TB, p Params, tr netsim.Tracer) *Backend {
	b, err := New(p, 1, tr)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func ns3Backend(t testing.TB, p Params, epoch sim.Duration) *ns3.Backend {
	q := ns3.DefaultParams()
	q.Standard, q.Mode, q.Preamble, q.TxPower, q.Epoch = p.Standard, p.Mode, p.Preamble, p.TxPower, epoch
	b, err := ns3.New(q, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestPDRvsDistanceMatchesNS3: two-node PDR vs distance (receivers in
// different directions from one sender) for every DSSS rate, preamble
// detection on and off: within 3 percentage points of ns-3 everywhere
// (measured: within 2).
func TestPDRvsDistanceMatchesNS3(t *testing.T) {
	needNS3(t)
	dists := []float64{30, 51, 52, 80, 95, 110, 125, 140, 155, 170, 185, 200, 230}
	pos := []geom.Vec3{{}}
	for i, d := range dists {
		a := 2 * math.Pi * float64(i) / float64(len(dists))
		pos = append(pos, geom.V(d*math.Cos(a), d*math.Sin(a), 0))
	}
	const n = 1000 // sampling noise is about 1.4 points; the runs are deterministic (fixed seeds)
	var sends []send
	for i := 0; i < n; i++ {
		sends = append(sends, send{t: sim.Time(int64(i+1) * int64(15*sim.Millisecond)), src: 0, dst: netsim.Broadcast, size: 1000})
	}
	end := sim.Time(int64(n+20) * int64(15*sim.Millisecond))
	for _, pre := range []bool{true, false} {
		for _, mode := range []string{"DsssRate1Mbps", "DsssRate2Mbps", "DsssRate5_5Mbps", "DsssRate11Mbps"} {
			p := DefaultParams()
			p.Standard, p.Mode, p.Preamble = "80211b", mode, pre
			nat := drive(t, nativeBackend(t, p, nil), pos, sends, end, nil)
			ref := drive(t, ns3Backend(t, p, 10*sim.Millisecond), pos, sends, end, nil)
			var line string
			for i, d := range dists {
				a, b := float64(nat.rx[0][i+1])/n, float64(ref.rx[0][i+1])/n
				line += fmt.Sprintf(" %gm:%.2f/%.2f", d, a, b)
				if math.Abs(a-b) > 0.03 {
					t.Errorf("preamble %v %s at %v m: native PDR %.3f, ns-3 %.3f", pre, mode, d, a, b)
				}
			}
			t.Logf("preamble %-5v %-16s native/ns-3:%s", pre, mode, line)
		}
	}
}

// randomBroadcast is n nodes in a square of side s, each broadcasting size
// bytes every 100 ms from a random phase (or all at the same instants when
// cophased), for d.
func randomBroadcast(n int, side float64, size int, d sim.Duration, cophased bool, seed uint64) ([]geom.Vec3, []send) {
	rng := rand.New(rand.NewPCG(seed, 99))
	pos := make([]geom.Vec3, n)
	phase := make([]sim.Duration, n)
	for i := range pos {
		pos[i] = geom.V(rng.Float64()*side, rng.Float64()*side, 1.5)
		if !cophased {
			phase[i] = sim.Duration(rng.Int64N(int64(100 * sim.Millisecond)))
		}
	}
	var sends []send
	for k := sim.Duration(0); k < d; k += 100 * sim.Millisecond {
		for i := range pos {
			sends = append(sends, send{t: sim.Time(k + phase[i]), src: netsim.NodeID(i), dst: netsim.Broadcast, size: size})
		}
	}
	sortSends(sends)
	return pos, sends
}

func sortSends(s []send) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j].t < s[j-1].t; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

func pdr(o outcome) float64 {
	var rx int
	for _, row := range o.rx {
		for _, c := range row {
			rx += c
		}
	}
	n := len(o.rx)
	return float64(rx) / float64(o.sent*(n-1))
}

// TestBroadcastPDRMatchesNS3: 10 and 50 nodes broadcasting at 10 Hz, with
// random send phases (frames collide now and then) and co-phased (they
// collide every period, since DCF sends at once on an idle medium): overall
// PDR within 1 percentage point of ns-3 (measured: within 0.4).
func TestBroadcastPDRMatchesNS3(t *testing.T) {
	needNS3(t)
	for _, c := range []struct {
		n        int
		side     float64
		cophased bool
	}{{10, 60, false}, {50, 120, false}, {10, 60, true}} {
		pos, sends := randomBroadcast(c.n, c.side, 200, 20*sim.Second, c.cophased, 7)
		end := sim.Time(21 * sim.Second)
		p := DefaultParams()
		a := pdr(drive(t, nativeBackend(t, p, nil), pos, sends, end, nil))
		b := pdr(drive(t, ns3Backend(t, p, 10*sim.Millisecond), pos, sends, end, nil))
		t.Logf("%d nodes in %.0f m square, cophased %v: PDR native %.4f, ns-3 %.4f", c.n, c.side, c.cophased, a, b)
		if math.Abs(a-b) > 0.01 {
			t.Errorf("%d nodes cophased=%v: native PDR %.4f, ns-3 %.4f", c.n, c.cophased, a, b)
		}
	}
}

// bianchi are the reference saturation throughputs (Mbit/s) of ns-3's
// src/wifi/examples/reference/bianchi_11{a,b}_difs.txt, 1500-byte payload.
var bianchi = map[string]map[int]float64{
	"DsssRate11Mbps": {5: 6.4734, 10: 6.1774, 20: 5.7819, 50: 5.1745},
	"OfdmRate6Mbps":  {5: 4.7087, 10: 4.3453, 20: 3.9899, 50: 3.5071},
	"OfdmRate54Mbps": {5: 29.8324, 10: 28.1519, 20: 26.2925, 50: 23.5618},
}

// TestBianchiSaturation: n saturated stations sending 1500-byte unicast
// frames (basic access) to one sink reach Bianchi's throughput within 4%
// (measured: within 2.9%).
func TestBianchiSaturation(t *testing.T) {
	for mode, rows := range map[string]map[int]float64{"DsssRate11Mbps": bianchi["DsssRate11Mbps"], "OfdmRate6Mbps": bianchi["OfdmRate6Mbps"], "OfdmRate54Mbps": bianchi["OfdmRate54Mbps"]} {
		for _, n := range []int{5, 10, 20, 50} {
			p := DefaultParams()
			p.Mode = mode
			p.Standard = "80211a"
			if mode == "DsssRate11Mbps" {
				p.Standard = "80211b"
			}
			p.EIFS = false // the "difs" variant of the model
			p.QueueSize, p.QueueDelay = 100000, 3600*sim.Second
			pos := []geom.Vec3{{}}
			for i := 0; i < n; i++ {
				a := 2 * math.Pi * float64(i) / float64(n)
				pos = append(pos, geom.V(5*math.Cos(a), 5*math.Sin(a), 0))
			}
			d := 10 * sim.Second
			var sends []send
			perStation := int(100e6 * d.Seconds() / 8 / 1500 / float64(n)) // more than the channel can carry
			for k := 0; k < perStation; k++ {
				for i := 1; i <= n; i++ {
					sends = append(sends, send{t: 0, src: netsim.NodeID(i), dst: 0, size: 1500 - netsim.HeaderBytes})
				}
			}
			o := drive(t, nativeBackend(t, p, nil), pos, sends, sim.Time(d), nil)
			got := float64(o.rxBytes+int64(len(sends))*0) * 8 / d.Seconds() / 1e6
			delivered := 0
			for _, c := range o.rx {
				for _, v := range c {
					delivered += v
				}
			}
			got = float64(delivered) * 1500 * 8 / d.Seconds() / 1e6
			want := rows[n]
			t.Logf("%s n=%d: %.4f Mbit/s, Bianchi %.4f (%+.1f%%)", mode, n, got, want, 100*(got-want)/want)
			if math.Abs(got-want)/want > 0.04 {
				t.Errorf("%s n=%d: %.4f Mbit/s, Bianchi %.4f", mode, n, got, want)
			}
		}
	}
}

// state100 is the speed scenario: n nodes on a grid (spacing s), each
// broadcasting a 56-byte state update at 10 Hz from a random phase, for d.
func stateGrid(n int, s float64, d sim.Duration) ([]geom.Vec3, []send) {
	pos, sends := randomBroadcast(n, 1, 56, d, false, 3)
	cols := int(math.Ceil(math.Sqrt(float64(n))))
	for i := range pos {
		pos[i] = geom.V(float64(i%cols)*s, float64(i/cols)*s, 10)
	}
	return pos, sends
}

// BenchmarkVsNS3: 100 nodes on a 10 m grid broadcasting 56-byte state at
// 10 Hz for 30 s over 802.11a 6 Mbit/s with the default channel, through
// the native model and through ns-3 (10 ms epochs), side by side; and 1000
// nodes (native only). Reports PDR as a metric.
func BenchmarkVsNS3(b *testing.B) {
	d := 30 * sim.Second
	for _, c := range []struct {
		name string
		n    int
		ns3  bool
	}{{"native-100", 100, false}, {"ns3-100", 100, true}, {"native-1000", 1000, false}} {
		b.Run(c.name, func(b *testing.B) {
			if c.ns3 {
				needNS3(b)
			}
			pos, sends := stateGrid(c.n, 10, d)
			var o outcome
			for b.Loop() {
				var be netsim.Backend
				if c.ns3 {
					be = ns3Backend(b, DefaultParams(), 10*sim.Millisecond)
				} else {
					be = nativeBackend(b, DefaultParams(), nil)
				}
				o = drive(b, be, pos, sends, sim.Time(d), nil)
			}
			b.ReportMetric(pdr(o), "pdr")
		})
	}
}

// TestSensitivityEdgeMatchesNS3: 802.11b at 1 Mbit/s without preamble
// detection, 7-byte broadcasts to receivers from 195 to 225 m: PDR within
// 3 points of ns-3 at every distance, and none beyond 214.6 m, where the
// received power falls below ns-3's sensitivity scaled to the 22 MHz of
// DSSS (-101 + 10 log10(22/20) = -100.59 dBm). With the 20 MHz
// sensitivity (-101 dBm, 221 m) the native model delivered a few percent
// of these packets at 216-220 m, ns-3 none.
func TestSensitivityEdgeMatchesNS3(t *testing.T) {
	needNS3(t)
	dists := []float64{195, 200, 205, 210, 213, 216, 218, 220, 225}
	pos := []geom.Vec3{{}}
	for i, d := range dists {
		a := 2 * math.Pi * float64(i) / float64(len(dists))
		pos = append(pos, geom.V(d*math.Cos(a), d*math.Sin(a), 0))
	}
	const n = 1000
	var sends []send
	for k := 0; k < n; k++ {
		sends = append(sends, send{t: sim.Time(int64(k+1) * int64(5*sim.Millisecond)), src: 0, dst: netsim.Broadcast, size: 7})
	}
	end := sends[len(sends)-1].t.Add(sim.Second)
	p := DefaultParams()
	p.Standard, p.Mode, p.Preamble = "80211b", "DsssRate1Mbps", false
	nat := drive(t, nativeBackend(t, p, nil), pos, sends, end, nil)
	ref := drive(t, ns3Backend(t, p, 10*sim.Millisecond), pos, sends, end, nil)
	var line string
	for i, d := range dists {
		a, b := float64(nat.rx[0][i+1])/n, float64(ref.rx[0][i+1])/n
		line += fmt.Sprintf(" %gm:%.3f/%.3f", d, a, b)
		if math.Abs(a-b) > 0.03 || (d > 214.6 && a != 0) {
			t.Errorf("at %v m: native PDR %.3f, ns-3 %.3f", d, a, b)
		}
	}
	t.Logf("native/ns-3:%s", line)
}

// TestBackToBackMatchesNS3: k stations in range of each other and of a
// receiver send 56-byte frames (184 µs on the air at 6 Mbit/s) spaced
// 100 or 200 µs apart, 500 times, as broadcasts and as unicasts to the
// receiver: overall PDR within 2 points of ns-3 (measured: within 0.9
// points for 4 and 8 stations; 0.0 for unicast). Before the fix a station
// that got a packet while the medium was busy did not draw a backoff
// (802.11 basic access, ns-3's NeedBackoffUponAccess), so every station
// waiting for the same busy period transmitted DIFS after it, together:
// PDR 0.53 instead of ns-3's 0.96 for 3 stations 100 µs apart.
func TestBackToBackMatchesNS3(t *testing.T) {
	needNS3(t)
	for _, k := range []int{3, 8} {
		for _, uni := range []bool{false, true} {
			for _, sp := range []sim.Duration{100 * sim.Microsecond, 200 * sim.Microsecond} {
				pos := []geom.Vec3{{}}
				for i := 0; i < k; i++ {
					a := 2 * math.Pi * float64(i) / float64(k)
					pos = append(pos, geom.V(10*math.Cos(a), 10*math.Sin(a), 0))
				}
				dst := netsim.Broadcast
				if uni {
					dst = 0
				}
				var sends []send
				const n = 500
				for r := 0; r < n; r++ {
					for i := 0; i < k; i++ {
						at := sim.Time(int64(r+1)*int64(10*sim.Millisecond) + int64(i)*int64(sp))
						sends = append(sends, send{t: at, src: netsim.NodeID(i + 1), dst: dst, size: 56})
					}
				}
				end := sends[len(sends)-1].t.Add(sim.Second)
				p := DefaultParams()
				a := pdr(drive(t, nativeBackend(t, p, nil), pos, sends, end, nil))
				b := pdr(drive(t, ns3Backend(t, p, 10*sim.Millisecond), pos, sends, end, nil))
				if uni { // one intended receiver, not n-1
					a, b = a*float64(k), b*float64(k)
				}
				t.Logf("%d stations, unicast %v, %v apart: PDR native %.3f, ns-3 %.3f", k, uni, sp, a, b)
				if math.Abs(a-b) > 0.02 {
					t.Errorf("%d stations, unicast %v, %v apart: PDR native %.3f, ns-3 %.3f", k, uni, sp, a, b)
				}
			}
		}
	}
}
