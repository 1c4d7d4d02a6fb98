package routing

import (
	"encoding/binary"
	"slices"

	"skyloop/netsim"
	"skyloop/sim"
)

// AODV constants: ns-3 3.37's defaults (src/aodv/model/aodv-routing-protocol.cc,
// ../shared/reference/NUMBERS.md).
const (
	aodvHelloInterval     = sim.Second
	aodvAllowedHelloLoss  = 2
	aodvActiveRouteTime   = 3 * sim.Second
	aodvNodeTraversalTime = 40 * sim.Millisecond
	aodvNetDiameter       = 35
	aodvRreqRetries       = 2
	aodvTTLStart          = 1
	aodvTTLIncrement      = 2
	aodvTTLThreshold      = 7
	aodvTimeoutBuffer     = 2
	aodvDeletePeriod      = 15 * sim.Second
	aodvMaxQueueLen       = 64
	aodvMaxQueueTime      = 30 * sim.Second
	aodvNetTraversalTime  = 2 * aodvNodeTraversalTime * aodvNetDiameter // 2.8 s
	aodvPathDiscoveryTime = 2 * aodvNetTraversalTime                    // 5.6 s
	aodvMyRouteTimeout    = 2 * aodvPathDiscoveryTime                   // 2 max(PathDiscoveryTime, ActiveRouteTimeout)
	aodvHelloLifetime     = aodvAllowedHelloLoss * aodvHelloInterval
	aodvBcastJitter       = 10 * sim.Millisecond // control broadcasts wait U[0, 10) ms
	aodvHelloStartJitter  = 100 * sim.Millisecond
)

// AODV message types and sizes on the wire (ns-3's: a 1-byte type header
// and the RFC 3561 message).
const (
	aodvRREQ = 1
	aodvRREP = 2
	aodvRERR = 3

	aodvRREQSize = 24
	aodvRREPSize = 20
)

// AODV timer kinds.
const (
	aodvTHello uint8 = iota
	aodvTRreq
)

type aodvRoute struct {
	next       int32
	hops       uint16
	seq        uint32
	seqValid   bool
	valid      bool
	inSearch   bool
	rreqCnt    int
	expire     sim.Time
	precursors []int32
}

type aodvQueued struct {
	a   uint32
	ttl uint8
	at  sim.Time
}

type aodvNode struct {
	seq       uint32
	rreqID    uint32
	routes    map[int32]*aodvRoute
	nbr       map[int32]sim.Time // neighbour -> expiry
	seen      map[uint64]sim.Time
	queue     map[int32][]aodvQueued // buffered data by destination
	searching map[int32]bool
	lastBcast sim.Time
	bcasted   bool
	draws     uint64
}

type aodv struct {
	b     *Backend
	nodes []aodvNode
	msg   [aodvRREQSize]byte
	rerr  []byte
	lost  []uint64 // scratch: unreachable (dst<<32 | seq)
	prec  []int32  // scratch
	gone  []int32  // scratch
}

func newAODV(b *Backend) *aodv { return &aodv{b: b} }

func (*aodv) name() string { return AODV }

func (x *aodv) start(t sim.Time) {
	x.nodes = make([]aodvNode, x.b.n)
	for i := range x.nodes {
		n := &x.nodes[i]
		n.routes = map[int32]*aodvRoute{}
		n.nbr = map[int32]sim.Time{}
		n.seen = map[uint64]sim.Time{}
		n.queue = map[int32][]aodvQueued{}
		n.searching = map[int32]bool{}
		x.b.after(x.jit(int32(i), aodvHelloStartJitter), int32(i), aodvTHello, 0)
	}
}

func (x *aodv) jit(n int32, max sim.Duration) sim.Duration {
	x.nodes[n].draws++
	// ns-3 draws whole milliseconds.
	ms := int64(max / sim.Millisecond)
	return sim.Duration(sim.Hash(x.b.seed, uint64(n), x.nodes[n].draws, 0xa0d7)%uint64(ms+1)) * sim.Millisecond
}

// route returns n's entry for dst, creating an empty one.
func (x *aodv) route(n int32, dst int32) *aodvRoute {
	nd := &x.nodes[n]
	r := nd.routes[dst]
	if r == nil {
		r = &aodvRoute{next: -1}
		nd.routes[dst] = r
	}
	return r
}

// active returns n's valid, unexpired route to dst, or nil.
func (x *aodv) active(t sim.Time, n, dst int32) *aodvRoute {
	r := x.nodes[n].routes[dst]
	if r == nil || !r.valid {
		return nil
	}
	if r.expire <= t {
		r.valid = false
		r.expire = t.Add(aodvDeletePeriod)
		return nil
	}
	return r
}

