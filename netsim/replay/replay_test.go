package replay

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"skyloop/netsim"
	"skyloop/netsim/impair"
	"skyloop/sim"
)

const (
	ms    = sim.Millisecond
	epoch = 10 * ms
	nodes = 4
)

// planned is one packet of the test's traffic plan.
type planned struct {
	src, dst netsim.NodeID
	kind     netsim.Kind
	seq      uint32
	size     int
	tsend    sim.Time
}

// plan is every node's traffic over [0, end): state updates every 30 ms
// (node i starting at i*3 ms, broadcast), a unicast bulk flow from node 1 to
// node 2 that overloads its 200 kbit/s transmitter in bursts, and a
// command from node 3 to node 0 every 45 ms; in send order.
func plan(end sim.Time) []planned {
	var out []planned
	seq := map[[2]int]uint32{}
	for t := sim.Time(0); t < end; t = t.Add(ms) {
		for i := 0; i < nodes; i++ {
			src := netsim.NodeID(i)
			add := func(dst netsim.NodeID, kind netsim.Kind, size int) {
				k := [2]int{i, int(kind)}
				out = append(out, planned{src, dst, kind, seq[k], size, t})
				seq[k]++
			}
			ms := int64(t / sim.Time(ms))
			if (ms-int64(3*i))%30 == 0 && ms >= int64(3*i) {
				add(netsim.Broadcast, netsim.KindState, 56)
			}
			if i == 1 && (ms%200 < 60) && ms%4 == 0 {
				add(2, netsim.KindBG, 1000)
			}
			if i == 3 && ms%45 == 7 {
				add(0, netsim.KindCmd, 20)
			}
		}
	}
	return out
}

// epochOf returns the packets of the plan sent in [t0, t1).
func epochOf(p []planned, t0, t1 sim.Time) []planned {
	i := slices.IndexFunc(p, func(q planned) bool { return q.tsend >= t0 })
	if i < 0 {
		return nil
	}
	j := slices.IndexFunc(p[i:], func(q planned) bool { return q.tsend >= t1 })
	if j < 0 {
		return p[i:]
	}
	return p[i : i+j]
}

func (q planned) packet(pool *netsim.PacketPool, id uint64) *netsim.Packet {
	pk := pool.Get(8)
	pk.ID, pk.Src, pk.Dst, pk.Port, pk.Kind, pk.Seq, pk.Size = id, q.src, q.dst, 5000, q.kind, q.seq, q.size
	pk.TGen, pk.TSend = q.tsend, q.tsend
	pk.Payload = fmt.Appendf(pk.Payload, "p%d", id)
	return pk
}

// ev is a trace event or a delivery, as the test compares them.
type ev struct {
	call   int // the AdvanceTo call that produced it (deliveries)
	kind   string
	t      sim.Time
	id     uint64
	node   netsim.NodeID
	reason netsim.DropReason
	power  uint64
	what   string // the packet's fields
}

func describe(p *netsim.Packet) string {
	return fmt.Sprintf("%d>%d %s#%d %dB gen %v sent %v", p.Src, p.Dst, p.Kind, p.Seq, p.Size, p.TGen, p.TSend)
}

func impairParams() impair.Params {
	p := impair.DefaultParams()
	p.Latency = 5 * ms
	p.Jitter = 30 * ms
	p.Loss = 0.3
	p.Rate = 200e3
	p.Queue = 3
	return p
}

func nodeInfos() []netsim.NodeInfo {
	var out []netsim.NodeInfo
	for i := 0; i < nodes; i++ {
		out = append(out, netsim.NodeInfo{ID: netsim.NodeID(i), Name: fmt.Sprint("n", i), Vehicle: true})
	}
	return out
}

// runDirect drives the impaired network itself, epoch by epoch as a
// coupled run does: the epoch's packets at its start, then AdvanceTo its
// last instant.
func runDirect(t *testing.T, p []planned, end sim.Time, seed uint64) []ev {
	var out []ev
	tr := netsim.TraceFunc(func(e *netsim.TraceEvent) {
		out = append(out, ev{kind: e.Type.String(), t: e.T, id: e.P.ID, node: e.Node, reason: e.Reason, power: math.Float64bits(e.RxPower), what: describe(e.P)})
	})
	b, err := impair.New(impairParams(), seed, tr)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(nodeInfos()); err != nil {
		t.Fatal(err)
	}
	var pool netsim.PacketPool
	next := 0
	call := 0
	for t0 := sim.Time(0); t0 < end; t0 = t0.Add(epoch) {
		t1 := min(t0.Add(epoch), end)
		for _, q := range epochOf(p, t0, t1) {
			b.Send(q.packet(&pool, uint64(next)))
			next++
		}
		ds, err := b.AdvanceTo(t1 - 1)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
			out = append(out, ev{call: call, kind: "delivery", t: d.At, id: d.P.ID, node: d.Dst, power: math.Float64bits(d.RxPower), what: describe(d.P)})
		}
		call++
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if pool.Live() != 0 {
		t.Errorf("direct run: %d packets not freed", pool.Live())
	}
	return out
}

