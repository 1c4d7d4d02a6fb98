// Package replay is trace replay as a network backend: the
// network runs first, over the whole run, from the traffic plan (every
// packet the nodes will send, which must not depend on what happens during
// the run), and every packet's fate is recorded: each transmission, drop
// and arrival with its exact time. The run then replays those fates.
//
// The run drives the backend in epochs, like a coupled network advanced in
// epochs: at each epoch start it hands over the epoch's planned packets and
// advances to the epoch's end. Record drives the inner network through the
// same calls with the same packets, so the replayed trace events and
// deliveries are the coupled run's, in the same order; a replayed run and
// a coupled one with the same seed write byte-identical traces.
//
// Packets carry no state that the network sees: the content of a state
// update is bound to its sender's state at its generation time when it is
// consumed, by the engine, in both modes alike. The live run's packets are
// checked against the plan (sender, destination, kind, sequence number,
// size, times): a difference means the traffic depended on the run after
// all, and is an error.
package replay

import (
	"fmt"

	"skyloop/geom"
	"skyloop/netsim"
	"skyloop/sim"
)

// chunk is the number of recorded packets stored per allocation; recorded
// packets never move, so deliveries may point at them.
const chunk = 4096

type traceRec struct {
	typ     netsim.EventType
	reason  netsim.DropReason
	node    netsim.NodeID
	pkt     int32 // index in the plan
	t       sim.Time
	rxPower float64
}

type delivRec struct {
	pkt     int32
	dst     netsim.NodeID
	at      sim.Time
	rxPower float64
}

// call is one recorded AdvanceTo: its time and where its trace events,
// deliveries and the plan stood at its end.
type call struct {
	t                  sim.Time
	traceEnd, delivEnd int
	planned            int // packets handed over before it
}

// Backend replays a recorded network.
type Backend struct {
	inner netsim.Backend
	tr    netsim.Tracer // the run's tracer

	pkts   [][]netsim.Packet // the plan, in send order (chunks)
	n      int               // packets in the plan
	traces []traceRec
	delivs []delivRec
	calls  []call

	// Replay position.
	next     int // next call to serve
	tHead    int
	dHead    int
	matched  int // live packets checked against the plan
	err      error
	ev       netsim.TraceEvent
	out      []netsim.Delivery
	recorded bool
}

// New returns a replay backend whose network is built by newInner with the
// tracer through which Record watches it; tr receives the replayed trace
// events.
func New(newInner func(tr netsim.Tracer) (netsim.Backend, error), tr netsim.Tracer) (*Backend, error) {
	if tr == nil {
		tr = netsim.Tracers(nil)
	}
	b := &Backend{tr: tr}
	inner, err := newInner(netsim.TraceFunc(b.record))
	if err != nil {
		return nil, err
	}
	b.inner = inner
	return b, nil
}

// Start starts the inner network with the nodes.
func (b *Backend) Start(nodes []netsim.NodeInfo) error { return b.inner.Start(nodes) }

func (b *Backend) pkt(i int) *netsim.Packet { return &b.pkts[i/chunk][i%chunk] }

// record keeps one trace event of the inner network.
func (b *Backend) record(e *netsim.TraceEvent) {
	b.traces = append(b.traces, traceRec{typ: e.Type, reason: e.Reason, node: e.Node, pkt: int32(e.P.ID), t: e.T, rxPower: e.RxPower})
}

