// Package routing is multi-hop routing for skyloop's own network models:
// flooding, AODV (RFC 3561) and OLSR (RFC 3626) as a layer over any link
// backend that implements netsim.Stepper (wifi, impair, ideal). The ns-3
// backend routes with ns-3's own protocols instead.
//
// The layer is itself a netsim.Backend. Application packets enter at their
// origin; the layer decides each hop and lends the link backend one packet
// per hop transmission (a hop packet, from its own pool), so forwarded data
// and control messages take airtime, contend, collide and get lost like any
// other frame. It advances the link backend event by event (Stepper), so a
// relay forwards a packet at the exact time it received it.
//
// What the run sees: one tx per application packet at its origin, one rx
// at each final receiver, or one drop per intended receiver whose reason is
// the link's (retry_limit, collision, ...) or the layer's (no_route, ttl).
// Per-hop data transmissions do not appear in trace.csv; they are counted
// per node in routing.csv. Control packets do appear, with their own kinds
// (aodv, olsr), as the link backend traced them, with ids from 1<<40 up.
//
// The protocols are pure state machines per node, driven by received
// control messages, timers and link-layer failures; their randomness
// (jitter) comes from the run seed, so runs are deterministic.
package routing

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"

	"skyloop/geom"
	"skyloop/netsim"
	"skyloop/sim"
)

// Protocol names as scenarios write them (network.routing).
const (
	None  = "none"
	Flood = "flood"
	AODV  = "aodv"
	OLSR  = "olsr"
)

// Protocols lists the valid values of network.routing.
var Protocols = []string{None, Flood, AODV, OLSR}

// How AODV sends its unicast control messages (RREP, RREP-ACK, unicast
// RERR), as scenarios write it (network.aodv_control).
const (
	// ControlLink sends them one hop at the link layer, as RFC 3561 and
	// real stacks (a connected-subnet route) do. The default.
	ControlLink = "link"
	// ControlRouted sends them through AODV's own route lookup, as ns-3
	// 3.37 does (its UDP socket asks AODV's RouteOutput): a message for a
	// neighbour without a VALID route entry waits in the request queue
	// while a RREQ floods the network to find that neighbour.
	ControlRouted = "routed"
)

// ControlModes lists the valid values of network.aodv_control.
var ControlModes = []string{ControlLink, ControlRouted}

// Options are the routing layer's settings beyond the protocol's name.
// The zero value is the default.
type Options struct {
	// AODVControl is ControlLink (or empty) or ControlRouted. It applies
	// to AODV only.
	AODVControl string
}

// DefaultTTL is the IP time-to-live of data packets at their origin
// (ns-3's default for UDP sockets).
const DefaultTTL = 64

// hopIDBase is the first id of a hop packet: far above any application
// packet id, so that control packets have ids of their own in trace.csv.
const hopIDBase = 1 << 40

// protocol is one routing protocol's state for every node.
type protocol interface {
	// start sizes the state for n nodes and schedules the first timers.
	start(t sim.Time)
	// timer runs a timer the protocol scheduled with Backend.after.
	timer(t sim.Time, n int32, kind uint8, arg uint64)
	// control handles a control packet that node n received from a
	// neighbour.
	control(t sim.Time, n int32, from int32, payload []byte)
	// unicast decides what node n does with application packet a bound
	// for another node: it forwards it (Backend.forward), buffers it, or
	// drops it. origin tells whether n is sending the packet (rather than
	// having received it from a neighbour).
	unicast(t sim.Time, n int32, a uint32, ttl uint8, origin bool)
	// deliver tells that application packet a reached its destination n.
	deliver(t sim.Time, n int32, a uint32)
	// broadcast decides whether node n, having received broadcast a for
	// the first time (or originating it), rebroadcasts it.
	broadcast(t sim.Time, n int32, a uint32, ttl uint8, origin bool)
	// linkFailed reports that node n could not deliver a unicast frame
	// to its neighbour next: its retries ran out, or it waited in the MAC
	// queue beyond its lifetime, or the queue was full (ns-3's
	// DroppedMpdu).
	linkFailed(t sim.Time, n, next int32)
}