// replayed records the network first, then plays the run: the live
// packets (ids from idBase) are handed over epoch by epoch and the backend
// advanced every step (a divisor of the epoch).
type replayed struct {
	b       *Backend
	out     []ev
	live    netsim.PacketPool
	planned netsim.PacketPool
	payload map[uint64]string
}

func record(t *testing.T, p []planned, end sim.Time, seed uint64) *replayed {
	r := &replayed{payload: map[uint64]string{}}
	tr := netsim.TraceFunc(func(e *netsim.TraceEvent) {
		r.out = append(r.out, ev{kind: e.Type.String(), t: e.T, id: e.P.ID, node: e.Node, reason: e.Reason, power: math.Float64bits(e.RxPower), what: describe(e.P)})
	})
	b, err := New(func(tr netsim.Tracer) (netsim.Backend, error) { return impair.New(impairParams(), seed, tr) }, tr)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Start(nodeInfos()); err != nil {
		t.Fatal(err)
	}
	n := 0
	err = b.Record(end, epoch, func(t0, t1 sim.Time) ([]*netsim.Packet, error) {
		var ps []*netsim.Packet
		for _, q := range epochOf(p, t0, t1) {
			ps = append(ps, q.packet(&r.planned, 99999)) // the plan's ids are the backend's business
			n++
		}
		return ps, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if b.Packets() != len(p) || n != len(p) {
		t.Fatalf("%d packets in the plan, %d planned, want %d", b.Packets(), n, len(p))
	}
	if r.planned.Live() != 0 {
		t.Errorf("recording: %d planned packets not freed", r.planned.Live())
	}
	if len(r.out) != 0 {
		t.Fatalf("recording traced %d events to the run's tracer", len(r.out))
	}
	r.b = b
	return r
}

const idBase = 1000

func (r *replayed) play(t *testing.T, p []planned, end sim.Time, step sim.Duration, send func(k int, q planned) (planned, bool)) error {
	next := 0
	call := 0
	for ts := sim.Time(0); ts < end; ts = ts.Add(step) {
		if int64(ts)%int64(epoch) == 0 {
			for _, q := range epochOf(p, ts, min(ts.Add(epoch), end)) {
				k := next
				next++
				if send != nil {
					var ok bool
					if q, ok = send(k, q); !ok {
						continue
					}
				}
				pk := q.packet(&r.live, uint64(idBase+k))
				r.payload[pk.ID] = string(pk.Payload)
				r.b.Send(pk)
				if r.live.Live() != 0 {
					t.Fatalf("Send kept the live packet")
				}
			}
		}
		at := ts.Add(step) - 1
		ds, err := r.b.AdvanceTo(at)
		if err != nil {
			return err
		}
		for _, d := range ds {
			if got := string(d.P.Payload); got != r.payload[d.P.ID] {
				t.Fatalf("delivery of packet %d carries %q, sent with %q", d.P.ID, got, r.payload[d.P.ID])
			}
			if d.At > at {
				t.Fatalf("AdvanceTo(%v) delivered a packet arriving at %v", at, d.At)
			}
			r.out = append(r.out, ev{call: call, kind: "delivery", t: d.At, id: d.P.ID - idBase, node: d.Dst, power: math.Float64bits(d.RxPower), what: describe(d.P)})
		}
		if int64(at+1)%int64(epoch) == 0 || at+1 >= end {
			call++
		}
	}
	return nil
}

func diff(t *testing.T, what string, got, want []ev) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d events and deliveries, want %d", what, len(got), len(want))
	}
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			t.Fatalf("%s: event %d is\n%+v, want\n%+v", what, i, got[i], want[i])
		}
	}
}

