package wifi

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"skyloop/geom"
	"skyloop/internal/ns3test"
	"skyloop/netsim"
	"skyloop/netsim/ns3"
	"skyloop/sim"
)

type send struct {
	t        sim.Time
	src, dst netsim.NodeID
	size     int
}

// outcome counts what a run delivered.
type outcome struct {
	rx      [][]int // [src][dst] receptions
	rxBytes int64
	sent    int
	backend netsim.Backend
	lat     [][]sim.Duration // [dst] latencies (delivery time - send time) of the packets delivered to dst
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
	o := outcome{rx: make([][]int, len(pos)), backend: b, lat: make([][]sim.Duration, len(pos))}
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
			o.lat[d.Dst] = append(o.lat[d.Dst], d.At.Sub(d.P.TSend))
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

// stations places a receiver at each distance from node 0 at the origin,
// spread around a circle so that they do not shadow one another.
func stations(dists []float64) []geom.Vec3 {
	pos := []geom.Vec3{{}}
	for i, d := range dists {
		a := 2 * math.Pi * float64(i) / float64(len(dists))
		pos = append(pos, geom.V(d*math.Cos(a), d*math.Sin(a), 0))
	}
	return pos
}

// broadcasts are n broadcasts of size bytes from node 0, one every period
// from period on.
func broadcasts(n int, period sim.Duration, size int) []send {
	sends := make([]send, 0, n)
	for k := 0; k < n; k++ {
		sends = append(sends, send{t: sim.Time(int64(k+1) * int64(period)), src: 0, dst: netsim.Broadcast, size: size})
	}
	return sends
}

// TestPDRvsDistanceMatchesNS3: two-node PDR vs distance (receivers in
// different directions from one sender) for every DSSS rate, preamble
// detection on and off: within 3 percentage points of ns-3 everywhere
// (measured: within 2).
func TestPDRvsDistanceMatchesNS3(t *testing.T) {
	ns3test.Need(t)
	dists := []float64{30, 51, 52, 80, 95, 110, 125, 140, 155, 170, 185, 200, 230}
	pos := stations(dists)
	const n = 1000 // sampling noise is about 1.4 points; the runs are deterministic (fixed seeds)
	sends := broadcasts(n, 15*sim.Millisecond, 1000)
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
// PDR within 0.5 percentage points of ns-3 (measured: 0.9111 and 0.9111,
// 0.3222 and 0.3232, 0 and 0.0036; 50 nodes gave 0.3199 while frames not
// received kept the medium busy only above -62 dBm each).
func TestBroadcastPDRMatchesNS3(t *testing.T) {
	ns3test.Need(t)
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
		if math.Abs(a-b) > 0.005 {
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
// (measured: within 3.3%; 2.9% before the ACK timeout and EIFS fixes
// shortened every collision's retry for 802.11b at 11 Mbit/s).
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
				ns3test.Need(b)
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
	ns3test.Need(t)
	dists := []float64{195, 200, 205, 210, 213, 216, 218, 220, 225}
	pos := stations(dists)
	const n = 1000
	sends := broadcasts(n, 5*sim.Millisecond, 7)
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

// TestBackToBackMatchesNS3: k stations on a circle around a receiver send
// 56-byte frames (184 µs on the air at 6 Mbit/s) spaced 100 or 200 µs
// apart, 500 times, as broadcasts and as unicasts to the receiver: overall
// PDR within 1.5 points of ns-3 (measured: within 0.9). On a 10 m circle
// every station hears every other one above -62 dBm; on a 30 m circle
// some pairs are between -82 and -62 dBm, or just below -82 dBm apart
// but above it together. Before the first fix a station that got a packet
// while the medium was busy did not draw a backoff (802.11 basic access,
// ns-3's NeedBackoffUponAccess), so every station waiting for the same
// busy period transmitted DIFS after it, together: PDR 0.53 instead of
// ns-3's 0.96 for 3 stations 10 m away, 100 µs apart. Before the second, a
// frame a station did not receive kept its medium busy only above
// -62 dBm, where ns-3.37 keeps it busy while the total energy of such
// frames is above CcaSensitivity (-82 dBm): on the 30 m circle PDR 0.101
// instead of 0.162 (3 stations) and 0.339 instead of 0.394 (8 stations),
// 100 µs apart.
func TestBackToBackMatchesNS3(t *testing.T) {
	ns3test.Need(t)
	for _, radius := range []float64{10, 30} {
		for _, k := range []int{3, 8} {
			for _, uni := range []bool{false, true} {
				for _, sp := range []sim.Duration{100 * sim.Microsecond, 200 * sim.Microsecond} {
					pos := []geom.Vec3{{}}
					for i := 0; i < k; i++ {
						a := 2 * math.Pi * float64(i) / float64(k)
						pos = append(pos, geom.V(radius*math.Cos(a), radius*math.Sin(a), 0))
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
					t.Logf("%g m, %d stations, unicast %v, %v apart: PDR native %.3f, ns-3 %.3f", radius, k, uni, sp, a, b)
					if math.Abs(a-b) > 0.015 {
						t.Errorf("%g m, %d stations, unicast %v, %v apart: PDR native %.3f, ns-3 %.3f", radius, k, uni, sp, a, b)
					}
				}
			}
		}
	}
}

// meanMs is the mean of ds in milliseconds (NaN for none).
func meanMs(ds []sim.Duration) float64 {
	var s float64
	for _, d := range ds {
		s += d.Seconds() * 1e3
	}
	return s / float64(len(ds))
}

// pctMs is the q-quantile of ds in milliseconds (nearest rank; NaN for none).
func pctMs(ds []sim.Duration, q float64) float64 {
	if len(ds) == 0 {
		return math.NaN()
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))].Seconds() * 1e3
}

// TestEdgeLatencyMatchesNS3: unicast at the range edge, 802.11b at
// 1 Mbit/s and 802.11a at 6 Mbit/s without preamble detection, four pairs
// per distance (3 km apart, so they do not hear each other) each sending
// 2000 64-byte packets 100 ms apart: PDR within 3 points of ns-3, mean
// latency within 6%, and the latency of a packet delivered after one retry
// with no backoff (the smallest latency beyond the first try: the data
// frame, the ACK timeout, DIFS and the data frame again) equal to ns-3's
// within 1 µs. The old ACK timeout (waiting for the whole ACK after its
// PHY header) made every retry 304 µs longer at 1 Mbit/s, 44 µs at
// 6 Mbit/s; ns-3.37 gives up SIFS + slot + the ACK's PHY preamble and
// header after the data frame unless a PSDU reception has started by then.
func TestEdgeLatencyMatchesNS3(t *testing.T) {
	ns3test.Need(t)
	for _, c := range []struct {
		std, mode string
		dists     []float64
	}{
		{"80211b", "DsssRate1Mbps", []float64{190, 200, 205, 210}},
		{"80211a", "OfdmRate6Mbps", []float64{130, 134, 138, 142}},
	} {
		const pairs, n = 4, 2000
		var pos []geom.Vec3
		for i, d := range c.dists {
			for j := 0; j < pairs; j++ {
				x, y := float64(i)*3000, float64(j)*3000
				pos = append(pos, geom.V(x, y, 0), geom.V(x+d, y, 0))
			}
		}
		var sends []send
		for k := 0; k < n; k++ {
			for i := 0; i < len(pos)/2; i++ {
				at := sim.Time(int64(k+1)*int64(100*sim.Millisecond) + int64(i)*int64(sim.Millisecond)/4)
				sends = append(sends, send{t: at, src: netsim.NodeID(2 * i), dst: netsim.NodeID(2*i + 1), size: 64})
			}
		}
		end := sends[len(sends)-1].t.Add(2 * sim.Second)
		p := DefaultParams()
		p.Standard, p.Mode, p.Preamble = c.std, c.mode, false
		nat := drive(t, nativeBackend(t, p, nil), pos, sends, end, nil)
		ref := drive(t, ns3Backend(t, p, 10*sim.Millisecond), pos, sends, end, nil)
		for i, d := range c.dists {
			var a, b []sim.Duration
			for j := 0; j < pairs; j++ {
				a = append(a, nat.lat[2*(i*pairs+j)+1]...)
				b = append(b, ref.lat[2*(i*pairs+j)+1]...)
			}
			pa, pb := float64(len(a))/(pairs*n), float64(len(b))/(pairs*n)
			ma, mb := meanMs(a), meanMs(b)
			ra, rb := retryStep(a), retryStep(b)
			t.Logf("%s %gm: PDR %.3f/%.3f, mean latency %.3f/%.3f ms, p95 %.3f/%.3f ms, one retry %.4f/%.4f ms (native/ns-3)",
				c.mode, d, pa, pb, ma, mb, pctMs(a, 0.95), pctMs(b, 0.95), ra, rb)
			if math.Abs(pa-pb) > 0.03 {
				t.Errorf("%s at %g m: PDR %.3f, ns-3 %.3f", c.mode, d, pa, pb)
			}
			if math.Abs(ma-mb) > 0.06*mb {
				t.Errorf("%s at %g m: mean latency %.3f ms, ns-3 %.3f ms", c.mode, d, ma, mb)
			}
			if math.Abs(ra-rb) > 1e-3 {
				t.Errorf("%s at %g m: latency after one retry %.4f ms, ns-3 %.4f ms", c.mode, d, ra, rb)
			}
		}
	}
}

// retryStep returns the smallest latency (ms) beyond the first try: the
// latencies of first tries are all within a few µs of the smallest one.
func retryStep(ds []sim.Duration) float64 {
	if len(ds) == 0 {
		return math.NaN()
	}
	first := slices.Min(ds)
	best := sim.Duration(math.MaxInt64)
	for _, d := range ds {
		if d > first+20*sim.Microsecond && d < best {
			best = d
		}
	}
	return best.Seconds() * 1e3
}

// TestSameSlotPreambleMatchesNS3: two stations on either side of a
// receiver broadcast 56-byte frames at the same instants on an idle
// medium, so both transmit in the same slot and their frames reach the
// receiver nanoseconds apart, the nearer (stronger) one first. ns-3 3.37
// detects a preamble only if its SNR at the end of the 4 µs detection
// window, over every frame heard by then, is at least 4 dB: within 4 dB
// neither frame gets through, beyond it the stronger does. Native PDR at
// the receiver from each sender is within 3 points of ns-3's for power
// ratios from 1 to 8 dB, whichever station's transmission is handled
// first. Before the fix the native model took the interference of the
// frame that arrived first at its first nanosecond, without the other
// frame, which arrived a nanosecond later (at 2 and 3 dB; at 1 dB both
// arrive in the same nanosecond): when the stronger frame arrived first
// but was handled second it was received 2 dB above the other (PDR 1.0
// where ns-3's is 0), the cause of the platoon-wifi-load gap in the
// validation matrix (state PDR 0.743 native, 0.667 on ns-3, over 20 s).
func TestSameSlotPreambleMatchesNS3(t *testing.T) {
	ns3test.Need(t)
	const near = 1.0 // metres from the receiver to the stronger station
	for _, db := range []float64{1, 2, 3, 5, 8} {
		far := near * math.Pow(10, db/30) // log-distance, exponent 3
		for _, strongFirst := range []bool{false, true} {
			// Node 0 receives; node 1 is the weaker station, node 2 the
			// stronger; the first of each pair of sends is handled first.
			pos := []geom.Vec3{{}, geom.V(far, 0, 0), geom.V(-near, 0, 0)}
			first, second := netsim.NodeID(1), netsim.NodeID(2)
			if strongFirst {
				first, second = second, first
			}
			var sends []send
			const n = 400
			for r := 0; r < n; r++ {
				at := sim.Time(int64(r+1) * int64(10*sim.Millisecond))
				sends = append(sends, send{t: at, src: first, dst: netsim.Broadcast, size: 56},
					send{t: at, src: second, dst: netsim.Broadcast, size: 56})
			}
			end := sends[len(sends)-1].t.Add(sim.Second)
			p := DefaultParams()
			a := drive(t, nativeBackend(t, p, nil), pos, sends, end, nil)
			b := drive(t, ns3Backend(t, p, 10*sim.Millisecond), pos, sends, end, nil)
			for src := 1; src <= 2; src++ {
				x, y := float64(a.rx[src][0])/n, float64(b.rx[src][0])/n
				t.Logf("%g dB apart, stronger handled first %v: PDR at the receiver from node %d: native %.3f, ns-3 %.3f", db, strongFirst, src, x, y)
				if math.Abs(x-y) > 0.03 {
					t.Errorf("%g dB apart, stronger handled first %v: PDR at the receiver from node %d: native %.3f, ns-3 %.3f", db, strongFirst, src, x, y)
				}
			}
		}
	}
}