func (x *aodv) refresh(t sim.Time, n, dst int32, d sim.Duration) {
	if r := x.active(t, n, dst); r != nil && r.expire < t.Add(d) {
		r.expire = t.Add(d)
	}
}

// neighbour records that n heard from s: a one-hop route to s.
func (x *aodv) neighbour(t sim.Time, n, s int32, life sim.Duration, seq uint32, seqValid bool) {
	nd := &x.nodes[n]
	if e := nd.nbr[s]; e < t.Add(life) {
		nd.nbr[s] = t.Add(life)
	}
	r := x.route(n, s)
	if !r.valid || r.hops != 1 || r.next != s {
		r.next, r.hops, r.valid, r.inSearch = s, 1, true, false
		r.expire = t.Add(life)
	} else if r.expire < t.Add(life) {
		r.expire = t.Add(life)
	}
	if seqValid {
		r.seq, r.seqValid = seq, true
	}
}

func (x *aodv) unicast(t sim.Time, n int32, a uint32, ttl uint8) {
	b := x.b
	p := b.apps[a].p
	dst := int32(p.Dst)
	if r := x.active(t, n, dst); r != nil {
		x.refresh(t, n, dst, aodvActiveRouteTime)
		x.refresh(t, n, r.next, aodvActiveRouteTime)
		x.refresh(t, n, int32(p.Src), aodvActiveRouteTime)
		b.forward(n, r.next, a, ttl)
		return
	}
	if netsim.NodeID(n) != p.Src {
		// An intermediate node without a route drops the packet and
		// tells the way back to the origin (ns-3's
		// SendRerrWhenNoRouteToForward; no local repair, as ns-3's
		// default).
		seq := uint32(0)
		if r := x.nodes[n].routes[dst]; r != nil {
			seq = r.seq
		}
		m := append(x.rerr[:0], aodvRERR, 0, 0, 1)
		m = binary.LittleEndian.AppendUint32(m, uint32(dst))
		m = binary.LittleEndian.AppendUint32(m, seq)
		x.rerr = m
		if rv := x.active(t, n, int32(p.Src)); rv != nil {
			b.sendControl(n, rv.next, netsim.KindAODV, m, 0)
		} else {
			b.sendControl(n, -1, netsim.KindAODV, m, x.jit(n, aodvBcastJitter))
			x.nodes[n].lastBcast, x.nodes[n].bcasted = t, true
		}
		b.dropApp(a, netsim.DropNoRoute)
		return
	}
	nd := &x.nodes[n]
	q := nd.queue[dst]
	if len(q) >= aodvMaxQueueLen {
		b.dropApp(a, netsim.DropQueue)
		return
	}
	b.refApp(a)
	nd.queue[dst] = append(q, aodvQueued{a: a, ttl: ttl, at: t})
	if !nd.searching[dst] {
		nd.searching[dst] = true
		r := x.route(n, dst)
		r.rreqCnt = 0
		x.sendRREQ(t, n, dst)
	}
}

// broadcast: ns-3's AODV forwards broadcast data with a TTL above 1
// (EnableBroadcast), each node once.
func (x *aodv) broadcast(t sim.Time, n int32, a uint32, ttl uint8, origin bool) {
	x.b.forward(n, -1, a, ttl)
	x.nodes[n].lastBcast, x.nodes[n].bcasted = t, true
}

