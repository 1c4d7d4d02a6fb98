package routing

import (
	"encoding/binary"
	"math"
	"slices"

	"skyloop/netsim"
	"skyloop/sim"
)

// AODV as ns-3 3.37 implements it (src/aodv/model: aodv-routing-protocol.cc,
// aodv-rtable.cc, aodv-rqueue.cc, aodv-neighbor.cc, aodv-id-cache.cc) with
// its default attributes. The state machine follows ns-3's step by step,
// including where ns-3 departs from RFC 3561; docs/routing.md lists those
// departures.
const (
	aodvHelloInterval      = sim.Second
	aodvAllowedHelloLoss   = 2
	aodvActiveRouteTimeout = 3 * sim.Second
	aodvNodeTraversalTime  = 40 * sim.Millisecond
	aodvNetDiameter        = 35
	aodvRreqRetries        = 2
	aodvRreqRateLimit      = 10 // RREQs a node originates per second
	aodvRerrRateLimit      = 10 // RERRs a node unicasts per second
	aodvTTLStart           = 1
	aodvTTLIncrement       = 2
	aodvTTLThreshold       = 7
	aodvTimeoutBuffer      = 2
	aodvNetTraversalTime   = 2 * aodvNodeTraversalTime * aodvNetDiameter // 2.8 s
	aodvPathDiscoveryTime  = 2 * aodvNetTraversalTime                    // 5.6 s
	aodvMyRouteTimeout     = 2 * aodvPathDiscoveryTime                   // 11.2 s: 2 max(PathDiscoveryTime, ActiveRouteTimeout)
	aodvDeletePeriod       = 5 * aodvActiveRouteTimeout                  // 15 s: 5 max(ActiveRouteTimeout, HelloInterval)
	aodvHelloLifetime      = aodvAllowedHelloLoss * aodvHelloInterval    // 2 s
	aodvMaxQueueLen        = 64
	aodvMaxQueueTime       = 30 * sim.Second
	aodvJitterMs           = 10  // RREQs, HELLOs and RERRs wait U{0..10} ms
	aodvHelloStartMs       = 100 // the first HELLO timer: U{0..100} ms
	aodvRateWindow         = sim.Second
	aodvRateRetry          = 100 * sim.Microsecond // a rate-limited RREQ tries again this long after the window ends
)

// AODV message types and sizes on the wire: ns-3's 1-byte type header and
// the RFC 3561 message (RREQ 23 bytes, RREP 19, RERR 3 + 8 per
// destination, RREP-ACK 1).
const (
	aodvRREQ    = 1
	aodvRREP    = 2
	aodvRERR    = 3
	aodvRREPACK = 4

	aodvRREQSize    = 24
	aodvRREPSize    = 20
	aodvRREPACKSize = 2
)

// Message flags. The encoding keeps RFC 3561's layout except that the
// byte after the flags (reserved or prefix size on the wire, always 0 in
// ns-3) carries the IP TTL the message was sent with, which ns-3 reads
// from the IP header.
const (
	aodvFlagUnknownSeq = 1 << 0 // RREQ U
	aodvFlagGratuitous = 1 << 1 // RREQ G
	aodvFlagDestOnly   = 1 << 2 // RREQ D
	aodvFlagAck        = 1 << 0 // RREP A
)

// AODV timer kinds.
const (
	aodvTHello   uint8 = iota // HELLO timer
	aodvTRreq                 // RREQ retry timer of one destination (arg: dst | generation<<32)
	aodvTNbPurge              // neighbour table purge (arg: generation)
	aodvTRequest              // a RREQ deferred by the rate limit (arg: dst)
	aodvTCtl                  // a routed control message's jitter ends (arg: its id in aodvNode.later)
)

type aodvFlag uint8

const (
	aodvValid aodvFlag = iota
	aodvInvalid
	aodvInSearch
)

// aodvRoute is one routing table entry (ns-3's RoutingTableEntry).
type aodvRoute struct {
	present  bool
	flag     aodvFlag
	validSeq bool
	seq      uint32
	hops     uint16
	next     int32    // -1: none (an entry created by a route request)
	life     sim.Time // expiry, absolute
	rreqCnt  uint16
	prec     []int32
}

// aodvNbr is a neighbour in ns-3's Neighbors list.
type aodvNbr struct {
	addr   int32
	expire sim.Time
	close  bool
}

// aodvQueued is a data packet waiting for a route (ns-3's RequestQueue).
type aodvQueued struct {
	ctl    []byte // a control message (routedControl), or nil: application packet a
	a      uint32
	dst    int32
	ttl    uint8
	expire sim.Time
}

// aodvLater is a unicast control message that routedControl sends
// after a jitter: the route lookup happens when the jitter ends, as ns-3's
// scheduled SendTo asks RouteOutput then.
type aodvLater struct {
	id uint64
	to int32
	m  []byte
}