// Record runs the network first: for every epoch [t0, t1) of [0, end),
// plan returns the packets sent in it (taken from a netsim.Pool, in send
// order), which the backend hands to the inner network before advancing it
// to t1-1, recording what happens. The inner network is closed at the end.
func (b *Backend) Record(end sim.Time, epoch sim.Duration, plan func(t0, t1 sim.Time) ([]*netsim.Packet, error)) error {
	if b.recorded {
		return fmt.Errorf("replay: recorded twice")
	}
	b.recorded = true
	if epoch <= 0 {
		return fmt.Errorf("replay: epoch %v must be positive", epoch)
	}
	for t0 := sim.Time(0); t0 < end; t0 = t0.Add(epoch) {
		t1 := min(t0.Add(epoch), end)
		ps, err := plan(t0, t1)
		if err != nil {
			b.inner.Close()
			return err
		}
		for _, p := range ps {
			if b.n%chunk == 0 {
				b.pkts = append(b.pkts, make([]netsim.Packet, chunk))
			}
			q := b.pkt(b.n)
			*q = netsim.Packet{ID: uint64(b.n), Src: p.Src, Dst: p.Dst, Port: p.Port, Kind: p.Kind, Seq: p.Seq,
				TGen: p.TGen, TSend: p.TSend, Size: p.Size}
			p.ID = uint64(b.n) // trace events name the plan entry
			b.n++
			b.inner.Send(p)
		}
		ds, err := b.inner.AdvanceTo(t1 - 1)
		if err != nil {
			b.inner.Close()
			return fmt.Errorf("replay: running the network first: %w", err)
		}
		for _, d := range ds {
			b.delivs = append(b.delivs, delivRec{pkt: int32(d.P.ID), dst: d.Dst, at: d.At, rxPower: d.RxPower})
		}
		b.calls = append(b.calls, call{t: t1 - 1, traceEnd: len(b.traces), delivEnd: len(b.delivs), planned: b.n})
	}
	return b.inner.Close()
}

// Packets returns the number of packets in the plan.
func (b *Backend) Packets() int { return b.n }

// Send checks a live packet against the plan, takes its id and payload,
// and frees it: its fate is already known.
func (b *Backend) Send(p *netsim.Packet) {
	defer p.Free()
	if b.err != nil {
		return
	}
	if b.matched >= b.n {
		b.err = fmt.Errorf("replay: node %d sent a %s packet (seq %d at %v) beyond the %d packets of the traffic plan: "+
			"its sending depends on the run, which replay cannot reproduce; use network.mode: coupled", p.Src, p.Kind, p.Seq, p.TSend, b.n)
		return
	}
	q := b.pkt(b.matched)
	if p.Src != q.Src || p.Dst != q.Dst || p.Port != q.Port || p.Kind != q.Kind || p.Seq != q.Seq || p.TGen != q.TGen ||
		p.TSend != q.TSend || p.Size != q.Size {
		b.err = fmt.Errorf("replay: node %d sent %s seq %d (%d bytes to %d at %v) where the traffic plan has node %d's %s seq %d (%d bytes to %d at %v): "+
			"its sending depends on the run, which replay cannot reproduce; use network.mode: coupled",
			p.Src, p.Kind, p.Seq, p.Size, p.Dst, p.TSend, q.Src, q.Kind, q.Seq, q.Size, q.Dst, q.TSend)
		return
	}
	q.ID = p.ID
	q.Payload = append(q.Payload[:0], p.Payload...)
	b.matched++
}

// SetPositions is ignored: the fates were fixed before the run.
func (b *Backend) SetPositions(t sim.Time, pos []geom.Vec3) {}

// AdvanceTo replays the recorded network up to t: the trace events and
// deliveries of every recorded advance to a time <= t, in recorded order.
func (b *Backend) AdvanceTo(t sim.Time) ([]netsim.Delivery, error) {
	b.out = b.out[:0]
	if b.err != nil {
		return nil, b.err
	}
	for b.next < len(b.calls) && b.calls[b.next].t <= t {
		c := b.calls[b.next]
		if b.matched != c.planned {
			b.err = fmt.Errorf("replay: the run handed over %d packets by %v where the traffic plan has %d: "+
				"its sending depends on the run, which replay cannot reproduce; use network.mode: coupled", b.matched, c.t, c.planned)
			return nil, b.err
		}
		for ; b.tHead < c.traceEnd; b.tHead++ {
			r := &b.traces[b.tHead]
			b.ev = netsim.TraceEvent{Type: r.typ, T: r.t, P: b.pkt(int(r.pkt)), Node: r.node, Reason: r.reason, RxPower: r.rxPower}
			b.tr.Trace(&b.ev)
		}
		for ; b.dHead < c.delivEnd; b.dHead++ {
			r := &b.delivs[b.dHead]
			b.out = append(b.out, netsim.Delivery{P: b.pkt(int(r.pkt)), Dst: r.dst, At: r.at, RxPower: r.rxPower})
		}
		b.next++
	}
	return b.out, nil
}

// Close releases the recording.
func (b *Backend) Close() error {
	b.pkts, b.traces, b.delivs, b.calls = nil, nil, nil, nil
	return nil
}