// hop is a packet lent to the link backend: a data packet's transmission
// over one hop, or a control message.
type hop struct {
	id   uint64 // the hop packet's id; 0 when the slot is free
	app  uint32 // application packet slot (data hops)
	ttl  uint8
	data bool
}

// app is an application packet in the layer's hands.
type app struct {
	p     *netsim.Packet
	refs  int32 // hop packets in flight, buffers holding it, and the current decision
	got   []bool
	why   []netsim.DropReason // per intended receiver, last reason seen (broadcast); why[0] for unicast
	done  bool                // unicast: delivered
	valid bool
}

type evKind uint8

const (
	evSend  evKind = iota // an application packet at its send time
	evTimer               // a protocol timer
	evLink                // a hop packet due on the link (jittered control)
)

type event struct {
	kind evKind
	tk   uint8
	node int32
	arg  uint64
	pkt  *netsim.Packet
}

// Stats are one node's routing counters, as routing.csv writes them.
type Stats struct {
	DataTx, DataTxBytes       uint64 // data frames handed to the link (originated + forwarded), IP bytes
	Forwarded                 uint64 // data frames forwarded for others
	DataRx, DataRxBytes       uint64 // data packets received as a final destination, IP bytes
	ControlTx, ControlTxBytes uint64 // routing control packets sent, IP bytes
	ControlRx                 uint64 // routing control packets received
}

// linkFail is a unicast hop whose retries ran out, handled once the link
// backend's step has returned.
type linkFail struct{ n, next int32 }

// Backend is the routing layer over a link backend.
type Backend struct {
	proto protocol
	inner netsim.Backend
	step  netsim.Stepper
	tr    netsim.Tracer
	seed  uint64
	n     int

	pool    netsim.PacketPool
	hopSeq  uint64
	hops    []hop
	slot    map[uint64]uint32 // hop packet id -> its slot in hops
	ctlSeq  []uint32          // per sender: hop packets sent (their seq)
	freeHop []uint32
	apps    []app
	freeApp []uint32

	cal   *sim.Calendar[event]
	now   sim.Time
	out   []netsim.Delivery
	dead  netsim.Graveyard
	ev    netsim.TraceEvent
	fails []linkFail
	// outbox holds hop packets for the link until the current step is
	// done: the link's deliveries must stay valid while they are handled.
	outbox []*netsim.Packet
	// rxEnd is the end of the reception being handled: what a node sends
	// in answer leaves then, not at the sender's end of transmission a
	// propagation delay earlier (while the receiver still senses it).
	rxEnd sim.Time
	stats []Stats
	pos   []geom.Vec3
	open  func(name string) (io.Writer, error)
	csvw  io.Writer
}

// NewWith returns a routing layer running protocol name (flood, aodv or
// olsr) with options o over the link backend that link builds; link must
// report to the tracer it is given (the layer reads its hop packets' fates
// there) and the backend must implement netsim.Stepper. Every event the
// run should see goes to tr.
func NewWith(name string, o Options, seed uint64, tr netsim.Tracer, link func(tr netsim.Tracer) (netsim.Backend, error)) (*Backend, error) {
	switch o.AODVControl {
	case "", ControlLink:
	case ControlRouted:
		if name != AODV {
			return nil, fmt.Errorf("routing: aodv_control %q applies to aodv only, not %s", o.AODVControl, name)
		}
	default:
		return nil, fmt.Errorf("routing: unknown aodv_control %q: want link or routed", o.AODVControl)
	}
	if tr == nil {
		tr = netsim.Tracers(nil)
	}
	b := &Backend{tr: tr, seed: seed, cal: sim.NewCalendar[event](20, 12)}
	switch name {
	case Flood:
		b.proto = &flood{b: b}
	case AODV:
		x := newAODV(b)
		x.routedControl = o.AODVControl == ControlRouted
		b.proto = x
	case OLSR:
		b.proto = newOLSR(b)
	default:
		return nil, fmt.Errorf("routing: unknown protocol %q: want one of flood, aodv, olsr", name)
	}
	inner, err := link(netsim.TraceFunc(b.linkTrace))
	if err != nil {
		return nil, err
	}
	st, ok := inner.(netsim.Stepper)
	if !ok {
		inner.Close()
		return nil, fmt.Errorf("routing %s: the link backend (%T) cannot be stepped event by event, so it cannot carry routing", name, inner)
	}
	b.inner, b.step = inner, st
	b.pool.OnFree = b.hopFreed
	return b, nil
}

