// Package impair is a network with controllable impairments: base latency,
// per-receiver uniform jitter, per-receiver loss (Bernoulli or
// Gilbert-Elliott bursts), a communication range, and a per-node transmit
// rate with a FIFO queue whose overflow is traced as queue drops.
//
// Model, per packet sent at time t by node s:
//
//  1. The packet joins s's transmit queue. With Rate = 0 it is on the air at
//     once; otherwise s transmits one packet at a time, each taking
//     (Size + 28) * 8 / Rate seconds, and a packet that finds the
//     transmitter busy and Queue + DeviceQueue packets already waiting is
//     dropped (reason queue) at every receiver it would have reached.
//  2. When its transmission ends at te, each intended receiver r (every other
//     node for a broadcast) is decided independently: out of Range at te
//     (reason range), lost with probability Loss or by its Gilbert-Elliott
//     link state (reason rx_error), or delivered at te + Latency + U(0, Jitter).
//
// Random decisions are counter-based: the loss and jitter draws for packet
// number k of sender s at receiver r are a hash of (run seed, s, r, k), and
// the Gilbert-Elliott state of each directed link advances only with that
// link's packets. The fate of a packet at a receiver therefore never depends
// on other nodes' traffic or positions, which keeps one-factor experiments
// paired: changing one parameter changes only what it must.
//
// Range is checked against the most recent positions the kernel gave
// (SetPositions), so a position is at most one position period old.
package impair

import (
	"fmt"
	"math"

	"skyloop/fields"
	"skyloop/geom"
	"skyloop/netsim"
	"skyloop/netsim/spatial"
	"skyloop/sim"
)

// Gilbert is the two-state Gilbert-Elliott burst-loss model, kept per
// directed link and advanced once per packet on that link.
type Gilbert struct {
	PGoodBad float64 `yaml:"p_gb" json:"p_gb"`           // P(good -> bad) per packet
	PBadGood float64 `yaml:"p_bg" json:"p_bg"`           // P(bad -> good) per packet
	LossGood float64 `yaml:"loss_good" json:"loss_good"` // loss probability in the good state
	LossBad  float64 `yaml:"loss_bad" json:"loss_bad"`   // loss probability in the bad state
}

// Params configure the impaired network.
type Params struct {
	Latency     sim.Duration `yaml:"latency" json:"latency"`           // base one-way delay
	Jitter      sim.Duration `yaml:"jitter" json:"jitter"`             // extra delay U(0, Jitter) per receiver and packet
	Loss        float64      `yaml:"loss" json:"loss"`                 // per-receiver loss probability
	Gilbert     *Gilbert     `yaml:"gilbert" json:"gilbert,omitempty"` // burst losses; replaces Loss when set
	Range       float64      `yaml:"range" json:"range"`               // communication range in m; 0 = unlimited
	Rate        float64      `yaml:"rate" json:"rate"`                 // per-node transmit rate in bit/s; 0 = unlimited
	Queue       int          `yaml:"queue" json:"queue"`               // FIFO capacity in packets (used when Rate > 0)
	DeviceQueue int          `yaml:"device_queue" json:"device_queue"` // device queue after the FIFO, in packets
}

// DefaultParams returns a perfect network with a 100-packet FIFO and a
// 1-packet device queue ready for when a rate is set: with a device queue
// of one packet, all queueing happens in the FIFO, where it is visible.
func DefaultParams() Params {
	return Params{Queue: 100, DeviceQueue: 1}
}

