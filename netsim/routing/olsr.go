package routing

import (
	"encoding/binary"
	"slices"

	"skyloop/netsim"
	"skyloop/sim"
)

// OLSR constants: ns-3 3.37's defaults (src/olsr/model/olsr-routing-protocol.cc,
// ../shared/reference/NUMBERS.md).
const (
	olsrHelloInterval = 2 * sim.Second
	olsrTcInterval    = 5 * sim.Second
	olsrNeighbHold    = 3 * olsrHelloInterval
	olsrTopHold       = 3 * olsrTcInterval
	olsrDupHold       = 30 * sim.Second
	olsrMaxJitter     = olsrHelloInterval / 4
	olsrWillDefault   = 3
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
)

type olsrLink struct{ sym, asym, time sim.Time }

type olsrTopo struct {
	ansn   uint16
	expire sim.Time
}

type olsrDup struct {
	expire sim.Time
	done   bool // retransmitted
}

type olsrNode struct {
	links     map[int32]*olsrLink
	twoHop    map[uint64]sim.Time // nbr<<32 | two-hop node
	selectors map[int32]sim.Time
	topo      map[uint64]olsrTopo // dest<<32 | last
	dup       map[uint64]olsrDup  // originator<<32 | message seq
	mpr       []int32
	ansn      uint16
	msgSeq    uint16
	pktSeq    uint16
	selSet    []int32 // selectors at the last TC, to notice changes

	// routing table, recomputed when dirty
	dirty bool
	next  map[int32]int32
	dist  map[int32]int

	queue   []byte // messages waiting for the send timer
	sending bool
	draws   uint64
}

type olsr struct {
	b       *Backend
	nodes   []olsrNode
	buf     []byte
	ids     []int32
	keys    []uint64
	mb      []byte
	cover   map[int32]int
	covered map[int32]bool
}

func newOLSR(b *Backend) *olsr {
	return &olsr{b: b, cover: map[int32]int{}, covered: map[int32]bool{}}
}

func (*olsr) name() string { return OLSR }

