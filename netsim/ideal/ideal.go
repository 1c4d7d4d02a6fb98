// Package ideal is the perfect network: every packet reaches every intended
// receiver, whatever the distance, with zero delay. Because the network
// phase of a tick runs before the agents send, a packet sent at tick t is
// consumed at tick t+dt: one tick is the smallest latency a run can show.
package ideal

import (
	"skyloop/geom"
	"skyloop/netsim"
	"skyloop/sim"
)

// Backend is the ideal network.
type Backend struct {
	tr   netsim.Tracer
	n    int
	q    sim.Queue[*netsim.Packet]
	out  []netsim.Delivery
	dead netsim.Graveyard
	ev   netsim.TraceEvent
}

// New returns an ideal backend reporting to tr (which may be nil).
func New(tr netsim.Tracer) *Backend {
	if tr == nil {
		tr = netsim.Tracers(nil)
	}
	return &Backend{tr: tr}
}

// Start records the number of nodes.
func (b *Backend) Start(nodes []netsim.NodeInfo) error {
	b.n = len(nodes)
	return nil
}

// Send schedules p for its send time.
func (b *Backend) Send(p *netsim.Packet) {
	b.dead.Flush()
	b.q.Push(p.TSend, p)
}

// SetPositions is ignored: the ideal network has no range.
func (b *Backend) SetPositions(t sim.Time, pos []geom.Vec3) {}

func (b *Backend) trace(typ netsim.EventType, t sim.Time, p *netsim.Packet, nd netsim.NodeID, r netsim.DropReason) {
	b.ev = netsim.TraceEvent{Type: typ, T: t, P: p, Node: nd, Reason: r, RxPower: netsim.NoPower}
	b.tr.Trace(&b.ev)
}

// AdvanceTo transmits every packet sent up to t and delivers it at once.
func (b *Backend) AdvanceTo(t sim.Time) ([]netsim.Delivery, error) {
	b.dead.Flush()
	b.out = b.out[:0]
	for {
		at, ok := b.q.PeekTime()
		if !ok || at > t {
			break
		}
		_, p := b.q.Pop()
		b.trace(netsim.EvTx, at, p, p.Dst, 0)
		switch {
		case p.Dst == netsim.Broadcast:
			for i := 0; i < b.n; i++ {
				if id := netsim.NodeID(i); id != p.Src {
					b.deliver(at, p, id)
				}
			}
		case p.Dst >= 0 && int(p.Dst) < b.n && p.Dst != p.Src:
			b.deliver(at, p, p.Dst)
		default:
			b.trace(netsim.EvDrop, at, p, p.Dst, netsim.DropNoRoute)
		}
		b.dead.Bury(p)
	}
	return b.out, nil
}

func (b *Backend) deliver(at sim.Time, p *netsim.Packet, dst netsim.NodeID) {
	b.trace(netsim.EvRx, at, p, dst, 0)
	b.out = append(b.out, netsim.Delivery{P: p, Dst: dst, At: at, RxPower: netsim.NoPower})
}

// Close frees every packet not yet sent.
func (b *Backend) Close() error {
	b.dead.Flush()
	for b.q.Len() > 0 {
		_, p := b.q.Pop()
		p.Free()
	}
	return nil
}

// NextEvent implements netsim.Stepper: the time of the earliest pending
// event.
func (b *Backend) NextEvent() (sim.Time, bool) { return b.q.PeekTime() }
