// Package metrics computes a run's network figures exactly, whether or not
// per-packet files are written: packet delivery ratio with drop reasons,
// latency (mean, p50, p95, max), age of information (the exact time-average
// of the sawtooth, per receiver/source pair), and overhead at the payload and
// IP layers, per traffic kind and in total.
package metrics

import (
	"cmp"
	"math"
	"math/bits"
	"slices"
	"unsafe"

	"skyloop/internal/prefetch"
	"skyloop/netsim"
	"skyloop/sim"
)

// Collector accumulates network metrics. It is a netsim.Tracer (for tx, rx
// and drop counts) and is told about every consumed delivery with Delivered
// (for latency and age of information).
type Collector struct {
	n     int
	kinds []kindAcc
	aoi   aoiTable
}

type kindAcc struct {
	used     bool
	tx       uint64
	expected uint64
	rx       uint64
	drops    [netsim.NumDropReasons]uint64
	payload  uint64
	wire     uint64
	lat      latStore
}

// New returns a collector for a run with n network nodes.
func New(n int) *Collector {
	c := &Collector{n: n, kinds: make([]kindAcc, netsim.NumKinds())}
	c.aoi.init(n)
	return c
}

func (c *Collector) kind(k netsim.Kind) *kindAcc {
	for int(k) >= len(c.kinds) {
		c.kinds = append(c.kinds, kindAcc{})
	}
	a := &c.kinds[k]
	a.used = true
	return a
}

// Trace counts a trace event.
func (c *Collector) Trace(e *netsim.TraceEvent) {
	a := c.kind(e.P.Kind)
	switch e.Type {
	case netsim.EvTx:
		if e.P.Kind == netsim.KindState && int(e.P.Src) < len(c.aoi.senders) && e.P.Src >= 0 {
			c.aoi.senders[e.P.Src] = true
		}
		a.tx++
		a.payload += uint64(e.P.Size)
		a.wire += uint64(e.P.WireBytes())
		if e.P.Dst == netsim.Broadcast {
			a.expected += uint64(c.n - 1)
		} else {
			a.expected++
		}
	case netsim.EvRx:
		a.rx++
	case netsim.EvDrop:
		a.drops[e.Reason]++
	}
}

// TraceReceptions counts n reception events like e
// (netsim.ReceptionCounter).
func (c *Collector) TraceReceptions(e *netsim.TraceEvent, n int) {
	if n > 0 {
		c.kind(e.P.Kind).rx += uint64(n)
	}
}

// TraceDrops counts n drop events like e (netsim.DropCounter).
func (c *Collector) TraceDrops(e *netsim.TraceEvent, n int) {
	if n > 0 {
		c.kind(e.P.Kind).drops[e.Reason] += uint64(n)
	}
}

// Delivered records a delivery consumed at tick time tick.
func (c *Collector) Delivered(d *netsim.Delivery, tick sim.Time) {
	p := d.P
	c.kind(p.Kind).lat.add(int64(d.At - p.TSend))
	if p.Kind == netsim.KindState {
		c.aoi.update(int(d.Dst), int(p.Src), tick, p.TGen)
	}
}

// Upcoming hints that Delivered will soon be called with d: in a large
// swarm the age-of-information entry of d's pair is cold (one of millions,
// at a hashed place), so the engine names it a few deliveries ahead and
// the processor fetches it meanwhile. It changes nothing.
func (c *Collector) Upcoming(d *netsim.Delivery) {
	if d.P.Kind == netsim.KindState {
		c.aoi.prefetch(int(d.Dst), int(d.P.Src))
	}
}

// Latency summarises one-way latencies (arrival - send) in nanoseconds.
type Latency struct {
	Count uint64  `json:"count"`
	Mean  float64 `json:"mean_ns"`
	P50   int64   `json:"p50_ns"`
	P95   int64   `json:"p95_ns"`
	Max   int64   `json:"max_ns"`
}

// Overhead is offered traffic per second of simulated time.
type Overhead struct {
	PacketsPerS      float64 `json:"packets_per_s"`
	PayloadBytesPerS float64 `json:"payload_bytes_per_s"`
	IPBytesPerS      float64 `json:"ip_bytes_per_s"`
}

