// Package wifi is skyloop's own 802.11 network model: a channel with
// log-distance, Friis, two-ray or range loss and optional Rayleigh or
// Nakagami fading; a PHY with SINR-based reception over chunks of constant
// interference, ns-3's threshold preamble detection, DSSS and OFDM error
// models, and receiver states (transmitting, receiving, energy-detect busy);
// and the 802.11 DCF MAC: DIFS/EIFS, slotted backoff that freezes while the
// medium is busy, post-backoff, ACKs and retries for unicast, a drop-tail
// queue with a lifetime, and NAV. Its defaults and behaviour follow ns-3
// 3.37 so that the `wifi` and `ns3` backends agree (see the validation tests)
// while this one runs an order of magnitude faster; Params.Profile selects
// those of ns-3.26 instead (profile.go).
//
// Each transmission touches only the nodes within the cutoff range: the
// distance at which the received power falls CutoffDb (20 dB) below the
// noise floor (about 600 m with ns-3's default channel). Signals below the
// receiver sensitivity are ignored anyway, as ns-3's YansWifiChannel does,
// so the cutoff only matters with fading (a far signal fading up above the
// sensitivity).
package wifi

import (
	"cmp"
	"io"
	"math"
	"slices"
	"unsafe"

	"skyloop/geom"
	"skyloop/internal/prefetch"
	"skyloop/netsim"
	"skyloop/netsim/spatial"
	"skyloop/sim"
)

type evKind uint8

const (
	evEnqueue evKind = iota
	evAccess
	evTxEnd
	evAckTimeout
	evSendAck
	evHeader
)

type event struct {
	kind evKind
	node int32
	gen  uint64
	pkt  *netsim.Packet
	f    *frame
}

// psduSafeguard is what ns-3 3.37 adds to the PSDU duration when a frame's
// PSDU reception starts while a station awaits an ACK (the ACK timeout is
// moved to the end of that frame plus this; PSDU_DURATION_SAFEGUARD).
const psduSafeguard = 400 * sim.Nanosecond

// frame is one transmission on the air.
type frame struct {
	id       uint64
	src      int32
	dst      int32 // MAC destination, -1 broadcast
	pkt      *netsim.Packet
	ack      bool // an ACK frame (pkt is the acknowledged packet)
	start    sim.Time
	end      sim.Time
	mode     Mode
	recv     []reception
	attempts int
	// refs counts the calendar events that hold the frame; the frame
	// returns to the backend's free list when the last one is handled.
	refs int32
}

// reception is what happened to a frame at one receiver.
type reception struct {
	node   int32
	locked bool
	why    netsim.DropReason // when not locked
}

// signal is a frame's energy at one receiver.
type signal struct {
	id         uint64 // the frame's
	start, end sim.Time
	w          float64 // watts
}

// node is one station. Its fields are laid out for the arrivals of
// frames, which reach every receiver in range and find it cold in cache
// in a large swarm: what an arrival reads and writes (the PHY's lock, the
// medium's busy period, the signal list and its first inline entries)
// comes first, nodeHot bytes that transmit prefetches (TestNodeLayout).
// It is not padded to whole cache lines: in a small swarm, where nothing
// misses, a smaller node keeps more of the nodes in the nearest cache.
type node struct {
	id      int32
	hdrDone bool // the locked frame's PHY header outcome is known (and was a success)
	// eifs: the last reception ended in error, at errEnd; the medium must
	// then be idle for EIFS after errEnd (and DIFS after any busy period).
	eifs bool

	// PHY
	txUntil sim.Time
	locked  uint64 // id of the frame being received, 0 none
	lockEnd sim.Time
	lockBeg sim.Time
	lockW   float64 // power of the frame being received, watts
	lockF   *frame  // that frame (valid while locked != 0)

	// medium state: the current (or next) busy period [busyFrom, busyUntil)
	busyFrom, busyUntil sim.Time
	errEnd              sim.Time

	sigs []signal // signals that may still matter: overlapping now or the frame being received
	// sigBuf holds sigs until more than six signals overlap at the node
	// (then they move to an allocation of their own, kept for the rest of
	// the run): next to the rest of the node's reception state, where
	// arrivals do not miss it in cache.
	sigBuf [6]signal

	pos geom.Vec3

	// DCF
	queue    []*netsim.Packet
	qHead    int
	cur      *netsim.Packet
	attempts int
	slots    int
	bkStart  sim.Time // backoff reference: slots count from max(idle start, bkStart) + AIFS
	cw       int
	gen      uint64   // invalidates scheduled access events
	accessAt sim.Time // time of the scheduled access event (valid while pending)
	pending  bool
	waitAck  *frame
	ackAt    sim.Time // when the ACK timeout for waitAck expires
	ackRxEnd sim.Time // the timeout was moved to the end of a reception that ended then (0: not moved)
	draws    uint64
	lastUni  map[int32]uint64 // last unicast packet id delivered per sender (duplicate filter)
}

// nodeHot is the size of the part of a node a frame's arrival touches
// first: up to its first two inline signals.
const nodeHot = unsafe.Offsetof(node{}.sigBuf) + 2*unsafe.Sizeof(signal{})

// Backend is the native 802.11 network.
type Backend struct {
	// sigSpare is the unused room of the block nodes' signal lists grow
	// into (growSigs).
	sigSpare []signal
	work     netsim.Work

	p      Params
	tm     timing
	mode   Mode
	seed   uint64
	tr     netsim.Tracer
	noise  float64
	cutoff float64
	nodes  []node
	mark   []uint64 // per node: id of the last frame unseen marked it for
	pos    []geom.Vec3
	held   netsim.HeldPositions // a position update for a time not reached yet
	idx    *spatial.Index
	near   []spatial.Near // a transmission's receivers in range (transmit)
	// prefetch: the nodes outgrow the cache, so transmit prefetches its
	// receivers (prefetchAbove).
	prefetch bool
	// reachSq is the square of the range a transmission looks at
	// (lookSq); the spatial index's cells are at least that large.
	reachSq float64
	// cellScale, when above 1, widens the spatial index's cells: tests
	// use it to show that results do not depend on them.
	cellScale float64
	q         *sim.Calendar[event]
	out       []netsim.Delivery
	dead      netsim.Graveyard
	ev        netsim.TraceEvent
	frames    uint64
	ackDur    sim.Duration
	eifsD     sim.Duration
	prof      *profile
	// ackTimeout is the ACK timeout counted from the end of a data frame:
	// ns-3.37's SIFS + slot + the ACK's PHY preamble and header (moved to
	// the end of a frame whose PSDU reception starts before it), or
	// ns-3.26's fixed AckTimeout.
	ackTimeout sim.Duration
	// ccaW is the CCA threshold on the total energy of the frames a
	// receiver is not receiving (watts): the lower of CcaSensitivity and
	// CcaEdThreshold.
	ccaW float64
	// preambleRatio is the preamble detection SNR threshold, linear.
	preambleRatio float64
	// rxSensitivity is the sensitivity scaled to the transmission's
	// channel width (dBm).
	rxSensitivity float64
	cutoffDbm     float64
	// Distance pre-classification (squared metres), when the received
	// power is a non-increasing function of distance alone (no fading):
	// beyond quietSq a signal is surely below the sensitivity, beyond
	// farSq surely below the cutoff; between the bounds and the exact
	// boundaries lies a margin where rxPower decides. +Inf disables it.
	quietSq, farSq float64
	// counting is set when the tracer needs only the number of drops:
	// receivers below the sensitivity are then counted, not recorded.
	counting bool
	counter  netsim.DropCounter
	// rxCounter is set when the tracer needs only the number of
	// receptions (netsim.ReceptionCounter): deliveries of one packet that
	// come one after another are counted in one call (rxN of rxP, the
	// first at rxT; flushReceptions).
	rxCounter netsim.ReceptionCounter
	rxP       *netsim.Packet
	rxT       sim.Time
	rxN       int
	drops     [netsim.NumDropReasons]int // counted by dropAt, for flushDrops
	// Linear-domain received power (see linWatts): with log-distance
	// loss of exponent 2, 3 or 4, or Friis, and no fading, the power in
	// watts is a product, with no logarithm or exponential; thresholds
	// are compared in watts.
	lin                     int     // the exponent, 0 = off
	wRef, dRef              float64 // watts at and within dRef
	cutoffW, sensW, preMinW float64
	free                    []*frame // frames to reuse
	capture                 Capture  // capture.pcap (pcap: true)
	newCapture              func(w io.Writer) (Capture, error)
	open                    func(name string) (io.Writer, error)
	now                     sim.Time
	clock                   sim.Time // the latest time AdvanceTo was asked for
}

