package behavior

import (
	"fmt"
	"math"

	"skyloop/agent"
	"skyloop/fields"
	"skyloop/geom"
	"skyloop/netsim"
	"skyloop/sim"
	"skyloop/vehicle"
)

var nan = math.NaN()

// BeaconParams configure the beacon behaviour.
type BeaconParams struct {
	Period     sim.Duration `yaml:"period" json:"period"`                 // periodic policy: send period
	Stagger    sim.Duration `yaml:"stagger" json:"stagger"`               // node with group index i starts at i*stagger (plus its phase)
	Phase      agent.Phase  `yaml:"phase" json:"phase"`                   // periodic policy: random (default: each node starts at a random point of its period) or zero
	Jitter     agent.Jitter `yaml:"jitter" json:"jitter"`                 // periodic policy: each send is delayed by a fresh uniform [0, jitter); a duration, a percentage of the period, or 0
	Policy     SendPolicy   `yaml:"policy" json:"policy"`                 // periodic or event
	Check      sim.Duration `yaml:"check" json:"check"`                   // event policy: how often the triggers are checked
	MoveThresh float64      `yaml:"move_threshold" json:"move_threshold"` // event policy: send after moving this far (m)
	TurnThresh float64      `yaml:"turn_threshold" json:"turn_threshold"` // event policy: or turning this much (deg)
	Heartbeat  sim.Duration `yaml:"heartbeat" json:"heartbeat"`           // event policy: or after this long without sending
	Format     StateFormat  `yaml:"format" json:"format"`                 // planar (56 bytes, the netbots study's) or 3d (72 bytes)
	Size       int          `yaml:"size" json:"size"`                     // bytes per update: 0 = the format's own, or more (zero padding)
	Stale      sim.Duration `yaml:"stale" json:"stale"`                   // beliefs older than this are withheld
	Port       uint16       `yaml:"port" json:"port"`
}

// Validate checks the parameters.
func (p *BeaconParams) Validate() fields.Errors {
	bad := fields.Errors{}
	positive(bad, "period", p.Period)
	nonNegative(bad, "stagger", p.Stagger)
	positive(bad, "stale", p.Stale)
	if p.Phase != agent.PhaseRandom && p.Phase != agent.PhaseZero {
		bad["phase"] = fmt.Sprintf("must be random or zero, got %v", p.Phase)
	}
	checkJitter(bad, p.Jitter, p.Period, "the period")
	switch p.Policy {
	case Periodic:
	case EventTriggered:
		positive(bad, "check", p.Check)
		positive(bad, "heartbeat", p.Heartbeat)
		if !(p.MoveThresh > 0) {
			bad["move_threshold"] = fmt.Sprintf("must be > 0, got %v", p.MoveThresh)
		}
		if !(p.TurnThresh > 0) {
			bad["turn_threshold"] = fmt.Sprintf("must be > 0, got %v", p.TurnThresh)
		}
	default:
		bad["policy"] = fmt.Sprintf("must be periodic or event, got %v", p.Policy)
	}
	if p.Format != Planar && p.Format != Format3D {
		bad["format"] = fmt.Sprintf("must be planar or 3d, got %v", p.Format)
	} else if own := p.formatSize(); p.Size != 0 && (p.Size < own || p.Size > maxStateSize) {
		bad["size"] = fmt.Sprintf("must be 0 (the format's %d bytes) or %d..%d bytes, got %d", own, own, maxStateSize, p.Size)
	}
	return bad
}

// Beacon broadcasts the vehicle's own state (kind "state") and keeps the
// node's beliefs about the others from the updates it receives, applying
// the netbots study's receiver rules (docs/scenario.md, State updates and
// beliefs).
//
// Periodic update k of the node with group index i leaves at
// i*stagger + phase + k*period + jitter_k: the phase is the node's own,
// uniform in [0, period) (phase: random, the default) or 0 (phase: zero);
// jitter_k is uniform in [0, jitter), drawn afresh for every update
// (default DefaultJitter, a tenth of the period). Both come from the run's
// seed (the node's random stream), so the same seed gives the same times
// and another seed other ones. Senders whose updates never overlap do not
// contend; real ones drift, and these do too.
//
// In runs whose network advances in epochs the beacon plans its sends
// (Planner): periodic updates at their scheduled times (the same as
// when stepping) with their content bound to the vehicle's state at each
// send time (Binder), event-triggered ones decided at every epoch start
// on the state then (the check period is then at least the epoch).
type Beacon struct {
	p          *BeaconParams
	seq        uint32
	decodeErrs uint32 // 32 bits beside seq, so that a beacon takes 224 bytes
	buf        []byte
	lastPos    geom.Vec3
	lastYaw    float64
	lastSent   sim.Time
	sent       bool
	planned    bool
	everyTick  bool            // periodic, stepping: step every tick (else every period)
	times      agent.SendTimes // periodic: the phase and jitter draws
	first      sim.Time        // periodic: the nominal time of update 0; event: the first check
	k          int64           // periodic: the number of the next update
	next       sim.Time        // periodic: the time of update k
	nextCheck  sim.Time        // planned event sending: the next check time
	tick       sim.Duration    // the kernel tick
}