// SetFiles implements netsim.FileUser: routing.csv is written through
// open at Close, and the link backend gets open too if it writes files.
func (b *Backend) SetFiles(open func(name string) (io.Writer, error)) {
	b.open = open
	if fu, ok := b.inner.(netsim.FileUser); ok {
		fu.SetFiles(open)
	}
}

// Stats returns node n's counters.
func (b *Backend) Stats(n netsim.NodeID) Stats { return b.stats[n] }

// Start starts the link backend and the protocol.
func (b *Backend) Start(nodes []netsim.NodeInfo) error {
	if err := b.inner.Start(nodes); err != nil {
		return err
	}
	b.n = len(nodes)
	b.stats = make([]Stats, b.n)
	b.ctlSeq = make([]uint32, b.n)
	b.slot = map[uint64]uint32{}
	b.pos = make([]geom.Vec3, b.n)
	for i, nd := range nodes {
		b.pos[i] = nd.Pos
	}
	if b.open != nil {
		w, err := b.open("routing.csv")
		if err != nil {
			return err
		}
		b.csvw = w
	}
	b.proto.start(0)
	return nil
}

// PositionsAtTheirTime reports whether the link backend applies
// SetPositions at its time (netsim.TimedPositions): the layer itself
// reads no positions.
func (b *Backend) PositionsAtTheirTime() bool {
	tp, ok := b.inner.(netsim.TimedPositions)
	return ok && tp.PositionsAtTheirTime()
}

// SetPositions passes the positions on to the link backend.
func (b *Backend) SetPositions(t sim.Time, pos []geom.Vec3) {
	b.dead.Flush()
	copy(b.pos, pos)
	b.inner.SetPositions(t, pos)
}

// Send takes an application packet; it enters the network at p.TSend.
func (b *Backend) Send(p *netsim.Packet) {
	b.dead.Flush()
	b.cal.Push(p.TSend, event{kind: evSend, node: int32(p.Src), pkt: p})
}

// AdvanceTo runs the layer and the link backend, event by event, up to t.
func (b *Backend) AdvanceTo(t sim.Time) ([]netsim.Delivery, error) {
	b.dead.Flush()
	b.out = b.out[:0]
	for {
		mt, mok := b.cal.PeekTime()
		lt, lok := b.step.NextEvent()
		if (!mok || mt > t) && (!lok || lt > t) {
			break
		}
		if mok && (!lok || mt <= lt) {
			b.now = mt
			_, e := b.cal.Pop()
			b.handle(e)
			b.flushLink()
			continue
		}
		b.now = lt
		ds, err := b.inner.AdvanceTo(lt)
		if err != nil {
			return nil, err
		}
		for i := range ds {
			b.rxEnd = ds[i].At
			b.arrived(&ds[i])
		}
		b.rxEnd = 0
		for len(b.fails) > 0 {
			f := b.fails[0]
			b.fails = b.fails[1:]
			b.proto.linkFailed(b.now, f.n, f.next)
		}
		b.fails = b.fails[:0]
		b.flushLink()
	}
	b.now = t
	if _, err := b.inner.AdvanceTo(t); err != nil {
		return nil, err
	}
	return b.out, nil
}

