package extern

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"skyloop/edge"
	"skyloop/fields"
	"skyloop/geom"
	"skyloop/netsim"
	"skyloop/sim"
)

// NetParams configure the extern network backend.
type NetParams struct {
	// Command starts the network simulator (a shell command, run from the
	// scenario file's directory); empty = it connects on its own with the
	// printed token, as role 1.
	Command string `yaml:"command" json:"command"`
	// Timeout is the wall-clock time the simulator has to answer a tick.
	Timeout sim.Duration `yaml:"timeout" json:"timeout"`
	// ConnectTimeout is the wall-clock time it has to connect.
	ConnectTimeout sim.Duration `yaml:"connect_timeout" json:"connect_timeout"`
}

// DefaultNetParams returns the defaults.
func DefaultNetParams() NetParams {
	return NetParams{Timeout: 10 * sim.Second, ConnectTimeout: 10 * sim.Second}
}

// Validate checks the parameters.
func (p *NetParams) Validate() fields.Errors {
	bad := fields.Errors{}
	if p.Timeout <= 0 {
		bad["timeout"] = fmt.Sprintf("must be a positive duration, got %v", p.Timeout)
	}
	if p.ConnectTimeout <= 0 {
		bad["connect_timeout"] = fmt.Sprintf("must be a positive duration, got %v", p.ConnectTimeout)
	}
	if strings.Contains(p.Command, "{") {
		bad["command"] = "the network simulator's command has no placeholders"
	}
	return bad
}

// NetBackend is a network backend played by an external process (a type 1
// subscriber of the lockstep tick protocol, docs/protocol.md): at every network phase skyloop
// sends it the time, the node positions when they changed and the packets
// sent since the last phase; it answers with the receptions and drops it
// decided up to that time, and releases the packets it is done with.
type NetBackend struct {
	p  *NetParams
	tr netsim.Tracer
	ag *Agent

	n        int
	pos      []Vec3
	posDirty bool
	pending  []*netsim.Packet
	inflight map[uint64]*flight
	settled  map[verdict]struct{} // receivers with a verdict, of packets in flight
	added    []verdict            // keys added by the frame being checked
	spare    []*flight
	out      []netsim.Delivery
	dead     netsim.Graveyard
	ev       netsim.TraceEvent
	timer    *time.Timer
	frame    Frame
}

// flight is a packet the simulator has not released yet.
type flight struct {
	p        *netsim.Packet
	rcv      []int32 // receivers with a verdict
	released bool    // by the frame being checked
}

// verdict names one packet at one receiver.
type verdict struct {
	id  uint64
	dst int32
}

// NewNetBackend returns the backend; it connects when the run starts.
func NewNetBackend(p *NetParams, tr netsim.Tracer) *NetBackend {
	if tr == nil {
		tr = netsim.Tracers(nil)
	}
	return &NetBackend{p: p, tr: tr, inflight: map[uint64]*flight{}, settled: map[verdict]struct{}{}}
}

// Open implements edge.Component: the network simulator joins the run's
// extern server (as a type 1 subscriber).
func (b *NetBackend) Open(env *edge.Env) error {
	server(env).AddNetwork(b)
	return nil
}

// Start implements netsim.Backend.
func (b *NetBackend) Start(nodes []netsim.NodeInfo) error {
	if b.ag == nil {
		return errors.New("internal error: the extern network backend has no server")
	}
	b.n = len(nodes)
	b.pos = make([]Vec3, len(nodes))
	for i, nd := range nodes {
		b.pos[i] = Vec3{nd.Pos.X, nd.Pos.Y, nd.Pos.Z}
	}
	b.posDirty = true
	return nil
}

func (b *NetBackend) trace(typ netsim.EventType, t sim.Time, p *netsim.Packet, nd netsim.NodeID, r netsim.DropReason) {
	b.ev = netsim.TraceEvent{Type: typ, T: t, P: p, Node: nd, Reason: r, RxPower: netsim.NoPower}
	b.tr.Trace(&b.ev)
}