// beaconSpec is the beacon behaviour type (see Builtins).
var beaconSpec = agent.Spec{
	Name: "beacon",
	Doc: "Broadcasts the vehicle's state (kind state) periodically or when it moved `move_threshold` m / turned `turn_threshold` deg / after `heartbeat` (policy event), " +
		"staggered by group index; periodic updates start at a random point of the period (`phase` random, or zero) and each is delayed by a fresh uniform [0, `jitter`) (default 10% of the period; 0 = none), both seeded; in `format` planar (56 bytes) or 3d (72 bytes), zero-padded to `size` bytes if set (receivers with the same `size` strip the padding); receives others' updates into the node's beliefs, dropping duplicates and out-of-order updates and withholding beliefs older than `stale`.",
	Vehicle: true,
	Params: func() agent.Params {
		return &BeaconParams{Period: 100 * sim.Millisecond, Stagger: 10 * sim.Millisecond, Policy: Periodic,
			Check: 10 * sim.Millisecond, MoveThresh: 0.1, TurnThresh: 10, Heartbeat: sim.Second,
			Format: Format3D, Stale: sim.Second, Port: 5000, Phase: agent.PhaseRandom, Jitter: agent.DefaultJitter}
	},
	New: func(p agent.Params) agent.Behavior { return &Beacon{p: p.(*BeaconParams)} },
}

// check reports what Start refuses: a replayed network cannot serve
// event-triggered sending.
func (b *Beacon) check(ctx *agent.Context) error {
	if ctx.Network().Replay && b.p.Policy == EventTriggered {
		return fieldErr("policy", "event-triggered sending depends on the vehicle's state, so the network cannot run first: use network.mode: coupled")
	}
	return nil
}

// Start sets the stale limit of the node's beliefs.
func (b *Beacon) Start(ctx *agent.Context) error {
	if err := b.check(ctx); err != nil {
		return err
	}
	ctx.Beliefs().SetStale(b.p.Stale)
	offset := sim.Duration(ctx.Ref().Index) * b.p.Stagger
	nm := ctx.Network()
	b.planned = nm.Epoch > 0
	b.nextCheck, b.first = sim.Time(offset), sim.Time(offset)
	b.tick = ctx.Tick()
	b.buf = make([]byte, 0, b.size()) // the updates' bytes, reused
	if b.p.Policy == EventTriggered {
		return nil
	}
	b.times = agent.NewSendTimes(ctx, tagBeacon, b.p.Port, 0)
	b.first = b.first.Add(b.times.Phase(b.p.Phase, b.p.Period))
	b.k, b.next = 0, b.first.Add(b.delay(0))
	// Updates on the tick grid are sent by stepping every period; others
	// at their exact times from a step every tick.
	b.everyTick = b.p.Phase == agent.PhaseRandom || b.p.Jitter.Of(b.p.Period) > 0 || b.first%sim.Time(b.tick) != 0 || b.p.Period%b.tick != 0
	return nil
}

// delay returns periodic update k's jitter.
func (b *Beacon) delay(k int64) sim.Duration { return b.times.Delay(k, b.p.Jitter.Of(b.p.Period)) }

// Schedule returns the send period (periodic updates on the tick grid),
// the tick (periodic updates at exact times: a random phase or jitter) or
// the check period (event), offset by the first update or check; a beacon
// that plans its sends never steps.
func (b *Beacon) Schedule() (sim.Duration, sim.Duration) {
	switch {
	case b.planned:
		return 0, 0
	case b.p.Policy == EventTriggered:
		return b.p.Check, sim.Duration(b.first)
	case b.everyTick:
		return b.tick, 0
	}
	return b.p.Period, sim.Duration(b.first)
}

// NextStep implements agent.Sleeper: a periodic beacon stepping every
// tick (updates at exact times) needs the tick of its next update only.
func (b *Beacon) NextStep() sim.Time {
	if b.planned || b.p.Policy == EventTriggered || !b.everyTick {
		return 0
	}
	return b.next
}

// Step sends an update when the policy says so: the periodic updates due
// in the current tick, at their times, or an event-triggered one now.
func (b *Beacon) Step(ctx *agent.Context) {
	if b.p.Policy == EventTriggered {
		if b.due(ctx) {
			b.send(ctx, ctx.Now(), false)
		}
		return
	}
	b.periodic(ctx, ctx.Now().Add(b.tick), false)
}

// periodic sends the periodic updates due before end (deferred: planned,
// bound later), advancing the timetable.
func (b *Beacon) periodic(ctx *agent.Context, end sim.Time, deferred bool) {
	for b.next < end {
		if b.next >= ctx.Now() {
			b.send(ctx, b.next, deferred)
		}
		b.k++
		b.next = b.first.Add(sim.Duration(b.k)*b.p.Period + b.delay(b.k))
	}
}