func (o *olsr) start(t sim.Time) {
	o.nodes = make([]olsrNode, o.b.n)
	for i := range o.nodes {
		n := &o.nodes[i]
		n.links = map[int32]*olsrLink{}
		n.twoHop = map[uint64]sim.Time{}
		n.selectors = map[int32]sim.Time{}
		n.topo = map[uint64]olsrTopo{}
		n.dup = map[uint64]olsrDup{}
		n.next = map[int32]int32{}
		n.dist = map[int32]int{}
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

func (o *olsr) timer(t sim.Time, n int32, kind uint8, arg uint64) {
	switch kind {
	case olsrTHello:
		o.purge(t, n)
		o.sendHello(t, n)
		o.b.after(olsrHelloInterval, n, olsrTHello, 0)
	case olsrTTc:
		o.sendTC(t, n)
		o.b.after(olsrTcInterval, n, olsrTTc, 0)
	case olsrTSend:
		o.flush(n)
	}
}

// queueMsg appends an encoded message to n's next packet, which leaves
// after a jitter (messages queued meanwhile share the packet, as in ns-3).
func (o *olsr) queueMsg(n int32, msg []byte) {
	nd := &o.nodes[n]
	nd.queue = append(nd.queue, msg...)
	if !nd.sending {
		nd.sending = true
		o.b.after(o.jitter(n), n, olsrTSend, 0)
	}
}

func (o *olsr) flush(n int32) {
	nd := &o.nodes[n]
	nd.sending = false
	if len(nd.queue) == 0 {
		return
	}
	nd.pktSeq++
	pk := o.buf[:0]
	pk = binary.BigEndian.AppendUint16(pk, uint16(olsrPktHeader+len(nd.queue)))
	pk = binary.BigEndian.AppendUint16(pk, nd.pktSeq)
	pk = append(pk, nd.queue...)
	o.buf = pk
	nd.queue = nd.queue[:0]
	o.b.sendControl(n, -1, netsim.KindOLSR, pk, 0)
}

// msgHeader appends an RFC 3626 message header; the size is patched by
// endMsg.
func msgHeader(m []byte, typ uint8, orig int32, ttl, hops uint8, seq uint16) []byte {
	m = append(m, typ, 0, 0, 0)
	m = binary.BigEndian.AppendUint32(m, uint32(orig))
	m = append(m, ttl, hops)
	return binary.BigEndian.AppendUint16(m, seq)
}

func endMsg(m []byte, start int) {
	binary.BigEndian.PutUint16(m[start+2:], uint16(len(m)-start))
}

func (o *olsr) symmetric(t sim.Time, n, nb int32) bool {
	l := o.nodes[n].links[nb]
	return l != nil && l.sym >= t
}

// sortedLinks lists n's link neighbours in id order.
func (o *olsr) sortedLinks(n int32) []int32 {
	o.ids = o.ids[:0]
	for nb := range o.nodes[n].links {
		o.ids = append(o.ids, nb)
	}
	slices.Sort(o.ids)
	return o.ids
}

func (o *olsr) sendHello(t sim.Time, n int32) {
	nd := &o.nodes[n]
	o.computeMPR(t, n)
	nd.msgSeq++
	m := msgHeader(o.mb[:0], olsrHello, n, 1, 0, nd.msgSeq)
	m = append(m, 0, 0, 0, olsrWillDefault)
	ids := o.sortedLinks(n)
	// One link-code group per (link type, neighbour type), as RFC 3626 6.2.
	for lt := uint8(linkAsym); lt <= linkLost; lt++ {
		for nt := uint8(neighNot); nt <= neighMPR; nt++ {
			g := len(m)
			m = append(m, nt<<2|lt, 0, 0, 0)
			for _, nb := range ids {
				l := nd.links[nb]
				if l.time < t {
					continue
				}
				if o.linkType(t, l) != lt || o.neighType(t, n, nb) != nt {
					continue
				}
				m = binary.BigEndian.AppendUint32(m, uint32(nb))
			}
			if len(m) == g+4 {
				m = m[:g]
				continue
			}
			binary.BigEndian.PutUint16(m[g+2:], uint16(len(m)-g))
		}
	}
	endMsg(m, 0)
	o.mb = m
	o.queueMsg(n, m)
}

func (o *olsr) linkType(t sim.Time, l *olsrLink) uint8 {
	switch {
	case l.sym >= t:
		return linkSym
	case l.asym >= t:
		return linkAsym
	}
	return linkLost
}

func (o *olsr) neighType(t sim.Time, n, nb int32) uint8 {
	if slices.Contains(o.nodes[n].mpr, nb) {
		return neighMPR
	}
	if o.symmetric(t, n, nb) {
		return neighSym
	}
	return neighNot
}

func (o *olsr) sendTC(t sim.Time, n int32) {
	nd := &o.nodes[n]
	o.ids = o.ids[:0]
	for s, e := range nd.selectors {
		if e >= t {
			o.ids = append(o.ids, s)
		}
	}
	if len(o.ids) == 0 {
		return // no one chose n as MPR: no TC (ns-3)
	}
	slices.Sort(o.ids)
	if !slices.Equal(o.ids, nd.selSet) {
		nd.ansn++
		nd.selSet = append(nd.selSet[:0], o.ids...)
	}
	nd.msgSeq++
	m := msgHeader(o.mb[:0], olsrTC, n, 255, 0, nd.msgSeq)
	m = binary.BigEndian.AppendUint16(m, nd.ansn)
	m = append(m, 0, 0)
	for _, s := range o.ids {
		m = binary.BigEndian.AppendUint32(m, uint32(s))
	}
	endMsg(m, 0)
	o.mb = m
	o.queueMsg(n, m)
}

// control parses an OLSR packet: its messages one by one.
func (o *olsr) control(t sim.Time, n int32, from int32, pl []byte) {
	if len(pl) < olsrPktHeader {
		return
	}
	pl = pl[olsrPktHeader:]
	for len(pl) >= olsrMsgHeader {
		size := int(binary.BigEndian.Uint16(pl[2:]))
		if size < olsrMsgHeader || size > len(pl) {
			return
		}
		o.message(t, n, from, pl[:size])
		pl = pl[size:]
	}
}

func (o *olsr) message(t sim.Time, n, from int32, m []byte) {
	typ := m[0]
	orig := int32(binary.BigEndian.Uint32(m[4:]))
	ttl, hops := m[8], m[9]
	seq := binary.BigEndian.Uint16(m[10:])
	if orig == n || orig < 0 || int(orig) >= o.b.n {
		return
	}
	nd := &o.nodes[n]
	if typ == olsrHello {
		o.recvHello(t, n, from, m[olsrMsgHeader:])
		return
	}
	key := uint64(uint32(orig))<<32 | uint64(seq)
	d, dup := nd.dup[key]
	if dup && d.expire < t {
		dup = false
	}
	if !dup && typ == olsrTC && o.symmetric(t, n, from) {
		o.recvTC(t, n, from, orig, m[olsrMsgHeader:])
	}
	// Default forwarding (RFC 3626 3.4.1): retransmit once if the last
	// hop chose n as MPR.
	if dup && d.done {
		return
	}
	if !o.symmetric(t, n, from) {
		return // not from a symmetric neighbour: neither processed nor forwarded
	}
	fwd := false
	if e, ok := nd.selectors[from]; ok && e >= t && ttl > 1 {
		fwd = true
	}
	nd.dup[key] = olsrDup{expire: t.Add(olsrDupHold), done: fwd}
	if fwd {
		fm := append(o.mb[:0], m...)
		fm[8], fm[9] = ttl-1, hops+1
		o.mb = fm
		o.queueMsg(n, fm)
	}
}

func (o *olsr) recvHello(t sim.Time, n, from int32, body []byte) {
	if len(body) < 4 {
		return
	}
	nd := &o.nodes[n]
	l := nd.links[from]
	if l == nil {
		l = &olsrLink{sym: t - 1, time: t.Add(olsrNeighbHold)}
		nd.links[from] = l
	}
	l.asym = t.Add(olsrNeighbHold)
	wasSym := l.sym >= t
	groups := body[4:]
	// First pass: the link to the sender.
	for g := groups; len(g) >= 4; {
		size := int(binary.BigEndian.Uint16(g[2:]))
		if size < 4 || size > len(g) {
			break
		}
		lt := g[0] & 3
		for a := g[4:size]; len(a) >= 4; a = a[4:] {
			if int32(binary.BigEndian.Uint32(a)) != n {
				continue
			}
			switch lt {
			case linkLost:
				l.sym = t - 1
			case linkSym, linkAsym:
				l.sym = t.Add(olsrNeighbHold)
				l.time = l.sym.Add(olsrNeighbHold)
			}
		}
		g = g[size:]
	}
	if l.time < l.asym {
		l.time = l.asym
	}
	changed := wasSym != (l.sym >= t)
	// Second pass: two-hop neighbours and MPR selection, from a symmetric
	// neighbour only.
	if l.sym >= t {
		for g := groups; len(g) >= 4; {
			size := int(binary.BigEndian.Uint16(g[2:]))
			if size < 4 || size > len(g) {
				break
			}
			nt := (g[0] >> 2) & 3
			for a := g[4:size]; len(a) >= 4; a = a[4:] {
				x := int32(binary.BigEndian.Uint32(a))
				if x < 0 || int(x) >= o.b.n {
					continue
				}
				if x == n {
					if nt == neighMPR {
						nd.selectors[from] = t.Add(olsrNeighbHold)
					}
					continue
				}
				key := uint64(uint32(from))<<32 | uint64(uint32(x))
				switch nt {
				case neighSym, neighMPR:
					if _, ok := nd.twoHop[key]; !ok {
						changed = true
					}
					nd.twoHop[key] = t.Add(olsrNeighbHold)
				case neighNot:
					if _, ok := nd.twoHop[key]; ok {
						delete(nd.twoHop, key)
						changed = true
					}
				}
			}
			g = g[size:]
		}
	}
	if changed {
		nd.dirty = true
	}
}

func (o *olsr) recvTC(t sim.Time, n, from, orig int32, body []byte) {
	nd := &o.nodes[n]
	if !o.symmetric(t, n, from) || len(body) < 4 {
		return
	}
	ansn := binary.BigEndian.Uint16(body)
	// A tuple from orig with a newer ANSN makes this TC stale.
	o.keys = o.keys[:0]
	for k, tp := range nd.topo {
		if int32(uint32(k)) != orig || tp.expire < t {
			continue
		}
		if int16(tp.ansn-ansn) > 0 {
			return
		}
		if tp.ansn != ansn {
			o.keys = append(o.keys, k)
		}
	}
	for _, k := range o.keys {
		delete(nd.topo, k)
		nd.dirty = true
	}
	for a := body[4:]; len(a) >= 4; a = a[4:] {
		dst := int32(binary.BigEndian.Uint32(a))
		if dst < 0 || int(dst) >= o.b.n {
			continue
		}
		key := uint64(uint32(dst))<<32 | uint64(uint32(orig))
		if _, ok := nd.topo[key]; !ok {
			nd.dirty = true
		}
		nd.topo[key] = olsrTopo{ansn: ansn, expire: t.Add(olsrTopHold)}
	}
}

// purge forgets expired tuples.
func (o *olsr) purge(t sim.Time, n int32) {
	nd := &o.nodes[n]
	for k, l := range nd.links {
		if l.time < t {
			delete(nd.links, k)
			nd.dirty = true
		}
	}
	for k, e := range nd.twoHop {
		if e < t {
			delete(nd.twoHop, k)
			nd.dirty = true
		}
	}
	for k, e := range nd.selectors {
		if e < t {
			delete(nd.selectors, k)
		}
	}
	for k, tp := range nd.topo {
		if tp.expire < t {
			delete(nd.topo, k)
			nd.dirty = true
		}
	}
	for k, d := range nd.dup {
		if d.expire < t {
			delete(nd.dup, k)
		}
	}
}

// computeMPR selects n's multipoint relays (RFC 3626 8.3.1): neighbours
// that are the only way to a two-hop node first, then by the number of
// uncovered two-hop nodes they reach, ties to the lower id.
func (o *olsr) computeMPR(t sim.Time, n int32) {
	nd := &o.nodes[n]
	nd.mpr = nd.mpr[:0]
	cover := o.cover
	clear(cover)
	// two-hop node -> number of symmetric neighbours reaching it
	o.keys = o.keys[:0]
	for k, e := range nd.twoHop {
		nb, x := int32(k>>32), int32(uint32(k))
		if e < t || !o.symmetric(t, n, nb) || x == n || o.symmetric(t, n, x) {
			continue
		}
		o.keys = append(o.keys, k)
	}
	slices.Sort(o.keys)
	for _, k := range o.keys {
		cover[int32(uint32(k))]++
	}
	covered := o.covered
	clear(covered)
	add := func(nb int32) {
		if slices.Contains(nd.mpr, nb) {
			return
		}
		nd.mpr = append(nd.mpr, nb)
		for _, k := range o.keys {
			if int32(k>>32) == nb {
				covered[int32(uint32(k))] = true
			}
		}
	}
	for _, k := range o.keys {
		if cover[int32(uint32(k))] == 1 {
			add(int32(k >> 32))
		}
	}
	for len(covered) < len(cover) {
		best, bestR := int32(-1), 0
		for _, k := range o.keys {
			nb := int32(k >> 32)
			if slices.Contains(nd.mpr, nb) {
				continue
			}
			r := 0
			for _, k2 := range o.keys {
				if int32(k2>>32) == nb && !covered[int32(uint32(k2))] {
					r++
				}
			}
			if r > bestR || (r == bestR && r > 0 && nb < best) {
				best, bestR = nb, r
			}
		}
		if best < 0 {
			break
		}
		add(best)
	}
	slices.Sort(nd.mpr)
}

// table recomputes n's routes (RFC 3626 10) when something changed.
func (o *olsr) table(t sim.Time, n int32) {
	nd := &o.nodes[n]
	clear(nd.next)
	clear(nd.dist)
	for _, nb := range o.sortedLinks(n) {
		if o.symmetric(t, n, nb) {
			nd.next[nb], nd.dist[nb] = nb, 1
		}
	}
	o.keys = o.keys[:0]
	for k, e := range nd.twoHop {
		if e >= t {
			o.keys = append(o.keys, k)
		}
	}
	slices.Sort(o.keys)
	for _, k := range o.keys {
		nb, x := int32(k>>32), int32(uint32(k))
		if x == n {
			continue
		}
		if _, ok := nd.dist[x]; ok {
			continue
		}
		if d, ok := nd.dist[nb]; ok && d == 1 {
			nd.next[x], nd.dist[x] = nb, 2
		}
	}
	o.keys = o.keys[:0]
	for k, tp := range nd.topo {
		if tp.expire >= t {
			o.keys = append(o.keys, k)
		}
	}
	slices.Sort(o.keys)
	for h := 2; ; h++ {
		added := false
		for _, k := range o.keys {
			dst, last := int32(k>>32), int32(uint32(k))
			if dst == n {
				continue
			}
			if _, ok := nd.dist[dst]; ok {
				continue
			}
			if d, ok := nd.dist[last]; ok && d == h {
				nd.next[dst], nd.dist[dst] = nd.next[last], h+1
				added = true
			}
		}
		if !added {
			break
		}
	}
	nd.dirty = false
}

func (*olsr) deliver(sim.Time, int32, uint32) {}

func (o *olsr) unicast(t sim.Time, n int32, a uint32, ttl uint8, _ bool) {
	nd := &o.nodes[n]
	if nd.dirty {
		o.table(t, n)
	}
	dst := int32(o.b.apps[a].p.Dst)
	next, ok := nd.next[dst]
	if ok && !o.symmetric(t, n, next) {
		o.table(t, n) // a link expired since the last computation
		next, ok = nd.next[dst]
	}
	if !ok {
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