// KindSummary holds the figures of one traffic kind (or of all traffic).
type KindSummary struct {
	Tx       uint64            `json:"tx"`
	Expected uint64            `json:"expected_rx"`
	Rx       uint64            `json:"rx"`
	PDR      float64           `json:"pdr"`
	Drops    map[string]uint64 `json:"drops"`
	Latency  Latency           `json:"latency"`
	Overhead Overhead          `json:"overhead"`
}

// AoI summarises age of information over receiver/source pairs.
type AoI struct {
	Pairs      int     `json:"pairs"`       // pairs with at least one update
	PairsNever int     `json:"pairs_never"` // pairs (receiver, state sender) that never got one
	MeanS      float64 `json:"mean_s"`      // mean over pairs of each pair's time-average age
	MinS       float64 `json:"min_s"`
	MaxS       float64 `json:"max_s"`
}

// Summary is the network part of summary.json.
type Summary struct {
	ByKind map[string]KindSummary `json:"by_kind"`
	Total  KindSummary            `json:"total"`
	AoI    *AoI                   `json:"aoi_state,omitempty"`
}

// Summary computes the figures for a run that ended at end.
func (c *Collector) Summary(end sim.Time) Summary {
	s := Summary{ByKind: map[string]KindSummary{}}
	var tot kindAcc
	secs := end.Seconds()
	var stores []*latStore
	for k := range c.kinds {
		a := &c.kinds[k]
		if !a.used {
			continue
		}
		s.ByKind[netsim.Kind(k).String()] = a.summary(secs, latencyOver(&a.lat))
		stores = append(stores, &a.lat)
		tot.tx += a.tx
		tot.expected += a.expected
		tot.rx += a.rx
		tot.payload += a.payload
		tot.wire += a.wire
		for r := range a.drops {
			tot.drops[r] += a.drops[r]
		}
	}
	var totLat Latency
	var only *latStore
	nonEmpty := 0
	for _, st := range stores {
		if st.n > 0 {
			nonEmpty++
			only = st
		}
	}
	if nonEmpty == 1 {
		for _, ks := range s.ByKind {
			if ks.Latency.Count == uint64(only.n) {
				totLat = ks.Latency // the only kind with latencies: same values
			}
		}
	} else {
		totLat = latencyOver(stores...)
	}
	s.Total = tot.summary(secs, totLat)
	if c.aoi.any {
		s.AoI = c.aoi.summary(end)
	}
	return s
}

func (a *kindAcc) summary(secs float64, lat Latency) KindSummary {
	ks := KindSummary{Tx: a.tx, Expected: a.expected, Rx: a.rx, Drops: map[string]uint64{}}
	if a.expected > 0 {
		ks.PDR = float64(a.rx) / float64(a.expected)
	}
	for r, n := range a.drops {
		if n > 0 {
			ks.Drops[netsim.DropReason(r).String()] = n
		}
	}
	ks.Latency = lat
	if secs > 0 {
		ks.Overhead = Overhead{PacketsPerS: float64(a.tx) / secs, PayloadBytesPerS: float64(a.payload) / secs, IPBytesPerS: float64(a.wire) / secs}
	}
	return ks
}

// latStore keeps every latency exactly, in blocks of uint32 nanosecond
// values (latencies of 4.29 s or more go to a separate list), so recording
// never copies old values and allocates once per block. Consecutive equal
// latencies (a constant-latency network gives nothing else) are kept as
// one value and a count: only the multiset matters.
type latStore struct {
	blocks [][]uint32 // full blocks
	tail   []uint32   // the block being filled
	runs   []latRun   // flushed runs of two or more equal values
	cur    latRun     // the run being counted (n = 0: none)
	big    []int64
	n      int
	sum    float64
	min    int64
	max    int64
}

// latRun is a latency and how many times it came in a row.
type latRun struct {
	v uint32
	n uint64
}

// blockLen and maxBlockLen are the sizes of the first and of the largest
// blocks of latencies.
const (
	blockLen    = 16384
	maxBlockLen = 1 << 22
)

