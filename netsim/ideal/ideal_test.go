package ideal

import (
	"math"
	"testing"

	"skyloop/geom"
	"skyloop/netsim"
	"skyloop/sim"
)

const tick = sim.Millisecond

type evRec struct {
	typ    netsim.EventType
	t      sim.Time
	id     uint64
	node   netsim.NodeID
	reason netsim.DropReason
}

type delRec struct {
	id  uint64
	dst netsim.NodeID
	at  sim.Time
}

type harness struct {
	t      *testing.T
	b      *Backend
	pool   netsim.PacketPool
	events []evRec
	nextID uint64
}

func newHarness(t *testing.T, n int) *harness {
	h := &harness{t: t}
	h.b = New(netsim.TraceFunc(func(e *netsim.TraceEvent) {
		if e.P == nil || e.P.ID >= h.nextID {
			t.Fatalf("trace event %+v with a bad packet", *e)
		}
		if !math.IsNaN(e.RxPower) {
			t.Errorf("RxPower = %v, want NaN", e.RxPower)
		}
		h.events = append(h.events, evRec{e.Type, e.T, e.P.ID, e.Node, e.Reason})
	}))
	nodes := make([]netsim.NodeInfo, n)
	for i := range nodes {
		nodes[i] = netsim.NodeInfo{ID: netsim.NodeID(i), Pos: geom.V(float64(i)*1e6, 0, 0)}
	}
	if err := h.b.Start(nodes); err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *harness) send(src, dst netsim.NodeID, tsend sim.Time) uint64 {
	p := h.pool.Get(8)
	p.ID, p.Src, p.Dst, p.Size, p.TSend, p.TGen = h.nextID, src, dst, 8, tsend, tsend
	p.Seq = uint32(h.nextID)
	h.nextID++
	h.b.Send(p)
	return p.ID
}

func (h *harness) advance(t sim.Time) []delRec {
	d, err := h.b.AdvanceTo(t)
	if err != nil {
		h.t.Fatal(err)
	}
	var out []delRec
	for _, x := range d {
		if x.P == nil || x.P.ID >= h.nextID || x.P.Seq != uint32(x.P.ID) {
			h.t.Fatalf("delivery with a bad packet: %+v", x)
		}
		if x.At != x.P.TSend {
			h.t.Errorf("packet %d delivered at %v, want its send time %v", x.P.ID, x.At, x.P.TSend)
		}
		if !math.IsNaN(x.RxPower) {
			h.t.Errorf("RxPower = %v, want NaN", x.RxPower)
		}
		out = append(out, delRec{x.P.ID, x.Dst, x.At})
	}
	return out
}

func (h *harness) close() {
	if err := h.b.Close(); err != nil {
		h.t.Fatal(err)
	}
	if n := h.pool.Live(); n != 0 {
		h.t.Errorf("after Close, pool.Live() = %d, want 0", n)
	}
}

func TestBroadcast(t *testing.T) {
	h := newHarness(t, 4)
	if d := h.advance(0); len(d) != 0 {
		t.Fatalf("deliveries before any send: %v", d)
	}
	// Sent at tick 0 after the network phase, with a sub-tick time.
	id := h.send(2, netsim.Broadcast, sim.Time(300*sim.Microsecond))
	d := h.advance(sim.Time(tick))
	want := []delRec{{id, 0, 300 * sim.Time(sim.Microsecond)}, {id, 1, 300 * sim.Time(sim.Microsecond)}, {id, 3, 300 * sim.Time(sim.Microsecond)}}
	if len(d) != len(want) {
		t.Fatalf("deliveries %v, want %v", d, want)
	}
	for i := range want {
		if d[i] != want[i] {
			t.Errorf("delivery %d = %+v, want %+v", i, d[i], want[i])
		}
	}
	// Trace: tx (node = Broadcast) then the rx events, all at the send time.
	if len(h.events) != 4 || h.events[0].typ != netsim.EvTx || h.events[0].node != netsim.Broadcast {
		t.Fatalf("trace %+v, want tx then 3 rx", h.events)
	}
	for _, e := range h.events {
		if e.t != 300*sim.Time(sim.Microsecond) || e.id != id {
			t.Errorf("trace event %+v, want packet %d at the send time", e, id)
		}
	}
	for _, e := range h.events[1:] {
		if e.typ != netsim.EvRx {
			t.Errorf("trace event %+v after tx, want rx", e)
		}
	}
	h.close()
}