// due decides the event-triggered policy on the current state: the first
// update, a move or turn past the thresholds, or the heartbeat.
func (b *Beacon) due(ctx *agent.Context) bool {
	if !b.sent {
		return true
	}
	tel := ctx.Telemetry()
	moved := tel.Pos.Dist(b.lastPos) >= b.p.MoveThresh
	turned := math.Abs(geom.WrapAngle(tel.Yaw-b.lastYaw))*180/math.Pi >= b.p.TurnThresh
	return moved || turned || ctx.Now().Sub(b.lastSent) >= b.p.Heartbeat
}

// send broadcasts update number b.seq at time at: with the current state
// as content, or deferred (bound at its time by Bind).
func (b *Beacon) send(ctx *agent.Context, at sim.Time, deferred bool) {
	m := agent.Message{Dst: netsim.Broadcast, Kind: netsim.KindState, Seq: b.seq, Port: b.p.Port}
	var tel vehicle.Telemetry
	if deferred {
		m.Deferred, m.Size = true, b.size()
	} else {
		tel = ctx.Telemetry()
		b.buf = b.content(ctx, &tel, b.seq, at, b.buf[:0])
		m.Payload = b.buf
	}
	if err := ctx.SendAt(at, m); err != nil {
		ctx.Log().Error("beacon send", "err", err)
		return
	}
	b.seq++
	if !deferred {
		b.lastPos, b.lastYaw, b.lastSent, b.sent = tel.Pos, tel.Yaw, at, true
	}
}

// maxStateSize bounds a padded state update: one unfragmented UDP
// datagram on Ethernet-sized links.
const maxStateSize = 1472

// formatSize returns the byte size of the format's encoding.
func (p *BeaconParams) formatSize() int {
	if p.Format == Planar {
		return agent.PlanarStateSize
	}
	return agent.State3DSize
}

// size returns the bytes of an update on the wire, padding included.
func (b *Beacon) size() int {
	return max(b.p.Size, b.p.formatSize())
}

// content appends update seq generated at tgen, carrying the vehicle's
// current state, in the beacon's format. Sending now and binding a planned
// update later both use it, so an update's bytes do not depend on how the
// run drives its network.
func (b *Beacon) content(ctx *agent.Context, tel *vehicle.Telemetry, seq uint32, tgen sim.Time, buf []byte) []byte {
	s := agent.State{ID: uint32(ctx.ID()), Seq: seq, TGen: tgen, Pos: tel.Pos, Vel: tel.Vel,
		Yaw: tel.Yaw, V: tel.Vel.NormXY(), Omega: tel.YawRate}
	if b.p.Format == Planar {
		if v, ok := ctx.ForwardSpeed(); ok {
			s.V = v
		} else if tel.Vel.X*math.Cos(tel.Yaw)+tel.Vel.Y*math.Sin(tel.Yaw) < 0 {
			// Signed forward speed: negative when moving backwards.
			s.V = -s.V
		}
		buf = s.AppendPlanar(buf)
	} else {
		buf = s.Append3D(buf)
	}
	for len(buf) < b.p.Size {
		buf = append(buf, 0)
	}
	return buf
}

// Plan hands over the updates of the epoch [now, end): periodic ones at
// their times, deferred; an event-triggered one at the epoch start if the
// policy says so on the state now.
func (b *Beacon) Plan(ctx *agent.Context, end sim.Time) {
	now := ctx.Now()
	if b.p.Policy == EventTriggered {
		if now >= b.first && b.nextCheck < end {
			b.nextCheck = now.Add(b.p.Check)
			if b.due(ctx) {
				b.send(ctx, now, false)
			}
		}
		return
	}
	b.periodic(ctx, end, true)
}

// Bind returns a planned update's content: the vehicle's state now.
func (b *Beacon) Bind(ctx *agent.Context, m *agent.Message, buf []byte) []byte {
	tel := ctx.Telemetry()
	return b.content(ctx, &tel, m.Seq, m.TGen, buf)
}

// Receive applies state updates to the node's beliefs.
func (b *Beacon) Receive(ctx *agent.Context, m *agent.Message) {
	if m.Kind != netsim.KindState {
		return
	}
	pl := m.Payload
	if own := b.p.formatSize(); b.p.Size > own && len(pl) == b.p.Size {
		pl = pl[:own] // this beacon's padded updates: the padding carries nothing
	}
	s, err := m.DecodedState(pl)
	if err != nil {
		b.decodeErrs++
		return
	}
	ctx.Beliefs().Apply(ctx.Now(), m.Src, s)
}

// ReceivesLocally implements LocalReceiver: Receive only decodes and
// updates the node's beliefs.
func (b *Beacon) ReceivesLocally() bool { return true }

// Finish reports the receiver-rule counts.
func (b *Beacon) Finish(ctx *agent.Context) map[string]any {
	c := ctx.Beliefs().Counts
	return map[string]any{"sent": b.seq, "applied": c[agent.Applied], "duplicate": c[agent.Duplicate],
		"out_of_order": c[agent.OutOfOrder], "undecodable": uint64(b.decodeErrs)}
}