type aodvNode struct {
	later     []aodvLater // routed control messages waiting for their jitter to end
	laterID   uint64
	seq       uint32
	rreqID    uint32
	rt        []aodvRoute // by destination
	nextExp   sim.Time    // no VALID or INVALID entry expires before
	nb        []aodvNbr
	nbGen     uint64   // the neighbour purge timer's generation: older ones are cancelled
	reqGen    []uint32 // per destination: the RREQ retry timer's generation
	ids       map[uint64]sim.Time
	queue     []aodvQueued
	lastBcast sim.Time // a RREQ sent or forwarded since the last HELLO timer (0: none)
	rreqWin   int64
	rreqCount int
	rerrWin   int64
	rerrCount int
	draws     uint64
}

type aodv struct {
	b *Backend
	// routedControl sends unicast control messages as ns-3 3.37 does,
	// through AODV's route lookup (unicastCtl). Off: they go to the
	// neighbour at the link layer, as RFC 3561 and real stacks (a
	// connected subnet route) do. Set by Options.AODVControl.
	routedControl bool

	nodes []aodvNode
	msg   [aodvRREQSize]byte
	rerr  []byte
	un    []uint64 // scratch: unreachable destinations, dst<<32 | seq
	prec  []int32  // scratch: precursors
	gone  []int32  // scratch: neighbours lost
}

func newAODV(b *Backend) *aodv { return &aodv{b: b} }

const never = sim.Time(math.MaxInt64)

func (x *aodv) start(t sim.Time) {
	n := x.b.n
	x.nodes = make([]aodvNode, n)
	for i := range x.nodes {
		nd := &x.nodes[i]
		nd.rt = make([]aodvRoute, n)
		nd.reqGen = make([]uint32, n)
		nd.nextExp = never
		nd.ids = map[uint64]sim.Time{}
		nd.rreqWin, nd.rerrWin = -1, -1
		x.b.after(x.jit(int32(i), aodvHelloStartMs), int32(i), aodvTHello, 0)
		nd.nbGen++
		x.b.after(aodvHelloInterval, int32(i), aodvTNbPurge, nd.nbGen)
	}
}

// jit draws ns-3's U{0..ms} whole milliseconds for node n.
func (x *aodv) jit(n int32, ms int64) sim.Duration {
	x.nodes[n].draws++
	return sim.Duration(sim.Hash(x.b.seed, uint64(n), x.nodes[n].draws, 0xa0d7)%uint64(ms+1)) * sim.Millisecond
}

// --- routing table (aodv-rtable.cc) ---

// purge expires routes: a VALID route past its lifetime becomes INVALID
// for DeletePeriod, an INVALID one is deleted; routes in search stay.
func (x *aodv) purge(t sim.Time, nd *aodvNode) {
	if t <= nd.nextExp {
		return
	}
	next := never
	for d := range nd.rt {
		r := &nd.rt[d]
		if !r.present || r.flag == aodvInSearch {
			continue
		}
		if r.life < t {
			if r.flag == aodvInvalid {
				r.present = false
				continue
			}
			r.flag, r.rreqCnt, r.life = aodvInvalid, 0, t.Add(aodvDeletePeriod)
		}
		next = min(next, r.life)
	}
	nd.nextExp = next
}

// touch notes r's new lifetime or flag for purge, and resets its RREQ
// count unless it is in search (ns-3's RoutingTable::Update).
func (nd *aodvNode) touch(r *aodvRoute) {
	if r.flag != aodvInSearch {
		r.rreqCnt = 0
		if r.life < nd.nextExp {
			nd.nextExp = r.life
		}
	}
}

// lookup returns n's entry for dst (any flag), or nil.
func (x *aodv) lookup(t sim.Time, n, dst int32) *aodvRoute {
	nd := &x.nodes[n]
	x.purge(t, nd)
	if dst < 0 || int(dst) >= len(nd.rt) || !nd.rt[dst].present {
		return nil
	}
	return &nd.rt[dst]
}

// lookupValid returns n's VALID entry for dst, or nil.
func (x *aodv) lookupValid(t sim.Time, n, dst int32) *aodvRoute {
	if r := x.lookup(t, n, dst); r != nil && r.flag == aodvValid {
		return r
	}
	return nil
}

// set replaces n's entry for dst (ns-3's AddRoute of a new entry, or
// Update with a new entry): flag VALID, no precursors.
func (x *aodv) set(t sim.Time, n, dst int32, validSeq bool, seq uint32, hops uint16, next int32, life sim.Duration) *aodvRoute {
	nd := &x.nodes[n]
	r := &nd.rt[dst]
	r.present, r.flag, r.validSeq, r.seq, r.hops, r.next, r.life = true, aodvValid, validSeq, seq, hops, next, t.Add(life)
	r.prec = r.prec[:0]
	nd.touch(r)
	return r
}

func (x *aodv) del(n, dst int32) {
	r := &x.nodes[n].rt[dst]
	r.present = false
	r.prec = r.prec[:0]
}

// updateLife extends a VALID route's lifetime to at least t+d (ns-3's
// UpdateRouteLifeTime).
func (x *aodv) updateLife(t sim.Time, n, dst int32, d sim.Duration) {
	if r := x.lookupValid(t, n, dst); r != nil {
		r.life = max(r.life, t.Add(d))
		x.nodes[n].touch(r)
	}
}