// New returns a native Wi-Fi backend reporting to tr (which may be nil).
func New(p Params, seed uint64, tr netsim.Tracer) (*Backend, error) {
	if err := p.Validate().Err("wifi"); err != nil {
		return nil, err
	}
	prof, _ := profileByName(p.Profile)
	if tr == nil {
		tr = netsim.Tracers(nil)
	}
	b := &Backend{p: p, tm: timingFor(p.Standard), seed: seed, tr: tr, q: sim.NewCalendar[event](16, 12), prof: prof}
	if p.Mode == "" {
		for _, m := range Modes {
			if m.Standard == p.Standard {
				b.mode = m
				break
			}
		}
	} else {
		b.mode, _ = ModeByName(p.Mode)
	}
	b.noise = noiseW(p.NoiseFigure)
	if p.Standard == "80211b" && prof.dsssNoise22 {
		b.noise *= 22.0 / 20 // ns-3.26: the 22 MHz DSSS channel width
	}
	b.rxSensitivity = p.RxSensitivity
	if p.Standard == "80211b" && prof.scaleDsssSensitivity {
		// ns-3 scales the 20 MHz sensitivity to the 22 MHz of a DSSS
		// transmission (YansWifiChannel::Receive: sensitivity +
		// 10 log10(22/20) dB = -100.59 dBm by default).
		b.rxSensitivity += 10 * math.Log10(22.0/20)
	}
	b.preambleRatio = math.Pow(10, p.PreambleSnr/10)
	b.cutoffDbm = 10*math.Log10(b.noise) + 30 - p.CutoffDb
	b.cutoff = b.cutoffRange()
	b.ackDur = b.tm.duration(b.mode, ackBytes)
	b.eifsD = b.tm.sifs + b.tm.duration(b.tm.headerMode, ackBytes) + b.tm.difs
	if prof.ackTimeout26 {
		// WifiMac::Configure80211a/b: SIFS + the ACK at the lowest rate
		// + slot + twice the 3 µs (whole microseconds of 1000 m at
		// 3e8 m/s) of the default maximum propagation delay.
		b.ackTimeout = b.tm.sifs + b.tm.duration(b.tm.headerMode, ackBytes) + b.tm.slot + 6*sim.Microsecond
	} else {
		// FrameExchangeManager::SendMpdu: "aSIFSTime + aSlotTime +
		// aRxPHYStartDelay", the last being the PHY preamble and header.
		b.ackTimeout = b.tm.sifs + b.tm.slot + b.tm.preamble + b.tm.header
	}
	b.ccaW = dbmToW(min(p.CcaSensitivity, p.CcaEdThreshold))
	b.setLinear()
	b.quietSq, b.farSq = math.Inf(1), math.Inf(1)
	if p.Fading == NoFading && p.Loss != TwoRay {
		b.farSq = sq(b.beyond(b.cutoffDbm))
		b.quietSq = b.farSq
		if prof.filterBelowSensitivity {
			// Signals below the sensitivity do nothing at all (with
			// ns-3.26 they still interfere and count as energy).
			b.quietSq = sq(b.beyond(b.rxSensitivity))
		}
	}
	return b, nil
}

// SetFiles implements netsim.FileUser: capture.pcap (pcap: true) is
// created through open and written by the backend's capture (SpecWith).
func (b *Backend) SetFiles(open func(name string) (io.Writer, error)) { b.open = open }

// CutoffRange returns the distance beyond which signals are ignored.
func (b *Backend) CutoffRange() float64 { return b.cutoff }

// Start sizes the per-node state.
func (b *Backend) Start(nodes []netsim.NodeInfo) error {
	b.nodes = make([]node, len(nodes))
	b.prefetch = uintptr(len(b.nodes))*unsafe.Sizeof(node{}) > prefetchAbove
	b.mark = make([]uint64, len(nodes))
	b.pos = make([]geom.Vec3, len(nodes))
	for i, n := range nodes {
		b.nodes[i] = node{id: int32(i), pos: n.Pos, cw: b.tm.cwMin, lastUni: map[int32]uint64{}}
		b.nodes[i].sigs = b.nodes[i].sigBuf[:0]
		b.pos[i] = n.Pos
	}
	if c, ok := b.tr.(netsim.DropCounter); ok && c.CountsDrops() {
		b.counting, b.counter = true, c
	}
	if c, ok := b.tr.(netsim.ReceptionCounter); ok && c.CountsReceptions() {
		b.rxCounter = c
	}
	b.reachSq = b.lookSq()
	b.idx = spatial.New(max(math.Sqrt(b.reachSq), 1) * max(b.cellScale, 1))
	b.idx.Build(b.pos)
	if b.p.Pcap && b.open != nil {
		f, err := b.open("capture.pcap")
		if err != nil {
			return err
		}
		if f != nil {
			if b.newCapture == nil {
				return errNoCapture
			}
			if b.capture, err = b.newCapture(f); err != nil {
				return err
			}
		}
	}
	return nil
}

// SetPositions moves the nodes.
func (b *Backend) SetPositions(t sim.Time, pos []geom.Vec3) {
	if !b.held.Hold(t, b.clock, pos) { // else applied at t (netsim.HeldPositions)
		b.place(pos)
	}
}

// PositionsAtTheirTime reports that SetPositions applies at its time
// (netsim.TimedPositions).
func (b *Backend) PositionsAtTheirTime() bool { return true }

// place moves the nodes to pos.
func (b *Backend) place(pos []geom.Vec3) {
	copy(b.pos, pos)
	for i := range b.nodes {
		b.nodes[i].pos = pos[i]
	}
	b.idx.Build(b.pos)
}

