package routing

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"skyloop/edge"
	"skyloop/geom"
	"skyloop/internal/ns3test"
	"skyloop/netsim"
	"skyloop/netsim/ns3"
	"skyloop/netsim/wifi"
	"skyloop/sim"
)

// ns3Run runs the ns-3 backend with its own routing protocol over the
// same Wi-Fi parameters.
func ns3Run(t testing.TB, proto string, w wifi.Params, pos []geom.Vec3, sends []send, end sim.Time, move func(sim.Time, []geom.Vec3) bool) result {
	t.Helper()
	b, err := newNS3(nsParams(proto, w))
	if err != nil {
		t.Fatal(err)
	}
	return run(t, b, pos, sends, end, move)
}

// nsParams are ns-3's parameters for the native Wi-Fi parameters w.
func nsParams(proto string, w wifi.Params) ns3.Params {
	q := ns3.DefaultParams()
	q.Standard, q.Mode, q.Preamble, q.TxPower, q.Routing, q.Epoch = w.Standard, w.Mode, w.Preamble, w.TxPower, proto, 10*sim.Millisecond
	return q
}

func newNS3(q ns3.Params) (*ns3.Backend, error) { return ns3.New(q, 1, nil) }

// TestLineMatchesNS3: the seven-node line 40 m apart (802.11a, 6 Mbit/s):
// every packet from node 0 reaches node 6 with both AODV and OLSR, on
// both backends, and the mean delay is within 20% of ns-3's.
func TestLineMatchesNS3(t *testing.T) {
	ns3test.Need(t)
	pos := line(7, 40)
	sends := every(0, 6, 64, 15*sim.Time(sim.Second), 25*sim.Time(sim.Second), 100*sim.Millisecond)
	end := 27 * sim.Time(sim.Second)
	for _, proto := range []string{AODV, OLSR} {
		t.Run(proto, func(t *testing.T) {
			nat := drive(t, proto, wifiLink(wifi.DefaultParams()), line(7, 40), sends, end, nil)
			ref := ns3Run(t, proto, wifi.DefaultParams(), pos, sends, end, nil)
			ng, nd := nat.stats(6)
			rg, rd := ref.stats(6)
			t.Logf("%s: native %d/%d mean delay %v; ns-3 %d/%d mean delay %v", proto, ng, len(sends), nd, rg, len(sends), rd)
			if ng != len(sends) || rg != len(sends) {
				t.Errorf("PDR: native %d, ns-3 %d of %d", ng, rg, len(sends))
			}
			if math.Abs(nd.Seconds()-rd.Seconds()) > 0.2*rd.Seconds() {
				t.Errorf("mean delay: native %v, ns-3 %v (more than 20%% apart)", nd, rd)
			}
		})
	}
}

// relay is the seven-drone relay's geometry (scenarios/ubanc/relay7.yaml):
// seven drones circling
// (20 m radius, 5 m/s) about centres gap metres apart in a line, each a
// seventh of a turn behind the one before.
func relay(gap float64) ([]geom.Vec3, func(sim.Time, []geom.Vec3) bool) {
	const r, v = 20.0, 5.0
	return circling(func(i int, t sim.Time) geom.Vec3 {
		a := v/r*t.Seconds() + 2*math.Pi*float64(i)/7
		return geom.V(gap*float64(i)+r*math.Cos(a), r*math.Sin(a), 10)
	})
}

// circling gives seven drones' positions at time 0 and a move function
// that puts drone i at at(i, now) every 10 ms.
func circling(at func(i int, t sim.Time) geom.Vec3) ([]geom.Vec3, func(sim.Time, []geom.Vec3) bool) {
	pos := make([]geom.Vec3, 7)
	for i := range pos {
		pos[i] = at(i, 0)
	}
	return pos, func(now sim.Time, pos []geom.Vec3) bool {
		if now%sim.Time(10*sim.Millisecond) != 0 {
			return false
		}
		for i := range pos {
			pos[i] = at(i, now)
		}
		return true
	}
}