func (x *aodv) invalidate(t sim.Time, nd *aodvNode, r *aodvRoute) {
	if r.flag != aodvValid {
		return
	}
	r.flag, r.rreqCnt, r.life = aodvInvalid, 0, t.Add(aodvDeletePeriod)
	nd.touch(r)
}

func addPrecursor(r *aodvRoute, p int32) {
	if r != nil && !slices.Contains(r.prec, p) {
		r.prec = append(r.prec, p)
	}
}

// --- neighbours (aodv-neighbor.cc) ---

func (x *aodv) nbUpdate(t sim.Time, n, addr int32, d sim.Duration) {
	if addr < 0 {
		return
	}
	nd := &x.nodes[n]
	for i := range nd.nb {
		if nd.nb[i].addr == addr {
			nd.nb[i].expire = max(nd.nb[i].expire, t.Add(d))
			return
		}
	}
	nd.nb = append(nd.nb, aodvNbr{addr: addr, expire: t.Add(d)})
	x.nbPurge(t, n)
}

// nbPurge drops neighbours past their expiry or whose link failed, each
// a broken link, and restarts the purge timer (ns-3's Neighbors::Purge:
// with no neighbour at all the timer stops).
func (x *aodv) nbPurge(t sim.Time, n int32) {
	nd := &x.nodes[n]
	if len(nd.nb) == 0 {
		return
	}
	gone := x.gone[:0]
	k := 0
	for _, e := range nd.nb {
		if e.expire < t || e.close {
			gone = append(gone, e.addr)
			continue
		}
		nd.nb[k] = e
		k++
	}
	nd.nb = nd.nb[:k]
	nd.nbGen++
	x.b.after(aodvHelloInterval, n, aodvTNbPurge, nd.nbGen)
	x.gone = gone
	for _, a := range gone {
		x.linkBroken(t, n, a)
	}
	x.gone = gone[:0]
}

// linkFailed: the MAC gave up on a unicast frame to next (retries, queue
// lifetime or a full queue: ns-3's DroppedMpdu). A neighbour at that
// address is closed.
func (x *aodv) linkFailed(t sim.Time, n, next int32) {
	nd := &x.nodes[n]
	for i := range nd.nb {
		if nd.nb[i].addr == next {
			nd.nb[i].close = true
		}
	}
	x.nbPurge(t, n)
}

// --- request queue (aodv-rqueue.cc) ---

func (x *aodv) qPurge(t sim.Time, n int32) {
	nd := &x.nodes[n]
	k := 0
	for _, e := range nd.queue {
		if e.expire < t {
			if e.ctl == nil {
				x.b.dropApp(e.a, netsim.DropQueue)
				x.b.unrefApp(e.a)
			}
			continue
		}
		nd.queue[k] = e
		k++
	}
	nd.queue = nd.queue[:k]
}

// makeRoom purges node n's request queue of expired packets and, when it
// is still full, drops the most aged packet to make room; it returns the
// node.
func (x *aodv) makeRoom(t sim.Time, n int32) *aodvNode {
	x.qPurge(t, n)
	nd := &x.nodes[n]
	if len(nd.queue) == aodvMaxQueueLen {
		e := nd.queue[0]
		copy(nd.queue, nd.queue[1:])
		nd.queue = nd.queue[:len(nd.queue)-1]
		if e.ctl == nil {
			x.b.dropApp(e.a, netsim.DropQueue)
			x.b.unrefApp(e.a)
		}
	}
	return nd
}

func (x *aodv) enqueue(t sim.Time, n int32, a uint32, dst int32, ttl uint8) {
	nd := x.makeRoom(t, n)
	x.b.refApp(a)
	nd.queue = append(nd.queue, aodvQueued{a: a, dst: dst, ttl: ttl, expire: t.Add(aodvMaxQueueTime)})
}

// sendFromQueue forwards every packet waiting for dst to next.
func (x *aodv) sendFromQueue(t sim.Time, n, dst, next int32) {
	x.qPurge(t, n)
	if next < 0 {
		return
	}
	nd := &x.nodes[n]
	k := 0
	for i := 0; i < len(nd.queue); i++ {
		e := nd.queue[i]
		if e.dst != dst {
			nd.queue[k] = e
			k++
			continue
		}
		if e.ctl != nil {
			x.b.sendControl(n, dst, netsim.KindAODV, e.ctl, 0)
			continue
		}
		x.b.forward(n, next, e.a, e.ttl)
		x.b.unrefApp(e.a)
	}
	nd.queue = nd.queue[:k]
}

// dropQueue drops every packet waiting for dst: its discovery failed.
func (x *aodv) dropQueue(t sim.Time, n, dst int32) {
	x.qPurge(t, n)
	nd := &x.nodes[n]
	k := 0
	for _, e := range nd.queue {
		if e.dst != dst {
			nd.queue[k] = e
			k++
			continue
		}
		if e.ctl == nil {
			x.b.dropApp(e.a, netsim.DropNoRoute)
			x.b.unrefApp(e.a)
		}
	}
	nd.queue = nd.queue[:k]
}

