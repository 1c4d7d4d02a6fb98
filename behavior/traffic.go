package behavior

import (
	"fmt"
	"math"

	"skyloop/agent"
	"skyloop/fields"
	"skyloop/netsim"
	"skyloop/sim"
)

// TrafficParams configure a constant-bit-rate source.
type TrafficParams struct {
	Rate    float64      `yaml:"rate" json:"rate"`   // application bit rate (payload bits/s); 0 sends nothing
	Size    int          `yaml:"size" json:"size"`   // payload bytes per packet
	Dst     string       `yaml:"dst" json:"dst"`     // destination node name; empty = broadcast
	Start   sim.Duration `yaml:"start" json:"start"` // the source's start time (plus index*stagger and the phase)
	Stagger sim.Duration `yaml:"stagger" json:"stagger"`
	// First says when packet 0 leaves: at the source's start (FirstStart,
	// the default) or one packet interval after it (FirstInterval), as
	// ns-3's OnOffApplication sends.
	First  string       `yaml:"first" json:"first"`
	Phase  agent.Phase  `yaml:"phase" json:"phase"`   // random (default: each node starts at a random point of its packet interval) or zero
	Jitter agent.Jitter `yaml:"jitter" json:"jitter"` // each packet is delayed by a fresh uniform [0, jitter); a duration, a percentage of the packet interval, or 0
	Kind   string       `yaml:"kind" json:"kind"`     // trace kind, default bg
	Port   uint16       `yaml:"port" json:"port"`
}

// Validate checks the parameters.
func (p *TrafficParams) Validate() fields.Errors {
	bad := fields.Errors{}
	if !(p.Rate == 0 || p.Rate >= 1) || math.IsInf(p.Rate, 0) {
		bad["rate"] = fmt.Sprintf("must be a bit rate of at least 1 bit/s (or 0: no traffic), got %v", p.Rate)
	}
	if p.Size < 1 || p.Size > netsim.MaxPayload {
		bad["size"] = fmt.Sprintf("must be 1..%d bytes (UDP payload), got %d", netsim.MaxPayload, p.Size)
	}
	nonNegative(bad, "start", p.Start)
	nonNegative(bad, "stagger", p.Stagger)
	if _, ok := netsim.KindByName(p.Kind); !ok {
		bad["kind"] = fmt.Sprintf("unknown traffic kind %q", p.Kind)
	}
	if p.Phase != agent.PhaseRandom && p.Phase != agent.PhaseZero {
		bad["phase"] = fmt.Sprintf("must be random or zero, got %v", p.Phase)
	}
	if p.First != FirstStart && p.First != FirstInterval {
		bad["first"] = fmt.Sprintf("must be %s or %s, got %q", FirstStart, FirstInterval, p.First)
	}
	var ivl sim.Duration
	if bad["rate"] == "" && bad["size"] == "" && p.Rate > 0 {
		ivl = p.interval()
	}
	checkJitter(bad, p.Jitter, ivl, fmt.Sprintf("the packet interval (%d bytes at %v bit/s):", p.Size, p.Rate))
	return bad
}

// When a constant-bit-rate source sends its first packet (TrafficParams.First).
const (
	// FirstStart sends packet 0 at the source's start.
	FirstStart = "start"
	// FirstInterval sends packet 0 one packet interval after the start,
	// as ns-3's OnOffApplication does (it schedules its first send one
	// interval after StartApplication).
	FirstInterval = "interval"
)

// interval returns the nominal time between packets, to the nanosecond
// below.
func (p *TrafficParams) interval() sim.Duration {
	return sim.Duration(math.Floor(float64(p.Size*8) / p.Rate * 1e9))
}

// Traffic is a constant-bit-rate source: packets of `size` bytes at exact
// times t0 + (k+f)*size*8/rate + jitter_k (nanosecond resolution, not
// rounded to ticks), where t0 is start + index*stagger plus the node's
// phase, uniform in [0, size*8/rate) (phase: random, the default) or 0
// (phase: zero), f is 0 (first: start, the default) or 1 (first:
// interval: the first packet leaves one interval after t0), and jitter_k is uniform in [0, jitter), drawn afresh for
// every packet (default DefaultJitter, a tenth of the interval); both are
// drawn from the run's seed, so the mean rate is exact and the same seed
// gives the same times. Its sending never depends on the vehicle, so in
// runs whose network advances in epochs it plans each epoch's packets
// (Planner).
type Traffic struct {
	p       *TrafficParams
	dst     netsim.NodeID
	kind    netsim.Kind
	start   sim.Time // the source's start (t0)
	off     int64    // 1 when packet 0 leaves one interval after start
	ivl     float64  // ns
	times   agent.SendTimes
	jitter  sim.Duration // the bound of every packet's delay
	k       int64
	next    sim.Time // the time of packet k
	tick    sim.Duration
	planned bool
}