func (b *Backend) handle(e event) {
	switch e.kind {
	case evSend:
		b.originate(e.pkt)
	case evTimer:
		b.proto.timer(b.now, e.node, e.tk, e.arg)
	case evLink:
		e.pkt.TSend = b.now
		b.outbox = append(b.outbox, e.pkt)
	}
}

// flushLink hands the link the hop packets decided in the last step.
func (b *Backend) flushLink() {
	for i, p := range b.outbox {
		b.inner.Send(p)
		b.outbox[i] = nil
	}
	b.outbox = b.outbox[:0]
}

// after schedules protocol timer kind at node n after d.
func (b *Backend) after(d sim.Duration, n int32, kind uint8, arg uint64) {
	b.cal.Push(b.now.Add(d), event{kind: evTimer, tk: kind, node: n, arg: arg})
}

// jitter returns a deterministic delay in [0, max) for node n's k-th draw
// of purpose p.
func (b *Backend) jitter(max sim.Duration, n int32, k uint64, p uint64) sim.Duration {
	if max <= 0 {
		return 0
	}
	return sim.Duration(sim.Hash(b.seed, uint64(n), k, p) % uint64(max))
}

func (b *Backend) trace(typ netsim.EventType, p *netsim.Packet, nd netsim.NodeID, r netsim.DropReason, pw float64) {
	b.ev = netsim.TraceEvent{Type: typ, T: b.now, P: p, Node: nd, Reason: r, RxPower: pw}
	b.tr.Trace(&b.ev)
}

// originate is an application packet's entry into the network.
func (b *Backend) originate(p *netsim.Packet) {
	b.trace(netsim.EvTx, p, p.Dst, 0, netsim.NoPower)
	if p.Dst != netsim.Broadcast && (p.Dst < 0 || int(p.Dst) >= b.n || p.Dst == p.Src) {
		b.trace(netsim.EvDrop, p, p.Dst, netsim.DropNoRoute, netsim.NoPower)
		b.dead.Bury(p)
		return
	}
	a := b.newApp(p)
	ap := &b.apps[a]
	ap.refs = 1 // this decision
	if p.Dst == netsim.Broadcast {
		ap.got[p.Src] = true
		b.proto.broadcast(b.now, int32(p.Src), a, DefaultTTL, true)
	} else {
		b.proto.unicast(b.now, int32(p.Src), a, DefaultTTL, true)
	}
	b.unrefApp(a)
}

func (b *Backend) newApp(p *netsim.Packet) uint32 {
	var a uint32
	if k := len(b.freeApp); k > 0 {
		a = b.freeApp[k-1]
		b.freeApp = b.freeApp[:k-1]
	} else {
		b.apps = append(b.apps, app{})
		a = uint32(len(b.apps) - 1)
	}
	ap := &b.apps[a]
	ap.p, ap.refs, ap.done, ap.valid = p, 0, false, true
	if ap.got == nil {
		ap.got = make([]bool, b.n)
		ap.why = make([]netsim.DropReason, b.n)
	} else {
		clear(ap.got)
		clear(ap.why)
	}
	return a
}

// refApp and unrefApp count the holds on an application packet; the last
// one settles its fate at every intended receiver it did not reach.
func (b *Backend) refApp(a uint32) { b.apps[a].refs++ }

func (b *Backend) unrefApp(a uint32) {
	ap := &b.apps[a]
	if ap.refs--; ap.refs > 0 {
		return
	}
	p := ap.p
	if p.Dst == netsim.Broadcast {
		for r := 0; r < b.n; r++ {
			if !ap.got[r] {
				why := ap.why[r]
				if why == 0 {
					why = netsim.DropSensitivity
				}
				b.trace(netsim.EvDrop, p, netsim.NodeID(r), why, netsim.NoPower)
			}
		}
	} else if !ap.done {
		why := ap.why[0]
		if why == 0 {
			why = netsim.DropNoRoute
		}
		b.trace(netsim.EvDrop, p, p.Dst, why, netsim.NoPower)
	}
	b.dead.Bury(p)
	ap.p, ap.valid = nil, false
	b.freeApp = append(b.freeApp, a)
}

