package engine

import (
	"fmt"
	"io"
	"sort"

	"skyloop/agent"
	"skyloop/geom"
	"skyloop/netsim"
	"skyloop/sim"
)

// Network epochs (network.epoch > 0).
//
// The network phase of a tick t that starts an epoch [t, t1) hands the
// backend, in this order, the packets agents sent in their steps since the
// last epoch start (re-stamped to be sent at t: a send can be up to one
// epoch minus one tick late) and every packet the planners send in
// [t, t1) (agent.Planner, called in node order), then advances the backend
// to t1-1 and keeps what it returns. At every tick the network phase then
// binds the content of the deferred packets generated in that tick
// (agent.Binder) and consumes, as without epochs, every delivery that
// arrived by the tick. With a replayed network (network.mode: replay) the
// same calls are made on a backend that recorded them before the run.

// bindHorizon is how long a deferred packet's bound content is kept: a
// delivery consumed later than this after the packet's generation reaches
// metrics and files but not its receiver (its information would be stale
// anyway).
const bindHorizon = 16 * sim.Second

// planner is a behaviour that plans its sends, with its place in the run.
type planner struct {
	node, slot int
	p          agent.Planner
}

// bindJob is a deferred packet whose content is bound at tick `tick`.
type bindJob struct {
	tick int64
	id   uint64
	node int32
	slot int32
	m    agent.Message // header only
}

// pendingDelivery is a delivery kept until the tick that consumes it; the
// backend's packets are only valid until its next call.
type pendingDelivery struct {
	at       sim.Time
	dst      netsim.NodeID
	rxPower  float64
	p        netsim.Packet // header (Payload unset)
	deferred bool
	off, n   int // payload in the arena (not deferred)
}

// content is a deferred packet's bound content.
type content struct {
	id    uint64
	tgen  sim.Time
	bound bool
	data  []byte
}

type epochNet struct {
	r        *Run
	epoch    sim.Duration
	planners []planner
	held     []*netsim.Packet // sent by steps, for the next epoch start
	curNode  int              // the planner being called, for deferred sends
	curSlot  int
	planning bool
	err      error

	jobs    []bindJob
	jobHead int
	store   []content // deferred packets in id order
	stHead  int
	// stGone counts the entries dropped from the front of store by
	// compaction: entry k of store is deferred packet number stGone+k.
	stGone int
	// byID maps packet id idBase+i to 1 + its deferred packet number, or 0
	// for packets that are not deferred: a lookup per delivery in O(1).
	byID   []uint32
	idBase uint64
	spare  [][]byte // content buffers for reuse

	pend    []pendingDelivery
	head    int
	arena   []byte
	scratch []netsim.Packet
	deliv   []netsim.Delivery
}

func newEpochNet(r *Run) *epochNet {
	e := &epochNet{r: r, epoch: sim.Duration(r.net.epochEvery) * r.cfg.tick}
	for i := range r.fleet.nodes {
		for j, s := range r.fleet.nodes[i].slots {
			if p, ok := s.b.(agent.Planner); ok {
				e.planners = append(e.planners, planner{node: i, slot: j, p: p})
			}
		}
	}
	return e
}

// deferredSent records a deferred packet sent by the planner being called.
func (e *epochNet) deferredSent(p *netsim.Packet, m *agent.Message) {
	if !e.planning {
		e.fail(fmt.Errorf("internal error: deferred packet from node %d outside planning", p.Src))
		return
	}
	s := &e.r.fleet.nodes[e.curNode].slots[e.curSlot]
	if _, ok := s.b.(agent.Binder); !ok {
		e.fail(fmt.Errorf("%s (%s, node %s) sent a deferred message but cannot bind its content (no Bind method)", s.path, s.typ, e.r.fleet.nodes[e.curNode].ref.Name))
		return
	}
	h := *m
	h.Payload = nil
	e.jobs = append(e.jobs, bindJob{tick: int64(p.TGen) / int64(e.r.cfg.tick), id: p.ID, node: int32(e.curNode), slot: int32(e.curSlot), m: h})
	e.store = append(e.store, content{id: p.ID, tgen: p.TGen})
	if len(e.byID) == 0 && len(e.store) == 1 {
		e.idBase = p.ID
	}
	k := p.ID - e.idBase // ids grow: k >= 0
	for uint64(len(e.byID)) <= k {
		e.byID = append(e.byID, 0)
	}
	e.byID[k] = uint32(e.stGone + len(e.store))
}