// Validate checks p, returning one message per bad field keyed by its YAML
// path below the network section.
func (p *Params) Validate() fields.Errors {
	bad := fields.Errors{}
	prob := func(name string, v float64) {
		if !(v >= 0 && v <= 1) {
			bad[name] = fmt.Sprintf("must be a probability in [0, 1], got %v", v)
		}
	}
	if p.Latency < 0 {
		bad["latency"] = fmt.Sprintf("must be >= 0, got %v", p.Latency)
	}
	if p.Jitter < 0 {
		bad["jitter"] = fmt.Sprintf("must be >= 0, got %v", p.Jitter)
	}
	prob("loss", p.Loss)
	if g := p.Gilbert; g != nil {
		prob("gilbert.p_gb", g.PGoodBad)
		prob("gilbert.p_bg", g.PBadGood)
		prob("gilbert.loss_good", g.LossGood)
		prob("gilbert.loss_bad", g.LossBad)
	}
	if !(p.Range >= 0) || math.IsInf(p.Range, 0) {
		bad["range"] = fmt.Sprintf("must be >= 0 metres (0 = unlimited), got %v", p.Range)
	}
	if !(p.Rate == 0 || p.Rate >= 1) || math.IsInf(p.Rate, 0) {
		bad["rate"] = fmt.Sprintf("must be at least 1 bit/s (or 0 = unlimited), got %v", p.Rate)
	}
	if p.Queue < 0 {
		bad["queue"] = fmt.Sprintf("must be >= 0 packets, got %d", p.Queue)
	}
	if p.DeviceQueue < 0 {
		bad["device_queue"] = fmt.Sprintf("must be >= 0 packets, got %d", p.DeviceQueue)
	}
	return bad
}

type evType uint8

const (
	evEnqueue     evType = iota // a packet reaches its sender's queue at its send time
	evTxEnd                     // a node finished transmitting its head packet
	evArrive                    // a packet arrives at one receiver
	evArriveGroup               // a packet arrives at several receivers at once (no jitter)
)

type event struct {
	typ evType
	dst netsim.NodeID // evArrive: receiver; evTxEnd: sender; evArriveGroup: group index
	pkt *netsim.Packet
}

type node struct {
	busy  bool
	cur   *netsim.Packet
	queue ring
	sent  uint64 // packets this node has put on the air
}

// Backend is the impaired network.
type Backend struct {
	p     Params
	tr    netsim.Tracer
	seed  uint64
	nodes []node
	pos   []geom.Vec3
	held  netsim.HeldPositions // a position update for a time not reached yet
	bad   linkStates           // Gilbert-Elliott state per directed link

	// Without jitter every receiver of a transmission gets it at the same
	// time: one calendar event carries them all. Receiver lists live in
	// groups, recycled through freeGroups.
	group      []netsim.NodeID // receivers of the transmission being decided
	groups     [][]netsim.NodeID
	freeGroups []int32
	q          *sim.Calendar[event]
	out        []netsim.Delivery
	dead       netsim.Graveyard
	ev         netsim.TraceEvent
	now        sim.Time
	// With a range and drops counted in bulk (netsim.DropCounter), a
	// broadcast visits only the nodes in range, found through idx, and
	// counts the others' range drops at once.
	counter netsim.DropCounter
	idx     *spatial.Index
	// rxCounter, when receptions may be counted in bulk
	// (netsim.ReceptionCounter), takes a broadcast's receptions at one
	// time in one call.
	rxCounter netsim.ReceptionCounter
}

// New returns an impaired network with parameters p, random streams derived
// from seed, reporting to tr (which may be nil).
func New(p Params, seed uint64, tr netsim.Tracer) (*Backend, error) {
	if err := p.Validate().Err("impair"); err != nil {
		return nil, err
	}
	if tr == nil {
		tr = netsim.Tracers(nil)
	}
	// Buckets of 2^17 ns (131 us) over 0.54 s: each holds a handful of
	// events even in dense swarms, and longer delays wait in the calendar's
	// heap.
	return &Backend{p: p, tr: tr, seed: seed, q: sim.NewCalendar[event](17, 12)}, nil
}

// Start sizes the per-node state.
func (b *Backend) Start(nodes []netsim.NodeInfo) error {
	n := len(nodes)
	b.nodes = make([]node, n)
	b.pos = make([]geom.Vec3, n)
	capQ := b.p.Queue + b.p.DeviceQueue
	for i, ni := range nodes {
		if int(ni.ID) != i {
			return fmt.Errorf("impair: node %d has id %d; ids must be 0..n-1 in order", i, ni.ID)
		}
		b.pos[i] = ni.Pos
		b.nodes[i].queue.init(capQ)
	}
	if b.p.Gilbert != nil {
		b.bad.init(n)
	}
	if c, ok := b.tr.(netsim.ReceptionCounter); ok && c.CountsReceptions() {
		b.rxCounter = c
	}
	if c, ok := b.tr.(netsim.DropCounter); ok && c.CountsDrops() && b.p.Range > 0 {
		b.counter, b.idx = c, spatial.New(b.p.Range)
		b.idx.Build(b.pos)
	}
	return nil
}

