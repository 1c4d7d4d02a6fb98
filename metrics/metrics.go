// Package metrics computes a run's network figures exactly, whether or not
// per-packet files are written: packet delivery ratio with drop reasons,
// latency (mean, p50, p95, max), age of information (the exact time-average
// of the sawtooth, per receiver/source pair), and overhead at the payload and
// IP layers, per traffic kind and in total.
package metrics

import (
	"math"
	"slices"

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
	lat      chunks
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

// Delivered records a delivery consumed at tick time tick.
func (c *Collector) Delivered(d *netsim.Delivery, tick sim.Time) {
	p := d.P
	c.kind(p.Kind).lat.add(int64(d.At - p.TSend))
	if p.Kind == netsim.KindState {
		c.aoi.update(int(d.Dst), int(p.Src), tick, p.TGen)
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
	var all []int64
	for k := range c.kinds {
		a := &c.kinds[k]
		if !a.used {
			continue
		}
		s.ByKind[netsim.Kind(k).String()] = a.summary(secs, a.lat.sorted())
		tot.tx += a.tx
		tot.expected += a.expected
		tot.rx += a.rx
		tot.payload += a.payload
		tot.wire += a.wire
		for r := range a.drops {
			tot.drops[r] += a.drops[r]
		}
		all = a.lat.appendTo(all)
	}
	slices.Sort(all)
	s.Total = tot.summary(secs, all)
	if c.aoi.any {
		s.AoI = c.aoi.summary(end)
	}
	return s
}

func (a *kindAcc) summary(secs float64, lat []int64) KindSummary {
	ks := KindSummary{Tx: a.tx, Expected: a.expected, Rx: a.rx, Drops: map[string]uint64{}}
	if a.expected > 0 {
		ks.PDR = float64(a.rx) / float64(a.expected)
	}
	for r, n := range a.drops {
		if n > 0 {
			ks.Drops[netsim.DropReason(r).String()] = n
		}
	}
	ks.Latency = latencyOf(lat)
	if secs > 0 {
		ks.Overhead = Overhead{PacketsPerS: float64(a.tx) / secs, PayloadBytesPerS: float64(a.payload) / secs, IPBytesPerS: float64(a.wire) / secs}
	}
	return ks
}

// latencyOf summarises sorted latencies; percentiles use the nearest-rank
// method.
func latencyOf(sorted []int64) Latency {
	n := len(sorted)
	if n == 0 {
		return Latency{}
	}
	var sum float64
	for _, v := range sorted {
		sum += float64(v)
	}
	rank := func(p float64) int64 {
		i := int(math.Ceil(p*float64(n))) - 1
		return sorted[max(0, min(n-1, i))]
	}
	return Latency{Count: uint64(n), Mean: sum / float64(n), P50: rank(0.50), P95: rank(0.95), Max: sorted[n-1]}
}

// chunks stores int64 values in fixed-size blocks, so recording does not
// copy old values as it grows and allocates once per 8192 values.
type chunks struct {
	blocks [][]int64
}

const chunkLen = 8192

func (c *chunks) add(v int64) {
	if k := len(c.blocks); k == 0 || len(c.blocks[k-1]) == chunkLen {
		c.blocks = append(c.blocks, make([]int64, 0, chunkLen))
	}
	k := len(c.blocks) - 1
	c.blocks[k] = append(c.blocks[k], v)
}

func (c *chunks) appendTo(dst []int64) []int64 {
	for _, b := range c.blocks {
		dst = append(dst, b...)
	}
	return dst
}

func (c *chunks) sorted() []int64 {
	v := c.appendTo(nil)
	slices.Sort(v)
	return v
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
	n       int
	dense   []aoiPair
	sparse  map[uint64]*aoiPair
	senders []bool // nodes that sent at least one state update
	any     bool
}

const denseLimit = 1500

func (t *aoiTable) init(n int) {
	t.n = n
	t.senders = make([]bool, n)
	if n <= denseLimit {
		t.dense = make([]aoiPair, n*n)
	} else {
		t.sparse = map[uint64]*aoiPair{}
	}
}

func (t *aoiTable) pair(r, s int) *aoiPair {
	if t.dense != nil {
		return &t.dense[r*t.n+s]
	}
	k := uint64(r)<<32 | uint64(s)
	p := t.sparse[k]
	if p == nil {
		p = &aoiPair{}
		t.sparse[k] = p
	}
	return p
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
		keys := make([]uint64, 0, len(t.sparse))
		for k := range t.sparse {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			visit(t.sparse[k])
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