// relayParams is the relay's network: 802.11b at 1 Mbit/s without
// preamble detection (with ns-3's threshold model, frames weaker than
// -82 dBm, about 54 m away, are never received: the drones 80 m apart
// would not hear each other).
func relayParams() wifi.Params {
	w := wifi.DefaultParams()
	w.Standard, w.Mode, w.Preamble = "80211b", "DsssRate1Mbps", false
	return w
}

// TestRelayMatchesNS3: the seven-drone relay (relay7.yaml) at 10
// packets/s for 60 s: the same protocol ahead on both backends, and the
// delivered data rate within 15% of ns-3's for AODV and OLSR. Measured:
// AODV 4068 vs 4161 B/s (2.2%; 10.1% before AODV followed ns-3), OLSR
// 2560 vs 2914 B/s (12%: this seed's native OLSR forms its first route to
// drone 6 at 15 s, ns-3's at 10 s; over 16 seeds the first route comes at
// 13.8 s natively and 13.1 s on ns-3, one TC interval apart in single
// seeds either way).
func TestRelayMatchesNS3(t *testing.T) {
	ns3test.Need(t)
	end := 60 * sim.Time(sim.Second)
	sends := every(0, 6, 512, 5*sim.Time(sim.Second), end, 100*sim.Millisecond)
	rate := map[string][2]float64{}
	for _, proto := range []string{AODV, OLSR} {
		pos, move := relay(80)
		nat := drive(t, proto, wifiLink(relayParams()), pos, sends, end, move)
		pos, move = relay(80)
		ref := ns3Run(t, proto, relayParams(), pos, sends, end, move)
		ng, nd := nat.stats(6)
		rg, rd := ref.stats(6)
		secs := (end - 5*sim.Time(sim.Second)).Seconds()
		rate[proto] = [2]float64{float64(ng) * 512 / secs, float64(rg) * 512 / secs}
		t.Logf("%s: native %d/%d (%.0f B/s, mean delay %v, drops %v), ns-3 %d/%d (%.0f B/s, mean delay %v)", proto, ng, len(sends), rate[proto][0], nd, nat.f.drops, rg, len(sends), rate[proto][1], rd)
		for i := 0; i < 7; i++ {
			t.Logf("  native node %d: %+v", i, nat.b.Stats(netsim.NodeID(i)))
		}
		t.Logf("  delivered per 5 s: native %v, ns-3 %v", nat.histogram(6, 5*sim.Second, end), ref.histogram(6, 5*sim.Second, end))
	}
	for proto, r := range rate {
		if math.Abs(r[0]-r[1]) > 0.15*r[1] {
			t.Errorf("%s: delivered %.0f B/s natively, %.0f B/s on ns-3 (more than 15%% apart)", proto, r[0], r[1])
		}
	}
	if (rate[AODV][0] > rate[OLSR][0]) != (rate[AODV][1] > rate[OLSR][1]) {
		t.Errorf("AODV vs OLSR ordering differs: native %v, ns-3 %v", rate, rate)
	}
}

// histogram counts the packets delivered to dst by send time, per bin.
func (r result) histogram(dst netsim.NodeID, bin sim.Duration, end sim.Time) []int {
	h := make([]int, int(sim.Duration(end)/bin)+1)
	for id, st := range r.sendT {
		if _, ok := r.delivered[[2]uint64{id, uint64(dst)}]; ok {
			h[int(sim.Duration(st)/bin)]++
		}
	}
	return h
}

// aodvCounts counts AODV messages sent, by type; hellos (RREPs to all
// neighbours for the sender itself) apart. RREQs counts every copy sent,
// Originated the RREQs a node sent for itself.
type aodvCounts struct {
	RREQ, Originated, RREP, RERR, RREPACK, Hello int
}

func (c *aodvCounts) plus(d aodvCounts) {
	c.RREQ, c.Originated, c.RREP, c.RERR, c.RREPACK, c.Hello = c.RREQ+d.RREQ, c.Originated+d.Originated, c.RREP+d.RREP, c.RERR+d.RERR, c.RREPACK+d.RREPACK, c.Hello+d.Hello
}

