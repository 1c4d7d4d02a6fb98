package routing

import (
	"encoding/binary"
	"math"
	"math/bits"
	"slices"

	"skyloop/netsim"
	"skyloop/sim"
)

// OLSR as ns-3 3.37 implements it (src/olsr/model/olsr-routing-protocol.cc,
// olsr-state.cc) with its default attributes: one interface per node, no
// HNA or MID messages, and no link hysteresis (ns-3 3.37 has none: RFC
// 3626 section 14 is not implemented). The tuple sets keep ns-3's
// insertion order, which decides ties in MPR selection and routes.
const (
	olsrHelloInterval = 2 * sim.Second
	olsrTcInterval    = 5 * sim.Second
	olsrNeighbHold    = 3 * olsrHelloInterval // HELLO validity time
	olsrTopHold       = 3 * olsrTcInterval    // TC validity time
	olsrDupHold       = 30 * sim.Second
	olsrMaxJitter     = olsrHelloInterval / 4 // messages wait U[0, 0.5 s)
	olsrMaxMsgs       = 64                    // messages per packet
	olsrTimerSlack    = sim.Microsecond       // ns-3's tuple timers fire 1 us after the expiry (its DELAY macro)
	olsrNever         = sim.Time(math.MaxInt64)
)

// Willingness values (RFC 3626 18.8).
const (
	olsrWillNever   = 0
	olsrWillDefault = 3
	olsrWillAlways  = 7
)

// OLSR message types, link and neighbour types (RFC 3626 18.4-18.6).
const (
	olsrHello = 1
	olsrTC    = 2

	linkUnspec = 0
	linkAsym   = 1
	linkSym    = 2
	linkLost   = 3

	neighNot = 0
	neighSym = 1
	neighMPR = 2

	olsrPktHeader = 4
	olsrMsgHeader = 12
)

// OLSR timer kinds.
const (
	olsrTHello uint8 = iota
	olsrTTc
	olsrTSend
	olsrTLink // a link tuple's timer (arg: the neighbour)
)

// olsrLinkT is a link tuple: the neighbour, when the link stops being
// symmetric and asymmetric, and when the tuple goes.
type olsrLinkT struct {
	nb              int32
	sym, asym, time sim.Time
}

// olsrNbT is a neighbour tuple.
type olsrNbT struct {
	nb   int32
	sym  bool
	will uint8
}

// olsr2T is a two-hop tuple: x reached through neighbour nb.
type olsr2T struct {
	nb, x int32
	exp   sim.Time
}

// olsrVia indexes the two-hop tuples through one neighbour.
type olsrVia struct {
	at    []int32  // by two-hop node id: position+1 of the tuple in twoHop, 0: none
	reach []uint64 // the two-hop nodes with a tuple, one bit each
}

// olsrSelT is an MPR selector tuple.
type olsrSelT struct {
	nb  int32
	exp sim.Time
}

// olsrTopoT is a topology tuple: dst is a neighbour of last.
type olsrTopoT struct {
	dst, last int32
	seq       uint16
	exp       sim.Time
}

// olsrDupT is a duplicate tuple.
type olsrDupT struct {
	key  uint64 // originator<<16 | message sequence number
	exp  sim.Time
	retx bool // retransmitted
	seen bool // considered for forwarding on the (only) interface
}

// olsrNode is a node's OLSR state. The tuple sets are slices in ns-3's
// insertion order (which decides ties); lix, nix and vias find a tuple
// without scanning them. A removed two-hop tuple stays in twoHop, marked
// (nb < 0), until many are: the order of the others does not change.
type olsrNode struct {
	links  []olsrLinkT
	nbs    []olsrNbT
	twoHop []olsr2T
	lix    []int32   // by node id: position+1 of its link tuple in links, 0: none
	nix    []int32   // by node id: position+1 of its neighbour tuple in nbs, 0: none
	viaIx  []int32   // by node id: position+1 of its entry in vias, 0: none
	vias   []olsrVia // the two-hop tuples through each neighbour
	// rows not yet used by vias
	spareAt    []int32
	spareReach []uint64
	dead2      int // removed tuples still in twoHop
	// No two-hop (topology) tuple expires before exp2 (expTopo): a lower
	// bound, olsrNever when the set is empty.
	exp2, expTopo sim.Time
	// The MPR set (routing table) is computed again only when its inputs
	// changed: mprDirty is set when the neighbour or two-hop set changed,
	// tblDirty when the link, neighbour, two-hop or topology set did; the
	// table also holds only until tblUntil, when a link it uses ends.
	mprDirty, tblDirty bool
	tblUntil           sim.Time

	mpr    []int32 // sorted
	sel    []olsrSelT
	topo   []olsrTopoT
	dup    []olsrDupT
	ansn   uint16
	msgSeq uint16
	pktSeq uint16

	// the routing table: next hop and distance by destination (-1: none)
	next []int32
	dist []int32

	queue      []byte // messages waiting for the send timer
	nq         int    // messages in queue
	sending    bool
	linkTimer1 bool // ns-3's m_linkTupleTimerFirstTime: the first lost link is not a neighbour loss
	draws      uint64
}