func (c *latStore) add(v int64) {
	if c.n == 0 {
		c.min, c.max = v, v
	} else if v < c.min {
		c.min = v
	} else if v > c.max {
		c.max = v
	}
	c.n++
	c.sum += float64(v)
	if uint64(v) > math.MaxUint32 { // negative or 4.29 s and more
		c.big = append(c.big, v)
		return
	}
	if c.cur.n > 0 && uint32(v) == c.cur.v {
		c.cur.n++
		return
	}
	c.flush()
	c.cur = latRun{v: uint32(v), n: 1}
}

// flush stores the current run: a single value in the blocks, a longer
// run as itself.
func (c *latStore) flush() {
	switch {
	case c.cur.n == 0:
		return
	case c.cur.n > 1:
		c.runs = append(c.runs, c.cur)
		c.cur.n = 0
		return
	}
	c.cur.n = 0
	if len(c.tail) == cap(c.tail) {
		c.grow()
	}
	c.tail = append(c.tail, c.cur.v)
}

// grow files the full tail block and starts a new one. Blocks double up
// to maxBlockLen: a long run makes a few dozen allocations for millions
// of latencies.
func (c *latStore) grow() {
	size := blockLen
	if cap(c.tail) > 0 {
		c.blocks = append(c.blocks, c.tail)
		size = min(2*cap(c.tail), maxBlockLen)
	}
	c.tail = make([]uint32, 0, size)
}

// kths returns the ks[i]-th smallest values (0-based) over the given
// stores, exactly, without copying or sorting them. It narrows each
// rank's value range level by level with histograms of up to 65536 bins
// of power-of-two width (so a value's bin is a subtraction and a shift):
// one read-only pass over the data per level serves every rank, and ranks
// whose ranges are still the same share one histogram (all do at the
// first level). Latencies below 4.29 s take two passes; any int64 range
// takes at most four.
func kths(stores []*latStore, ks []uint64) []int64 {
	lo0, hi0 := int64(math.MaxInt64), int64(math.MinInt64)
	for _, s := range stores {
		if s.n > 0 {
			lo0, hi0 = min(lo0, s.min), max(hi0, s.max)
		}
	}
	out := make([]int64, len(ks))
	span := make([]valueRange, len(ks)) // each rank's range of candidates
	for i := range span {
		span[i] = valueRange{lo: lo0, hi: hi0}
	}
	var level []*histogram     // this level's distinct open ranges
	var pool []*histogram      // histograms to reuse across levels
	of := make([]int, len(ks)) // rank -> index in level, or -1: found
	for {
		level = level[:0]
		for i, r := range span {
			of[i] = -1
			if r.lo >= r.hi {
				continue
			}
			for j, h := range level {
				if h.r == r {
					of[i] = j
				}
			}
			if of[i] < 0 {
				if len(pool) == 0 {
					pool = append(pool, &histogram{bins: make([]uint64, histBins)})
				}
				h := pool[len(pool)-1]
				pool = pool[:len(pool)-1]
				h.reset(r)
				of[i] = len(level)
				level = append(level, h)
			}
		}
		if len(level) == 0 {
			break
		}
		for _, st := range stores {
			for _, h := range level {
				h.fill(st)
			}
		}
		for i := range span {
			if of[i] < 0 {
				continue
			}
			span[i] = level[of[i]].narrow(ks[i])
		}
		pool = append(pool, level...)
	}
	for i := range span {
		out[i] = span[i].lo
	}
	return out
}

// histBins is the number of bins of a kths histogram.
const histBins = 1 << 16

// valueRange is the closed range [lo, hi] of values that may hold a rank.
type valueRange struct{ lo, hi int64 }

// histogram counts the values of a range in bins of width 1<<shift, and
// the values below it.
type histogram struct {
	r     valueRange
	shift uint
	bins  []uint64
	below uint64
}

// reset empties h for the range r, with the narrowest power-of-two bin
// width that fits r into histBins bins.
func (h *histogram) reset(r valueRange) {
	h.r, h.below = r, 0
	clear(h.bins)
	w := uint64(r.hi) - uint64(r.lo) // the range's width less one, as unsigned
	h.shift = 0
	for w>>h.shift >= histBins {
		h.shift++
	}
}

