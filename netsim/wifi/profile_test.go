package wifi

import (
	"math"
	"slices"
	"strings"
	"testing"

	"skyloop/geom"
	"skyloop/netsim"
	"skyloop/sim"
)

// TestProfileParams: profile: ns-3.26 gives the parameters it governs that
// release's defaults, keeps the values a scenario set to something else,
// applies idempotently, and an unknown profile is an error that lists the
// known ones.
func TestProfileParams(t *testing.T) {
	p := DefaultParams()
	if bad := p.Validate(); len(bad) != 0 || p != DefaultParams() {
		t.Fatalf("ns-3.37: %v, %+v", bad, p)
	}
	p.Profile = "ns-3.26"
	if bad := p.Validate(); len(bad) != 0 {
		t.Fatal(bad)
	}
	want := DefaultParams()
	want.Profile, want.RxSensitivity, want.CcaSensitivity, want.Preamble = "ns-3.26", -96, -99, false
	want.ErrorModel, want.TxGain, want.RxGain, want.QueueSize = ErrorModelNist, 1, 1, 400
	if p != want {
		t.Fatalf("ns-3.26 defaults\n got %+v\nwant %+v", p, want)
	}
	if p.Validate(); p != want {
		t.Fatalf("not idempotent: %+v", p)
	}
	q := DefaultParams()
	q.Profile, q.QueueSize, q.RxSensitivity, q.ErrorModel = "ns-3.26", 100, -90, ErrorModelYans
	q.Validate()
	if q.QueueSize != 100 || q.RxSensitivity != -90 || q.ErrorModel != ErrorModelYans || q.CcaSensitivity != -99 {
		t.Fatalf("explicit values lost: %+v", q)
	}
	q = DefaultParams()
	q.Profile = "ns-3.99"
	if msg := q.Validate()["profile"]; !strings.Contains(msg, `"ns-3.99"`) || !strings.Contains(msg, "ns-3.37, ns-3.26") {
		t.Fatalf("message %q", msg)
	}
	if _, err := New(q, 1, nil); err == nil || !strings.Contains(err.Error(), "profile") {
		t.Fatalf("New: %v", err)
	}
}

// TestProfile326Range: 802.11b at 1 Mbit/s with ns-3.26's defaults: 1 dB
// of transmit and 1 dB of receive gain, and no frame is received below
// the -96 dBm energy detection threshold (175.7 m with the default
// channel), while the ns-3.37 model still receives some 1000-byte frames
// at 185 m; at 170 m, where ns-3.37 loses a quarter of them, ns-3.26
// (2 dB stronger, 0.41 dB more noise over 22 MHz) loses almost none.
func TestProfile326Range(t *testing.T) {
	dists := []float64{170, 175, 176.5, 185}
	pos := stations(dists)
	const n = 1000
	sends := broadcasts(n, 15*sim.Millisecond, 1000)
	end := sends[len(sends)-1].t.Add(sim.Second)
	pdrs := map[string][]float64{}
	for _, prof := range []string{"ns-3.37", "ns-3.26"} {
		p := DefaultParams()
		p.Profile, p.Standard, p.Mode, p.Preamble = prof, "80211b", "DsssRate1Mbps", false
		o := drive(t, nativeBackend(t, p, nil), pos, sends, end, nil)
		for i := range dists {
			pdrs[prof] = append(pdrs[prof], float64(o.rx[0][i+1])/n)
		}
	}
	t.Logf("PDR at %v m: ns-3.37 %v, ns-3.26 %v", dists, pdrs["ns-3.37"], pdrs["ns-3.26"])
	a, b := pdrs["ns-3.37"], pdrs["ns-3.26"]
	if !(a[0] < 0.8 && b[0] > 0.98 && b[1] > 0.98 && b[2] == 0 && b[3] == 0 && a[3] > 0) {
		t.Fatalf("PDR at %v m: ns-3.37 %v, ns-3.26 %v", dists, a, b)
	}
}

// TestProfile326Access: ns-3.26's DcfManager sends a packet that reaches
// an idle station at once (ns-3.37 waits DIFS), its ACK timeout is the
// fixed 340 µs of 802.11b (SIFS + the 304 µs ACK at 1 Mbit/s + slot +
// 2 × 3 µs), and a retry never draws a zero backoff. 802.11b at
// 11 Mbit/s without preamble detection, 64-byte unicasts over 80 m, where
// some tries fail (80 m; 90 m with ns-3.26's gains): the first
// try takes the 286 µs frame (no DIFS: 336 µs with ns-3.37), and the
// fastest delivery after one retry takes 286 + 340 + DIFS 50 + one slot
// 20 + 286 = 982 µs (ns-3.37: DIFS 50 + 286 + SIFS 10 + slot 20 + 192 µs of
// ACK preamble and header + DIFS 50 + 286, with 0 slots, = 894 µs),
// plus the propagation delay.
func TestProfile326Access(t *testing.T) {
	for _, c := range []struct {
		prof         string
		dist         float64
		first, retry sim.Duration
	}{
		{"ns-3.37", 80, 336 * sim.Microsecond, 894 * sim.Microsecond},
		{"ns-3.26", 90, 286 * sim.Microsecond, 982 * sim.Microsecond},
	} {
		const pairs, n = 8, 500
		var pos []geom.Vec3
		for j := 0; j < pairs; j++ {
			pos = append(pos, geom.V(float64(j)*3000, 0, 0), geom.V(float64(j)*3000+c.dist, 0, 0))
		}
		var sends []send
		for k := 0; k < n; k++ {
			for j := 0; j < pairs; j++ {
				at := sim.Time(int64(k+1)*int64(50*sim.Millisecond) + int64(j)*int64(sim.Millisecond))
				sends = append(sends, send{t: at, src: netsim.NodeID(2 * j), dst: netsim.NodeID(2*j + 1), size: 64})
			}
		}
		end := sends[len(sends)-1].t.Add(sim.Second)
		p := DefaultParams()
		p.Profile, p.Standard, p.Mode, p.Preamble = c.prof, "80211b", "DsssRate11Mbps", false
		o := drive(t, nativeBackend(t, p, nil), pos, sends, end, nil)
		var lat []sim.Duration
		for j := 0; j < pairs; j++ {
			lat = append(lat, o.lat[2*j+1]...)
		}
		prop := sim.Duration(math.Round(c.dist / speedOfLight * 1e9))
		first := slices.Min(lat)
		retry := sim.Duration(math.Round(retryStep(lat) * 1e6))
		retried := 0
		for _, l := range lat {
			if l > first+20*sim.Microsecond {
				retried++
			}
		}
		t.Logf("%s at %g m: %d of %d delivered, %d after a retry; first try %v, after one retry %v", c.prof, c.dist, len(lat), pairs*n, retried, first, retry)
		if first != c.first+prop || retry != c.retry+prop {
			t.Errorf("%s: first try %v, after one retry %v; want %v and %v", c.prof, first, retry, c.first+prop, c.retry+prop)
		}
	}
}