type olsr struct {
	b     *Backend
	nodes []olsrNode
	buf   []byte
	mb    []byte
	// MPR computation scratch: the symmetric neighbours, the two-hop
	// nodes each covers (words bits each), and sets of nodes.
	words                      int
	n1                         []olsrNbT
	cov                        []uint64
	inN1, covered, once, twice []uint64
	chosen                     []bool
}

func newOLSR(b *Backend) *olsr { return &olsr{b: b} }

// emf encodes a validity time as RFC 3626 18.3 (ns-3's SecondsToEmf).
func emf(d sim.Duration) uint8 {
	const c = 0.0625
	s := d.Seconds()
	b := 1
	for s/c >= float64(int(1)<<b) {
		b++
	}
	b--
	a := int(math.Ceil(16*(s/(c*float64(int(1)<<b))-1) - 0.5))
	if a == 16 {
		b, a = b+1, 0
	}
	return uint8(a<<4 | b)
}

// emfTime decodes a validity time (ns-3's EmfToSeconds).
func emfTime(v uint8) sim.Duration {
	a, b := float64(v>>4), int(v&0xf)
	return sim.Duration(math.Round(0.0625 * (1 + a/16) * float64(int(1)<<b) * 1e9))
}

func (o *olsr) start(t sim.Time) {
	n := o.b.n
	o.nodes = make([]olsrNode, n)
	o.words = (n + 63) / 64
	o.inN1 = make([]uint64, o.words)
	o.covered = make([]uint64, o.words)
	o.once = make([]uint64, o.words)
	o.twice = make([]uint64, o.words)
	for i := range o.nodes {
		nd := &o.nodes[i]
		nd.lix = make([]int32, n)
		nd.nix = make([]int32, n)
		nd.viaIx = make([]int32, n)
		nd.exp2, nd.expTopo = olsrNever, olsrNever
		nd.mprDirty, nd.tblDirty = true, true
		nd.next = make([]int32, n)
		nd.dist = make([]int32, n)
		for d := range nd.next {
			nd.next[d], nd.dist[d] = -1, -1
		}
		nd.linkTimer1 = true
		// ns-3 sends the first HELLO and TC at start (each message waits
		// its jitter before leaving).
		o.b.after(0, int32(i), olsrTHello, 0)
		o.b.after(0, int32(i), olsrTTc, 0)
	}
}

func (o *olsr) jitter(n int32) sim.Duration {
	o.nodes[n].draws++
	return o.b.jitter(olsrMaxJitter, n, o.nodes[n].draws, 0x0115)
}

// delay is ns-3's DELAY(at): until at, plus a microsecond.
func delay(t, at sim.Time) sim.Duration {
	if at < t {
		return olsrTimerSlack
	}
	return at.Sub(t) + olsrTimerSlack
}

// alive tells whether a tuple expiring at exp still exists at t: ns-3
// removes it when its timer fires, a microsecond after exp.
func alive(exp, t sim.Time) bool { return t < exp.Add(olsrTimerSlack) }

func (o *olsr) timer(t sim.Time, n int32, kind uint8, arg uint64) {
	switch kind {
	case olsrTHello:
		o.nodes[n].dup = slices.DeleteFunc(o.nodes[n].dup, func(d olsrDupT) bool { return !alive(d.exp, t) })
		o.sendHello(t, n)
		o.b.after(olsrHelloInterval, n, olsrTHello, 0)
	case olsrTTc:
		if o.purgeSel(t, n); len(o.nodes[n].sel) > 0 {
			o.sendTC(t, n)
		}
		o.b.after(olsrTcInterval, n, olsrTTc, 0)
	case olsrTSend:
		o.flush(n)
	case olsrTLink:
		o.linkTimer(t, n, int32(arg))
	}
}

// --- sending ---