func (e *epochNet) fail(err error) {
	if e.err == nil {
		e.err = err
	}
}

// hold keeps packets sent by agent steps for the next epoch start.
func (e *epochNet) hold(ps []*netsim.Packet) { e.held = append(e.held, ps...) }

// phase is the network phase of tick t (index idx).
func (e *epochNet) phase(t sim.Time, idx int64) error {
	r := e.r
	if idx%r.net.epochEvery == 0 {
		t1 := min(t.Add(e.epoch), r.cfg.end)
		for i, p := range e.held {
			p.TSend = t
			r.net.backend.Send(p)
			e.held[i] = nil
		}
		e.held = e.held[:0]
		e.plan(t, t1)
		if e.err != nil {
			return e.err
		}
		for i, p := range r.net.outbox {
			r.net.backend.Send(p)
			r.net.outbox[i] = nil
		}
		r.net.outbox = r.net.outbox[:0]
		ds, err := r.net.backend.AdvanceTo(t1 - 1)
		if err != nil {
			return fmt.Errorf("%s network: %w", r.net.backendName, err)
		}
		e.keep(ds)
	}
	e.bind(t, idx)
	if e.err != nil {
		return e.err
	}
	e.consume(t)
	return nil
}

// plan asks every planner for its sends in [t, t1).
func (e *epochNet) plan(t, t1 sim.Time) {
	r := e.r
	first := len(e.jobs)
	e.planning = true
	for _, pl := range e.planners {
		ns := &r.fleet.nodes[pl.node]
		e.curNode, e.curSlot = pl.node, pl.slot
		ns.drv.SetNow(t)
		ns.drv.SetPlanning(t1)
		pl.p.Plan(ns.ctx, t1)
		ns.drv.SetPlanning(0)
	}
	e.planning = false
	// Bind in tick order, and in send order within a tick.
	js := e.jobs[first:]
	sort.SliceStable(js, func(a, b int) bool { return js[a].tick < js[b].tick })
}

// keep copies the deliveries the backend returned.
func (e *epochNet) keep(ds []netsim.Delivery) {
	for i := range ds {
		d := &ds[i]
		pd := pendingDelivery{at: d.At, dst: d.Dst, rxPower: d.RxPower, p: *d.P}
		pd.p.Payload, pd.p.Refs = nil, 0
		if e.find(d.P.ID) >= 0 {
			pd.deferred = true
		} else {
			pd.off, pd.n = len(e.arena), len(d.P.Payload)
			e.arena = append(e.arena, d.P.Payload...)
		}
		e.pend = append(e.pend, pd)
	}
}

// find returns the index in store of deferred packet id, or -1.
func (e *epochNet) find(id uint64) int {
	if id < e.idBase || id-e.idBase >= uint64(len(e.byID)) {
		return -1
	}
	n := int(e.byID[id-e.idBase])
	k := n - 1 - e.stGone
	if n == 0 || k < e.stHead {
		return -1 // not deferred, or forgotten
	}
	return k
}