// TestProfile326CarrierSense: ns-3.26 declares the medium busy while the
// energy of frames it cannot receive is above -99 dBm (CcaMode1Threshold),
// ns-3.37 only above -82 dBm (CcaSensitivity): a station 197 m from a
// sender (-97.5 dBm with ns-3.26's 2 dB of antenna gains, below its
// -96 dBm energy detection threshold) defers to it with ns-3.26 and not
// with ns-3.37.
func TestProfile326CarrierSense(t *testing.T) {
	for _, c := range []struct {
		prof string
		busy bool
	}{{"ns-3.37", false}, {"ns-3.26", true}} {
		p := DefaultParams()
		p.Profile, p.Standard, p.Mode = c.prof, "80211b", "DsssRate1Mbps"
		b := nativeBackend(t, p, nil)
		nodes := []netsim.NodeInfo{{ID: 0, Vehicle: true}, {ID: 1, Pos: geom.V(197, 0, 0), Vehicle: true}}
		if err := b.Start(nodes); err != nil {
			t.Fatal(err)
		}
		var pool netsim.PacketPool
		pk := pool.Get(0)
		pk.ID, pk.Src, pk.Dst, pk.Size, pk.TSend = 1, 0, netsim.Broadcast, 100, sim.Time(sim.Millisecond)
		b.Send(pk)
		if _, err := b.AdvanceTo(sim.Time(1100 * sim.Microsecond)); err != nil {
			t.Fatal(err)
		}
		r := &b.nodes[1]
		mid := sim.Time(1100 * sim.Microsecond)
		if got := r.busyFrom <= mid && mid < r.busyUntil; got != c.busy {
			t.Errorf("%s: medium busy at 197 m during the frame: %v, want %v (busy %v..%v)", c.prof, got, c.busy, r.busyFrom, r.busyUntil)
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestProfile326ErrorModel: with ns-3.26 a frame's success is
// NistErrorRateModel's over the coded bits of each chunk (the PHY rate:
// 12 Mbit/s for 6 Mbit/s OFDM, so 48 bits for the 4 µs header), with the
// noise of a 20 MHz channel (802.11a) or of 22 MHz (802.11b).
func TestProfile326ErrorModel(t *testing.T) {
	for _, c := range []struct {
		std, mode string
		dbm       float64
	}{{"80211a", "OfdmRate6Mbps", -90.5}, {"80211b", "DsssRate11Mbps", -88.5}} {
		p := DefaultParams()
		p.Profile, p.Standard, p.Mode = "ns-3.26", c.std, c.mode
		b := nativeBackend(t, p, nil)
		m, _ := ModeByName(c.mode)
		const size = 100
		dur := b.tm.duration(m, size)
		r := &node{}
		s := signal{id: 1, start: 0, end: sim.Time(dur), w: dbmToW(c.dbm)}
		r.sigs = append(r.sigs, s)
		ph, pt, _ := b.success(r, &s, &m, false)
		noise := 1.3803e-23 * 290 * 20e6 * math.Pow(10, 0.7)
		if c.std == "80211b" {
			noise *= 22.0 / 20
		}
		snr := s.w / noise
		hm := b.tm.headerMode
		bits := func(m Mode, d sim.Duration) int { return int(d.Seconds() * m.PhyRateBps()) }
		wantH := ErrorModelNist.ChunkSuccess(hm, snr, bits(hm, b.tm.header))
		wantP := wantH * ErrorModelNist.ChunkSuccess(m, snr, bits(m, dur-b.tm.preamble-b.tm.header))
		t.Logf("%s at %v dBm: header %.6f, frame %.6f", c.mode, c.dbm, ph, pt)
		if math.Abs(ph-wantH) > 1e-12 || math.Abs(pt-wantP) > 1e-12 || !(pt > 0.01 && pt < 0.99) {
			t.Errorf("%s at %v dBm: header %.6f, frame %.6f; want %.6f, %.6f", c.mode, c.dbm, ph, pt, wantH, wantP)
		}
	}
}