// Send queues p at its sender at p.TSend.
func (b *Backend) Send(p *netsim.Packet) {
	b.dead.Flush()
	b.q.Push(p.TSend, event{kind: evEnqueue, node: int32(p.Src), pkt: p})
}

func (b *Backend) trace(typ netsim.EventType, t sim.Time, p *netsim.Packet, nd netsim.NodeID, r netsim.DropReason, pw float64) {
	b.ev = netsim.TraceEvent{Type: typ, T: t, P: p, Node: nd, Reason: r, RxPower: pw}
	b.tr.Trace(&b.ev)
}

// Work returns the frames put on the air and their arrivals at nodes
// within the reception range so far (netsim.WorkCounter).
func (b *Backend) Work() netsim.Work { return b.work }

// AdvanceTo processes every event up to t.
func (b *Backend) AdvanceTo(t sim.Time) ([]netsim.Delivery, error) {
	b.dead.Flush()
	b.out = b.out[:0]
	b.clock = max(b.clock, t)
	for {
		et, ok := b.q.PeekTime()
		if !ok || et > t {
			break
		}
		if pos := b.held.Due(et); pos != nil {
			b.place(pos)
		}
		_, e := b.q.Pop()
		b.now = et
		n := &b.nodes[e.node]
		switch e.kind {
		case evEnqueue:
			b.enqueue(n, e.pkt)
		case evAccess:
			if e.gen == n.gen {
				n.pending = false
				b.access(n)
			}
		case evTxEnd:
			b.txEnd(e.f)
		case evAckTimeout:
			if n.waitAck == e.f && b.now == n.ackAt {
				b.ackExpired(n)
			}
		case evHeader:
			if n.locked == e.f.id && !n.hdrDone {
				// A weak frame (see arrive): busy to its end if the
				// header was received, else abandoned.
				b.checkHeader(n)
				if n.locked != 0 {
					b.busy(n, b.now, n.lockEnd)
				}
			}
		case evSendAck:
			a := b.newFrame()
			a.src, a.dst, a.pkt, a.ack, a.mode = n.id, e.f.src, e.f.pkt, true, b.mode
			b.transmit(n, a)
		}
		if e.f != nil {
			b.drop(e.f)
		}
	}
	if pos := b.held.Due(t); pos != nil {
		b.place(pos)
	}
	b.flushReceptions()
	return b.out, nil
}

// receivers calls f for every node a frame from src was meant for.
func (b *Backend) intended(p *netsim.Packet, f func(r int32)) {
	if p.Dst == netsim.Broadcast {
		for i := range b.nodes {
			if netsim.NodeID(i) != p.Src {
				f(int32(i))
			}
		}
		return
	}
	f(int32(p.Dst))
}

func (b *Backend) enqueue(n *node, p *netsim.Packet) {
	t := b.now
	b.trace(netsim.EvTx, t, p, p.Dst, 0, netsim.NoPower)
	if p.Dst != netsim.Broadcast && (p.Dst < 0 || int(p.Dst) >= len(b.nodes) || p.Dst == p.Src) {
		b.trace(netsim.EvDrop, t, p, p.Dst, netsim.DropNoRoute, netsim.NoPower)
		b.dead.Bury(p)
		return
	}
	if len(n.queue)-n.qHead >= b.p.QueueSize {
		b.dropAll(t, p, netsim.DropQueue)
		b.dead.Bury(p)
		return
	}
	p.Refs = 1 // the MAC's hold
	if n.cur == nil && n.waitAck == nil && n.qHead == len(n.queue) && !b.prof.immediateAccess {
		// 802.11 basic access (ns-3's NeedBackoffUponAccess): a packet
		// queued at an idle station with no backoff pending goes out
		// once the medium has been idle for DIFS; if the medium is busy
		// when it is queued, the station draws a backoff first, so that
		// stations that got packets during the same busy period do not
		// all transmit when it ends.
		b.consume(n, t)
		if n.slots == 0 && b.mediumBusy(n, t) {
			n.slots = b.drawSlots(n)
			n.bkStart = t
		}
	}
	n.queue = append(n.queue, p)
	if n.cur == nil && n.waitAck == nil {
		b.next(n)
	}
}

// mediumBusy reports whether n senses the medium busy at t: transmitting,
// or inside its current busy period (reception, energy, NAV).
func (b *Backend) mediumBusy(n *node, t sim.Time) bool {
	return n.txUntil > t || (n.busyFrom <= t && t < n.busyUntil)
}

func (b *Backend) dropAll(t sim.Time, p *netsim.Packet, why netsim.DropReason) {
	b.intended(p, func(r int32) { b.trace(netsim.EvDrop, t, p, netsim.NodeID(r), why, netsim.NoPower) })
}

// unref gives up one hold on p; the last one buries it (freed at the next
// call, so deliveries returned now stay valid).
func (b *Backend) unref(p *netsim.Packet) {
	if p.Refs--; p.Refs == 0 {
		b.dead.Bury(p)
	}
}

// next takes the head of the queue (dropping expired packets) and asks for
// the medium.
func (b *Backend) next(n *node) {
	t := b.now
	for n.qHead < len(n.queue) {
		p := n.queue[n.qHead]
		n.queue[n.qHead] = nil
		n.qHead++
		if t.Sub(p.TSend) > b.p.QueueDelay {
			b.dropAll(t, p, netsim.DropQueue)
			b.unref(p)
			continue
		}
		n.cur, n.attempts = p, 0
		break
	}
	if n.qHead == len(n.queue) {
		n.queue, n.qHead = n.queue[:0], 0 // empty: start over in place
	} else if n.qHead > 64 && n.qHead*2 > len(n.queue) {
		k := copy(n.queue, n.queue[n.qHead:])
		clear(n.queue[k:])
		n.queue, n.qHead = n.queue[:k], 0
	}
	if n.cur == nil {
		return
	}
	// A backoff left from the last transmission counts down meanwhile;
	// with none left the access waits AIFS from now.
	b.consume(n, t)
	if n.slots == 0 {
		n.bkStart = t
		if b.prof.immediateAccess {
			// ns-3.26's DcfManager::RequestAccess: with no backoff, the
			// medium is granted at once if it has been idle for DIFS
			// (EIFS); if it is busy or has been idle for less, backoffs
			// are drawn until one is nonzero.
			if b.mediumBusy(n, t) || t < b.accessFrom(n) {
				for n.slots == 0 {
					n.slots = b.drawSlots(n)
				}
			} else {
				n.bkStart = t.Add(-b.tm.difs)
			}
		}
	}
	b.schedule(n)
}

// countFrom returns when n's backoff counting (re)starts: DIFS after the
// backoff reference and after the medium's busy period, and EIFS after
// the end of an erroneous reception (ns-3's ChannelAccessManager: the
// access grant start is the latest of the ends of the busy states plus
// SIFS, plus EifsNoDifs after an erroneous reception, then AIFSN slots).
func (b *Backend) countFrom(n *node) sim.Time {
	return max(n.bkStart.Add(b.tm.difs), b.accessFrom(n))
}