// unicastCtl sends control message m to neighbour to now. With
// routedControl, as ns-3 3.37 does, the message goes through AODV's own
// route lookup (ns-3's UDP socket asks RouteOutput): without a valid
// route to the neighbour, it waits in the request queue while a RREQ
// looks for one. (ns-3 would then send it along that route, perhaps over several
// hops; here it goes to the neighbour directly once a route exists.)
func (x *aodv) unicastCtl(t sim.Time, n, to int32, m []byte) {
	if !x.routedControl {
		x.b.sendControl(n, to, netsim.KindAODV, m, 0)
		return
	}
	if r := x.lookupValid(t, n, to); r != nil {
		next := r.next
		x.updateLife(t, n, to, aodvActiveRouteTimeout)
		x.updateLife(t, n, next, aodvActiveRouteTimeout)
		x.b.sendControl(n, to, netsim.KindAODV, m, 0)
		return
	}
	nd := x.makeRoom(t, n)
	nd.queue = append(nd.queue, aodvQueued{ctl: append([]byte(nil), m...), dst: to, expire: t.Add(aodvMaxQueueTime)})
	if r := x.lookup(t, n, to); r == nil || r.flag != aodvInSearch {
		x.sendRequest(t, n, to)
	}
}

// unicastCtlJittered is unicastCtl for a message ns-3 sends after a
// jitter d (a unicast RERR): even a jitter of 0 goes through the calendar
// (sendJittered), and with routedControl the route is looked up when the
// jitter ends, as ns-3's scheduled SendTo asks RouteOutput then, when the
// route may have gone.
func (x *aodv) unicastCtlJittered(n, to int32, m []byte, d sim.Duration) {
	if !x.routedControl {
		x.b.sendJittered(n, to, netsim.KindAODV, m, d)
		return
	}
	nd := &x.nodes[n]
	nd.laterID++
	nd.later = append(nd.later, aodvLater{id: nd.laterID, to: to, m: append([]byte(nil), m...)})
	x.b.after(d, n, aodvTCtl, nd.laterID)
}

// --- data ---

func (x *aodv) unicast(t sim.Time, n int32, a uint32, ttl uint8, origin bool) {
	b := x.b
	p := b.apps[a].p
	dst, src := int32(p.Dst), int32(p.Src)
	if origin {
		// RouteOutput: a valid route, or the packet waits for one.
		if r := x.lookupValid(t, n, dst); r != nil {
			next := r.next
			x.updateLife(t, n, dst, aodvActiveRouteTimeout)
			x.updateLife(t, n, next, aodvActiveRouteTimeout)
			b.forward(n, next, a, ttl)
			return
		}
		x.enqueue(t, n, a, dst, ttl)
		if r := x.lookup(t, n, dst); r == nil || r.flag != aodvInSearch {
			x.sendRequest(t, n, dst)
		}
		return
	}
	if n == src {
		return // its own packet came back: dropped
	}
	// Forwarding.
	r := x.lookup(t, n, dst)
	if r != nil && r.flag == aodvValid {
		next := r.next
		x.updateLife(t, n, src, aodvActiveRouteTimeout)
		x.updateLife(t, n, dst, aodvActiveRouteTimeout)
		x.updateLife(t, n, next, aodvActiveRouteTimeout)
		prev := int32(-1)
		if ro := x.lookup(t, n, src); ro != nil {
			prev = ro.next
			x.updateLife(t, n, prev, aodvActiveRouteTimeout)
		}
		x.nbUpdate(t, n, next, aodvActiveRouteTimeout)
		x.nbUpdate(t, n, prev, aodvActiveRouteTimeout)
		b.forward(n, next, a, ttl)
		return
	}
	// No route: the packet is dropped and the origin told.
	seq := uint32(0)
	if r != nil && r.validSeq {
		seq = r.seq
	}
	x.rerrNoRoute(t, n, dst, seq, src)
	b.dropApp(a, netsim.DropNoRoute)
}

// deliver: a data packet reached its destination n.
func (x *aodv) deliver(t sim.Time, n int32, a uint32) {
	src := int32(x.b.apps[a].p.Src)
	x.updateLife(t, n, src, aodvActiveRouteTimeout)
	if r := x.lookupValid(t, n, src); r != nil {
		next := r.next
		x.updateLife(t, n, next, aodvActiveRouteTimeout)
		x.nbUpdate(t, n, next, aodvActiveRouteTimeout)
	}
}

// broadcast: ns-3's AODV forwards broadcast data with a TTL above 1
// (EnableBroadcast), each node once.
func (x *aodv) broadcast(t sim.Time, n int32, a uint32, ttl uint8, origin bool) {
	if !origin {
		x.updateLife(t, n, int32(x.b.apps[a].p.Src), aodvActiveRouteTimeout)
	}
	x.b.forward(n, -1, a, ttl)
}

// --- timers ---