// bind binds the content of the deferred packets generated by tick idx,
// and forgets contents older than the horizon.
func (e *epochNet) bind(t sim.Time, idx int64) {
	r := e.r
	for e.jobHead < len(e.jobs) && e.jobs[e.jobHead].tick <= idx {
		j := &e.jobs[e.jobHead]
		e.jobHead++
		k := e.find(j.id)
		if k < 0 {
			continue // forgotten already: the run is longer than the horizon behind
		}
		c := &e.store[k]
		var buf []byte
		if n := len(e.spare); n > 0 {
			buf, e.spare = e.spare[n-1], e.spare[:n-1]
		}
		ns := &r.fleet.nodes[j.node]
		ns.drv.SetNow(t)
		c.data = ns.slots[j.slot].b.(agent.Binder).Bind(ns.ctx, &j.m, buf[:0])
		c.bound = true
	}
	if e.jobHead > 1024 && e.jobHead*2 > len(e.jobs) {
		n := copy(e.jobs, e.jobs[e.jobHead:])
		e.jobs, e.jobHead = e.jobs[:n], 0
	}
	for e.stHead < len(e.store) && e.store[e.stHead].bound && t.Sub(e.store[e.stHead].tgen) > bindHorizon {
		c := &e.store[e.stHead]
		e.spare = append(e.spare, c.data[:0])
		*c = content{}
		e.stHead++
	}
	if e.stHead > 1024 && e.stHead*2 > len(e.store) {
		n := copy(e.store, e.store[e.stHead:])
		clear(e.store[n:])
		e.stGone += e.stHead
		e.store, e.stHead = e.store[:n], 0
		// Ids below the oldest kept entry's are forgotten too.
		if len(e.store) > 0 {
			drop := int(e.store[0].id - e.idBase)
			m := copy(e.byID, e.byID[drop:])
			e.byID = e.byID[:m]
			e.idBase = e.store[0].id
		}
	}
}

// consume hands the deliveries that arrived by t to metrics, files and
// (for the agent phase) receivers.
func (e *epochNet) consume(t sim.Time) {
	r := e.r
	n := 0
	for e.head+n < len(e.pend) && e.pend[e.head+n].at <= t {
		n++
	}
	if cap(e.scratch) < n {
		e.scratch = make([]netsim.Packet, n, 2*n)
	}
	e.scratch = e.scratch[:n]
	e.deliv = e.deliv[:0]
	for i := 0; i < n; i++ {
		pd := &e.pend[e.head+i]
		p := &e.scratch[i]
		*p = pd.p
		content := true
		if pd.deferred {
			k := e.find(pd.p.ID)
			if k >= 0 && e.store[k].bound {
				p.Payload = e.store[k].data
			} else {
				content = false // beyond the horizon
			}
		} else {
			p.Payload = e.arena[pd.off : pd.off+pd.n]
		}
		d := netsim.Delivery{P: p, Dst: pd.dst, At: pd.at, RxPower: pd.rxPower}
		r.met.Delivered(&d, t)
		if r.out.rec != nil {
			r.out.rec.Delivery(&d, t)
		}
		if content {
			e.deliv = append(e.deliv, d)
		}
	}
	e.head += n
	r.net.deliv = e.deliv
	if e.head > 4096 && e.head*2 > len(e.pend) {
		rest := e.pend[e.head:]
		base := len(e.arena)
		for i := range rest {
			if !rest[i].deferred {
				base = rest[i].off
				break
			}
		}
		for i := range rest {
			rest[i].off -= base
		}
		k := copy(e.pend, rest)
		e.pend, e.head = e.pend[:k], 0
		e.arena = e.arena[:copy(e.arena, e.arena[base:])]
	}
}

// firstRunner is a backend that runs the network before the vehicles move
// (netsim/replay's, for network.mode: replay): Record has it plan every
// epoch up to end with plan and keep the fates of the packets.
type firstRunner interface {
	Record(end sim.Time, epoch sim.Duration, plan func(t0, t1 sim.Time) ([]*netsim.Packet, error)) error
}