// accessFrom returns when the medium lets n count or transmit: DIFS after
// its busy period, and EIFS after the end of an erroneous reception.
func (b *Backend) accessFrom(n *node) sim.Time {
	from := n.busyUntil.Add(b.tm.difs)
	if n.eifs && b.p.EIFS {
		from = max(from, n.errEnd.Add(b.eifsD))
	}
	return from
}

// consume counts the slots that elapsed idle before t.
func (b *Backend) consume(n *node, t sim.Time) {
	if n.slots == 0 {
		return
	}
	if n.busyFrom <= t && t < n.busyUntil {
		return // frozen
	}
	c := b.countFrom(n)
	if t > c {
		k := int(t.Sub(c) / b.tm.slot)
		n.slots = max(0, n.slots-k)
		n.bkStart = c.Add(sim.Duration(k) * b.tm.slot).Add(-b.tm.difs)
		if n.bkStart < n.busyUntil {
			n.bkStart = n.busyUntil
		}
	}
}

// schedule plans n's next access attempt.
func (b *Backend) schedule(n *node) {
	n.gen++
	n.pending = false
	if n.cur == nil || n.waitAck != nil || n.txUntil > b.now {
		return
	}
	at := b.countFrom(n).Add(sim.Duration(n.slots) * b.tm.slot)
	if at < b.now {
		at = b.now
	}
	n.accessAt, n.pending = at, true
	b.q.Push(at, event{kind: evAccess, node: n.id, gen: n.gen})
}

// busy records that n's medium is busy over [from, to).
func (b *Backend) busy(n *node, from, to sim.Time) {
	if from < n.busyUntil && to <= n.busyUntil {
		return
	}
	if n.pending && n.accessAt <= from {
		// The backoff ends before carrier sense can tell: the access goes
		// ahead (and collides), as it does in the same slot in 802.11.
		n.busyFrom = min(n.busyFrom, from)
		if from >= n.busyUntil {
			n.busyFrom = from
		}
		n.busyUntil = max(n.busyUntil, to)
		return
	}
	if from >= n.busyUntil {
		// A new busy period: count the slots of the idle gap first.
		b.consume(n, from)
		n.busyFrom = from
	}
	n.busyUntil = max(n.busyUntil, to)
	b.schedule(n)
}

func (b *Backend) drawSlots(n *node) int {
	n.draws++
	return int(sim.Hash(b.seed, uint64(n.id), n.draws, 0x5eed) % uint64(n.cw+1))
}

// access: the backoff is over and the medium idle: transmit the head packet.
func (b *Backend) access(n *node) {
	if n.cur == nil || n.waitAck != nil {
		return
	}
	if n.busyFrom <= b.now && b.now < n.busyUntil {
		b.schedule(n)
		return
	}
	p := n.cur
	n.attempts++
	dst := int32(-1)
	if p.Dst != netsim.Broadcast {
		dst = int32(p.Dst)
	}
	f := b.newFrame()
	f.src, f.dst, f.pkt, f.mode, f.attempts = n.id, dst, p, b.mode, n.attempts
	b.transmit(n, f)
}

// transmit puts f on the air now and works out what each receiver makes
// of it.
func (b *Backend) transmit(n *node, f *frame) {
	t := b.now
	b.frames++
	f.id = b.frames
	size := ackBytes
	if !f.ack {
		size = f.pkt.Size + netsim.HeaderBytes + macOverhead
	}
	f.start, f.end = t, t.Add(b.tm.duration(f.mode, size))
	n.locked = 0   // any reception is aborted by our own transmission
	n.eifs = false // ns-3's ChannelAccessManager::NotifyTxStartNow
	n.txUntil = f.end
	b.busy(n, t, f.end)
	if b.capture != nil && !f.ack {
		b.capture.Write(t, f.pkt)
	}
	f.recv = f.recv[:0]
	b.work.Transmissions++
	b.near = b.idx.Append(b.near[:0], n.pos, n.id, b.reachSq, b.pos)
	for k, c := range b.near {
		// The receivers are scattered over a large swarm's nodes: fetch
		// those a few arrivals ahead while this one is handled.
		if b.prefetch && k+prefetchAhead < len(b.near) {
			prefetch.Lines(unsafe.Pointer(&b.nodes[b.near[k+prefetchAhead].Node]), nodeHot)
		}
		b.reach(f, n, c.Node, c.D2)
	}
	b.push(f.end, event{kind: evTxEnd, node: n.id, f: f})
}

// lookSq returns the square of the range a transmission looks at: with
// drops counted in bulk, the range beyond which a signal surely does
// nothing (below the sensitivity, or the cutoff); with every drop traced,
// the range beyond which it is surely below the cutoff; with fading or
// two-ray loss (no bound by distance alone), the cutoff range. Nodes
// beyond it never see the frame (unseen accounts for them), whatever the
// spatial index's cells.
func (b *Backend) lookSq() float64 {
	switch {
	case b.counting && !math.IsInf(b.quietSq, 1):
		return b.quietSq
	case !math.IsInf(b.farSq, 1):
		return b.farSq
	}
	return sq(b.cutoff)
}

// reach handles f's arrival at node r, d2 square metres away (within
// lookSq, so never beyond the cutoff): a signal surely below the
// sensitivity by distance alone is recorded as such without computing its
// power (only when every drop is traced: with drops counted, lookSq stops
// at the sensitivity range).
func (b *Backend) reach(f *frame, tx *node, r int32, d2 float64) {
	if d2 > b.quietSq {
		f.recv = append(f.recv, reception{node: r, why: netsim.DropSensitivity})
		return
	}
	b.arrive(f, tx, &b.nodes[r], math.Sqrt(d2))
}

// prefetchAhead is how many arrivals ahead transmit prefetches a
// receiver's record.
const prefetchAhead = 4

// prefetchAbove is the size of the node array (bytes) above which
// transmit prefetches its receivers: beyond a core's second-level cache
// on common processors (1-2 MiB; 2 on the machine the benchmarks ran
// on), about 4000 nodes. Below it the nodes stay in cache and the hints
// only cost.
const prefetchAbove = 2 << 20

// push schedules e, which holds its frame, if any, until it is handled.
func (b *Backend) push(t sim.Time, e event) {
	if e.f != nil {
		e.f.refs++
	}
	b.q.Push(t, e)
}

// newFrame returns a cleared frame, reused when one is free.
func (b *Backend) newFrame() *frame {
	if n := len(b.free); n > 0 {
		f := b.free[n-1]
		b.free = b.free[:n-1]
		return f
	}
	return &frame{}
}

// drop gives up an event's hold on f; the last one frees it.
func (b *Backend) drop(f *frame) {
	if f.refs--; f.refs == 0 {
		*f = frame{recv: f.recv[:0]}
		b.free = append(b.free, f)
	}
}