// fill counts the values of st.
func (h *histogram) fill(st *latStore) {
	for _, blk := range st.blocks {
		h.countBlock(blk)
	}
	h.countBlock(st.tail)
	for _, r := range st.runs {
		h.count(int64(r.v), r.n)
	}
	if st.cur.n > 0 {
		h.count(int64(st.cur.v), st.cur.n)
	}
	for _, v := range st.big {
		h.count(v, 1)
	}
}

// countBlock counts the values of a block: the loop over nearly every
// latency, so it keeps what it reads in locals.
func (h *histogram) countBlock(blk []uint32) {
	lo, width, shift := h.r.lo, uint64(h.r.hi)-uint64(h.r.lo), h.shift
	bins := h.bins[:histBins]
	var below uint64
	for _, x := range blk {
		v := int64(x)
		if d := uint64(v) - uint64(lo); d <= width {
			bins[(d>>shift)&(histBins-1)]++
		} else if v < lo {
			below++
		}
	}
	h.below += below
}

// count counts n times the value v.
func (h *histogram) count(v int64, n uint64) {
	if d := uint64(v) - uint64(h.r.lo); d <= uint64(h.r.hi)-uint64(h.r.lo) {
		h.bins[(d>>h.shift)&(histBins-1)] += n
	} else if v < h.r.lo {
		h.below += n
	}
}

// narrow returns the range of the bin that holds the k-th smallest value
// (0-based, over everything counted, below included).
func (h *histogram) narrow(k uint64) valueRange {
	acc := h.below
	for b, n := range h.bins {
		if acc+n > k {
			lo := int64(uint64(h.r.lo) + uint64(b)<<h.shift)
			hi := int64(uint64(lo) + (uint64(1)<<h.shift - 1))
			if uint64(hi)-uint64(h.r.lo) > uint64(h.r.hi)-uint64(h.r.lo) {
				hi = h.r.hi // the last bin ends at the range's end
			}
			return valueRange{lo: lo, hi: hi}
		}
		acc += n
	}
	return h.r // unreachable while k is below the count
}

// latencyOver summarises the latencies of the given stores; percentiles
// use the nearest-rank method.
func latencyOver(stores ...*latStore) Latency {
	var l Latency
	var sum float64
	first := true
	for _, s := range stores {
		if s.n == 0 {
			continue
		}
		l.Count += uint64(s.n)
		sum += s.sum
		if first || s.max > l.Max {
			l.Max = s.max
		}
		first = false
	}
	if l.Count == 0 {
		return l
	}
	l.Mean = sum / float64(l.Count)
	rank := func(p float64) uint64 {
		i := int64(math.Ceil(p*float64(l.Count))) - 1
		return uint64(max(0, min(int64(l.Count)-1, i)))
	}
	v := kths(stores, []uint64{rank(0.50), rank(0.95)})
	l.P50, l.P95 = v[0], v[1]
	return l
}

// aoiPair is the sawtooth state of one receiver/source pair.
type aoiPair struct {
	has      bool
	first    sim.Time // first update received
	lastT    sim.Time // time of the last update (of any freshness)
	lastGen  sim.Time // generation time of the freshest update
	integral float64  // integral of age over [first, lastT], in s^2
}

// aoiTable keeps pairs densely for up to denseLimit nodes, sparsely above.
type aoiTable struct {
	n     int
	dense []aoiPair
	// sparse is an open-addressing hash table (linear probing) of the
	// pairs heard, at most 3/4 full: a pair's state lies next to its key,
	// so an update touches one cache line or two (a map of indices into
	// blocks touched three, and grew a table on the way).
	sparse []aoiEntry
	used   int  // occupied entries of sparse
	shift  uint // 64 - log2(len(sparse))
	// senders marks the nodes that sent at least one state update.
	senders []bool
	any     bool
}

// aoiEntry is a sparse pair: its key (receiver<<32 | source, plus one: 0
// marks an empty entry) and its state.
type aoiEntry struct {
	key uint64
	p   aoiPair
}

// sparseStart is the size of the sparse table at the first state update.
const sparseStart = 1024

const denseLimit = 1500

func (t *aoiTable) init(n int) {
	t.n = n
	t.senders = make([]bool, n)
}