func (c *aodvCounts) add(pl []byte, bcast bool) {
	if len(pl) < 2 {
		return
	}
	switch pl[0] {
	case aodvRREQ:
		c.RREQ++
		if len(pl) >= 4 && pl[3] == 0 {
			c.Originated++
		}
	case aodvRREP:
		if bcast && len(pl) >= 16 && string(pl[4:8]) == string(pl[12:16]) {
			c.Hello++
		} else {
			c.RREP++
		}
	case aodvRERR:
		c.RERR++
	case aodvRREPACK:
		c.RREPACK++
	}
}

// nativeAODV counts the AODV messages in a native run's trace.
type nativeAODV struct {
	netsim.Tracer
	c aodvCounts
}

func (n *nativeAODV) Trace(e *netsim.TraceEvent) {
	if e.Type == netsim.EvTx && e.P.Kind == netsim.KindAODV {
		n.c.add(e.P.Payload, e.P.Dst == netsim.Broadcast)
	}
	n.Tracer.Trace(e)
}

// ns3AODV counts the AODV messages ns-3 sent, from its per-node captures
// in dir (first transmissions only, not MAC retries). ns-3's messages are
// RFC 3561's; their fields sit where the native encoding has them, after
// the type byte.
func ns3AODV(t testing.TB, dir string, n int) aodvCounts {
	t.Helper()
	var c aodvCounts
	for i := 0; i < n; i++ {
		b, err := os.ReadFile(fmt.Sprintf("%s/ns3-%d-0.pcap", dir, i))
		if err != nil {
			t.Fatal(err)
		}
		if len(b) < 24 || binary.LittleEndian.Uint32(b) != 0xa1b2c3d4 || binary.LittleEndian.Uint32(b[20:]) != 127 {
			t.Fatalf("node %d: not a radiotap pcap", i)
		}
		me := []byte{0, 0, 0, 0, 0, byte(i + 1)} // ns-3's MAC addresses
		for b = b[24:]; len(b) >= 16; {
			size := int(binary.LittleEndian.Uint32(b[8:]))
			f := b[16 : 16+size]
			b = b[16+size:]
			f = f[binary.LittleEndian.Uint16(f[2:]):] // radiotap
			if len(f) < 24 || f[0]&0x0c != 0x08 || f[1]&0x08 != 0 || string(f[10:16]) != string(me) {
				continue // not a data frame this node sent first-hand
			}
			hdr := 24
			if f[0]&0x80 != 0 {
				hdr = 26 // QoS data
			}
			f = f[hdr:]
			if len(f) < 8+20+8 || f[6] != 0x08 || f[7] != 0x00 {
				continue // not IPv4
			}
			ip := f[8:]
			ihl := int(ip[0]&0xf) * 4
			if ip[9] != 17 || len(ip) < ihl+8 || binary.BigEndian.Uint16(ip[ihl+2:]) != 654 {
				continue
			}
			c.add(ip[ihl+8:], ip[16] == 10 && ip[17] == 1 && ip[18] == 255 && ip[19] == 255)
		}
	}
	return c
}

// ubanc7 is the UB-ANC relay of scenarios/ubanc/relay7.yaml: seven drones
// circling (20 m radius, 5 m/s) about centres 80 m apart on a line, each
// half a turn behind the one before, so that neighbours are 40 to 120 m
// apart and every other drone is exactly 160 m away.
func ubanc7() ([]geom.Vec3, func(sim.Time, []geom.Vec3) bool) {
	const r, v = 20.0, 5.0
	return circling(func(i int, t sim.Time) geom.Vec3 {
		a := math.Pi*float64(i) + v/r*t.Seconds()
		return geom.V(80*float64(i)+r*math.Cos(a), r*math.Sin(a), 5)
	})
}