// dropApp records why application packet a did not go on from where it
// is (unicast).
func (b *Backend) dropApp(a uint32, why netsim.DropReason) {
	b.apps[a].why[0] = why
}

// newHop takes a hop packet from the pool.
func (b *Backend) newHop(src, dst int32, size int) (*netsim.Packet, uint32) {
	var h uint32
	if k := len(b.freeHop); k > 0 {
		h = b.freeHop[k-1]
		b.freeHop = b.freeHop[:k-1]
	} else {
		b.hops = append(b.hops, hop{})
		h = uint32(len(b.hops) - 1)
	}
	b.hopSeq++
	p := b.pool.Get(size)
	p.ID = hopIDBase + b.hopSeq
	p.Src = netsim.NodeID(src)
	p.Dst = netsim.NodeID(dst)
	if dst < 0 {
		p.Dst = netsim.Broadcast
	}
	b.slot[p.ID] = h
	b.ctlSeq[src]++
	p.Seq = b.ctlSeq[src] // control packets: the sender's count; data hops take the application's
	p.TSend, p.TGen = max(b.now, b.rxEnd), b.now
	p.Size = size
	b.hops[h] = hop{id: p.ID}
	return p, h
}

// hopFreed ends a hop packet's loan.
func (b *Backend) hopFreed(p *netsim.Packet) {
	h, ok := b.slot[p.ID]
	if !ok {
		panic("routing: a hop packet was freed twice")
	}
	delete(b.slot, p.ID)
	hp := b.hops[h]
	b.hops[h] = hop{}
	b.freeHop = append(b.freeHop, h)
	if hp.data {
		b.unrefApp(hp.app)
	}
}

// forward transmits application packet a from node n to neighbour next
// (-1: broadcast) with the given TTL.
func (b *Backend) forward(n, next int32, a uint32, ttl uint8) {
	ap := &b.apps[a]
	p := ap.p
	hp, h := b.newHop(n, next, p.Size)
	hp.Kind, hp.Port, hp.TGen, hp.Seq = p.Kind, p.Port, p.TGen, p.Seq
	hp.Payload = append(hp.Payload[:0], p.Payload...)
	b.hops[h].data, b.hops[h].app, b.hops[h].ttl = true, a, ttl
	ap.refs++
	st := &b.stats[n]
	st.DataTx++
	st.DataTxBytes += uint64(hp.WireBytes())
	if netsim.NodeID(n) != p.Src {
		st.Forwarded++
	}
	b.outbox = append(b.outbox, hp)
}

// sendControl sends a control message from node n to neighbour dst (-1:
// broadcast) after delay d (at once when d <= 0).
func (b *Backend) sendControl(n, dst int32, kind netsim.Kind, msg []byte, d sim.Duration) {
	b.sendCtl(n, dst, kind, msg, d, d > 0)
}

// sendJittered is sendControl for a message ns-3 sends after a jitter
// (Simulator::Schedule(jitter, &SendTo)): even a jitter of 0 goes through
// the calendar, so the message follows whatever was already due at that
// instant, such as an application packet of the same nanosecond, as
// ns-3's events of one time run in the order they were scheduled.
func (b *Backend) sendJittered(n, dst int32, kind netsim.Kind, msg []byte, d sim.Duration) {
	b.sendCtl(n, dst, kind, msg, d, true)
}

func (b *Backend) sendCtl(n, dst int32, kind netsim.Kind, msg []byte, d sim.Duration, later bool) {
	hp, _ := b.newHop(n, dst, len(msg))
	hp.Kind = kind
	hp.Payload = append(hp.Payload[:0], msg...)
	st := &b.stats[n]
	st.ControlTx++
	st.ControlTxBytes += uint64(hp.WireBytes())
	if !later {
		b.outbox = append(b.outbox, hp)
		return
	}
	b.cal.Push(b.now.Add(max(d, 0)), event{kind: evLink, node: n, pkt: hp})
}