func (x *aodv) timer(t sim.Time, n int32, kind uint8, arg uint64) {
	nd := &x.nodes[n]
	switch kind {
	case aodvTHello:
		x.helloTimer(t, n)
	case aodvTRreq:
		dst := int32(uint32(arg))
		if uint32(arg>>32) == nd.reqGen[dst] {
			x.rreqTimer(t, n, dst)
		}
	case aodvTNbPurge:
		if arg == nd.nbGen {
			x.nbPurge(t, n)
			for k, e := range nd.ids {
				if e < t {
					delete(nd.ids, k)
				}
			}
		}
	case aodvTRequest:
		x.sendRequest(t, n, int32(arg))
	case aodvTCtl:
		for i, l := range nd.later {
			if l.id == arg {
				nd.later = append(nd.later[:i], nd.later[i+1:]...)
				x.unicastCtl(t, n, l.to, l.m)
				break
			}
		}
	}
}

// helloTimer sends a HELLO unless the node forwarded or sent a RREQ since
// the last timer; the next timer comes a HelloInterval after that RREQ.
func (x *aodv) helloTimer(t sim.Time, n int32) {
	nd := &x.nodes[n]
	var offset sim.Duration
	if nd.lastBcast > 0 {
		offset = t.Sub(nd.lastBcast)
	} else {
		m := x.rrep(0, n, nd.seq, n, aodvHelloLifetime, 1)
		x.b.sendJittered(n, -1, netsim.KindAODV, m, x.jit(n, aodvJitterMs))
	}
	x.b.after(max(0, aodvHelloInterval-offset), n, aodvTHello, 0)
	nd.lastBcast = 0
}

// rate reports whether the counter of window win may go on, resetting it
// at each new window (ns-3's rate limit timers fire every second).
func rate(t sim.Time, win *int64, count *int, limit int) bool {
	if w := int64(t) / int64(aodvRateWindow); w != *win {
		*win, *count = w, 0
	}
	return *count < limit
}

// sendRequest starts or repeats the discovery of dst: the expanding ring
// search's next TTL.
func (x *aodv) sendRequest(t sim.Time, n, dst int32) {
	nd := &x.nodes[n]
	if !rate(t, &nd.rreqWin, &nd.rreqCount, aodvRreqRateLimit) {
		left := sim.Duration((nd.rreqWin+1)*int64(aodvRateWindow)) - sim.Duration(t)
		x.b.after(left+aodvRateRetry, n, aodvTRequest, uint64(uint32(dst)))
		return
	}
	nd.rreqCount++
	var flags uint8
	var dseq uint32
	ttl := uint16(aodvTTLStart)
	if r := x.lookup(t, n, dst); r != nil {
		if r.flag != aodvInSearch {
			ttl = min(r.hops+aodvTTLIncrement, aodvNetDiameter)
		} else {
			ttl = r.hops + aodvTTLIncrement
			if ttl > aodvTTLThreshold {
				ttl = aodvNetDiameter
			}
		}
		if ttl == aodvNetDiameter {
			r.rreqCnt++
		}
		if r.validSeq {
			dseq = r.seq
		} else {
			flags |= aodvFlagUnknownSeq
		}
		r.hops, r.flag, r.life = ttl, aodvInSearch, t.Add(aodvPathDiscoveryTime)
	} else {
		flags |= aodvFlagUnknownSeq
		r := &nd.rt[dst]
		*r = aodvRoute{present: true, flag: aodvInSearch, hops: ttl, next: -1, life: t.Add(aodvPathDiscoveryTime), prec: r.prec[:0]}
		if ttl == aodvNetDiameter {
			r.rreqCnt = 1
		}
	}
	flags |= aodvFlagGratuitous
	nd.seq++
	nd.rreqID++
	nd.ids[uint64(uint32(n))<<32|uint64(nd.rreqID)] = t.Add(aodvPathDiscoveryTime)
	m := x.msg[:aodvRREQSize]
	clear(m)
	m[0], m[1], m[2], m[3] = aodvRREQ, flags, uint8(ttl), 0
	binary.LittleEndian.PutUint32(m[4:], nd.rreqID)
	binary.LittleEndian.PutUint32(m[8:], uint32(dst))
	binary.LittleEndian.PutUint32(m[12:], dseq)
	binary.LittleEndian.PutUint32(m[16:], uint32(n))
	binary.LittleEndian.PutUint32(m[20:], nd.seq)
	nd.lastBcast = t
	x.b.sendJittered(n, -1, netsim.KindAODV, m, x.jit(n, aodvJitterMs))
	x.scheduleRetry(t, n, dst)
}

func (x *aodv) scheduleRetry(t sim.Time, n, dst int32) {
	nd := &x.nodes[n]
	nd.reqGen[dst]++
	r := x.lookup(t, n, dst)
	var wait sim.Duration
	if r.hops < aodvNetDiameter {
		wait = 2 * aodvNodeTraversalTime * sim.Duration(r.hops+aodvTimeoutBuffer)
	} else {
		wait = aodvNetTraversalTime * sim.Duration(int64(1)<<max(0, int(r.rreqCnt)-1))
	}
	x.b.after(wait, n, aodvTRreq, uint64(uint32(dst))|uint64(nd.reqGen[dst])<<32)
}