// ns3Counters runs ns-3 backend b (made with Pcap set) with its captures
// in a temporary directory and returns the run, its routing.csv rows (node: columns) and
// the directory.
func ns3Counters(t testing.TB, b *ns3.Backend, pos []geom.Vec3, sends []send, end sim.Time, move func(sim.Time, []geom.Vec3) bool) (result, [][]uint64, string) {
	t.Helper()
	dir := t.TempDir()
	var csv bytes.Buffer
	b.Open(&edge.Env{Create: func(string) (io.Writer, error) { return &csv, nil }, WorkDir: func(string) (string, error) { return dir, nil }})
	res := run(t, b, pos, sends, end, move)
	var rows [][]uint64
	for i, l := range strings.Split(strings.TrimSpace(csv.String()), "\n") {
		if i == 0 {
			continue
		}
		var row []uint64
		for _, f := range strings.Split(l, ",") {
			v, err := strconv.ParseUint(f, 10, 64)
			if err != nil {
				t.Fatalf("routing.csv: %q: %v", l, err)
			}
			row = append(row, v)
		}
		rows = append(rows, row)
	}
	if len(rows) != len(pos) {
		t.Fatalf("routing.csv has %d rows for %d nodes", len(rows), len(pos))
	}
	return res, rows, dir
}

// TestUBANCRelayMatchesNS3: the UB-ANC relay (scenarios/ubanc/relay7.yaml:
// AODV, 100 packets/s of 64 bytes from node 0 to node 6 from 10 s on),
// with five seeds on each backend. The nodes that forward (2 and 4, the
// scenario's drones 3 and 5, 160 m apart, carry every packet, except in a
// seed whose first route discovery settles on a longer or weaker path,
// which AODV then keeps), the control traffic by message type, the
// delivered packets and the 95th percentile of the delay are ns-3's.
// Before AODV followed ns-3's state machine, the native run spread the
// forwarding over nodes 1-5 (in the scenario 3487/8116/2768/10827/25
// packets, with 157 route errors): a route broke whenever two HELLOs in a
// row were lost, where ns-3 keeps a neighbour alive while it forwards data
// to it.
func TestUBANCRelayMatchesNS3(t *testing.T) {
	ns3test.Need(t)
	end := 60 * sim.Time(sim.Second)
	sends := every(0, 6, 64, 10*sim.Time(sim.Second), end, 10*sim.Millisecond)
	type tally struct {
		straight   int // seeds forwarding through nodes 2 and 4 only
		got        int
		ctl, bytes uint64
		c          aodvCounts
		repairs    []int // per seed: RREQs and RERRs sent
		delays     []sim.Duration
	}
	var nat, ref tally
	pooled := func(ta *tally, r result) {
		for id, st := range r.sendT {
			if at, ok := r.delivered[[2]uint64{id, 6}]; ok {
				ta.got++
				ta.delays = append(ta.delays, at.Sub(st))
			}
		}
	}
	straight := func(fwd func(i int) uint64) bool {
		for i := 1; i < 6; i++ {
			if on := fwd(i) > uint64(len(sends))/20; on != (i == 2 || i == 4) {
				return false
			}
		}
		return true
	}
	for seed := uint64(1); seed <= 5; seed++ {
		pos, move := ubanc7()
		cnt := &nativeAODV{Tracer: newFates(t, 7)}
		b, err := NewWith(AODV, Options{}, seed, cnt, func(tr netsim.Tracer) (netsim.Backend, error) { return wifi.New(relayParams(), seed, tr) })
		if err != nil {
			t.Fatal(err)
		}
		nr := run(t, b, pos, sends, end, move)
		pos, move = ubanc7()
		q := nsParams(AODV, relayParams())
		q.Run = uint32(seed)
		q.Pcap = true
		nb, err := ns3.New(q, seed, nil)
		if err != nil {
			t.Fatal(err)
		}
		rr, rows, dir := ns3Counters(t, nb, pos, sends, end, move)
		rc := ns3AODV(t, dir, 7)
		var nf, rf []uint64
		for i := 0; i < 7; i++ {
			st := b.Stats(netsim.NodeID(i))
			nf, rf = append(nf, st.Forwarded), append(rf, rows[i][3])
			nat.ctl, nat.bytes = nat.ctl+st.ControlTx, nat.bytes+st.ControlTxBytes
			ref.ctl, ref.bytes = ref.ctl+rows[i][6], ref.bytes+rows[i][7]
		}
		t.Logf("seed %d: forwarded native %v, ns-3 %v; messages native %+v, ns-3 %+v", seed, nf, rf, cnt.c, rc)
		if straight(func(i int) uint64 { return nf[i] }) {
			nat.straight++
		}
		if straight(func(i int) uint64 { return rf[i] }) {
			ref.straight++
		}
		nat.c.plus(cnt.c)
		ref.c.plus(rc)
		nat.repairs = append(nat.repairs, cnt.c.RREQ+cnt.c.RERR)
		ref.repairs = append(ref.repairs, rc.RREQ+rc.RERR)
		pooled(&nat, nr)
		pooled(&ref, rr)
	}
	slices.Sort(nat.delays)
	slices.Sort(ref.delays)
	np95, rp95 := nat.delays[len(nat.delays)*95/100], ref.delays[len(ref.delays)*95/100]
	t.Logf("through nodes 2 and 4 only: native %d, ns-3 %d of 5 seeds; delivered native %d, ns-3 %d of %d; p95 delay native %v, ns-3 %v",
		nat.straight, ref.straight, nat.got, ref.got, 5*len(sends), np95, rp95)
	t.Logf("control: native %d packets %d B %+v; ns-3 %d packets %d B %+v", nat.ctl, nat.bytes, nat.c, ref.ctl, ref.bytes, ref.c)
	if nat.straight < 4 || ref.straight < 4 {
		t.Errorf("seeds forwarding through nodes 2 and 4 only: native %d, ns-3 %d of 5", nat.straight, ref.straight)
	}
	if math.Abs(float64(nat.got-ref.got)) > 0.03*float64(5*len(sends)) {
		t.Errorf("delivered: native %d, ns-3 %d of %d", nat.got, ref.got, 5*len(sends))
	}
	if math.Abs(np95.Seconds()-rp95.Seconds()) > 0.1*rp95.Seconds() {
		t.Errorf("p95 delay: native %v, ns-3 %v", np95, rp95)
	}
	within := func(what string, a, b int, tol float64) {
		if math.Abs(float64(a-b)) > tol*float64(b) {
			t.Errorf("%s: native %d, ns-3 %d (more than %.0f%% apart)", what, a, b, 100*tol)
		}
	}
	within("control packets", int(nat.ctl), int(ref.ctl), 0.2)
	within("control bytes", int(nat.bytes), int(ref.bytes), 0.2)
	within("HELLOs", nat.c.Hello, ref.c.Hello, 0.2)
	// A seed whose first route is a weak one repairs it for a while (ns-3
	// seed 3: 67 RERRs): compare the median seed.
	slices.Sort(nat.repairs)
	slices.Sort(ref.repairs)
	if d := nat.repairs[2] - ref.repairs[2]; d > 4 || d < -4 {
		t.Errorf("route requests and errors per seed: native %v, ns-3 %v", nat.repairs, ref.repairs)
	}
}