// SetPositions records node positions for range checks.
func (b *Backend) SetPositions(t sim.Time, pos []geom.Vec3) {
	if !b.held.Hold(t, b.now, pos) { // else applied at t (netsim.HeldPositions)
		b.place(pos)
	}
}

// PositionsAtTheirTime reports that SetPositions applies at its time
// (netsim.TimedPositions).
func (b *Backend) PositionsAtTheirTime() bool { return true }

// place moves the nodes to pos.
func (b *Backend) place(pos []geom.Vec3) {
	copy(b.pos, pos)
	if b.idx != nil {
		b.idx.Build(b.pos)
	}
}

func (b *Backend) trace(typ netsim.EventType, t sim.Time, p *netsim.Packet, nd netsim.NodeID, r netsim.DropReason) {
	b.ev = netsim.TraceEvent{Type: typ, T: t, P: p, Node: nd, Reason: r, RxPower: netsim.NoPower}
	b.tr.Trace(&b.ev)
}

// Send schedules p to join its sender's queue at p.TSend, which may lie
// later than the current tick (senders that need sub-tick timing, such as
// constant-bit-rate sources, use that).
func (b *Backend) Send(p *netsim.Packet) {
	b.dead.Flush()
	b.q.Push(p.TSend, event{typ: evEnqueue, dst: p.Src, pkt: p})
}

// enqueue runs at the packet's send time.
func (b *Backend) enqueue(t sim.Time, p *netsim.Packet) {
	b.trace(netsim.EvTx, t, p, p.Dst, 0)
	if p.Src < 0 || int(p.Src) >= len(b.nodes) {
		b.dropAll(t, p, netsim.DropNoRoute)
		return
	}
	s := &b.nodes[p.Src]
	switch {
	case b.p.Rate <= 0:
		b.txEnd(t, p)
	case !s.busy:
		b.start(s, p.Src, t, p)
	case s.queue.full():
		b.dropAll(t, p, netsim.DropQueue)
	default:
		s.queue.push(p)
	}
}

// start puts p on the air at t from node id.
func (b *Backend) start(s *node, id netsim.NodeID, t sim.Time, p *netsim.Packet) {
	s.busy, s.cur = true, p
	b.q.Push(t.Add(serialization(p.WireBytes(), b.p.Rate)), event{typ: evTxEnd, dst: id, pkt: p})
}

// serialization returns the time to send wire bytes at rate bit/s, rounded
// up to the nanosecond: exactly in integers when the rate is a whole number
// (floating point would sometimes add a spurious nanosecond).
func serialization(wire int, rate float64) sim.Duration {
	bits := uint64(wire) * 8
	if r := uint64(rate); float64(r) == rate && r > 0 && bits < math.MaxUint64/1_000_000_000 {
		return sim.Duration((bits*1e9 + r - 1) / r)
	}
	return sim.Duration(math.Ceil(float64(bits) / rate * 1e9))
}

// dropAll traces a drop of p with reason r at every receiver it was meant
// for, then releases it.
func (b *Backend) dropAll(t sim.Time, p *netsim.Packet, r netsim.DropReason) {
	if p.Dst == netsim.Broadcast {
		for i := range b.nodes {
			if netsim.NodeID(i) != p.Src {
				b.trace(netsim.EvDrop, t, p, netsim.NodeID(i), r)
			}
		}
	} else {
		b.trace(netsim.EvDrop, t, p, p.Dst, r)
	}
	b.dead.Bury(p)
}