// deliverLocal hands application packet a to node r.
func (b *Backend) deliverLocal(a uint32, r int32, at sim.Time, pw float64) {
	ap := &b.apps[a]
	p := ap.p
	ap.got[r] = true
	if p.Dst != netsim.Broadcast {
		ap.done = true
	}
	st := &b.stats[r]
	st.DataRx++
	st.DataRxBytes += uint64(p.WireBytes())
	b.ev = netsim.TraceEvent{Type: netsim.EvRx, T: at, P: p, Node: netsim.NodeID(r), RxPower: pw}
	b.tr.Trace(&b.ev)
	b.out = append(b.out, netsim.Delivery{P: p, Dst: netsim.NodeID(r), At: at, RxPower: pw})
}

// arrived handles a hop packet the link delivered.
func (b *Backend) arrived(d *netsim.Delivery) {
	hp := d.P
	r := int32(d.Dst)
	h, ok := b.slot[hp.ID]
	if !ok {
		return // not ours (cannot happen: the link only carries hop packets)
	}
	if !b.hops[h].data {
		b.stats[r].ControlRx++
		b.proto.control(b.now, r, int32(hp.Src), hp.Payload)
		return
	}
	a, ttl := b.hops[h].app, b.hops[h].ttl
	ap := &b.apps[a]
	p := ap.p
	ap.refs++ // this decision
	defer b.unrefApp(a)
	if p.Dst == netsim.Broadcast || hp.Dst == netsim.Broadcast {
		// A broadcast, or a flooded unicast: the first copy counts.
		if ap.got[r] || netsim.NodeID(r) == p.Src {
			return
		}
		if p.Dst == netsim.Broadcast || netsim.NodeID(r) == p.Dst {
			b.deliverLocal(a, r, d.At, d.RxPower)
		} else {
			ap.got[r] = true
		}
		if netsim.NodeID(r) == p.Dst {
			return
		}
		if ttl <= 1 {
			if p.Dst != netsim.Broadcast {
				b.dropApp(a, netsim.DropTTL)
			}
			return
		}
		b.proto.broadcast(b.now, r, a, ttl-1, false)
		return
	}
	if netsim.NodeID(r) == p.Dst {
		if !ap.done {
			b.deliverLocal(a, r, d.At, d.RxPower)
			b.proto.deliver(b.now, r, a)
		}
		return
	}
	if ttl <= 1 {
		b.dropApp(a, netsim.DropTTL)
		return
	}
	b.proto.unicast(b.now, r, a, ttl-1, false)
}

// linkTrace receives the link backend's trace events: control packets'
// events go to the run's tracer as they are; data hops' drops are noted.
func (b *Backend) linkTrace(e *netsim.TraceEvent) {
	p := e.P
	h, ok := b.slot[p.ID]
	if !ok {
		return
	}
	hp := &b.hops[h]
	if !hp.data {
		b.tr.Trace(e)
		if e.Type == netsim.EvDrop && macGaveUp(e.Reason) && p.Dst != netsim.Broadcast {
			b.fails = append(b.fails, linkFail{n: int32(p.Src), next: int32(p.Dst)})
		}
		return
	}
	if e.Type != netsim.EvDrop {
		return
	}
	ap := &b.apps[hp.app]
	if ap.p.Dst == netsim.Broadcast {
		if e.Node >= 0 && int(e.Node) < b.n && !ap.got[e.Node] {
			ap.why[e.Node] = e.Reason
		}
		return
	}
	if p.Dst != netsim.Broadcast && e.Node == p.Dst {
		ap.why[0] = e.Reason
		if macGaveUp(e.Reason) {
			b.fails = append(b.fails, linkFail{n: int32(p.Src), next: int32(p.Dst)})
		}
	} else if p.Dst == netsim.Broadcast && e.Node == ap.p.Dst && !ap.done {
		ap.why[0] = e.Reason
	}
}