// queueMsg appends an encoded message to n's next packet, which leaves
// after the delay of the first message queued (messages queued meanwhile
// share the packet, as in ns-3).
func (o *olsr) queueMsg(n int32, msg []byte, d sim.Duration) {
	nd := &o.nodes[n]
	nd.queue = append(nd.queue, msg...)
	nd.nq++
	if !nd.sending {
		nd.sending = true
		o.b.after(d, n, olsrTSend, 0)
	}
}

// flush sends the queued messages, at most 64 per packet.
func (o *olsr) flush(n int32) {
	nd := &o.nodes[n]
	nd.sending = false
	q := nd.queue
	for len(q) > 0 {
		k, size := 0, 0
		for size < len(q) && k < olsrMaxMsgs {
			size += int(binary.BigEndian.Uint16(q[size+2:]))
			k++
		}
		nd.pktSeq++
		pk := o.buf[:0]
		pk = binary.BigEndian.AppendUint16(pk, uint16(olsrPktHeader+size))
		pk = binary.BigEndian.AppendUint16(pk, nd.pktSeq)
		pk = append(pk, q[:size]...)
		o.buf = pk
		o.b.sendControl(n, -1, netsim.KindOLSR, pk, 0)
		q = q[size:]
	}
	nd.queue, nd.nq = nd.queue[:0], 0
}

// msgHeader appends an RFC 3626 message header; the size is patched by
// endMsg.
func msgHeader(m []byte, typ, vtime uint8, orig int32, ttl, hops uint8, seq uint16) []byte {
	m = append(m, typ, vtime, 0, 0)
	m = binary.BigEndian.AppendUint32(m, uint32(orig))
	m = append(m, ttl, hops)
	return binary.BigEndian.AppendUint16(m, seq)
}

func endMsg(m []byte, start int) {
	binary.BigEndian.PutUint16(m[start+2:], uint16(len(m)-start))
}

func (o *olsr) findNb(n, nb int32) *olsrNbT {
	nd := &o.nodes[n]
	if i := nd.nix[nb]; i > 0 {
		return &nd.nbs[i-1]
	}
	return nil
}

func (o *olsr) findLink(n, nb int32) int {
	return int(o.nodes[n].lix[nb]) - 1
}

// delNb removes nb's neighbour tuple, if any.
func (nd *olsrNode) delNb(nb int32) {
	i := nd.nix[nb]
	if i == 0 {
		return
	}
	nd.nbs = slices.Delete(nd.nbs, int(i-1), int(i))
	nd.nix[nb] = 0
	for j := int(i - 1); j < len(nd.nbs); j++ {
		nd.nix[nd.nbs[j].nb] = int32(j + 1)
	}
	nd.mprDirty, nd.tblDirty = true, true
}

// delLink removes the link tuple at position i.
func (nd *olsrNode) delLink(i int) {
	nd.lix[nd.links[i].nb] = 0
	nd.links = slices.Delete(nd.links, i, i+1)
	for j := i; j < len(nd.links); j++ {
		nd.lix[nd.links[j].nb] = int32(j + 1)
	}
	nd.tblDirty = true
}

// find2 returns the position of the two-hop tuple (nb, x), or -1.
func (nd *olsrNode) find2(nb, x int32) int {
	if v := nd.viaIx[nb]; v > 0 {
		return int(nd.vias[v-1].at[x]) - 1
	}
	return -1
}

// add2 appends a two-hop tuple.
func (o *olsr) add2(nd *olsrNode, e olsr2T) {
	v := nd.viaIx[e.nb]
	if v == 0 {
		v = o.newVia(nd, e.nb)
	}
	via := &nd.vias[v-1]
	nd.twoHop = append(nd.twoHop, e)
	via.at[e.x] = int32(len(nd.twoHop))
	via.reach[e.x>>6] |= 1 << (e.x & 63)
	nd.exp2 = min(nd.exp2, e.exp)
	nd.changed2(e)
}

// changed2 marks the MPR set and the routing table for computing again
// when two-hop tuple e, added or removed, counts for them: both leave
// out tuples to symmetric neighbours, the MPR set those through other
// than symmetric neighbours, the routing table those through other than
// neighbours. (When a node's status changes, the neighbour set changes.)
func (nd *olsrNode) changed2(e olsr2T) {
	if nd.symNb(e.x) {
		return
	}
	if nd.nix[e.nb] > 0 {
		nd.tblDirty = true
	}
	if nd.symNb(e.nb) {
		nd.mprDirty = true
	}
}

// symNb tells whether nb is a symmetric neighbour.
func (nd *olsrNode) symNb(nb int32) bool {
	i := nd.nix[nb]
	return i > 0 && nd.nbs[i-1].sym
}