// txEnd decides the fate of p at each receiver once its transmission ends.
func (b *Backend) txEnd(t sim.Time, p *netsim.Packet) {
	p.Refs = 0
	k := b.nodes[p.Src].sent
	b.nodes[p.Src].sent++
	if p.Dst == netsim.Broadcast && b.idx != nil {
		reached := 0
		b.idx.Collect(b.pos[p.Src], int32(p.Src), b.p.Range*b.p.Range, b.pos, func(r int32, _ float64) {
			reached++
			b.decide(t, p, netsim.NodeID(r), k)
		})
		if out := len(b.nodes) - 1 - reached; out > 0 {
			b.ev = netsim.TraceEvent{Type: netsim.EvDrop, T: t, P: p, Node: -1, Reason: netsim.DropRange, RxPower: netsim.NoPower}
			b.counter.TraceDrops(&b.ev, out)
		}
	} else if p.Dst == netsim.Broadcast {
		for i := range b.nodes {
			if netsim.NodeID(i) != p.Src {
				b.decide(t, p, netsim.NodeID(i), k)
			}
		}
	} else if p.Dst >= 0 && int(p.Dst) < len(b.nodes) && p.Dst != p.Src {
		b.decide(t, p, p.Dst, k)
	} else {
		b.trace(netsim.EvDrop, t, p, p.Dst, netsim.DropNoRoute)
	}
	if len(b.group) > 0 {
		var g int32
		if n := len(b.freeGroups); n > 0 {
			g = b.freeGroups[n-1]
			b.freeGroups = b.freeGroups[:n-1]
		} else {
			g = int32(len(b.groups))
			b.groups = append(b.groups, nil)
		}
		b.groups[g] = append(b.groups[g][:0], b.group...)
		b.group = b.group[:0]
		b.q.Push(t.Add(b.p.Latency), event{typ: evArriveGroup, dst: netsim.NodeID(g), pkt: p})
	}
	if p.Refs == 0 {
		b.dead.Bury(p)
	}
}

// decide settles the fate of p, the k-th packet its sender put on the air,
// at receiver r.
func (b *Backend) decide(t sim.Time, p *netsim.Packet, r netsim.NodeID, k uint64) {
	if b.p.Range > 0 {
		d := b.pos[p.Src].Sub(b.pos[r])
		if d.Norm2() > b.p.Range*b.p.Range {
			b.trace(netsim.EvDrop, t, p, r, netsim.DropRange)
			return
		}
	}
	link := uint64(p.Src)<<32 | uint64(uint32(r))
	loss := b.p.Loss
	if g := b.p.Gilbert; g != nil {
		// The link's state advances once per packet on the link.
		u := sim.Unit(sim.Hash(b.seed, link, k, 1))
		bad := b.bad.get(link)
		if bad && u < g.PBadGood || !bad && u < g.PGoodBad {
			bad = !bad
			b.bad.set(link, bad)
		}
		loss = g.LossGood
		if bad {
			loss = g.LossBad
		}
	}
	if loss > 0 && sim.Unit(sim.Hash(b.seed, link, k, 0)) < loss {
		b.trace(netsim.EvDrop, t, p, r, netsim.DropRxError)
		return
	}
	p.Refs++
	if b.p.Jitter == 0 {
		b.group = append(b.group, r)
		return
	}
	jit := sim.Duration(sim.Hash(b.seed, link, k, 2) % uint64(b.p.Jitter+1))
	b.q.Push(t.Add(b.p.Latency+jit), event{typ: evArrive, dst: r, pkt: p})
}

// AdvanceTo processes events up to t and returns the arrivals.
func (b *Backend) AdvanceTo(t sim.Time) ([]netsim.Delivery, error) {
	b.dead.Flush()
	b.out = b.out[:0]
	for {
		et, ok := b.q.PeekTime()
		if !ok || et > t {
			break
		}
		if pos := b.held.Due(et); pos != nil {
			b.place(pos)
		}
		_, e := b.q.Pop()
		switch e.typ {
		case evEnqueue:
			b.enqueue(et, e.pkt)
		case evTxEnd:
			b.txEnd(et, e.pkt)
			if b.p.Rate > 0 {
				s := &b.nodes[e.dst]
				s.busy, s.cur = false, nil
				if next := s.queue.pop(); next != nil {
					b.start(s, e.dst, et, next)
				}
			}
		case evArrive:
			b.arrive(et, e.pkt, e.dst)
		case evArriveGroup:
			if b.rxCounter != nil {
				b.arriveAll(et, e.pkt, b.groups[e.dst])
			} else {
				for _, r := range b.groups[e.dst] {
					b.arrive(et, e.pkt, r)
				}
			}
			b.freeGroups = append(b.freeGroups, int32(e.dst))
		}
	}
	if pos := b.held.Due(t); pos != nil {
		b.place(pos)
	}
	b.now = t
	return b.out, nil
}