// rreqTimer: no answer to a RREQ in time.
func (x *aodv) rreqTimer(t sim.Time, n, dst int32) {
	r := x.lookup(t, n, dst)
	switch {
	case r != nil && r.flag == aodvValid:
		x.sendFromQueue(t, n, dst, r.next)
	case r != nil && r.rreqCnt == aodvRreqRetries:
		// Discovery failed: what waits for dst is dropped.
		x.del(n, dst)
		x.dropQueue(t, n, dst)
	case r != nil && r.flag == aodvInSearch:
		x.sendRequest(t, n, dst)
	default:
		if r != nil {
			x.del(n, dst)
		}
		x.dropQueue(t, n, dst)
	}
}

// --- control messages ---

func (x *aodv) control(t sim.Time, n int32, from int32, pl []byte) {
	if len(pl) < 2 {
		return
	}
	x.routeToNeighbour(t, n, from)
	switch pl[0] {
	case aodvRREQ:
		if len(pl) >= aodvRREQSize {
			x.recvRREQ(t, n, from, pl)
		}
	case aodvRREP:
		if len(pl) >= aodvRREPSize {
			x.recvRREP(t, n, from, pl)
		}
	case aodvRERR:
		if len(pl) >= 4 {
			x.recvRERR(t, n, from, pl)
		}
	case aodvRREPACK:
		if r := x.lookup(t, n, from); r != nil {
			r.flag = aodvValid
			x.nodes[n].touch(r)
		}
	}
}

// routeToNeighbour: every AODV message gives a one-hop route to its
// sender (ns-3's UpdateRouteToNeighbor).
func (x *aodv) routeToNeighbour(t sim.Time, n, s int32) {
	r := x.lookup(t, n, s)
	switch {
	case r == nil:
		x.set(t, n, s, false, 0, 1, s, aodvActiveRouteTimeout)
	case r.validSeq && r.hops == 1:
		r.life = max(r.life, t.Add(aodvActiveRouteTimeout))
		x.nodes[n].touch(r)
	default:
		life := max(r.life.Sub(t), aodvActiveRouteTimeout)
		x.set(t, n, s, false, 0, 1, s, life)
	}
}

func (x *aodv) recvRREQ(t sim.Time, n, src int32, pl []byte) {
	nd := &x.nodes[n]
	flags, ttl := pl[1], pl[2]
	hop := uint16(pl[3]) + 1
	id := binary.LittleEndian.Uint32(pl[4:])
	dst := int32(binary.LittleEndian.Uint32(pl[8:]))
	dseq := binary.LittleEndian.Uint32(pl[12:])
	org := int32(binary.LittleEndian.Uint32(pl[16:]))
	oseq := binary.LittleEndian.Uint32(pl[20:])
	if org < 0 || int(org) >= x.b.n || dst < 0 || int(dst) >= x.b.n {
		return
	}
	// (ns-3 ignores RREQs from blacklisted neighbours, but nothing
	// blacklists: its RREP-ACK timer is never started.)
	key := uint64(uint32(org))<<32 | uint64(id)
	if e, ok := nd.ids[key]; ok && e >= t {
		return
	}
	nd.ids[key] = t.Add(aodvPathDiscoveryTime)
	// The reverse route: whatever the first copy of the RREQ says (the
	// flag of an existing entry stays as it was).
	life := 2*aodvNetTraversalTime - 2*sim.Duration(hop)*aodvNodeTraversalTime
	if r := x.lookup(t, n, org); r == nil {
		x.set(t, n, org, true, oseq, hop, src, life)
	} else {
		if !r.validSeq || int32(oseq-r.seq) > 0 {
			r.seq = oseq
		}
		r.validSeq, r.next, r.hops = true, src, hop
		r.life = max(r.life, t.Add(life))
		nd.touch(r)
	}
	if r := x.lookup(t, n, src); r == nil {
		x.set(t, n, src, false, oseq, 1, src, aodvActiveRouteTimeout)
	} else {
		r.life, r.validSeq, r.seq, r.flag, r.hops, r.next = t.Add(aodvActiveRouteTimeout), false, oseq, aodvValid, 1, src
		nd.touch(r)
	}
	x.nbUpdate(t, n, src, aodvHelloLifetime)
	if dst == n {
		ro := x.lookup(t, n, org)
		if flags&aodvFlagUnknownSeq == 0 && dseq == nd.seq+1 {
			nd.seq++
		}
		m := x.rrep(0, n, nd.seq, org, aodvMyRouteTimeout, uint8(min(ro.hops, 255)))
		x.unicastCtl(t, n, ro.next, m)
		return
	}
	if r := x.lookup(t, n, dst); r != nil {
		if r.next == src {
			return // answering would make a loop
		}
		if (flags&aodvFlagUnknownSeq != 0 || int32(r.seq-dseq) >= 0) && r.validSeq {
			if flags&aodvFlagDestOnly == 0 && r.flag == aodvValid {
				x.replyAsIntermediate(t, n, dst, org, flags&aodvFlagGratuitous != 0)
				return
			}
			dseq = r.seq
			flags &^= aodvFlagUnknownSeq
		}
	}
	if ttl < 2 {
		return
	}
	m := x.msg[:aodvRREQSize]
	copy(m, pl[:aodvRREQSize])
	m[1], m[2], m[3] = flags, ttl-1, uint8(min(hop, 255))
	binary.LittleEndian.PutUint32(m[12:], dseq)
	nd.lastBcast = t
	x.b.sendJittered(n, -1, netsim.KindAODV, m, x.jit(n, aodvJitterMs))
}