// swarm is a ground station 40 m south of n×m UAVs 15 m apart at 15 m
// (munils-50-wifi's fan-out grid, smaller).
func swarm(cols, rows int) []geom.Vec3 {
	var pos []geom.Vec3
	for i := 0; i < cols*rows; i++ {
		pos = append(pos, geom.V(15*(float64(i%cols)-float64(cols-1)/2), -30+15*float64(i/cols), 15))
	}
	return append(pos, geom.V(0, -40, 1))
}

// swarmSends is munils-50-wifi's traffic for u UAVs and their ground
// station (node u): telemetry from every UAV every 200 ms (60 bytes), a
// command to every UAV every second (35 bytes), spread evenly.
func swarmSends(u int, end sim.Time) []send {
	var s []send
	g := netsim.NodeID(u)
	for i := 0; i < u; i++ {
		for t := sim.Time(200*sim.Millisecond) * sim.Time(i) / sim.Time(u); t < end; t = t.Add(200 * sim.Millisecond) {
			s = append(s, send{t: t, src: netsim.NodeID(i), dst: g, size: 60})
		}
		for t := sim.Time(sim.Second)*sim.Time(i)/sim.Time(u) + 1; t < end; t = t.Add(sim.Second) {
			s = append(s, send{t: t, src: g, dst: netsim.NodeID(i), size: 35})
		}
	}
	slices.SortStableFunc(s, func(a, b send) int { return cmp.Compare(a.t, b.t) })
	return s
}