// trafficSpec is the traffic behaviour type (see Builtins).
var trafficSpec = agent.Spec{
	Name: "traffic",
	Doc: "Constant-bit-rate source: `size`-byte packets (kind `kind`, default bg) at `rate` bit/s of payload to `dst` (default broadcast), at exact sub-tick times; " +
		"starts at `start` + group index * `stagger` + a random point of the packet interval (`phase` random, or zero) and sends its first packet then (`first` start) or one interval later (`first` interval, as ns-3's OnOffApplication); each packet is delayed by a fresh uniform [0, `jitter`) (default 10% of the interval; 0 = none), both seeded.",
	Vehicle: true, Fixed: true,
	Params: func() agent.Params {
		return &TrafficParams{Size: 1000, Kind: "bg", Port: 9, Phase: agent.PhaseRandom, First: FirstStart, Jitter: agent.DefaultJitter}
	},
	New: func(p agent.Params) agent.Behavior { return &Traffic{p: p.(*TrafficParams)} },
}

// check reports what Start refuses: the destination, when named, must exist.
func (tr *Traffic) check(ctx *agent.Context) error {
	if _, ok := nodeNamed(ctx, tr.p.Dst); tr.p.Dst != "" && !ok {
		return fieldErr("dst", fmt.Sprintf("no node named %q", tr.p.Dst))
	}
	return nil
}

// Start resolves the destination and the first send time.
func (tr *Traffic) Start(ctx *agent.Context) error {
	if err := tr.check(ctx); err != nil {
		return err
	}
	tr.dst = netsim.Broadcast
	if tr.p.Dst != "" {
		tr.dst, _ = nodeNamed(ctx, tr.p.Dst)
	}
	tr.kind, _ = netsim.KindByName(tr.p.Kind)
	tr.start = sim.Time(tr.p.Start + sim.Duration(ctx.Ref().Index)*tr.p.Stagger)
	if tr.p.Rate > 0 {
		tr.ivl = float64(tr.p.Size*8) / tr.p.Rate * 1e9
		ivl := tr.p.interval()
		tr.times, tr.jitter = agent.NewSendTimes(ctx, tagTraffic, tr.p.Port, uint64(tr.kind)), tr.p.Jitter.Of(ivl)
		tr.start = tr.start.Add(tr.times.Phase(tr.p.Phase, ivl))
		if tr.p.First == FirstInterval {
			tr.off = 1
		}
	}
	tr.next = tr.at(0)
	tr.tick = ctx.Tick()
	tr.planned = ctx.Network().Epoch > 0
	return nil
}

// Schedule runs every tick so that every packet leaves at its exact time;
// a source that plans its packets or sends nothing never steps.
func (tr *Traffic) Schedule() (sim.Duration, sim.Duration) {
	if tr.planned || tr.p.Rate == 0 {
		return 0, 0
	}
	return tr.tick, 0
}

// Step sends the packets due in the current tick.
func (tr *Traffic) Step(ctx *agent.Context) { tr.emit(ctx, ctx.Now().Add(ctx.Tick())) }

// Plan sends the packets of the epoch [now, end).
func (tr *Traffic) Plan(ctx *agent.Context, end sim.Time) { tr.emit(ctx, end) }

// emit sends the packets due before end.
func (tr *Traffic) emit(ctx *agent.Context, end sim.Time) {
	if tr.p.Rate == 0 {
		return
	}
	for tr.next < end {
		if tr.next >= ctx.Now() {
			if err := ctx.SendAt(tr.next, agent.Message{Dst: tr.dst, Kind: tr.kind, Seq: uint32(tr.k), Size: tr.p.Size, Port: tr.p.Port}); err != nil {
				ctx.Log().Error("traffic send", "err", err)
				return
			}
		}
		tr.k++
		tr.next = tr.at(tr.k)
	}
}

// at returns the time of packet k: start + floor((k+off)*interval) plus
// its jitter.
func (tr *Traffic) at(k int64) sim.Time {
	return tr.start + sim.Time(math.Floor(float64(k+tr.off)*tr.ivl)) + sim.Time(tr.times.Delay(k, tr.jitter))
}