// newVia makes nb's entry in vias, its rows cut from blocks of several
// (as many as the node has entries, so the allocations are few).
func (o *olsr) newVia(nd *olsrNode, nb int32) int32 {
	n, w := o.b.n, o.words
	if len(nd.spareAt) < n {
		k := max(1, min(max(4, len(nd.vias)), n-len(nd.vias)))
		nd.spareAt, nd.spareReach = make([]int32, k*n), make([]uint64, k*w)
	}
	nd.vias = append(nd.vias, olsrVia{at: nd.spareAt[:n:n], reach: nd.spareReach[:w:w]})
	nd.spareAt, nd.spareReach = nd.spareAt[n:], nd.spareReach[w:]
	nd.viaIx[nb] = int32(len(nd.vias))
	return int32(len(nd.vias))
}

// drop2 removes the two-hop tuple at position i (it stays in twoHop,
// marked, until compact2).
func (nd *olsrNode) drop2(i int) {
	e := &nd.twoHop[i]
	via := &nd.vias[nd.viaIx[e.nb]-1]
	via.at[e.x] = 0
	via.reach[e.x>>6] &^= 1 << (e.x & 63)
	nd.changed2(*e)
	e.nb = -1
	nd.dead2++
}

// compact2 takes the removed tuples out of twoHop once they are at least
// half of it, keeping the order of the others.
func (nd *olsrNode) compact2() {
	if nd.dead2 < 32 || 2*nd.dead2 < len(nd.twoHop) {
		return
	}
	k := 0
	for _, e := range nd.twoHop {
		if e.nb >= 0 {
			nd.twoHop[k] = e
			k++
		}
	}
	nd.twoHop = nd.twoHop[:k]
	nd.dead2 = 0
	for i, e := range nd.twoHop {
		nd.vias[nd.viaIx[e.nb]-1].at[e.x] = int32(i + 1)
	}
}

// sendHello lists every link tuple in force, one link message each (as
// ns-3 writes them).
func (o *olsr) sendHello(t sim.Time, n int32) {
	nd := &o.nodes[n]
	nd.msgSeq++
	m := msgHeader(o.mb[:0], olsrHello, emf(olsrNeighbHold), n, 1, 0, nd.msgSeq)
	m = append(m, 0, 0, emf(olsrHelloInterval), olsrWillDefault)
	for _, l := range nd.links {
		if l.time < t {
			continue
		}
		lt := uint8(linkLost)
		switch {
		case l.sym >= t:
			lt = linkSym
		case l.asym >= t:
			lt = linkAsym
		}
		var nt uint8
		if _, ok := slices.BinarySearch(nd.mpr, l.nb); ok {
			nt = neighMPR
		} else if nb := o.findNb(n, l.nb); nb == nil {
			continue
		} else if nb.sym {
			nt = neighSym
		} else {
			nt = neighNot
		}
		m = append(m, lt|nt<<2, 0, 0, 8)
		m = binary.BigEndian.AppendUint32(m, uint32(l.nb))
	}
	endMsg(m, 0)
	o.mb = m
	o.queueMsg(n, m, o.jitter(n))
}

// sendTC advertises n's MPR selectors.
func (o *olsr) sendTC(t sim.Time, n int32) {
	nd := &o.nodes[n]
	nd.msgSeq++
	m := msgHeader(o.mb[:0], olsrTC, emf(olsrTopHold), n, 255, 0, nd.msgSeq)
	m = binary.BigEndian.AppendUint16(m, nd.ansn)
	m = append(m, 0, 0)
	for _, s := range nd.sel {
		m = binary.BigEndian.AppendUint32(m, uint32(s.nb))
	}
	endMsg(m, 0)
	o.mb = m
	o.queueMsg(n, m, o.jitter(n))
}

// --- expiry ---

// purgeSel removes expired MPR selectors; each removal advances the ANSN.
func (o *olsr) purgeSel(t sim.Time, n int32) {
	nd := &o.nodes[n]
	k := 0
	for _, s := range nd.sel {
		if !alive(s.exp, t) {
			nd.ansn++
			continue
		}
		nd.sel[k] = s
		k++
	}
	nd.sel = nd.sel[:k]
}