// macGaveUp tells whether a unicast frame dropped for reason r is one the
// MAC gave up on: retries exhausted, or lifetime or room in the queue
// (ns-3's WifiMac DroppedMpdu, which AODV takes for a broken link).
func macGaveUp(r netsim.DropReason) bool {
	return r == netsim.DropRetryLimit || r == netsim.DropQueue
}

// Close writes routing.csv, closes the link backend and frees what the
// layer still holds.
func (b *Backend) Close() error {
	b.dead.Flush()
	var werr error
	if b.csvw != nil {
		werr = b.writeCSV(b.csvw)
	}
	// Hop packets waiting for their jitter go back to the pool, and
	// application packets with them.
	var pend []*netsim.Packet
	b.cal.Each(func(_ sim.Time, e event) {
		if e.pkt != nil {
			pend = append(pend, e.pkt)
		}
	})
	b.cal.Clear()
	// No fates are settled any more: the run is over. Application packets
	// still in the layer (waiting for a route, in a hop on the way, or not
	// due yet) end with end_of_run at every intended receiver they did not
	// reach, as the link backends and the ns-3 backend end theirs.
	b.pool.OnFree = nil
	b.endOfRun(pend)
	err := b.inner.Close()
	for _, p := range pend {
		p.Free() // hop packets and application packets not sent yet
	}
	for i := range b.apps {
		if b.apps[i].valid {
			b.apps[i].p.Free()
			b.apps[i].valid = false
		}
	}
	if err == nil {
		err = werr
	}
	return err
}

// endOfRun traces the application packets the run ended on: those due
// but not yet handed over (pend, with the hop packets) get their tx at
// their send time, then every one gets end_of_run at every intended
// receiver without an outcome, at the layer's last time.
func (b *Backend) endOfRun(pend []*netsim.Packet) {
	for _, p := range pend {
		if p.ID >= hopIDBase {
			continue
		}
		b.ev = netsim.TraceEvent{Type: netsim.EvTx, T: p.TSend, P: p, Node: p.Dst, RxPower: netsim.NoPower}
		b.tr.Trace(&b.ev)
		at := max(b.now, p.TSend)
		for r := 0; r < b.n; r++ {
			if netsim.NodeID(r) == p.Src || (p.Dst != netsim.Broadcast && netsim.NodeID(r) != p.Dst) {
				continue
			}
			b.ev = netsim.TraceEvent{Type: netsim.EvDrop, T: at, P: p, Node: netsim.NodeID(r), Reason: netsim.DropEndOfRun, RxPower: netsim.NoPower}
			b.tr.Trace(&b.ev)
		}
	}
	for i := range b.apps {
		ap := &b.apps[i]
		if !ap.valid {
			continue
		}
		p := ap.p
		if p.Dst == netsim.Broadcast {
			for r := 0; r < b.n; r++ {
				if !ap.got[r] && netsim.NodeID(r) != p.Src {
					b.trace(netsim.EvDrop, p, netsim.NodeID(r), netsim.DropEndOfRun, netsim.NoPower)
				}
			}
		} else if !ap.done {
			b.trace(netsim.EvDrop, p, p.Dst, netsim.DropEndOfRun, netsim.NoPower)
		}
	}
}

// CSVHeader is routing.csv's header; the ns-3 backend writes the same
// columns.
const CSVHeader = "node,data_tx_packets,data_tx_bytes,forwarded_packets,data_rx_packets,data_rx_bytes,control_tx_packets,control_tx_bytes,control_rx_packets"

func (b *Backend) writeCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if _, err := io.WriteString(w, CSVHeader+"\n"); err != nil {
		return err
	}
	u := func(v uint64) string { return strconv.FormatUint(v, 10) }
	for i, s := range b.stats {
		if err := cw.Write([]string{strconv.Itoa(i), u(s.DataTx), u(s.DataTxBytes), u(s.Forwarded), u(s.DataRx), u(s.DataRxBytes),
			u(s.ControlTx), u(s.ControlTxBytes), u(s.ControlRx)}); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