func (b *Backend) arrive(t sim.Time, p *netsim.Packet, r netsim.NodeID) {
	b.trace(netsim.EvRx, t, p, r, 0)
	b.out = append(b.out, netsim.Delivery{P: p, Dst: r, At: t, RxPower: netsim.NoPower})
	if p.Refs--; p.Refs == 0 {
		b.dead.Bury(p)
	}
}

// arriveAll delivers p to the receivers rs at once, its receptions
// counted in one call (rxCounter).
func (b *Backend) arriveAll(t sim.Time, p *netsim.Packet, rs []netsim.NodeID) {
	b.ev = netsim.TraceEvent{Type: netsim.EvRx, T: t, P: p, Node: netsim.Broadcast, RxPower: netsim.NoPower}
	b.rxCounter.TraceReceptions(&b.ev, len(rs))
	for _, r := range rs {
		b.out = append(b.out, netsim.Delivery{P: p, Dst: r, At: t, RxPower: netsim.NoPower})
	}
	if p.Refs -= int32(len(rs)); p.Refs == 0 {
		b.dead.Bury(p)
	}
}

// Close frees every packet still queued or in flight.
func (b *Backend) Close() error {
	b.dead.Flush()
	seen := map[*netsim.Packet]bool{}
	var held []*netsim.Packet
	hold := func(p *netsim.Packet) {
		if !seen[p] {
			seen[p] = true
			held = append(held, p)
		}
	}
	b.q.Each(func(_ sim.Time, e event) { hold(e.pkt) })
	for i := range b.nodes {
		for p := b.nodes[i].queue.pop(); p != nil; p = b.nodes[i].queue.pop() {
			hold(p)
		}
	}
	for _, p := range held {
		p.Free()
	}
	b.q.Clear()
	return nil
}

// linkStates holds one bit per directed link: densely up to denseLinks
// nodes, in a map above (where most links never carry a packet).
type linkStates struct {
	n      int
	dense  []bool
	sparse map[uint64]bool
}

const denseLinks = 2048

func (l *linkStates) init(n int) {
	l.n = n
	if n <= denseLinks {
		l.dense = make([]bool, n*n)
	} else {
		l.sparse = map[uint64]bool{}
	}
}

func (l *linkStates) index(link uint64) int {
	return int(link>>32)*l.n + int(uint32(link))
}

func (l *linkStates) get(link uint64) bool {
	if l.dense != nil {
		return l.dense[l.index(link)]
	}
	return l.sparse[link]
}

func (l *linkStates) set(link uint64, v bool) {
	if l.dense != nil {
		l.dense[l.index(link)] = v
		return
	}
	if v {
		l.sparse[link] = true
	} else {
		delete(l.sparse, link)
	}
}

// ring is a fixed-capacity FIFO of packets.
type ring struct {
	buf        []*netsim.Packet
	head, size int
}

func (r *ring) init(n int) { r.buf = make([]*netsim.Packet, n) }
func (r *ring) full() bool { return r.size == len(r.buf) }
func (r *ring) push(p *netsim.Packet) {
	r.buf[(r.head+r.size)%len(r.buf)] = p
	r.size++
}
func (r *ring) pop() *netsim.Packet {
	if r.size == 0 {
		return nil
	}
	p := r.buf[r.head]
	r.buf[r.head] = nil
	r.head = (r.head + 1) % len(r.buf)
	r.size--
	return p
}

// NextEvent implements netsim.Stepper: the time of the earliest pending
// event.
func (b *Backend) NextEvent() (sim.Time, bool) { return b.q.PeekTime() }