// purge2 removes expired two-hop and topology tuples (looking at them
// only when one may have expired).
func (o *olsr) purge2(t sim.Time, n int32) {
	nd := &o.nodes[n]
	if nd.exp2 != olsrNever && !alive(nd.exp2, t) {
		next := olsrNever
		for i := range nd.twoHop {
			switch e := &nd.twoHop[i]; {
			case e.nb < 0:
			case !alive(e.exp, t):
				nd.drop2(i)
			default:
				next = min(next, e.exp)
			}
		}
		nd.exp2 = next
		nd.compact2()
	}
	if nd.expTopo != olsrNever && !alive(nd.expTopo, t) {
		next, k := olsrNever, 0
		for _, e := range nd.topo {
			if alive(e.exp, t) {
				nd.topo[k] = e
				k++
				next = min(next, e.exp)
			}
		}
		if k < len(nd.topo) {
			nd.tblDirty = true
		}
		nd.topo, nd.expTopo = nd.topo[:k], next
	}
}

// linkTimer is a link tuple's timer: the tuple goes when its time is over;
// when only its symmetric time is over, the neighbour is lost (except the
// first time at this node: ns-3's m_linkTupleTimerFirstTime).
func (o *olsr) linkTimer(t sim.Time, n, nb int32) {
	nd := &o.nodes[n]
	i := o.findLink(n, nb)
	if i < 0 {
		return
	}
	l := nd.links[i]
	switch {
	case l.time < t:
		nd.delNb(nb)
		nd.delLink(i)
	case l.sym < t:
		if nd.linkTimer1 {
			nd.linkTimer1 = false
		} else {
			o.neighbourLoss(t, n, nb)
		}
		o.b.after(delay(t, l.time), n, olsrTLink, uint64(uint32(nb)))
	default:
		o.b.after(delay(t, min(l.time, l.sym)), n, olsrTLink, uint64(uint32(nb)))
	}
}

func (o *olsr) neighbourLoss(t sim.Time, n, nb int32) {
	nd := &o.nodes[n]
	o.linkUpdated(t, n, nb, olsrWillDefault)
	for i := range nd.twoHop {
		if nd.twoHop[i].nb == nb {
			nd.drop2(i)
		}
	}
	nd.compact2()
	nd.sel = slices.DeleteFunc(nd.sel, func(e olsrSelT) bool { return e.nb == nb })
	o.computeMPR(t, n)
	o.table(t, n)
}

// --- receiving ---

// control parses an OLSR packet: its messages one by one, then the
// routing table is computed again.
func (o *olsr) control(t sim.Time, n int32, from int32, pl []byte) {
	if len(pl) < olsrPktHeader {
		return
	}
	pl = pl[olsrPktHeader:]
	for len(pl) >= olsrMsgHeader {
		size := int(binary.BigEndian.Uint16(pl[2:]))
		if size < olsrMsgHeader || size > len(pl) {
			break
		}
		o.message(t, n, from, pl[:size])
		pl = pl[size:]
	}
	o.table(t, n)
}

func (o *olsr) message(t sim.Time, n, from int32, m []byte) {
	typ, vtime := m[0], emfTime(m[1])
	orig := int32(binary.BigEndian.Uint32(m[4:]))
	ttl := m[8]
	seq := binary.BigEndian.Uint16(m[10:])
	if ttl == 0 || orig == n || orig < 0 || int(orig) >= o.b.n || from < 0 || int(from) >= o.b.n {
		return
	}
	nd := &o.nodes[n]
	key := uint64(uint32(orig))<<16 | uint64(seq)
	di := -1
	for i := range nd.dup {
		if nd.dup[i].key == key && alive(nd.dup[i].exp, t) {
			di = i
			break
		}
	}
	dup := di >= 0
	var d olsrDupT
	if dup {
		d = nd.dup[di]
	}
	fwd := true
	if !dup {
		switch typ {
		case olsrHello:
			o.recvHello(t, n, orig, vtime, m[olsrMsgHeader:])
		case olsrTC:
			o.recvTC(t, n, from, orig, vtime, m[olsrMsgHeader:])
		}
	} else if d.seen {
		fwd = false
	}
	if !fwd || typ == olsrHello {
		return
	}
	// Default forwarding (RFC 3626 3.4.1): from a symmetric neighbour,
	// once, if the last hop chose n as its MPR.
	if !o.symLink(t, n, from) || (dup && d.retx) {
		return
	}
	retx := false
	if ttl > 1 {
		o.purgeSel(t, n)
		for _, s := range nd.sel {
			if s.nb == from {
				fm := append(o.mb[:0], m...)
				fm[8], fm[9] = ttl-1, m[9]+1
				o.mb = fm
				o.queueMsg(n, fm, o.jitter(n))
				retx = true
				break
			}
		}
	}
	e := olsrDupT{key: key, exp: t.Add(olsrDupHold), retx: retx, seen: true}
	if dup {
		nd.dup[di] = e
	} else {
		nd.dup = append(nd.dup, e)
	}
}