// Send implements netsim.Backend: the packet goes to the simulator at the
// next network phase.
func (b *NetBackend) Send(p *netsim.Packet) {
	b.dead.Flush()
	b.trace(netsim.EvTx, p.TSend, p, p.Dst, 0)
	b.pending = append(b.pending, p)
	var fl *flight
	if k := len(b.spare); k > 0 {
		fl, b.spare = b.spare[k-1], b.spare[:k-1]
	} else {
		fl = &flight{}
	}
	fl.p = p
	b.inflight[p.ID] = fl
}

// SetPositions implements netsim.Backend.
func (b *NetBackend) SetPositions(t sim.Time, pos []geom.Vec3) {
	for i, p := range pos {
		if i < len(b.pos) {
			b.pos[i] = Vec3{p.X, p.Y, p.Z}
		}
	}
	b.posDirty = true
}

// AdvanceTo implements netsim.Backend: one round trip with the simulator.
func (b *NetBackend) AdvanceTo(t sim.Time) ([]netsim.Delivery, error) {
	b.dead.Flush()
	b.out = b.out[:0]
	a := b.ag
	f := &b.frame
	*f = Frame{Type: TypeNetTick, T: int64(t)}
	if b.posDirty {
		f.Positions = b.pos
		b.posDirty = false
	}
	for _, p := range b.pending {
		f.Packets = append(f.Packets, Packet{ID: p.ID, Src: int(p.Src), Dst: int(p.Dst), Port: int(p.Port), Kind: p.Kind.String(),
			Seq: p.Seq, TSend: int64(p.TSend), Size: p.Size, Payload: p.Payload})
	}
	b.pending = b.pending[:0]
	if err := a.srv.Err(); err != nil {
		return nil, err
	}
	a.ticks.Add(1) // before the simulator can answer it
	if err := a.conn.write(f, time.Duration(b.p.Timeout)); err != nil {
		return nil, b.fail(fmt.Errorf("sending the network tick at %v: %w", t, err))
	}
	limit := time.Duration(b.p.Timeout)
	if b.timer == nil {
		b.timer = time.NewTimer(limit)
	} else {
		b.timer.Reset(limit)
	}
	defer b.timer.Stop()
	reply, timedOut := a.next(b.timer.C)
	switch {
	case timedOut:
		return nil, b.fail(fmt.Errorf("no net_done within %v of wall-clock time at t=%v (hung?)", b.p.Timeout, t))
	case reply == nil:
		return nil, b.fail(a.err)
	}
	if reply.Type != TypeNetDone {
		return nil, b.fail(fmt.Errorf("protocol error: a %s frame in the network phase", reply.Type))
	}
	if err := b.apply(t, reply); err != nil {
		return nil, b.fail(err)
	}
	return b.out, nil
}

// apply checks every verdict and release of a net_done frame for time t
// against what is in flight, and only when all are valid traces them and
// appends the receptions to b.out. A verdict is valid when its packet is
// in flight, its receiver is one the packet was meant for (a unicast
// packet's destination; any node but the sender for a broadcast) and has
// no verdict yet, its time lies in [send time, t], and a drop names a
// known reason; a release names a packet in flight, once. So a frame holds
// at most one verdict per receiver and packet in flight and one release
// per packet in flight: the checks bound its lists by what is meaningful,
// and the first entry beyond ends the check.
func (b *NetBackend) apply(t sim.Time, reply *Frame) error {
	if err := b.check(t, reply); err != nil {
		for _, k := range b.added {
			delete(b.settled, k)
		}
		for _, id := range reply.Release {
			if fl := b.inflight[id]; fl != nil {
				fl.released = false
			}
		}
		b.added = b.added[:0]
		return err
	}
	b.added = b.added[:0]
	for _, e := range reply.Events {
		fl := b.inflight[e.ID]
		fl.rcv = append(fl.rcv, int32(e.Dst))
		if e.Drop != "" {
			why, _ := dropReason(e.Drop)
			b.trace(netsim.EvDrop, sim.Time(e.At), fl.p, netsim.NodeID(e.Dst), why)
			continue
		}
		b.trace(netsim.EvRx, sim.Time(e.At), fl.p, netsim.NodeID(e.Dst), 0)
		b.out = append(b.out, netsim.Delivery{P: fl.p, Dst: netsim.NodeID(e.Dst), At: sim.Time(e.At), RxPower: netsim.NoPower})
	}
	for _, id := range reply.Release {
		fl := b.inflight[id]
		delete(b.inflight, id)
		for _, r := range fl.rcv {
			delete(b.settled, verdict{id, r})
		}
		b.dead.Bury(fl.p)
		*fl = flight{rcv: fl.rcv[:0]}
		b.spare = append(b.spare, fl)
	}
	return nil
}