// rrep encodes a RREP (hello: dst = origin = the sender).
func (x *aodv) rrep(hops uint16, dst int32, dseq uint32, org int32, life sim.Duration, ttl uint8) []byte {
	m := x.msg[:aodvRREPSize]
	clear(m)
	m[0], m[2], m[3] = aodvRREP, ttl, uint8(min(hops, 255))
	binary.LittleEndian.PutUint32(m[4:], uint32(dst))
	binary.LittleEndian.PutUint32(m[8:], dseq)
	binary.LittleEndian.PutUint32(m[12:], uint32(org))
	binary.LittleEndian.PutUint32(m[16:], uint32(max(0, life/sim.Millisecond)))
	return m
}

// replyAsIntermediate answers a RREQ for dst from org with n's own route,
// and (G flag) tells dst the way back to org with a gratuitous RREP.
func (x *aodv) replyAsIntermediate(t sim.Time, n, dst, org int32, grat bool) {
	toDst, toOrg := &x.nodes[n].rt[dst], &x.nodes[n].rt[org]
	m := x.rrep(toDst.hops, dst, toDst.seq, org, toDst.life.Sub(t), uint8(min(toOrg.hops, 255)))
	if toDst.hops == 1 {
		// The requester's side acknowledges (ns-3 arms no timer for the
		// acknowledgement, so a missing one has no consequence).
		m[1] |= aodvFlagAck
	}
	addPrecursor(toDst, toOrg.next)
	addPrecursor(toOrg, toDst.next)
	x.unicastCtl(t, n, toOrg.next, m)
	if grat {
		g := x.rrep(toOrg.hops, org, toOrg.seq, dst, toOrg.life.Sub(t), uint8(min(toDst.hops, 255)))
		x.unicastCtl(t, n, toDst.next, g)
	}
}

func (x *aodv) recvRREP(t sim.Time, n, from int32, pl []byte) {
	flags, ttl := pl[1], pl[2]
	hop := uint16(pl[3]) + 1
	dst := int32(binary.LittleEndian.Uint32(pl[4:]))
	dseq := binary.LittleEndian.Uint32(pl[8:])
	org := int32(binary.LittleEndian.Uint32(pl[12:]))
	life := sim.Duration(binary.LittleEndian.Uint32(pl[16:])) * sim.Millisecond
	if dst < 0 || int(dst) >= x.b.n || org < 0 || int(org) >= x.b.n {
		return
	}
	nd := &x.nodes[n]
	if dst == org {
		// A HELLO.
		if r := x.lookup(t, n, dst); r == nil {
			x.set(t, n, dst, true, dseq, 1, dst, life)
		} else {
			r.life = max(r.life, t.Add(aodvHelloLifetime))
			r.seq, r.validSeq, r.flag, r.hops, r.next = dseq, true, aodvValid, 1, dst
			nd.touch(r)
		}
		x.nbUpdate(t, n, dst, aodvHelloLifetime)
		return
	}
	inSearch := false
	if r := x.lookup(t, n, dst); r == nil {
		x.set(t, n, dst, true, dseq, hop, from, life)
	} else {
		inSearch = r.flag == aodvInSearch
		// ns-3 takes a reply only for an unknown or older sequence
		// number, or the same one and a broken route or fewer hops.
		if !r.validSeq || int32(dseq-r.seq) > 0 || (dseq == r.seq && (r.flag != aodvValid || hop < r.hops)) {
			x.set(t, n, dst, true, dseq, hop, from, life)
		}
	}
	if flags&aodvFlagAck != 0 {
		a := x.msg[:aodvRREPACKSize]
		a[0], a[1] = aodvRREPACK, 0
		x.unicastCtl(t, n, from, a)
		flags &^= aodvFlagAck
	}
	if org == n {
		if inSearch {
			x.set(t, n, dst, true, dseq, hop, from, life)
			nd.reqGen[dst]++
		}
		x.sendFromQueue(t, n, dst, nd.rt[dst].next)
		return
	}
	ro := x.lookup(t, n, org)
	if ro == nil || ro.flag == aodvInSearch {
		return
	}
	ro.life = max(ro.life, t.Add(aodvActiveRouteTimeout))
	nd.touch(ro)
	if rd := x.lookupValid(t, n, dst); rd != nil {
		addPrecursor(rd, ro.next)
		addPrecursor(x.lookup(t, n, rd.next), ro.next)
		addPrecursor(ro, rd.next)
		addPrecursor(x.lookup(t, n, ro.next), rd.next)
	}
	if ttl < 2 {
		return
	}
	m := x.msg[:aodvRREPSize]
	copy(m, pl[:aodvRREPSize])
	m[1], m[2], m[3] = flags, ttl-1, uint8(min(hop, 255))
	x.unicastCtl(t, n, ro.next, m)
}

