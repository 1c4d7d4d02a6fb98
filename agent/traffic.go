package agent

import (
	"fmt"
	"math"

	"skyloop/fields"
	"skyloop/netsim"
	"skyloop/sim"
)

// TrafficParams configure a constant-bit-rate source.
type TrafficParams struct {
	Rate    float64      `yaml:"rate" json:"rate"`   // application bit rate (payload bits/s); 0 sends nothing
	Size    int          `yaml:"size" json:"size"`   // payload bytes per packet
	Dst     string       `yaml:"dst" json:"dst"`     // destination node name; empty = broadcast
	Start   sim.Duration `yaml:"start" json:"start"` // first packet time (plus index*stagger)
	Stagger sim.Duration `yaml:"stagger" json:"stagger"`
	Kind    string       `yaml:"kind" json:"kind"` // trace kind, default bg
	Port    uint16       `yaml:"port" json:"port"`
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
	return bad
}

// Traffic is a constant-bit-rate source: packets of `size` bytes at exact
// times start + k*size*8/rate (nanosecond resolution, not rounded to ticks).
// Its sending never depends on the vehicle, so in runs whose network
// advances in epochs it plans each epoch's packets (Planner).
type Traffic struct {
	p       *TrafficParams
	dst     netsim.NodeID
	kind    netsim.Kind
	start   sim.Time
	ivl     float64 // ns
	k       int64
	next    sim.Time
	tick    sim.Duration
	planned bool
}

// trafficSpec is the traffic behaviour type (see Builtins).
var trafficSpec = Spec{
	Name: "traffic",
	Doc: "Constant-bit-rate source: `size`-byte packets (kind `kind`, default bg) at `rate` bit/s of payload to `dst` (default broadcast), at exact sub-tick times; " +
		"starts at `start` + group index * `stagger`.",
	Vehicle: true, Fixed: true,
	Params: func() Params { return &TrafficParams{Size: 1000, Kind: "bg", Port: 9} },
	New:    func(p Params) Behavior { return &Traffic{p: p.(*TrafficParams)} },
}

// check reports what Start refuses: the destination, when named, must exist.
func (tr *Traffic) check(ctx *Context) error {
	if _, ok := nodeNamed(ctx, tr.p.Dst); tr.p.Dst != "" && !ok {
		return fieldErr("dst", fmt.Sprintf("no node named %q", tr.p.Dst))
	}
	return nil
}

// Start resolves the destination and the first send time.
func (tr *Traffic) Start(ctx *Context) error {
	if err := tr.check(ctx); err != nil {
		return err
	}
	tr.dst = netsim.Broadcast
	if tr.p.Dst != "" {
		tr.dst, _ = nodeNamed(ctx, tr.p.Dst)
	}
	tr.kind, _ = netsim.KindByName(tr.p.Kind)
	tr.start = sim.Time(tr.p.Start + sim.Duration(ctx.Ref().Index)*tr.p.Stagger)
	tr.ivl = float64(tr.p.Size*8) / tr.p.Rate * 1e9
	tr.next = tr.start
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
func (tr *Traffic) Step(ctx *Context) { tr.emit(ctx, ctx.Now().Add(ctx.Tick())) }

// Plan sends the packets of the epoch [now, end).
func (tr *Traffic) Plan(ctx *Context, end sim.Time) { tr.emit(ctx, end) }

// emit sends the packets due before end.
func (tr *Traffic) emit(ctx *Context, end sim.Time) {
	if tr.p.Rate == 0 {
		return
	}
	for tr.next < end {
		if tr.next >= ctx.Now() {
			if err := ctx.SendAt(tr.next, Message{Dst: tr.dst, Kind: tr.kind, Seq: uint32(tr.k), Size: tr.p.Size, Port: tr.p.Port}); err != nil {
				ctx.Log().Error("traffic send", "err", err)
				return
			}
		}
		tr.k++
		tr.next = tr.start + sim.Time(math.Floor(float64(tr.k)*tr.ivl))
	}
}