func TestUnicastAndNoRoute(t *testing.T) {
	h := newHarness(t, 3)
	h.advance(0)
	u := h.send(0, 2, 0)
	bad := h.send(0, 9, 0)
	neg := h.send(1, -7, 0)
	self := h.send(1, 1, 0)
	d := h.advance(sim.Time(tick))
	if len(d) != 1 || d[0] != (delRec{u, 2, 0}) {
		t.Fatalf("deliveries %+v, want only packet %d at node 2", d, u)
	}
	want := []evRec{
		{netsim.EvTx, 0, u, 2, 0},
		{netsim.EvRx, 0, u, 2, 0},
		{netsim.EvTx, 0, bad, 9, 0},
		{netsim.EvDrop, 0, bad, 9, netsim.DropNoRoute},
		{netsim.EvTx, 0, neg, -7, 0},
		{netsim.EvDrop, 0, neg, -7, netsim.DropNoRoute},
		{netsim.EvTx, 0, self, 1, 0},
		{netsim.EvDrop, 0, self, 1, netsim.DropNoRoute},
	}
	if len(h.events) != len(want) {
		t.Fatalf("trace %+v, want %+v", h.events, want)
	}
	for i := range want {
		if h.events[i] != want[i] {
			t.Errorf("trace event %d = %+v, want %+v", i, h.events[i], want[i])
		}
	}
	h.close()
}

// TestKernelLoop drives the backend like the kernel for many ticks and
// checks every packet's accounting and the trace order.
func TestKernelLoop(t *testing.T) {
	const n = 5
	h := newHarness(t, n)
	sent := 0
	var dels []delRec
	last := sim.Time(0)
	for k := int64(0); k < 200; k++ {
		now := sim.Time(k) * sim.Time(tick)
		d := h.advance(now)
		for _, x := range d {
			if x.at < last || x.at > now {
				t.Fatalf("delivery at %v outside [%v, %v]", x.at, last, now)
			}
		}
		dels = append(dels, d...)
		last = now
		for s := 0; s < n; s++ {
			if (k+int64(s))%3 == 0 {
				dst := netsim.Broadcast
				if s%2 == 1 {
					dst = netsim.NodeID((s + 1) % n)
				}
				h.send(netsim.NodeID(s), dst, now.Add(sim.Duration(s)*100*sim.Microsecond))
				sent++
			}
		}
		if h.pool.Live() > 2*n {
			t.Fatalf("%d packets live at tick %d: packets are not released", h.pool.Live(), k)
		}
	}
	dels = append(dels, h.advance(sim.Time(200)*sim.Time(tick))...)
	txSeen := map[uint64]bool{}
	rx := 0
	for _, e := range h.events {
		switch e.typ {
		case netsim.EvTx:
			txSeen[e.id] = true
		case netsim.EvRx:
			rx++
			if !txSeen[e.id] {
				t.Fatalf("rx of packet %d before its tx", e.id)
			}
		case netsim.EvDrop:
			t.Errorf("unexpected drop %+v", e)
		}
	}
	if len(txSeen) != sent {
		t.Errorf("%d tx events, want %d", len(txSeen), sent)
	}
	if rx != len(dels) {
		t.Errorf("%d rx events, %d deliveries", rx, len(dels))
	}
	h.close()
}

func TestNoLeaks(t *testing.T) {
	h := newHarness(t, 3)
	h.advance(0)
	h.send(0, netsim.Broadcast, 0)
	h.send(1, 5, 0)
	h.advance(sim.Time(tick)) // delivered; packets still referenced until the next call
	h.send(0, netsim.Broadcast, sim.Time(tick))
	h.send(0, netsim.Broadcast, sim.Time(sim.Second)) // not yet sent at Close
	if h.pool.Live() == 0 {
		t.Fatal("nothing live before Close")
	}
	h.close()
	if err := h.b.Close(); err != nil { // a second Close frees nothing twice
		t.Fatal(err)
	}
	if h.pool.Live() != 0 {
		t.Errorf("after second Close, Live = %d", h.pool.Live())
	}
}
