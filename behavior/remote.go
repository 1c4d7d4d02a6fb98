package behavior

import (
	"fmt"

	"skyloop/agent"
	"skyloop/fields"
	"skyloop/netsim"
	"skyloop/sim"
	"skyloop/vehicle"
)

// RemoteParams configure the remote behaviour.
type RemoteParams struct {
	GCS         string       `yaml:"gcs" json:"gcs"`                   // name of the ground-station node
	Telemetry   sim.Duration `yaml:"telemetry" json:"telemetry"`       // telemetry period
	Stagger     sim.Duration `yaml:"stagger" json:"stagger"`           // vehicle with group index i reports first at i*stagger (plus its phase)
	Phase       agent.Phase  `yaml:"phase" json:"phase"`               // random (default: each vehicle starts at a random point of the telemetry period) or zero
	Jitter      agent.Jitter `yaml:"jitter" json:"jitter"`             // each report is delayed by a fresh uniform [0, jitter); a duration, a percentage of the period, or 0
	LinkTimeout sim.Duration `yaml:"link_timeout" json:"link_timeout"` // hold when no command was heard for this long after the first; 0 = off
	Port        uint16       `yaml:"port" json:"port"`                 // UDP port of telemetry (default GCSPort, 5001; what captures show)
}

// Validate checks the parameters.
func (p *RemoteParams) Validate() fields.Errors {
	bad := fields.Errors{}
	if p.GCS == "" {
		bad["gcs"] = "must name the ground-station node"
	}
	positive(bad, "telemetry", p.Telemetry)
	nonNegative(bad, "stagger", p.Stagger)
	nonNegative(bad, "link_timeout", p.LinkTimeout)
	if p.Phase != agent.PhaseRandom && p.Phase != agent.PhaseZero {
		bad["phase"] = fmt.Sprintf("must be random or zero, got %v", p.Phase)
	}
	checkJitter(bad, p.Jitter, p.Telemetry, "the telemetry period")
	return bad
}

// Remote puts a vehicle under a ground station's command across the
// network: it applies the newest command it receives and reports telemetry
// (kind telem) to the station at a fixed rate. Report k of the vehicle with
// group index i leaves at i*stagger + phase + k*telemetry + jitter_k, with
// the phase and jitter drawn from the run's seed as a beacon's are (see
// Beacon); the link-loss failsafe is checked at every report.
type Remote struct {
	p        *RemoteParams
	gcs      netsim.NodeID
	times    agent.SendTimes
	jitter   sim.Duration // the bound of every report's delay
	first    sim.Time     // the nominal time of report 0
	k        int64        // the number of the next report
	next     sim.Time     // the time of report k
	tick     sim.Duration // stepping every tick (0: every period)
	seq      uint32
	cmdSeq   uint32
	hasCmd   bool
	leg      uint16
	lastCmd  sim.Time
	failsafe bool
	last     CmdMsg // the newest command applied
	buf      []byte
	applied  int
}

// remoteSpec is the remote behaviour type (see Builtins).
var remoteSpec = agent.Spec{
	Name: "remote",
	Doc: "Puts the vehicle under the command of ground station `gcs` over the network: applies the newest command received and sends telemetry (kind telem) every `telemetry`, " +
		"starting at group index * `stagger` + a random point of the period (`phase` random, or zero), each report delayed by a fresh uniform [0, `jitter`) (default 10% of the period; 0 = none), both seeded. " +
		"Every message from the station is a heartbeat for the autopilot's link-loss failsafe. With `link_timeout` > 0 the behaviour itself holds position when nothing arrived for that long, and resumes the last command when the link returns.",
	Vehicle: true,
	Params: func() agent.Params {
		return &RemoteParams{GCS: "gcs", Telemetry: 200 * sim.Millisecond, Port: GCSPort, Phase: agent.PhaseRandom, Jitter: agent.DefaultJitter}
	},
	New: func(p agent.Params) agent.Behavior { return &Remote{p: p.(*RemoteParams), leg: NoLeg} },
}

// check reports what Start refuses: the ground station must exist.
func (r *Remote) check(ctx *agent.Context) error {
	if _, ok := nodeNamed(ctx, r.p.GCS); !ok {
		return fieldErr("gcs", fmt.Sprintf("no node named %q", r.p.GCS))
	}
	return nil
}