// symLink is ns-3's FindSymLinkTuple: the link to nb is symmetric after t.
func (o *olsr) symLink(t sim.Time, n, nb int32) bool {
	i := o.findLink(n, nb)
	return i >= 0 && o.nodes[n].links[i].sym > t
}

// hello iterates over a HELLO's link messages.
func helloLinks(body []byte, f func(lt, nt uint8, addr int32)) {
	if len(body) < 4 {
		return
	}
	for g := body[4:]; len(g) >= 4; {
		size := int(binary.BigEndian.Uint16(g[2:]))
		if size < 4 || size > len(g) {
			return
		}
		code := g[0]
		for a := g[4:size]; len(a) >= 4; a = a[4:] {
			f(code&3, code>>2&3, int32(binary.BigEndian.Uint32(a)))
		}
		g = g[size:]
	}
}

func (o *olsr) recvHello(t sim.Time, n, from int32, vtime sim.Duration, body []byte) {
	if len(body) < 4 {
		return
	}
	nd := &o.nodes[n]
	will := body[3]
	// Link sensing.
	i := o.findLink(n, from)
	created, updated := i < 0, i >= 0
	if created {
		nd.links = append(nd.links, olsrLinkT{nb: from, sym: t - sim.Time(sim.Second), time: t.Add(vtime)})
		i = len(nd.links) - 1
		nd.lix[from] = int32(len(nd.links))
		nd.tblDirty = true
	}
	l := &nd.links[i]
	oldTime := l.time
	l.asym = t.Add(vtime)
	done := false
	helloLinks(body, func(lt, nt uint8, addr int32) {
		if done || addr != n || (lt == linkSym && nt == neighNot) || nt > neighMPR {
			return
		}
		switch lt {
		case linkLost:
			l.sym, updated, done = t-sim.Time(sim.Second), true, true
		case linkSym, linkAsym:
			l.sym = t.Add(vtime)
			l.time, updated, done = l.sym.Add(olsrNeighbHold), true, true
		}
	})
	l.time = max(l.time, l.asym)
	if l.time < oldTime || oldTime < t {
		// The routing table counted on the link until its old time, or
		// left it out as over.
		nd.tblDirty = true
	}
	sym, ltime := l.sym, l.time
	if updated {
		o.linkUpdated(t, n, from, will)
	}
	if created {
		o.linkAdded(t, n, from, sym, will)
		o.b.after(delay(t, min(ltime, sym)), n, olsrTLink, uint64(uint32(from)))
	}
	// The neighbour's willingness.
	if nb := o.findNb(n, from); nb != nil && nb.will != will {
		nb.will = will
		nd.mprDirty, nd.tblDirty = true, true
	}
	// Two-hop neighbours, from a symmetric link.
	o.purge2(t, n)
	if sym >= t {
		helloLinks(body, func(_, nt uint8, x int32) {
			if x < 0 || int(x) >= o.b.n {
				return
			}
			switch nt {
			case neighSym, neighMPR:
				if x == n {
					return
				}
				if j := nd.find2(from, x); j >= 0 {
					nd.twoHop[j].exp = t.Add(vtime)
					return
				}
				o.add2(nd, olsr2T{nb: from, x: x, exp: t.Add(vtime)})
			case neighNot:
				if j := nd.find2(from, x); j >= 0 {
					nd.drop2(j)
				}
			}
		})
		nd.compact2()
	}
	o.computeMPR(t, n)
	// MPR selectors.
	o.purgeSel(t, n)
	helloLinks(body, func(_, nt uint8, x int32) {
		if nt != neighMPR || x != n {
			return
		}
		for j := range nd.sel {
			if nd.sel[j].nb == from {
				nd.sel[j].exp = t.Add(vtime)
				return
			}
		}
		nd.sel = append(nd.sel, olsrSelT{nb: from, exp: t.Add(vtime)})
		nd.ansn++
	})
}

// linkAdded creates (or replaces) the neighbour tuple of a new link.
func (o *olsr) linkAdded(t sim.Time, n, nb int32, sym sim.Time, will uint8) {
	nd := &o.nodes[n]
	e := olsrNbT{nb: nb, sym: sym >= t, will: will}
	if p := o.findNb(n, nb); p != nil {
		*p = e
	} else {
		nd.nbs = append(nd.nbs, e)
		nd.nix[nb] = int32(len(nd.nbs))
	}
	nd.mprDirty, nd.tblDirty = true, true
	nd.ansn++
}