// check is apply's first pass: it validates the frame, recording the new
// verdicts in b.settled (and b.added, to undo them) and marking releases.
func (b *NetBackend) check(t sim.Time, reply *Frame) error {
	for _, e := range reply.Events {
		fl := b.inflight[e.ID]
		if fl == nil {
			return fmt.Errorf("protocol error: an event for packet %d, which is not in flight", e.ID)
		}
		p := fl.p
		what := "a reception"
		if e.Drop != "" {
			if _, ok := dropReason(e.Drop); !ok {
				return fmt.Errorf("protocol error: unknown drop reason %.64q", e.Drop)
			}
			what = "a drop (" + e.Drop + ")"
		}
		switch {
		case e.Dst < 0 || e.Dst >= b.n:
			return fmt.Errorf("protocol error: packet %d: no node %d", e.ID, e.Dst)
		case p.Dst != netsim.Broadcast && e.Dst != int(p.Dst):
			return fmt.Errorf("protocol error: %s of packet %d (node %d to node %d) at node %d, which is not its destination",
				what, e.ID, p.Src, p.Dst, e.Dst)
		case p.Dst == netsim.Broadcast && e.Dst == int(p.Src):
			return fmt.Errorf("protocol error: %s of broadcast packet %d at node %d, its sender", what, e.ID, e.Dst)
		case e.At < int64(p.TSend):
			return fmt.Errorf("protocol error: %s of packet %d at node %d at time %d, before its send time %d", what, e.ID, e.Dst, e.At, p.TSend)
		case e.At > int64(t):
			return fmt.Errorf("protocol error: %s of packet %d at node %d at time %d, after the tick %d", what, e.ID, e.Dst, e.At, t)
		}
		k := verdict{e.ID, int32(e.Dst)}
		if _, dup := b.settled[k]; dup {
			return fmt.Errorf("protocol error: %s of packet %d at node %d: a second verdict for that receiver", what, e.ID, e.Dst)
		}
		b.settled[k] = struct{}{}
		b.added = append(b.added, k)
	}
	for _, id := range reply.Release {
		fl := b.inflight[id]
		if fl == nil || fl.released {
			return fmt.Errorf("protocol error: release of packet %d, which is not in flight", id)
		}
		fl.released = true
	}
	return nil
}

func (b *NetBackend) fail(err error) error {
	e := errors.New(b.ag.describe() + ": " + err.Error())
	b.ag.srv.setFatal(e)
	return e
}

func dropReason(s string) (netsim.DropReason, bool) {
	for r := 1; r < netsim.NumDropReasons; r++ {
		if netsim.DropReason(r).String() == s {
			return netsim.DropReason(r), true
		}
	}
	return 0, false
}

// Close implements netsim.Backend: packets still in flight are freed.
func (b *NetBackend) Close() error {
	b.dead.Flush()
	for id, fl := range b.inflight {
		delete(b.inflight, id)
		fl.p.Free()
	}
	clear(b.settled)
	b.pending = b.pending[:0]
	return nil
}

// NetworkSpec is the external network simulator as scenarios name it (backend: extern).
var NetworkSpec = netsim.BackendSpec{
	Name:   "extern",
	Params: func() netsim.Params { p := DefaultNetParams(); return &p },
	New: func(p netsim.Params, seed uint64, tr netsim.Tracer) (netsim.Backend, error) {
		return NewNetBackend(p.(*NetParams), tr), nil
	},
}