// rerrMsg encodes a RERR for the destinations in x.un (sorted).
func (x *aodv) rerrMsg() []byte {
	slices.Sort(x.un)
	k := min(len(x.un), 255)
	m := append(x.rerr[:0], aodvRERR, 0, 1, uint8(k))
	for _, u := range x.un[:k] {
		m = binary.LittleEndian.AppendUint32(m, uint32(u>>32))
		m = binary.LittleEndian.AppendUint32(m, uint32(u))
	}
	x.rerr = m
	return m
}

// addUnreachable adds dst to x.un unless it is there.
func (x *aodv) addUnreachable(dst int32, seq uint32) {
	for _, u := range x.un {
		if int32(u>>32) == dst {
			return
		}
	}
	x.un = append(x.un, uint64(uint32(dst))<<32|uint64(seq))
}

// gatherPrecursors adds r's precursors to x.prec.
func (x *aodv) gatherPrecursors(r *aodvRoute) {
	for _, p := range r.prec {
		if !slices.Contains(x.prec, p) {
			x.prec = append(x.prec, p)
		}
	}
}

// linkBroken: the link to neighbour next broke (ns-3's
// SendRerrWhenBreaksLinkToNextHop): every route through it is invalid,
// and the precursors are told.
func (x *aodv) linkBroken(t sim.Time, n, next int32) {
	nd := &x.nodes[n]
	rn := x.lookup(t, n, next)
	if rn == nil {
		return
	}
	x.prec = append(x.prec[:0], rn.prec...)
	x.un = x.un[:0]
	x.addUnreachable(next, rn.seq)
	for d := range nd.rt {
		if r := &nd.rt[d]; r.present && r.next == next {
			x.addUnreachable(int32(d), r.seq)
			x.gatherPrecursors(r)
		}
	}
	x.sendRERR(t, n, x.rerrMsg())
	for _, u := range x.un {
		x.invalidate(t, nd, &nd.rt[int32(u>>32)])
	}
}

// rerrNoRoute: a relay has no route for a data packet; it tells the origin
// (ns-3's SendRerrWhenNoRouteToForward, immediately, without jitter).
func (x *aodv) rerrNoRoute(t sim.Time, n, dst int32, seq uint32, org int32) {
	nd := &x.nodes[n]
	if !rate(t, &nd.rerrWin, &nd.rerrCount, aodvRerrRateLimit) {
		return
	}
	x.un = append(x.un[:0], uint64(uint32(dst))<<32|uint64(seq))
	m := x.rerrMsg()
	if r := x.lookupValid(t, n, org); r != nil {
		x.unicastCtl(t, n, r.next, m)
	} else {
		x.b.sendControl(n, -1, netsim.KindAODV, m, 0)
	}
}

// sendRERR sends RERR m to the precursors in x.prec: unicast to a single
// one (counted by the rate limit), broadcast to several.
func (x *aodv) sendRERR(t sim.Time, n int32, m []byte) {
	nd := &x.nodes[n]
	if len(x.prec) == 0 || !rate(t, &nd.rerrWin, &nd.rerrCount, aodvRerrRateLimit) {
		return
	}
	if len(x.prec) == 1 {
		if x.lookupValid(t, n, x.prec[0]) != nil {
			x.unicastCtlJittered(n, x.prec[0], m, x.jit(n, aodvJitterMs))
			nd.rerrCount++
		}
		return
	}
	for _, p := range x.prec {
		if x.lookupValid(t, n, p) != nil {
			x.b.sendJittered(n, -1, netsim.KindAODV, m, x.jit(n, aodvJitterMs))
			return
		}
	}
}

func (x *aodv) recvRERR(t sim.Time, n, from int32, pl []byte) {
	nd := &x.nodes[n]
	k := int(pl[3])
	if len(pl) < 4+8*k {
		return
	}
	x.purge(t, nd)
	x.un = x.un[:0]
	x.prec = x.prec[:0]
	for i := 0; i < k; i++ {
		dst := int32(binary.LittleEndian.Uint32(pl[4+8*i:]))
		seq := binary.LittleEndian.Uint32(pl[8+8*i:])
		if dst < 0 || int(dst) >= x.b.n {
			continue
		}
		if r := &nd.rt[dst]; r.present && r.next == from {
			x.addUnreachable(dst, seq)
		}
	}
	if len(x.un) == 0 {
		return
	}
	m := x.rerrMsg()
	for _, u := range x.un {
		x.gatherPrecursors(&nd.rt[int32(u>>32)])
	}
	x.sendRERR(t, n, m)
	for _, u := range x.un {
		x.invalidate(t, nd, &nd.rt[int32(u>>32)])
	}
}