func (x *aodv) sendRREQ(t sim.Time, n, dst int32) {
	nd := &x.nodes[n]
	r := x.route(n, dst)
	ttl := aodvTTLStart
	if r.hops > 0 {
		if !r.inSearch {
			ttl = min(int(r.hops)+aodvTTLIncrement, aodvNetDiameter)
		} else {
			ttl = int(r.hops) + aodvTTLIncrement
			if ttl > aodvTTLThreshold {
				ttl = aodvNetDiameter
			}
		}
	}
	if ttl == aodvNetDiameter {
		r.rreqCnt++
	}
	if !r.valid {
		r.inSearch = true
		r.hops = uint16(ttl)
	}
	nd.rreqID++
	nd.seq++
	nd.seen[uint64(uint32(n))<<32|uint64(nd.rreqID)] = t.Add(aodvPathDiscoveryTime)
	m := x.msg[:aodvRREQSize]
	clear(m)
	m[0] = aodvRREQ
	if !r.seqValid {
		m[1] = 1 // U: unknown destination sequence number
	}
	m[2] = uint8(ttl)
	m[3] = 0 // hop count
	binary.LittleEndian.PutUint32(m[4:], nd.rreqID)
	binary.LittleEndian.PutUint32(m[8:], uint32(dst))
	binary.LittleEndian.PutUint32(m[12:], r.seq)
	binary.LittleEndian.PutUint32(m[16:], uint32(n))
	binary.LittleEndian.PutUint32(m[20:], nd.seq)
	x.b.sendControl(n, -1, netsim.KindAODV, m, x.jit(n, aodvBcastJitter))
	nd.lastBcast, nd.bcasted = t, true
	var wait sim.Duration
	if ttl < aodvNetDiameter {
		wait = 2 * aodvNodeTraversalTime * sim.Duration(ttl+aodvTimeoutBuffer)
	} else {
		wait = aodvNetTraversalTime * sim.Duration(int64(1)<<(r.rreqCnt-1))
	}
	x.b.after(wait, n, aodvTRreq, uint64(uint32(dst)))
}

func (x *aodv) timer(t sim.Time, n int32, kind uint8, arg uint64) {
	switch kind {
	case aodvTHello:
		x.hello(t, n)
	case aodvTRreq:
		x.rreqTimeout(t, n, int32(arg))
	}
}

func (x *aodv) hello(t sim.Time, n int32) {
	nd := &x.nodes[n]
	var offset sim.Duration
	if nd.bcasted {
		offset = t.Sub(nd.lastBcast)
	} else {
		m := x.msg[:aodvRREPSize]
		clear(m)
		m[0] = aodvRREP
		binary.LittleEndian.PutUint32(m[4:], uint32(n))
		binary.LittleEndian.PutUint32(m[8:], nd.seq)
		binary.LittleEndian.PutUint32(m[12:], uint32(n))
		binary.LittleEndian.PutUint32(m[16:], uint32(aodvHelloLifetime/sim.Millisecond))
		x.b.sendControl(n, -1, netsim.KindAODV, m, x.jit(n, aodvBcastJitter))
	}
	nd.bcasted = false
	x.b.after(max(0, aodvHelloInterval-offset), n, aodvTHello, 0)
	// Neighbours not heard from within their lifetime are lost links
	// (handled in id order: map order is random).
	x.prec = x.prec[:0]
	for s, e := range nd.nbr {
		if e <= t {
			x.prec = append(x.prec, s)
		}
	}
	gone := append(x.gone[:0], x.prec...)
	x.gone = gone
	slices.Sort(gone)
	for _, s := range gone {
		x.linkFailed(t, n, s)
	}
	for k, e := range nd.seen {
		if e <= t {
			delete(nd.seen, k)
		}
	}
}

func (x *aodv) rreqTimeout(t sim.Time, n, dst int32) {
	nd := &x.nodes[n]
	if !nd.searching[dst] {
		return
	}
	if x.active(t, n, dst) != nil {
		x.flush(t, n, dst)
		return
	}
	r := x.route(n, dst)
	if r.rreqCnt >= aodvRreqRetries {
		// Discovery failed: the buffered packets have no route.
		delete(nd.searching, dst)
		r.inSearch, r.rreqCnt = false, 0
		q := nd.queue[dst]
		nd.queue[dst] = q[:0]
		for _, e := range q {
			x.b.dropApp(e.a, netsim.DropNoRoute)
			x.b.unrefApp(e.a)
		}
		return
	}
	x.sendRREQ(t, n, dst)
}

// flush sends the packets n buffered for dst along its new route.
func (x *aodv) flush(t sim.Time, n, dst int32) {
	nd := &x.nodes[n]
	delete(nd.searching, dst)
	q := nd.queue[dst]
	nd.queue[dst] = q[:0]
	for _, e := range q {
		if t.Sub(e.at) > aodvMaxQueueTime {
			x.b.dropApp(e.a, netsim.DropQueue)
		} else if r := x.active(t, n, dst); r != nil {
			x.b.forward(n, r.next, e.a, e.ttl)
		} else {
			x.b.dropApp(e.a, netsim.DropNoRoute)
		}
		x.b.unrefApp(e.a)
	}
}