// Start finds the ground station and the first report time.
func (r *Remote) Start(ctx *agent.Context) error {
	if err := r.check(ctx); err != nil {
		return err
	}
	r.gcs, _ = nodeNamed(ctx, r.p.GCS)
	r.times, r.jitter = agent.NewSendTimes(ctx, tagRemote, r.p.Port, 0), r.p.Jitter.Of(r.p.Telemetry)
	r.first = sim.Time(sim.Duration(ctx.Ref().Index)*r.p.Stagger + r.times.Phase(r.p.Phase, r.p.Telemetry))
	r.k, r.next = 0, r.first.Add(r.times.Delay(0, r.jitter))
	if tick := ctx.Tick(); r.p.Phase == agent.PhaseRandom || r.jitter > 0 || r.first%sim.Time(tick) != 0 || r.p.Telemetry%tick != 0 {
		r.tick = tick
	}
	return nil
}

// Schedule returns the telemetry period and the first report's time when
// the reports lie on the tick grid, and otherwise the tick: Step then
// sends each report at its exact time.
func (r *Remote) Schedule() (sim.Duration, sim.Duration) {
	if r.tick > 0 {
		return r.tick, 0
	}
	return r.p.Telemetry, sim.Duration(r.first)
}

// Receive applies new commands from the ground station. Every message from
// the station (commands and heartbeats) also tells the vehicle's autopilot
// that the link is alive.
func (r *Remote) Receive(ctx *agent.Context, m *agent.Message) {
	if m.Kind != netsim.KindCmd || m.Src != r.gcs {
		return
	}
	c, err := DecodeCmd(m.Payload)
	if err != nil {
		ctx.Event("bad_command", err.Error())
		return
	}
	r.lastCmd = ctx.Now()
	ctx.Command(vehicle.Command{Kind: vehicle.CmdHeartbeat})
	if r.failsafe {
		r.failsafe = false
		ctx.Event("link_restored", "")
		if r.hasCmd {
			r.apply(ctx, r.last) // resume what the link loss interrupted
		}
	}
	if c.Op == OpHeartbeat || r.hasCmd && c.Seq <= r.cmdSeq {
		return // nothing new
	}
	r.hasCmd, r.cmdSeq = true, c.Seq
	newLeg := c.Leg != r.leg
	r.leg = c.Leg
	r.applied++
	r.last = c
	r.apply(ctx, c)
	if newLeg {
		ctx.Event("command", fmt.Sprintf("leg=%d op=%d latency_ns=%d", c.Leg, c.Op, m.TRecv.Sub(m.TSend)))
	}
}

func (r *Remote) apply(ctx *agent.Context, c CmdMsg) {
	switch c.Op {
	case OpGoto:
		ctx.Command(vehicle.Command{Kind: vehicle.CmdGoto, Pos: c.Pos, Speed: float64(c.Speed), Yaw: nan})
	case OpLand:
		ctx.Command(vehicle.Command{Kind: vehicle.CmdLand})
	case OpHold:
		ctx.Command(vehicle.Command{Kind: vehicle.CmdHold})
	case OpRTL:
		ctx.Command(vehicle.Command{Kind: vehicle.CmdRTL})
	}
}

// Step runs the link-loss failsafe and sends the telemetry reports due in
// the current tick, at their times.
func (r *Remote) Step(ctx *agent.Context) {
	for end := ctx.Now().Add(ctx.Tick()); r.next < end; {
		at := r.next
		r.k++
		r.next = r.first.Add(sim.Duration(r.k)*r.p.Telemetry + r.times.Delay(r.k, r.jitter))
		if at >= ctx.Now() {
			r.report(ctx, at)
		}
	}
}

// report runs the link-loss failsafe and sends a telemetry report at time
// at.
func (r *Remote) report(ctx *agent.Context, at sim.Time) {
	tel := ctx.Telemetry()
	if r.p.LinkTimeout > 0 && r.hasCmd && !r.failsafe && ctx.Now().Sub(r.lastCmd) > r.p.LinkTimeout {
		r.failsafe = true
		ctx.Event("link_lost", "hold")
		ctx.Command(vehicle.Command{Kind: vehicle.CmdHold})
	}
	m := TelemMsg{ID: uint32(ctx.ID()), Seq: r.seq, Leg: r.leg, Mode: tel.Mode, Armed: tel.Armed, Landed: tel.Landed, Pos: tel.Pos, Vel: tel.Vel}
	r.buf = m.Append(r.buf[:0])
	if err := ctx.SendAt(at, agent.Message{Dst: r.gcs, Kind: netsim.KindTelem, Seq: r.seq, Port: r.p.Port, Payload: r.buf}); err != nil {
		ctx.Log().Error("telemetry send", "err", err)
		return
	}
	r.seq++
}

// Finish reports how many commands were applied.
func (r *Remote) Finish(ctx *agent.Context) map[string]any {
	return map[string]any{"commands_applied": r.applied, "telemetry_sent": r.seq}
}