// TestReplayServesRecordedFates records an impaired network with loss,
// jitter and queue drops, then replays it: the trace events and the
// deliveries equal those of running the network directly on the same
// packets, in the same order and the same AdvanceTo calls, with the live
// packets' ids and payloads.
func TestReplayServesRecordedFates(t *testing.T) {
	end := sim.Time(3 * sim.Second)
	p := plan(end)
	want := runDirect(t, p, end, 42)
	counts := map[string]int{}
	for _, e := range want {
		k := e.kind
		if e.kind == "drop" {
			k += "/" + e.reason.String()
		}
		counts[k]++
	}
	for _, k := range []string{"tx", "rx", "delivery", "drop/rx_error", "drop/queue"} {
		if counts[k] == 0 {
			t.Errorf("the direct run has no %s: the test does not exercise it (%v)", k, counts)
		}
	}
	// Jitter reorders arrivals.
	reordered := false
	for i := 1; i < len(want); i++ {
		if want[i].kind == "delivery" && want[i-1].kind == "delivery" && want[i].node == want[i-1].node && want[i].id < want[i-1].id {
			reordered = true
		}
	}
	if !reordered {
		t.Errorf("no reordering in the direct run")
	}
	// Trace events carry the live packets' ids: shift the direct run's.
	shift := func(es []ev) []ev {
		out := slices.Clone(es)
		for i := range out {
			if out[i].kind != "delivery" {
				out[i].id += idBase
			}
		}
		return out
	}

	// Advanced once per epoch, like the recording.
	r := record(t, p, end, 42)
	if err := r.play(t, p, end, epoch, nil); err != nil {
		t.Fatal(err)
	}
	diff(t, "advanced per epoch", r.out, shift(want))
	if err := r.b.Close(); err != nil {
		t.Fatal(err)
	}

	// Advanced every millisecond: the same, an epoch's fates served when
	// its last instant is reached.
	r = record(t, p, end, 42)
	if err := r.play(t, p, end, ms, nil); err != nil {
		t.Fatal(err)
	}
	diff(t, "advanced per millisecond", r.out, shift(want))

	// Another seed gives other fates (the recording is the seed's).
	other := runDirect(t, p, end, 43)
	if slices.Equal(other, want) {
		t.Errorf("seeds 42 and 43 gave the same run")
	}
}

// TestReplayRefusesOtherTraffic checks that a live run whose packets
// differ from the plan, or that sends more or fewer of them, is refused.
func TestReplayRefusesOtherTraffic(t *testing.T) {
	end := sim.Time(500 * ms)
	p := plan(end)
	cases := []struct {
		name string
		send func(k int, q planned) (planned, bool)
		want string
	}{
		{"other size", func(k int, q planned) (planned, bool) {
			if k == 7 {
				q.size++
			}
			return q, true
		}, "where the traffic plan has"},
		{"other destination", func(k int, q planned) (planned, bool) {
			if k == 3 {
				q.dst = 3
			}
			return q, true
		}, "where the traffic plan has"},
		{"a packet missing", func(k int, q planned) (planned, bool) { return q, k != 5 }, "where the traffic plan has"},
		{"the last packet missing", func(k int, q planned) (planned, bool) { return q, k != len(p)-1 }, "the run handed over"},
	}
	for _, c := range cases {
		r := record(t, p, end, 1)
		err := r.play(t, p, end, epoch, c.send)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "use network.mode: coupled") {
			t.Errorf("%s: %v", c.name, err)
		}
		// The error stays.
		if _, err2 := r.b.AdvanceTo(end + 1); err2 == nil {
			t.Errorf("%s: AdvanceTo after the error succeeded", c.name)
		}
	}
	// A packet beyond the plan.
	r := record(t, p, end, 1)
	if err := r.play(t, p, end, epoch, nil); err != nil {
		t.Fatal(err)
	}
	r.b.Send(planned{0, netsim.Broadcast, netsim.KindState, 999, 56, end}.packet(&r.live, 5))
	if _, err := r.b.AdvanceTo(end.Add(10 * ms)); err == nil || !strings.Contains(err.Error(), "beyond the") {
		t.Errorf("a packet beyond the plan: %v", err)
	}
	// Recording twice, or with no epoch, is refused.
	if err := r.b.Record(end, epoch, nil); err == nil {
		t.Errorf("recorded twice")
	}
	b, err := New(func(tr netsim.Tracer) (netsim.Backend, error) { return impair.New(impairParams(), 1, tr) }, nil)
	if err != nil {
		t.Fatal(err)
	}
	b.Start(nodeInfos())
	if err := b.Record(end, 0, nil); err == nil {
		t.Errorf("an epoch of 0 accepted")
	}
	// A plan that fails fails the recording.
	b, _ = New(func(tr netsim.Tracer) (netsim.Backend, error) { return impair.New(impairParams(), 1, tr) }, nil)
	b.Start(nodeInfos())
	if err := b.Record(end, epoch, func(t0, t1 sim.Time) ([]*netsim.Packet, error) {
		if t0 > 0 {
			return nil, fmt.Errorf("planner broke")
		}
		return nil, nil
	}); err == nil || err.Error() != "planner broke" {
		t.Errorf("a failing plan: %v", err)
	}
}