func (x *aodv) control(t sim.Time, n int32, from int32, pl []byte) {
	if len(pl) < 4 {
		return
	}
	switch pl[0] {
	case aodvRREQ:
		if len(pl) >= aodvRREQSize {
			x.neighbour(t, n, from, aodvActiveRouteTime, 0, false)
			x.recvRREQ(t, n, from, pl)
		}
	case aodvRREP:
		if len(pl) >= aodvRREPSize {
			x.recvRREP(t, n, from, pl)
		}
	case aodvRERR:
		x.neighbour(t, n, from, aodvActiveRouteTime, 0, false)
		x.recvRERR(t, n, from, pl)
	}
}

// newer reports whether sequence number a is fresher than b (RFC 3561
// 6.1: signed 32-bit rollover arithmetic).
func newer(a, b uint32) bool { return int32(a-b) > 0 }

func (x *aodv) recvRREQ(t sim.Time, n, from int32, pl []byte) {
	nd := &x.nodes[n]
	unknown := pl[1]&1 != 0
	ttl := int(pl[2])
	hop := int(pl[3]) + 1
	id := binary.LittleEndian.Uint32(pl[4:])
	dst := int32(binary.LittleEndian.Uint32(pl[8:]))
	dseq := binary.LittleEndian.Uint32(pl[12:])
	org := int32(binary.LittleEndian.Uint32(pl[16:]))
	oseq := binary.LittleEndian.Uint32(pl[20:])
	if org == n || org < 0 || int(org) >= x.b.n || dst < 0 || int(dst) >= x.b.n {
		return
	}
	key := uint64(uint32(org))<<32 | uint64(id)
	if e, ok := nd.seen[key]; ok && e > t {
		return
	}
	nd.seen[key] = t.Add(aodvPathDiscoveryTime)
	// The reverse route to the originator.
	rv := x.route(n, org)
	life := 2*aodvNetTraversalTime - 2*sim.Duration(hop)*aodvNodeTraversalTime
	if !rv.seqValid || newer(oseq, rv.seq) || (oseq == rv.seq && (!rv.valid || hop < int(rv.hops))) {
		rv.next, rv.hops, rv.seq, rv.seqValid, rv.valid, rv.inSearch = from, uint16(hop), oseq, true, true, false
		if rv.expire < t.Add(life) {
			rv.expire = t.Add(life)
		}
		if nd.searching[org] {
			x.flush(t, n, org)
		}
	}
	if dst == n {
		if !unknown && dseq == nd.seq+1 {
			nd.seq++
		}
		x.sendRREP(t, n, from, n, nd.seq, 0, org, aodvMyRouteTimeout)
		return
	}
	if r := x.active(t, n, dst); r != nil {
		if r.next == from {
			return // answering would make a loop (ns-3 drops the RREQ)
		}
	}
	if r := x.active(t, n, dst); r != nil && r.seqValid && (unknown || !newer(dseq, r.seq)) {
		// An intermediate node with a fresh enough route answers (ns-3:
		// also when the requester does not know the sequence number).
		x.addPrecursor(r, from)
		x.addPrecursor(rv, r.next)
		x.sendRREP(t, n, from, dst, r.seq, int(r.hops), org, r.expire.Sub(t))
		return
	}
	if ttl <= 1 {
		return
	}
	m := x.msg[:aodvRREQSize]
	copy(m, pl[:aodvRREQSize])
	m[2] = uint8(ttl - 1)
	m[3] = uint8(min(hop, 255))
	if r := nd.routes[dst]; r != nil && r.seqValid && (unknown || newer(r.seq, dseq)) {
		binary.LittleEndian.PutUint32(m[12:], r.seq)
		m[1] &^= 1
	}
	x.b.sendControl(n, -1, netsim.KindAODV, m, x.jit(n, aodvBcastJitter))
	nd.lastBcast, nd.bcasted = t, true
}

func (x *aodv) addPrecursor(r *aodvRoute, p int32) {
	for _, q := range r.precursors {
		if q == p {
			return
		}
	}
	r.precursors = append(r.precursors, p)
}

func (x *aodv) sendRREP(t sim.Time, n, to, dst int32, dseq uint32, hops int, org int32, life sim.Duration) {
	m := x.msg[:aodvRREPSize]
	clear(m)
	m[0] = aodvRREP
	m[3] = uint8(min(hops, 255))
	binary.LittleEndian.PutUint32(m[4:], uint32(dst))
	binary.LittleEndian.PutUint32(m[8:], dseq)
	binary.LittleEndian.PutUint32(m[12:], uint32(org))
	binary.LittleEndian.PutUint32(m[16:], uint32(max(0, life/sim.Millisecond)))
	x.b.sendControl(n, to, netsim.KindAODV, m, 0)
}