// recordReplay runs the network first (network.mode: replay): fresh copies
// of the planners plan every epoch of the run, without seeing the
// vehicles move, and the replay backend records the fates of their packets.
func (r *Run) recordReplay(rb firstRunner) error {
	host := &planHost{r: r}
	type copyOf struct {
		ctx  *agent.Context
		drv  agent.Driver
		p    agent.Planner
		path string
		typ  string
		node string
	}
	var copies []copyOf
	ctxs := make([]*agent.Context, len(r.fleet.nodes))
	drvs := make([]agent.Driver, len(r.fleet.nodes))
	for _, pl := range r.net.ep.planners {
		ns := &r.fleet.nodes[pl.node]
		s := &ns.slots[pl.slot]
		if ctxs[pl.node] == nil {
			c, d := agent.NewContext(ns.ref, host, ns.veh, ns.ctx.Telemetry(), sim.Stream(r.cfg.seed, "agent", pl.node), r.log)
			d.SetPlanOnly()
			ctxs[pl.node], drvs[pl.node] = c, d
		}
		b := s.made.spec.New(s.made.params)
		if err := b.Start(ctxs[pl.node]); err != nil {
			return fmt.Errorf("%s (%s, node %s): planning the traffic before the run: %w", s.path, s.typ, ns.ref.Name, err)
		}
		p, ok := b.(agent.Planner)
		if !ok {
			return fmt.Errorf("internal error: %s is a planner only sometimes", s.typ)
		}
		copies = append(copies, copyOf{ctx: ctxs[pl.node], drv: drvs[pl.node], p: p, path: s.path, typ: s.typ, node: ns.ref.Name})
	}
	return rb.Record(r.cfg.end, sim.Duration(r.net.epochEvery)*r.cfg.tick, func(t0, t1 sim.Time) ([]*netsim.Packet, error) {
		host.sent = host.sent[:0]
		for _, c := range copies {
			c.drv.SetNow(t0)
			c.drv.SetPlanning(t1)
			c.drv.ReadState()
			c.p.Plan(c.ctx, t1)
			c.drv.SetPlanning(0)
			if host.err != nil {
				return nil, fmt.Errorf("%s (%s) while planning the traffic before the run: %w", c.path, c.typ, host.err)
			}
			if c.drv.ReadState() {
				return nil, fmt.Errorf("%s (%s, node %s) reads its vehicle's state to decide what to send, so the network cannot run first: use network.mode: coupled",
					c.path, c.typ, c.node)
			}
		}
		return host.sent, nil
	})
}

// planHost is the agent.Host of the planner copies that plan a replayed
// run's traffic: it collects their packets and records nothing else.
type planHost struct {
	r    *Run
	pool netsim.PacketPool
	sent []*netsim.Packet
	err  error // the first failure a planner reported
}

func (h *planHost) Send(src netsim.NodeID, m *agent.Message) {
	p := h.pool.Get(len(m.Payload))
	p.Src, p.Dst, p.Port, p.Kind, p.Seq = src, m.Dst, m.Port, m.Kind, m.Seq
	p.TGen, p.TSend, p.Size = m.TGen, m.TSend, m.Size
	p.Payload = append(p.Payload, m.Payload...)
	h.sent = append(h.sent, p)
}

func (h *planHost) Event(sim.Time, netsim.NodeID, string, string) {}
func (h *planHost) Tick() sim.Duration                            { return h.r.cfg.tick }
func (h *planHost) Nodes() []agent.NodeRef                        { return h.r.fleet.refs }
func (h *planHost) Origin() geom.Geodetic                         { return h.r.cfg.sc.World.Origin }
func (h *planHost) File(string) (io.Writer, error)                { return io.Discard, nil }
func (h *planHost) Fail(node netsim.NodeID, err error) {
	if h.err == nil {
		h.err = fmt.Errorf("node %s: %w", h.r.fleet.refs[node].Name, err)
	}
}
func (h *planHost) Network() agent.NetworkMode { return (*host)(h.r).Network() }