// linkUpdated recomputes the neighbour tuple's status from its link.
func (o *olsr) linkUpdated(t sim.Time, n, nb int32, will uint8) {
	i := o.findLink(n, nb)
	if o.findNb(n, nb) == nil {
		sym := sim.Time(math.MinInt64)
		if i >= 0 {
			sym = o.nodes[n].links[i].sym
		}
		o.linkAdded(t, n, nb, sym, will)
	}
	if p, sym := o.findNb(n, nb), i >= 0 && o.nodes[n].links[i].sym >= t; p.sym != sym {
		p.sym = sym
		o.nodes[n].mprDirty, o.nodes[n].tblDirty = true, true
	}
}

func (o *olsr) recvTC(t sim.Time, n, from, orig int32, vtime sim.Duration, body []byte) {
	if !o.symLink(t, n, from) || len(body) < 4 {
		return
	}
	nd := &o.nodes[n]
	ansn := binary.BigEndian.Uint16(body)
	o.purge2(t, n)
	for _, e := range nd.topo {
		if e.last == orig && e.seq > ansn {
			return // an advertisement newer than this one
		}
	}
	if k := len(nd.topo); k > 0 {
		nd.topo = slices.DeleteFunc(nd.topo, func(e olsrTopoT) bool { return e.last == orig && e.seq < ansn })
		if len(nd.topo) < k {
			nd.tblDirty = true
		}
	}
	for a := body[4:]; len(a) >= 4; a = a[4:] {
		dst := int32(binary.BigEndian.Uint32(a))
		if dst < 0 || int(dst) >= o.b.n {
			continue
		}
		found := false
		for j := range nd.topo {
			if e := &nd.topo[j]; e.dst == dst && e.last == orig {
				e.exp, found = t.Add(vtime), true
				break
			}
		}
		if !found {
			nd.topo = append(nd.topo, olsrTopoT{dst: dst, last: orig, seq: ansn, exp: t.Add(vtime)})
			nd.expTopo = min(nd.expTopo, t.Add(vtime))
			nd.tblDirty = true
		}
	}
}

// --- MPR selection and routes ---

// computeMPR selects n's multipoint relays as ns-3 does (RFC 3626 8.3.1):
// neighbours of willingness ALWAYS, then the only ones reaching some
// two-hop node, then repeatedly the neighbour of highest willingness
// reaching the most two-hop nodes not covered yet (ties: the first in the
// neighbour set; ns-3's degree tie-break never applies, its degree is
// always 0). The result depends on the neighbour set's order and on the
// set (not the order) of two-hop tuples, so it works on bit sets of the
// two-hop nodes each neighbour reaches (olsrVia.reach). Nothing is done
// when neither set changed since the last computation.
func (o *olsr) computeMPR(t sim.Time, n int32) {
	nd := &o.nodes[n]
	o.purge2(t, n)
	if !nd.mprDirty {
		return
	}
	nd.mprDirty = false
	inN1 := o.inN1
	clear(inN1)
	inN1[n>>6] |= 1 << (n & 63)
	n1 := o.n1[:0]
	for _, e := range nd.nbs {
		if e.sym {
			n1 = append(n1, e)
			inN1[e.nb>>6] |= 1 << (e.nb & 63)
		}
	}
	w := o.words
	cov := slices.Grow(o.cov[:0], len(n1)*w)[:len(n1)*w]
	clear(cov)
	chosen := slices.Grow(o.chosen[:0], len(n1))[:len(n1)]
	clear(chosen)
	// cov[i*w:(i+1)*w]: the strict two-hop nodes n1[i] reaches (not n,
	// not its symmetric neighbours).
	for i, e := range n1 {
		if v := nd.viaIx[e.nb]; v > 0 && e.will != olsrWillNever {
			c, r := cov[i*w:(i+1)*w], nd.vias[v-1].reach
			for k := range w {
				c[k] = r[k] &^ inN1[k]
			}
		}
	}
	covered, once, twice := o.covered, o.once, o.twice
	clear(covered)
	for i, e := range n1 {
		if e.will == olsrWillAlways {
			chosen[i] = true
			orInto(covered, cov[i*w:(i+1)*w])
		}
	}
	// The two-hop nodes left that one neighbour alone reaches.
	clear(once)
	clear(twice)
	for i := range n1 {
		c := cov[i*w : (i+1)*w]
		for k := range w {
			r := c[k] &^ covered[k]
			twice[k] |= once[k] & r
			once[k] |= r
		}
	}
	for i := range n1 {
		c := cov[i*w : (i+1)*w]
		for k := range w {
			if c[k]&^covered[k]&once[k]&^twice[k] != 0 {
				chosen[i] = true
				break
			}
		}
	}
	// once becomes the two-hop nodes not covered yet.
	for i := range n1 {
		if chosen[i] {
			orInto(covered, cov[i*w:(i+1)*w])
		}
	}
	left := false
	for k := range w {
		once[k] &^= covered[k]
		left = left || once[k] != 0
	}
	for left {
		best, bestR := -1, 0
		for i, e := range n1 {
			c := cov[i*w : (i+1)*w]
			r := 0
			for k := range w {
				r += bits.OnesCount64(c[k] & once[k])
			}
			if r == 0 {
				continue
			}
			if best < 0 || e.will > n1[best].will || (e.will == n1[best].will && r > bestR) {
				best, bestR = i, r
			}
		}
		if best < 0 {
			break
		}
		chosen[best] = true
		c := cov[best*w : (best+1)*w]
		left = false
		for k := range w {
			once[k] &^= c[k]
			left = left || once[k] != 0
		}
	}
	mpr := nd.mpr[:0]
	for i, e := range n1 {
		if chosen[i] {
			mpr = append(mpr, e.nb)
		}
	}
	slices.Sort(mpr)
	nd.mpr = mpr
	o.n1, o.cov, o.chosen = n1, cov, chosen
}