// beyond returns a distance beyond which the received power (without
// fading) is surely below thr dBm: the boundary found by bisection, plus a
// relative margin far above the rounding of the loss formulas. The loss
// must not decrease with distance.
func (b *Backend) beyond(thr float64) float64 {
	if b.p.Loss == RangeLoss {
		if b.p.TxPower+b.p.TxGain+b.p.RxGain < thr {
			return 0
		}
		return b.p.MaxRange * (1 + 1e-9)
	}
	lo, hi := 0.0, 1.0
	for b.rxPower(geom.Vec3{}, geom.V(hi, 0, 0)) >= thr {
		if hi > 1e9 {
			return math.Inf(1)
		}
		hi *= 2
	}
	for i := 0; i < 80; i++ {
		mid := (lo + hi) / 2
		if b.rxPower(geom.Vec3{}, geom.V(mid, 0, 0)) >= thr {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi * (1 + 1e-9)
}

func sq(x float64) float64 { return x * x }

// setLinear turns on the linear-domain received power when the loss model
// allows it.
func (b *Backend) setLinear() {
	p := &b.p
	if p.Fading != NoFading {
		return
	}
	switch {
	case p.Loss == LogDistance && (p.Exponent == 2 || p.Exponent == 3 || p.Exponent == 4):
		b.lin, b.dRef = int(p.Exponent), p.RefDistance
		b.wRef = dbmToW(p.TxPower + p.TxGain + p.RxGain - p.RefLoss)
	case p.Loss == Friis:
		// Friis loss is (4 pi d / lambda)^2, at least 1 (0 dB).
		lambda := speedOfLight / p.Frequency
		b.lin, b.dRef = 2, lambda/(4*math.Pi)
		b.wRef = dbmToW(p.TxPower + p.TxGain + p.RxGain)
	default:
		return
	}
	b.cutoffW, b.sensW = dbmToW(b.cutoffDbm), dbmToW(b.rxSensitivity)
	b.preMinW = dbmToW(p.PreambleMinRssi)
}

// linWatts returns the received power at distance d (setLinear): the
// reference power times (dRef/d)^n beyond dRef.
func (b *Backend) linWatts(d float64) float64 {
	if d <= b.dRef {
		return b.wRef
	}
	q := b.dRef / d
	switch b.lin {
	case 2:
		return b.wRef * (q * q)
	case 3:
		return b.wRef * (q * q * q)
	}
	q2 := q * q
	return b.wRef * (q2 * q2)
}

// arrive registers f's signal at receiver r, d metres away.
func (b *Backend) arrive(f *frame, tx *node, r *node, d float64) {
	b.work.Arrivals++
	var w float64
	var sensitive, preambleQuiet bool
	if b.lin != 0 {
		w = b.linWatts(d)
		if w < b.cutoffW {
			return
		}
		sensitive, preambleQuiet = w >= b.sensW, w < b.preMinW
	} else {
		dbm := b.rxPower(tx.pos, r.pos)
		if b.p.Fading != NoFading {
			dbm += b.fade(f.id, r.id)
		}
		if dbm < b.cutoffDbm {
			return
		}
		w = dbmToW(dbm)
		sensitive, preambleQuiet = dbm >= b.rxSensitivity, dbm < b.p.PreambleMinRssi
	}
	if !sensitive && b.prof.filterBelowSensitivity {
		// ns-3's YansWifiChannel drops a signal below the sensitivity
		// before the PHY sees it: no reception, no interference, no
		// carrier sense.
		f.recv = append(f.recv, reception{node: r.id, why: netsim.DropSensitivity})
		return
	}
	delay := roundNs(d / speedOfLight * 1e9)
	s := signal{id: f.id, start: f.start.Add(delay), end: f.end.Add(delay), w: w}
	b.pruneNode(r, s.start)
	if len(r.sigs) == cap(r.sigs) {
		b.growSigs(r)
	}
	r.sigs = append(r.sigs, s)
	rec := reception{node: r.id}
	if r.locked != 0 && !r.hdrDone && b.prof.headerAbort && r.lockEnd > s.start && s.start >= r.lockBeg.Add(b.tm.preamble+b.tm.header) {
		// The frame r receives is past its PHY header: if the header
		// failed, ns-3.37 abandoned it then and r can synchronise to this one.
		b.checkHeader(r)
	}
	aborted := false
	if r.locked != 0 && r.lockEnd > s.start && s.start < r.lockBeg.Add(b.prof.detect) {
		// ns-3 decides which frame a receiver synchronises to at the end
		// of the preamble detection window (4 µs after the first
		// energy): the strongest frame that started within it wins, and
		// the preamble is detected only if its SNR over everything heard
		// then is high enough.
		if s.w > r.lockW {
			b.abort(r, netsim.DropBusy)
			aborted = true
		} else if b.p.Preamble && r.lockW < b.preambleRatio*(b.noise+b.detectInterference(r, r.locked, r.lockBeg)) {
			b.abort(r, netsim.DropCollision)
			aborted = true
		}
	}
	switch {
	case r.txUntil > s.start:
		rec.why = netsim.DropBusy
	case r.locked != 0 && r.lockEnd > s.start:
		rec.why = netsim.DropBusy
	case !sensitive || (b.p.Preamble && preambleQuiet):
		rec.why = netsim.DropSensitivity
	case b.p.Preamble && s.w < b.preambleRatio*(b.noise+b.detectInterference(r, f.id, s.start)):
		rec.why = netsim.DropCollision
	default:
		rec.locked = true
		r.locked, r.lockF, r.lockBeg, r.lockEnd, r.lockW, r.hdrDone = f.id, f, s.start, s.end, s.w, false
		if b.prof.headerAbort && s.w < b.ccaW {
			// Too weak to keep the medium busy by its energy alone: busy
			// while the preamble and header are received, and then only
			// if the header is (evHeader).
			he := s.start.Add(b.tm.preamble + b.tm.header)
			b.busy(r, s.start.Add(b.prof.detect), he)
			b.push(he, event{kind: evHeader, node: r.id, f: f})
		} else {
			b.busy(r, s.start.Add(b.prof.detect), s.end)
		}
	}
	if !rec.locked || aborted {
		// A frame the receiver does not synchronise to (or one it gave
		// up) keeps the medium busy while the energy of all it hears
		// stays above the CCA threshold (ns-3: SwitchMaybeToCcaBusy).
		b.energyBusy(r, s.start.Add(b.prof.detect))
	}
	f.recv = append(f.recv, rec)
}

// roundNs returns x nanoseconds rounded to the nearest, halves away from
// zero: exactly sim.Duration(math.Round(x)) for every x, and without
// math.Round's bit manipulation for the values propagation delays take.
// On [0.5, 2^52) adding one half and truncating is exact: the sum is
// rounded, but never up to the next integer (TestRoundNs).
func roundNs(x float64) sim.Duration {
	if x >= 0.5 && x < 1<<52 {
		return sim.Duration(x + 0.5)
	}
	return sim.Duration(math.Round(x))
}

// energyBusy marks r's medium busy from x until the total power of the
// signals at r falls below the CCA threshold (nothing if it is below at x).
func (b *Backend) energyBusy(r *node, x sim.Time) {
	if end := b.energyEnd(r, x); end > x {
		b.busy(r, x, end)
	}
}

// energyEnd returns the first time at or after x when the total power of
// the signals at r is below the CCA threshold (ns-3's
// InterferenceHelper::GetEnergyDuration). Signals only end after x as far
// as r knows, so the total can fall only at their ends.
func (b *Backend) energyEnd(r *node, x sim.Time) sim.Time {
	t := x
	for {
		var total float64
		next := sim.Time(math.MaxInt64)
		for i := range r.sigs {
			s := &r.sigs[i]
			if s.end <= t {
				continue
			}
			if s.start <= t {
				total += s.w
			}
			if s.end < next {
				next = s.end
			}
		}
		if total < b.ccaW || next == math.MaxInt64 {
			return t
		}
		t = next
	}
}

// abort ends r's reception of the frame it is locked onto: that frame's
// reception at r fails with reason why.
func (b *Backend) abort(r *node, why netsim.DropReason) {
	f := r.lockF
	r.locked, r.lockF = 0, nil
	for k := range f.recv {
		if f.recv[k].node == r.id {
			f.recv[k].locked, f.recv[k].why = false, why
		}
	}
}

// decodeDraw is the uniform draw that decides whether receiver r decodes
// frame id: the PHY header is received if it is below the header's
// success probability, the whole frame if it is below the product of the
// header's and the payload's.
func (b *Backend) decodeDraw(id uint64, r int32) float64 {
	return sim.Unit(sim.Hash(b.seed, id, uint64(r), 0xdec0de))
}

// checkHeader settles the PHY header of the frame r is locked onto (its
// header has been received): r goes on receiving it, or abandons it as
// ns-3.37 does, without EIFS, the medium then busy only by energy.
func (b *Backend) checkHeader(r *node) {
	s := b.lockedSignal(r)
	ph, _, interfered := b.success(r, s, &r.lockF.mode, true)
	if b.decodeDraw(s.id, r.id) < ph {
		r.hdrDone = true
		return
	}
	why := netsim.DropErrorModel
	if interfered {
		why = netsim.DropCollision
	}
	b.abort(r, why)
	b.energyBusy(r, s.start.Add(b.tm.preamble+b.tm.header))
}

// lockedSignal returns the signal of the frame r is locked onto.
func (b *Backend) lockedSignal(r *node) *signal {
	for i := range r.sigs {
		if r.sigs[i].id == r.locked {
			return &r.sigs[i]
		}
	}
	panic("wifi: the frame a node receives has no signal")
}

// interference returns the power at r, at time t, of every signal but
// that of frame id.
func (b *Backend) interference(r *node, id uint64, t sim.Time) float64 {
	var w float64
	for i := range r.sigs {
		s := &r.sigs[i]
		if s.id != id && s.start <= t && t < s.end {
			w += s.w
		}
	}
	return w
}

// detectInterference returns the interference that the preamble detection
// of frame id, whose signal reaches r at start, sees: the power of every
// other signal known at r at the end of the detection window, as ns-3
// 3.37's PhyEntity::EndPreambleDetectionPeriod computes the SNR then (the
// last change of the interference before that instant). A frame that
// starts within the window counts even if it started after this one: two
// stations that transmit in the same slot reach a receiver nanoseconds
// apart, and neither preamble is detected unless one is 4 dB above the
// other. A frame that starts within the window but is sent later is
// checked when it arrives (arrive).
func (b *Backend) detectInterference(r *node, id uint64, start sim.Time) float64 {
	t := start
	if b.prof.detect > 0 {
		t = start.Add(b.prof.detect - 1)
	}
	return b.interference(r, id, t)
}

// sigBlock is the number of signals the nodes' grown signal lists are
// carved from at a time (growSigs): 512 KiB.
const sigBlock = 1 << 14

// growSigs moves r's signals to a list twice as long, carved from a block
// shared by all nodes. Nodes outgrow their inline room (sigBuf) one by one
// as the run goes on, the more so the larger the swarm; carving their lists
// from shared blocks makes that a few allocations per run, not one per
// node, so that a long run does not keep allocating. A list given up stays
// unused: nodes grow a few times at most.
func (b *Backend) growSigs(r *node) {
	n := 2 * cap(r.sigs)
	if len(b.sigSpare) < n {
		b.sigSpare = make([]signal, max(sigBlock, n))
	}
	grown := b.sigSpare[:len(r.sigs):n]
	b.sigSpare = b.sigSpare[n:]
	copy(grown, r.sigs)
	clear(r.sigs)
	r.sigs = grown
}

// pruneNode forgets the signals at r that ended before t and before the
// frame r is receiving started: they can affect nothing any more.
func (b *Backend) pruneNode(r *node, t sim.Time) {
	keep := t
	if r.locked != 0 && r.lockBeg < keep {
		keep = r.lockBeg
	}
	k := 0
	for i := range r.sigs {
		if r.sigs[i].end > keep {
			r.sigs[k] = r.sigs[i]
			k++
		}
	}
	clear(r.sigs[k:])
	r.sigs = r.sigs[:k]
}

// success returns the probability that receiver r decodes the PHY header
// of signal s, and the probability that it decodes the whole frame: the
// product, over chunks of constant interference (SINR), of the error
// model's success for the PHY header and the payload. With headerOnly only
// the first is computed (the second is returned as 0). interfered reports
// whether another signal overlapped the part computed.
func (b *Backend) success(r *node, s *signal, mode *Mode, headerOnly bool) (ph, p float64, interfered bool) {
	id := s.id
	hs := s.start.Add(b.tm.preamble)
	he := hs.Add(b.tm.header)
	end := s.end
	if headerOnly {
		end = he
	}
	// Change points of the interference over [hs, end).
	var pts [32]sim.Time
	cps := pts[:0]
	cps = append(cps, hs, he, end)
	for i := range r.sigs {
		o := &r.sigs[i]
		if o.id == id || o.end <= hs || o.start >= end {
			continue
		}
		interfered = true
		if o.start > hs {
			cps = append(cps, o.start)
		}
		if o.end < end {
			cps = append(cps, o.end)
		}
	}
	sortTimes(cps)
	ph, p = 1.0, 1.0
	for k := 0; k+1 < len(cps); k++ {
		a, c := cps[k], cps[k+1]
		if c <= a {
			continue
		}
		iw := 0.0
		if interfered {
			mid := a + (c-a)/2
			iw = b.interference(r, id, mid)
		}
		sinr := s.w / (b.noise + iw)
		m := mode
		if a < he {
			m = &b.tm.headerMode
		}
		rate := m.RateBps
		if b.prof.codedBits {
			rate = m.PhyRateBps()
		}
		// ns-3 truncates the chunk's bit count.
		cs := b.p.ErrorModel.chunkSuccess(m, sinr, int(c.Sub(a).Seconds()*rate))
		p *= cs
		if a < he {
			ph *= cs
		}
	}
	if headerOnly {
		p = 0
	}
	return ph, p, interfered
}

func sortTimes(ts []sim.Time) {
	for i := 1; i < len(ts); i++ {
		for j := i; j > 0 && ts[j] < ts[j-1]; j-- {
			ts[j], ts[j-1] = ts[j-1], ts[j]
		}
	}
}

// fade returns a fading gain in dB for frame id at receiver r.
func (b *Backend) fade(id uint64, r int32) float64 {
	m := 1
	if b.p.Fading == Nakagami {
		m = b.p.NakagamiM
	}
	// Gamma(m, 1/m) power gain as the mean of m unit exponentials.
	var g float64
	for k := 0; k < m; k++ {
		u := sim.Unit(sim.Hash(b.seed, id, uint64(r), uint64(0xfade+k)))
		g += -math.Log(1 - u)
	}
	g /= float64(m)
	return 10 * math.Log10(max(g, 1e-12))
}

// txEnd ends f: every receiver that locked onto it decodes it or not, and
// the sender moves on.
func (b *Backend) txEnd(f *frame) {
	t := b.now
	tx := &b.nodes[f.src]
	tx.txUntil = 0
	for _, rc := range f.recv {
		r := &b.nodes[rc.node]
		if !rc.locked || r.locked != f.id {
			if !f.ack && f.dst == -1 {
				why := rc.why
				if rc.locked {
					why = netsim.DropBusy // the reception was aborted
				}
				b.dropAt(t, f.pkt, rc.node, why, netsim.NoPower)
			}
			continue
		}
		s := *b.lockedSignal(r)
		ph, ps, interfered := b.success(r, &s, &f.mode, false)
		r.locked, r.lockF = 0, nil
		u := b.decodeDraw(f.id, rc.node)
		headerOK := u < ph
		if headerOK || !b.prof.headerAbort {
			// A PSDU reception started (ns-3.37: PHY-RXSTART) or, with
			// ns-3.26, the PHY stayed in RX: the ACK timeout and EIFS
			// take it into account.
			b.rxEnded(r, &s, f, u < ps)
		}
		if u >= ps {
			if !f.ack && f.dst == -1 {
				why := netsim.DropErrorModel
				if interfered {
					why = netsim.DropCollision
				}
				dbm := netsim.NoPower // counted drops carry no power
				if !b.counting {
					dbm = wToDbm(s.w)
				}
				b.dropAt(t, f.pkt, rc.node, why, dbm)
			}
			continue
		}
		switch {
		case f.ack:
			if f.dst == r.id && r.waitAck != nil && r.waitAck.pkt == f.pkt {
				b.acked(r)
			}
		case f.dst == -1:
			b.deliver(f.pkt, rc.node, s.end, wToDbm(s.w))
		case f.dst == rc.node:
			if last, seen := r.lastUni[f.src]; !seen || last != f.pkt.ID {
				r.lastUni[f.src] = f.pkt.ID
				b.deliver(f.pkt, rc.node, s.end, wToDbm(s.w))
			}
			f.pkt.Refs++ // held by the ACK until it has been sent
			b.push(s.end.Add(b.tm.sifs), event{kind: evSendAck, node: r.id, f: f})
		default:
			// Someone else's unicast: virtual carrier sense until its ACK.
			b.busy(r, s.end, s.end.Add(b.tm.sifs+b.ackDur))
		}
	}
	// Nodes out of the cutoff range never saw a broadcast.
	if !f.ack && f.dst == -1 {
		b.flushDrops(t, f.pkt)
		b.unseen(f, t)
	}
	switch {
	case f.ack:
		b.unref(f.pkt) // the ACK's hold
		// Access attempts were put off while the ACK was on the air
		// (schedule does nothing while transmitting): resume the
		// node's own frame, if it has one.
		b.schedule(tx)
	case f.dst == -1:
		b.done(tx, t)
	default:
		tx.waitAck, tx.ackAt, tx.ackRxEnd = f, t.Add(b.ackTimeout), 0
		b.push(tx.ackAt, event{kind: evAckTimeout, node: tx.id, f: f})
	}
}

// rxEnded updates receiver r after a reception of f (signal s) whose PSDU
// it received, correctly or not: EIFS after an erroneous one (counted from
// its end, as ns-3's ChannelAccessManager does), none after a correct one;
// and with ns-3.37, an ACK timeout running when the PSDU began now
// expires at the frame's end plus psduSafeguard unless f is the awaited
// ACK, correctly received (FrameExchangeManager::RxStartIndication).
func (b *Backend) rxEnded(r *node, s *signal, f *frame, ok bool) {
	if !ok {
		r.eifs, r.errEnd = true, s.end
		b.schedule(r)
	} else if r.eifs {
		r.eifs = false
		b.schedule(r)
	}
	if r.waitAck == nil || b.prof.ackTimeout26 || s.start.Add(b.tm.preamble+b.tm.header) >= r.ackAt {
		return
	}
	if ok && f.ack && f.dst == r.id && r.waitAck.pkt == f.pkt {
		return // acked below
	}
	b.moveAckTimeout(r, s.end)
}

// moveAckTimeout makes r's ACK timeout expire psduSafeguard after rxEnd,
// the end of a reception whose PSDU began before it expired.
func (b *Backend) moveAckTimeout(r *node, rxEnd sim.Time) {
	at := rxEnd.Add(psduSafeguard)
	if at == r.ackAt {
		return
	}
	r.ackAt, r.ackRxEnd = at, rxEnd
	b.push(at, event{kind: evAckTimeout, node: r.id, f: r.waitAck})
}

// ackExpired handles the expiry of n's ACK timeout. With ns-3.37, a frame
// whose PSDU reception started before the timeout (its PHY header
// received) moves the timeout to the end of that frame.
func (b *Backend) ackExpired(n *node) {
	if !b.prof.ackTimeout26 && n.locked != 0 && n.lockBeg.Add(b.tm.preamble+b.tm.header) < b.now {
		if !n.hdrDone {
			b.checkHeader(n)
		}
		if n.locked != 0 && n.lockEnd.Add(psduSafeguard) > b.now {
			b.moveAckTimeout(n, n.lockEnd)
			return
		}
	}
	b.ackFailed(n)
}

// dropAt traces the drop of broadcast p at receiver r, or only counts it
// (by reason, until flushDrops) when drops are counted in bulk.
func (b *Backend) dropAt(t sim.Time, p *netsim.Packet, r int32, why netsim.DropReason, dbm float64) {
	if b.counting {
		b.drops[why]++
		return
	}
	b.trace(netsim.EvDrop, t, p, netsim.NodeID(r), why, dbm)
}

// flushDrops reports the drops of p counted by dropAt.
func (b *Backend) flushDrops(t sim.Time, p *netsim.Packet) {
	if !b.counting {
		return
	}
	for why, n := range b.drops {
		if n > 0 {
			b.ev = netsim.TraceEvent{Type: netsim.EvDrop, T: t, P: p, Node: -1, Reason: netsim.DropReason(why), RxPower: netsim.NoPower}
			b.counter.TraceDrops(&b.ev, n)
			b.drops[why] = 0
		}
	}
}

// unseen traces a drop at every intended receiver beyond the cutoff range:
// those that no reception of f records. (Marking nodes by the last frame
// that reached them does not work: a later frame can reach a node before
// f ends.)
func (b *Backend) unseen(f *frame, t sim.Time) {
	if len(f.recv) == len(b.nodes)-1 {
		return
	}
	if b.counting {
		b.ev = netsim.TraceEvent{Type: netsim.EvDrop, T: t, P: f.pkt, Node: -1, Reason: netsim.DropSensitivity, RxPower: netsim.NoPower}
		b.counter.TraceDrops(&b.ev, len(b.nodes)-1-len(f.recv))
		return
	}
	for _, rc := range f.recv {
		b.mark[rc.node] = f.id
	}
	for i := range b.nodes {
		if int32(i) != f.src && b.mark[i] != f.id {
			b.trace(netsim.EvDrop, t, f.pkt, netsim.NodeID(i), netsim.DropSensitivity, netsim.NoPower)
		}
	}
}

// deliver hands p to receiver r. The MAC's hold on p lasts at least until
// the end of this call, and the graveyard frees only at the next call, so
// the delivery stays valid as the Backend contract requires.
func (b *Backend) deliver(p *netsim.Packet, r int32, at sim.Time, dbm float64) {
	if b.rxCounter != nil {
		if p != b.rxP {
			b.flushReceptions()
			b.rxP, b.rxT = p, at
		}
		b.rxN++
	} else {
		b.trace(netsim.EvRx, at, p, netsim.NodeID(r), 0, dbm)
	}
	b.out = append(b.out, netsim.Delivery{P: p, Dst: netsim.NodeID(r), At: at, RxPower: dbm})
}

// flushReceptions reports the receptions counted since the last flush.
// Within AdvanceTo the packet stays valid (freed packets are recycled only
// at the next call's start).
func (b *Backend) flushReceptions() {
	if b.rxN > 0 {
		b.ev = netsim.TraceEvent{Type: netsim.EvRx, T: b.rxT, P: b.rxP, Node: netsim.Broadcast, RxPower: netsim.NoPower}
		b.rxCounter.TraceReceptions(&b.ev, b.rxN)
	}
	b.rxP, b.rxN = nil, 0
}

// done finishes the current packet of n at t: post-backoff, next packet.
func (b *Backend) done(n *node, t sim.Time) {
	p := n.cur
	n.cur, n.waitAck = nil, nil
	n.cw = b.tm.cwMin
	n.slots = b.drawSlots(n)
	n.bkStart = t
	b.release(p)
	b.next(n)
	b.schedule(n)
}

func (b *Backend) acked(n *node) {
	b.done(n, b.now)
}

func (b *Backend) ackFailed(n *node) {
	f := n.waitAck
	n.waitAck = nil
	if n.attempts >= b.p.RetryLimit {
		// A packet the destination received (only its ACKs were lost)
		// has its outcome already: no drop.
		if !b.delivered(f.pkt, f.dst) {
			b.trace(netsim.EvDrop, b.now, f.pkt, netsim.NodeID(f.dst), netsim.DropRetryLimit, netsim.NoPower)
		}
		b.done(n, b.now)
		return
	}
	n.cw = min(2*n.cw+1, b.tm.cwMax)
	n.slots = b.drawSlots(n)
	for n.slots == 0 && b.prof.immediateAccess {
		// ns-3.26's DcfManager: access requested with no backoff while
		// the medium has been idle for less than DIFS (here: since the
		// timeout) draws again.
		n.slots = b.drawSlots(n)
	}
	n.bkStart = b.now
	if n.ackRxEnd != 0 {
		// The timeout was moved to psduSafeguard after a reception: the
		// medium is idle from that reception's end.
		n.bkStart = n.ackRxEnd
	}
	b.schedule(n)
}

// delivered reports whether unicast packet p reached dst. The duplicate
// filter remembers the last packet dst got from p's sender, and a sender
// has one unicast packet in progress at a time, so that is p until the
// sender moves on.
func (b *Backend) delivered(p *netsim.Packet, dst int32) bool {
	last, ok := b.nodes[dst].lastUni[int32(p.Src)]
	return ok && last == p.ID
}

// release gives up the MAC's hold on p.
func (b *Backend) release(p *netsim.Packet) {
	if p != nil {
		b.unref(p)
	}
}

// Close settles every packet still in the backend, then frees it. A packet
// handed to Send but not yet due (sent in the last tick: the run ended
// before AdvanceTo reached its send time) is traced as tx at its send time;
// then every intended receiver that has no outcome yet (the packet was
// queued, contending for the medium, on the air or awaiting its ACK) gets
// a drop with reason end_of_run: the packet was still in flight when the
// run ended (summary.json counts it in packets_in_flight_at_end). A
// unicast packet the destination already received gets none. The drops
// are at the latest time AdvanceTo reached (or the send time, if later).
func (b *Backend) Close() error {
	b.dead.Flush()
	at := func(p *netsim.Packet) sim.Time { return max(b.clock, p.TSend) }
	var due []*netsim.Packet
	b.q.Each(func(_ sim.Time, e event) {
		if e.kind == evEnqueue {
			due = append(due, e.pkt)
		}
	})
	slices.SortFunc(due, func(x, y *netsim.Packet) int {
		if c := cmp.Compare(x.TSend, y.TSend); c != 0 {
			return c
		}
		return cmp.Compare(x.ID, y.ID)
	})
	for _, p := range due {
		b.trace(netsim.EvTx, p.TSend, p, p.Dst, 0, netsim.NoPower)
		if p.Dst != netsim.Broadcast && (p.Dst < 0 || int(p.Dst) >= len(b.nodes) || p.Dst == p.Src) {
			b.trace(netsim.EvDrop, at(p), p, p.Dst, netsim.DropNoRoute, netsim.NoPower)
			continue
		}
		b.dropAll(at(p), p, netsim.DropEndOfRun)
	}
	for i := range b.nodes {
		n := &b.nodes[i]
		if p := n.cur; p != nil && (p.Dst == netsim.Broadcast || !b.delivered(p, int32(p.Dst))) {
			b.dropAll(at(p), p, netsim.DropEndOfRun)
		}
		for _, p := range n.queue[n.qHead:] {
			b.dropAll(at(p), p, netsim.DropEndOfRun)
		}
	}
	held := map[*netsim.Packet]bool{}
	var order []*netsim.Packet
	hold := func(p *netsim.Packet) {
		if p != nil && !held[p] {
			held[p] = true
			order = append(order, p)
		}
	}
	for i := range b.nodes {
		n := &b.nodes[i]
		for _, p := range n.queue[n.qHead:] {
			hold(p)
		}
		hold(n.cur)
		n.queue, n.cur, n.waitAck = nil, nil, nil
	}
	b.q.Each(func(_ sim.Time, e event) {
		if e.kind == evAckTimeout || e.kind == evHeader {
			// Their frame's packet, if still in the backend, is a
			// node's current packet or held by the frame's evTxEnd; a
			// stale timeout's packet may have been freed and reused.
			return
		}
		hold(e.pkt)
		if e.f != nil {
			hold(e.f.pkt)
		}
	})
	for _, p := range order {
		p.Free()
	}
	b.q.Clear()
	if b.capture != nil {
		return b.capture.Err()
	}
	return nil
}

// NextEvent implements netsim.Stepper: the time of the earliest pending
// event.
func (b *Backend) NextEvent() (sim.Time, bool) { return b.q.PeekTime() }