func (x *aodv) recvRREP(t sim.Time, n, from int32, pl []byte) {
	hop := int(pl[3]) + 1
	dst := int32(binary.LittleEndian.Uint32(pl[4:]))
	dseq := binary.LittleEndian.Uint32(pl[8:])
	org := int32(binary.LittleEndian.Uint32(pl[12:]))
	life := sim.Duration(binary.LittleEndian.Uint32(pl[16:])) * sim.Millisecond
	if dst < 0 || int(dst) >= x.b.n || org < 0 || int(org) >= x.b.n || dst == n {
		return
	}
	if dst == org && dst == from {
		// A hello: the neighbour's one-hop route and lifetime.
		x.neighbour(t, n, from, life, dseq, true)
		return
	}
	x.neighbour(t, n, from, aodvActiveRouteTime, 0, false)
	r := x.route(n, dst)
	if !r.valid || !r.seqValid || newer(dseq, r.seq) || (dseq == r.seq && hop < int(r.hops)) || r.expire <= t {
		r.next, r.hops, r.seq, r.seqValid, r.valid, r.inSearch = from, uint16(hop), dseq, true, true, false
		r.expire = t.Add(life)
	}
	if org == n {
		if x.nodes[n].searching[dst] {
			x.flush(t, n, dst)
		}
		return
	}
	rv := x.active(t, n, org)
	if rv == nil {
		return
	}
	x.addPrecursor(r, rv.next)
	x.addPrecursor(rv, from)
	if rv.expire < t.Add(aodvActiveRouteTime) {
		rv.expire = t.Add(aodvActiveRouteTime)
	}
	m := x.msg[:aodvRREPSize]
	copy(m, pl[:aodvRREPSize])
	m[3] = uint8(min(hop, 255))
	x.b.sendControl(n, rv.next, netsim.KindAODV, m, 0)
}

// linkFailed: every route through next breaks; precursors learn it by RERR.
func (x *aodv) linkFailed(t sim.Time, n, next int32) {
	nd := &x.nodes[n]
	delete(nd.nbr, next)
	x.lost = x.lost[:0]
	for dst, r := range nd.routes {
		if r.valid && r.next == next {
			r.valid = false
			r.seq++
			r.expire = t.Add(aodvDeletePeriod)
			x.lost = append(x.lost, uint64(uint32(dst))<<32|uint64(r.seq))
		}
	}
	if len(x.lost) > 0 {
		x.sendRERR(t, n, -1)
	}
}

// sendRERR tells n's precursors of the routes in x.lost (dst<<32|seq)
// that they broke; skip is a node not to tell.
func (x *aodv) sendRERR(t sim.Time, n int32, skip int32) {
	nd := &x.nodes[n]
	slices.Sort(x.lost)
	x.prec = x.prec[:0]
	for _, l := range x.lost {
		if r := nd.routes[int32(l>>32)]; r != nil {
			for _, p := range r.precursors {
				if p != skip && !slices.Contains(x.prec, p) {
					x.prec = append(x.prec, p)
				}
			}
		}
	}
	if len(x.prec) == 0 {
		return
	}
	k := min(len(x.lost), 255)
	m := append(x.rerr[:0], aodvRERR, 0, 0, uint8(k))
	for _, l := range x.lost[:k] {
		m = binary.LittleEndian.AppendUint32(m, uint32(l>>32))
		m = binary.LittleEndian.AppendUint32(m, uint32(l))
	}
	x.rerr = m
	if len(x.prec) == 1 {
		x.b.sendControl(n, x.prec[0], netsim.KindAODV, m, 0)
		return
	}
	x.b.sendControl(n, -1, netsim.KindAODV, m, x.jit(n, aodvBcastJitter))
	nd.lastBcast, nd.bcasted = t, true
}

func (x *aodv) recvRERR(t sim.Time, n, from int32, pl []byte) {
	nd := &x.nodes[n]
	k := int(pl[3])
	if len(pl) < 4+8*k {
		return
	}
	x.lost = x.lost[:0]
	for i := 0; i < k; i++ {
		dst := int32(binary.LittleEndian.Uint32(pl[4+8*i:]))
		seq := binary.LittleEndian.Uint32(pl[8+8*i:])
		r := nd.routes[dst]
		if r != nil && r.valid && r.next == from {
			r.valid = false
			r.seq = seq
			r.expire = t.Add(aodvDeletePeriod)
			x.lost = append(x.lost, uint64(uint32(dst))<<32|uint64(seq))
		}
	}
	if len(x.lost) > 0 {
		x.sendRERR(t, n, from)
	}
}