// TestSwarmMatchesNS3: a shortened munils-50-wifi (25 UAVs and their
// ground station, static, its traffic for 8 s, three seeds): every UAV
// looks for the station at once and every node with a route answers
// (intermediate and gratuitous replies, RREP-ACKs), then the routes hold.
// Native AODV delivers what ns-3 delivers, per kind, and sends the same
// kinds of messages, but about 30% fewer of them in the start-up storm
// (ns-3's storms run longer: more of its replies are lost and repaired;
// see docs/routing.md). Before AODV followed ns-3 the native runs sent no
// RREP-ACK and no gratuitous RREP.
func TestSwarmMatchesNS3(t *testing.T) {
	ns3test.Need(t)
	const u = 25
	end := 8 * sim.Time(sim.Second)
	sends := swarmSends(u, end)
	var nat, ref aodvCounts
	var ng, rg [2]int // telemetry, commands delivered
	tally := func(r result, got *[2]int) {
		for i, s := range sends {
			if _, ok := r.delivered[[2]uint64{uint64(i + 1), uint64(s.dst)}]; ok {
				if int(s.dst) == u {
					got[0]++
				} else {
					got[1]++
				}
			}
		}
	}
	for seed := uint64(1); seed <= 3; seed++ {
		cnt := &nativeAODV{Tracer: newFates(t, u+1)}
		b, err := NewWith(AODV, Options{}, seed, cnt, func(tr netsim.Tracer) (netsim.Backend, error) { return wifi.New(wifi.DefaultParams(), seed, tr) })
		if err != nil {
			t.Fatal(err)
		}
		tally(run(t, b, swarm(5, 5), sends, end, nil), &ng)
		q := nsParams(AODV, wifi.DefaultParams())
		q.Pcap, q.Run = true, uint32(seed)
		nb, err := ns3.New(q, seed, nil)
		if err != nil {
			t.Fatal(err)
		}
		rr, _, dir := ns3Counters(t, nb, swarm(5, 5), sends, end, nil)
		tally(rr, &rg)
		rc := ns3AODV(t, dir, u+1)
		t.Logf("seed %d: native %+v, ns-3 %+v", seed, cnt.c, rc)
		nat.plus(cnt.c)
		ref.plus(rc)
	}
	var tel, cmd int
	for _, s := range sends {
		if int(s.dst) == u {
			tel++
		} else {
			cmd++
		}
	}
	t.Logf("delivered: telemetry native %d, ns-3 %d of %d; commands native %d, ns-3 %d of %d", ng[0], rg[0], 3*tel, ng[1], rg[1], 3*cmd)
	t.Logf("messages: native %+v, ns-3 %+v", nat, ref)
	for k, n := range [2]int{3 * tel, 3 * cmd} {
		if math.Abs(float64(ng[k]-rg[k])) > 0.03*float64(n) {
			t.Errorf("%s delivered: native %d, ns-3 %d of %d", [2]string{"telemetry", "commands"}[k], ng[k], rg[k], n)
		}
	}
	for _, c := range []struct {
		what     string
		nat, ref int
	}{
		{"HELLOs", nat.Hello, ref.Hello},
		{"route discoveries", nat.Originated, ref.Originated},
		{"RREPs", nat.RREP, ref.RREP},
		{"RREP-ACKs", nat.RREPACK, ref.RREPACK},
		{"all messages", nat.Hello + nat.RREQ + nat.RREP + nat.RERR + nat.RREPACK, ref.Hello + ref.RREQ + ref.RREP + ref.RERR + ref.RREPACK},
	} {
		if r := float64(c.nat) / float64(c.ref); r < 0.5 || r > 1.2 {
			t.Errorf("%s: native %d, ns-3 %d", c.what, c.nat, c.ref)
		}
	}
}
