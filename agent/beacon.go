package agent

import (
	"fmt"
	"math"

	"skyloop/geom"
	"skyloop/netsim"
	"skyloop/sim"
)

var nan = math.NaN()

// BeaconParams configure the beacon behaviour.
type BeaconParams struct {
	Period     sim.Duration `yaml:"period" json:"period"`                 // periodic policy: send period
	Stagger    sim.Duration `yaml:"stagger" json:"stagger"`               // node with group index i starts at i*stagger
	Policy     string       `yaml:"policy" json:"policy"`                 // periodic or event
	Check      sim.Duration `yaml:"check" json:"check"`                   // event policy: how often the triggers are checked
	MoveThresh float64      `yaml:"move_threshold" json:"move_threshold"` // event policy: send after moving this far (m)
	TurnThresh float64      `yaml:"turn_threshold" json:"turn_threshold"` // event policy: or turning this much (deg)
	Heartbeat  sim.Duration `yaml:"heartbeat" json:"heartbeat"`           // event policy: or after this long without sending
	Format     string       `yaml:"format" json:"format"`                 // planar (56 bytes, SPEC.md C) or 3d (72 bytes)
	Stale      sim.Duration `yaml:"stale" json:"stale"`                   // beliefs older than this are withheld
	Port       uint16       `yaml:"port" json:"port"`
}

// Validate checks the parameters.
func (p *BeaconParams) Validate() map[string]string {
	bad := map[string]string{}
	positive(bad, "period", p.Period)
	nonNegative(bad, "stagger", p.Stagger)
	positive(bad, "stale", p.Stale)
	switch p.Policy {
	case "periodic":
	case "event":
		positive(bad, "check", p.Check)
		positive(bad, "heartbeat", p.Heartbeat)
		if !(p.MoveThresh > 0) {
			bad["move_threshold"] = fmt.Sprintf("must be > 0, got %v", p.MoveThresh)
		}
		if !(p.TurnThresh > 0) {
			bad["turn_threshold"] = fmt.Sprintf("must be > 0, got %v", p.TurnThresh)
		}
	default:
		bad["policy"] = fmt.Sprintf("must be periodic or event, got %q", p.Policy)
	}
	if p.Format != "planar" && p.Format != "3d" {
		bad["format"] = fmt.Sprintf("must be planar or 3d, got %q", p.Format)
	}
	return bad
}

// Beacon broadcasts the vehicle's own state (kind "state") and keeps the
// node's beliefs about the others from the updates it receives, applying
// SPEC.md C's receiver rules.
type Beacon struct {
	p          *BeaconParams
	seq        uint32
	buf        []byte
	lastPos    geom.Vec3
	lastYaw    float64
	lastSent   sim.Time
	sent       bool
	offset     sim.Duration
	decodeErrs uint64
}

func init() {
	Register(Spec{
		Name: "beacon",
		Doc: "Broadcasts the vehicle's state (kind state) periodically or when it moved `move_threshold` m / turned `turn_threshold` deg / after `heartbeat` (policy event), " +
			"staggered by group index; receives others' updates into the node's beliefs, dropping duplicates and out-of-order updates and withholding beliefs older than `stale`.",
		Vehicle: true,
		Params: func() Params {
			return &BeaconParams{Period: 100 * sim.Millisecond, Stagger: 10 * sim.Millisecond, Policy: "periodic",
				Check: 10 * sim.Millisecond, MoveThresh: 0.1, TurnThresh: 10, Heartbeat: sim.Second,
				Format: "3d", Stale: sim.Second, Port: 5000}
		},
		New: func(p Params) Behavior { return &Beacon{p: p.(*BeaconParams)} },
	})
}

// Start sets the stale limit of the node's beliefs.
func (b *Beacon) Start(ctx *Context) error {
	ctx.Beliefs().SetStale(b.p.Stale)
	b.offset = sim.Duration(ctx.Ref().Index) * b.p.Stagger
	return nil
}

// Schedule returns the send period (periodic) or check period (event),
// offset by the node's group index times the stagger.
func (b *Beacon) Schedule() (sim.Duration, sim.Duration) {
	period := b.p.Period
	if b.p.Policy == "event" {
		period = b.p.Check
	}
	return period, b.offset
}

// Step sends an update when the policy says so.
func (b *Beacon) Step(ctx *Context) {
	tel := ctx.Telemetry()
	now := ctx.Now()
	if b.p.Policy == "event" && b.sent {
		moved := tel.Pos.Dist(b.lastPos) >= b.p.MoveThresh
		turned := math.Abs(geom.WrapAngle(tel.Yaw-b.lastYaw))*180/math.Pi >= b.p.TurnThresh
		if !moved && !turned && now.Sub(b.lastSent) < b.p.Heartbeat {
			return
		}
	}
	s := State{ID: uint32(ctx.ID()), Seq: b.seq, TGen: now, Pos: tel.Pos, Vel: tel.Vel,
		Yaw: tel.Yaw, V: tel.Vel.NormXY(), Omega: tel.YawRate}
	if b.p.Format == "planar" {
		// Signed forward speed: negative when moving backwards.
		if tel.Vel.X*math.Cos(tel.Yaw)+tel.Vel.Y*math.Sin(tel.Yaw) < 0 {
			s.V = -s.V
		}
		b.buf = s.AppendPlanar(b.buf[:0])
	} else {
		b.buf = s.Append3D(b.buf[:0])
	}
	if err := ctx.Send(Message{Dst: netsim.Broadcast, Kind: netsim.KindState, Seq: b.seq, Port: b.p.Port, Payload: b.buf}); err != nil {
		ctx.Log().Error("beacon send", "err", err)
		return
	}
	b.seq++
	b.lastPos, b.lastYaw, b.lastSent, b.sent = tel.Pos, tel.Yaw, now, true
}

// Receive applies state updates to the node's beliefs.
func (b *Beacon) Receive(ctx *Context, m *Message) {
	if m.Kind != netsim.KindState {
		return
	}
	s, err := DecodeState(m.Payload)
	if err != nil {
		b.decodeErrs++
		return
	}
	ctx.Beliefs().Apply(ctx.Now(), m.Src, s)
}

// Finish reports the receiver-rule counts.
func (b *Beacon) Finish(ctx *Context) map[string]any {
	c := ctx.Beliefs().Counts
	return map[string]any{"sent": b.seq, "applied": c[Applied], "duplicate": c[Duplicate],
		"out_of_order": c[OutOfOrder], "undecodable": b.decodeErrs}
}
