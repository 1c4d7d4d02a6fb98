package runner

import (
	"math"
	"sort"
	"time"

	"skyloop/netsim"
	"skyloop/sim"
)

// clockLog writes clock.csv in real-time runs: every 10 ms of simulated
// time, each module's clock offset from the master (the kernel's simulated
// time), in nanoseconds:
//
//   - wall: the wall clock real processes live by, mapped to simulated time
//     (positive: the wall clock is ahead of the simulation);
//   - network: the network backend's clock (backends that report one);
//   - tap: how late the frames read from the vehicles' TAPs in the last
//     period entered the simulation, relative to when they were read
//     (isolation: netns).
type clockLog struct {
	out   *outputs
	p     *pacer
	net   netsim.Clocked
	taps  []latecomer
	stats map[string]*clockStats
	order []string
}

type clockStats struct {
	n           int
	sum, sumAbs float64
	min, max    float64
	ts, vs      []float64 // for the drift slope
}

func newClockLog(out *outputs, p *pacer, b netsim.Backend, taps []latecomer) *clockLog {
	c := &clockLog{out: out, p: p, taps: taps, stats: map[string]*clockStats{}}
	if cl, ok := b.(netsim.Clocked); ok {
		c.net = cl
	}
	return c
}

func (c *clockLog) add(t sim.Time, module string, off time.Duration) {
	c.out.clock(t, module, int64(off))
	s := c.stats[module]
	if s == nil {
		s = &clockStats{min: math.Inf(1), max: math.Inf(-1)}
		c.stats[module] = s
		c.order = append(c.order, module)
	}
	v := float64(off)
	s.n++
	s.sum += v
	s.sumAbs += math.Abs(v)
	s.min, s.max = math.Min(s.min, v), math.Max(s.max, v)
	s.ts = append(s.ts, t.Seconds())
	s.vs = append(s.vs, v)
}

func (c *clockLog) sample(t sim.Time) error {
	c.add(t, "wall", c.p.offset())
	if c.net != nil {
		c.add(t, "network", time.Duration(c.net.Clock()-t))
	}
	if off, ok := c.tapOffset(); ok {
		c.add(t, "tap", off)
	}
	return nil
}

// ClockSummary is one module's clock offset from the master over a run.
type ClockSummary struct {
	Module  string  `json:"module"`
	Samples int     `json:"samples"`
	MeanNs  float64 `json:"mean_ns"`
	MeanAbs float64 `json:"mean_abs_ns"`
	MinNs   float64 `json:"min_ns"`
	MaxNs   float64 `json:"max_ns"`
	// P99Ns and P999Ns are the 99th and 99.9th percentiles of |offset|
	// (nearest rank): the maximum alone shows the machine's rarest
	// stalls.
	P99Ns  float64 `json:"p99_abs_ns"`
	P999Ns float64 `json:"p999_abs_ns"`
	// DriftNsPerS is the least-squares slope of the offset against time:
	// a cumulative drift shows here.
	DriftNsPerS float64 `json:"drift_ns_per_s"`
}

func (c *clockLog) summary() []ClockSummary {
	if c == nil {
		return nil
	}
	var out []ClockSummary
	for _, m := range c.order {
		s := c.stats[m]
		abs := make([]float64, len(s.vs))
		for i, v := range s.vs {
			abs[i] = math.Abs(v)
		}
		sort.Float64s(abs)
		out = append(out, ClockSummary{Module: m, Samples: s.n, MeanNs: round(s.sum/float64(s.n), 1),
			MeanAbs: round(s.sumAbs/float64(s.n), 1), MinNs: s.min, MaxNs: s.max,
			P99Ns: nearestRank(abs, 0.99), P999Ns: nearestRank(abs, 0.999), DriftNsPerS: round(slope(s.ts, s.vs), 3)})
	}
	return out
}

// nearestRank returns the q-quantile of sorted values (nearest rank).
func nearestRank(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func slope(x, y []float64) float64 {
	n := float64(len(x))
	if n < 2 {
		return 0
	}
	var sx, sy, sxx, sxy float64
	for i := range x {
		sx += x[i]
		sy += y[i]
		sxx += x[i] * x[i]
		sxy += x[i] * y[i]
	}
	d := n*sxx - sx*sx
	if d == 0 {
		return 0
	}
	return (n*sxy - sx*sy) / d
}

// tapOffset returns how late, on average, the frames read from the TAPs
// since the last call entered the simulation (in simulated time).
func (c *clockLog) tapOffset() (time.Duration, bool) {
	var sum time.Duration
	n := 0
	for _, b := range c.taps {
		d, k := b.Lateness()
		sum += d
		n += k
	}
	if n == 0 {
		return 0, false
	}
	return time.Duration(c.p.factor * float64(sum) / float64(n)), true
}

func round(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}