// pair returns the state of a pair; the table is allocated with the first
// state update, so runs without state traffic pay nothing for it.
func (t *aoiTable) pair(r, s int) *aoiPair {
	if t.dense == nil && t.sparse == nil {
		if t.n <= denseLimit {
			t.dense = make([]aoiPair, t.n*t.n)
		} else {
			t.sparse, t.shift = make([]aoiEntry, sparseStart), uint(64-bits.TrailingZeros(sparseStart))
		}
	}
	if t.dense != nil {
		return &t.dense[r*t.n+s]
	}
	k := uint64(r)<<32 | uint64(s) + 1
	if 4*(t.used+1) > 3*len(t.sparse) {
		t.grow()
	}
	e := t.slot(k)
	if e.key == 0 {
		e.key = k
		t.used++
	}
	return &e.p
}

// slot returns the entry of key k in sparse, or the empty entry where it
// would go.
func (t *aoiTable) slot(k uint64) *aoiEntry {
	mask := uint64(len(t.sparse) - 1)
	for i := t.home(k); ; i = (i + 1) & mask {
		if e := &t.sparse[i]; e.key == k || e.key == 0 {
			return e
		}
	}
}

// prefetch hints that pair (r, s) will be updated soon (the sparse table
// only: the dense one is small enough to stay in cache).
func (t *aoiTable) prefetch(r, s int) {
	if len(t.sparse) == 0 || r < 0 || s < 0 {
		return
	}
	k := uint64(r)<<32 | uint64(s) + 1
	prefetch.Line(unsafe.Pointer(&t.sparse[t.home(k)]))
}

// home returns the entry of sparse where the search for key k starts.
func (t *aoiTable) home(k uint64) uint64 { return (k * 0x9E3779B97F4A7C15) >> t.shift }

// grow doubles the sparse table.
func (t *aoiTable) grow() {
	old := t.sparse
	t.sparse, t.shift = make([]aoiEntry, 2*len(old)), t.shift-1
	for i := range old {
		if old[i].key != 0 {
			*t.slot(old[i].key) = old[i]
		}
	}
}

// area returns the integral of (tau - g) over [a, b] in s^2.
func area(g, a, b sim.Time) float64 {
	x, y := a.Sub(g).Seconds(), b.Sub(g).Seconds()
	return (y*y - x*x) / 2
}

// update records that receiver r got, at time now, an update from source s
// generated at gen. Age at r about s is now - (generation time of the
// freshest update received so far); it grows linearly between updates.
func (t *aoiTable) update(r, s int, now, gen sim.Time) {
	if r < 0 || s < 0 || r >= t.n || s >= t.n {
		return
	}
	t.any = true
	p := t.pair(r, s)
	if !p.has {
		*p = aoiPair{has: true, first: now, lastT: now, lastGen: gen}
		return
	}
	p.integral += area(p.lastGen, p.lastT, now)
	p.lastT = now
	if gen > p.lastGen {
		p.lastGen = gen
	}
}

func (t *aoiTable) summary(end sim.Time) *AoI {
	a := &AoI{MinS: math.Inf(1)}
	var sum float64
	visit := func(p *aoiPair) {
		span := end.Sub(p.first).Seconds()
		if !p.has || span <= 0 {
			return
		}
		avg := (p.integral + area(p.lastGen, p.lastT, end)) / span
		a.Pairs++
		sum += avg
		a.MinS = math.Min(a.MinS, avg)
		a.MaxS = math.Max(a.MaxS, avg)
	}
	if t.dense != nil {
		for i := range t.dense {
			visit(&t.dense[i])
		}
	} else {
		// In key order, as the pairs' figures are summed.
		idx := make([]int, 0, t.used)
		for i := range t.sparse {
			if t.sparse[i].key != 0 {
				idx = append(idx, i)
			}
		}
		slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(t.sparse[a].key, t.sparse[b].key) })
		for _, i := range idx {
			visit(&t.sparse[i].p)
		}
	}
	senders := 0
	for _, s := range t.senders {
		if s {
			senders++
		}
	}
	a.PairsNever = max(0, senders*(t.n-1)-a.Pairs)
	if a.Pairs > 0 {
		a.MeanS = sum / float64(a.Pairs)
	} else {
		a.MinS = 0
	}
	return a
}