func orInto(dst, src []uint64) {
	for k := range dst {
		dst[k] |= src[k]
	}
}

// table computes n's routing table (RFC 3626 10, as ns-3 does: a later
// two-hop tuple overrides an earlier one for the same node). It computes
// nothing when its inputs are as they were at the last computation: the
// link, neighbour, two-hop and topology sets unchanged (tblDirty unset)
// and every link the table used still in force.
func (o *olsr) table(t sim.Time, n int32) {
	nd := &o.nodes[n]
	o.purge2(t, n)
	if !nd.tblDirty && t <= nd.tblUntil {
		return
	}
	nd.tblDirty = false
	for d := range nd.next {
		nd.next[d], nd.dist[d] = -1, -1
	}
	until := olsrNever
	// skip: n and its symmetric neighbours (no two-hop routes to them);
	// via: the neighbours two-hop routes may go through.
	skip, via := o.inN1, o.covered
	clear(skip)
	clear(via)
	skip[n>>6] |= 1 << (n & 63)
	for _, e := range nd.nbs {
		if e.will != olsrWillNever {
			via[e.nb>>6] |= 1 << (e.nb & 63)
		}
		if !e.sym {
			continue
		}
		skip[e.nb>>6] |= 1 << (e.nb & 63)
		if i := nd.lix[e.nb]; i > 0 && nd.links[i-1].time >= t {
			nd.next[e.nb], nd.dist[e.nb] = e.nb, 1
			until = min(until, nd.links[i-1].time)
		}
	}
	nd.tblUntil = until
	for _, e := range nd.twoHop {
		if e.nb < 0 || skip[e.x>>6]&(1<<(e.x&63)) != 0 || via[e.nb>>6]&(1<<(e.nb&63)) == 0 {
			continue
		}
		if nd.next[e.nb] >= 0 {
			nd.next[e.x], nd.dist[e.x] = nd.next[e.nb], 2
		}
	}
	for h := int32(2); ; h++ {
		added := false
		for _, e := range nd.topo {
			if e.dst == n || nd.next[e.dst] >= 0 || nd.dist[e.last] != h {
				continue
			}
			nd.next[e.dst], nd.dist[e.dst] = nd.next[e.last], h+1
			added = true
		}
		if !added {
			break
		}
	}
}

// --- data ---

func (*olsr) deliver(sim.Time, int32, uint32) {}

func (o *olsr) unicast(t sim.Time, n int32, a uint32, ttl uint8, origin bool) {
	p := o.b.apps[a].p
	if !origin && netsim.NodeID(n) == p.Src {
		return // its own packet came back: dropped
	}
	next := o.nodes[n].next[p.Dst]
	if next < 0 {
		o.b.dropApp(a, netsim.DropNoRoute)
		return
	}
	o.b.forward(n, next, a, ttl)
}

// broadcast: OLSR does not forward broadcast data; the origin sends it
// to its neighbours.
func (o *olsr) broadcast(t sim.Time, n int32, a uint32, ttl uint8, origin bool) {
	if origin {
		o.b.forward(n, -1, a, 1)
	}
}

// linkFailed: ns-3's OLSR does not use link-layer feedback; links expire
// with their hold time.
func (o *olsr) linkFailed(sim.Time, int32, int32) {}
