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

// PlatoonParams configure the leader-follower platoon of the netbots
// impairment study (docs/scenario.md, Platoon).
type PlatoonParams struct {
	Waypoints []geom.Vec3  `yaml:"waypoints" json:"waypoints"`       // the leader's loop
	Speed     float64      `yaml:"speed" json:"speed"`               // leader speed, m/s
	Gap       float64      `yaml:"gap" json:"gap"`                   // follower distance to its predecessor, m
	GapGain   float64      `yaml:"gap_gain" json:"gap_gain"`         // v = v_pred + gap_gain*(dist - gap)
	HeadGain  float64      `yaml:"heading_gain" json:"heading_gain"` // omega = heading_gain * heading error
	MaxSpeed  float64      `yaml:"max_speed" json:"max_speed"`       // follower speed limit, m/s
	Accept    float64      `yaml:"accept" json:"accept"`             // leader waypoint arrival radius, m
	Period    sim.Duration `yaml:"period" json:"period"`             // controller period
	// MinSpeed is the lower end of the speed command, m/s: 0 (the
	// default) never backs up; a negative value lets a robot reverse.
	MinSpeed float64 `yaml:"min_speed" json:"min_speed"`
	// MaxTurn clips the turn rate command to ±max_turn rad/s; 0 (the
	// default) does not clip.
	MaxTurn float64 `yaml:"max_turn" json:"max_turn"`
	// CosSpeed scales the speed command by the cosine of the heading
	// error before it is clipped, so that a robot facing away from its
	// target slows down, and reverses past 90 degrees when min_speed < 0.
	CosSpeed bool `yaml:"cos_speed" json:"cos_speed"`
	// Leader says how the leader drives to its waypoints: LeaderGoto
	// (the default) hands each waypoint to the vehicle's goto at `speed`,
	// which slows down near it (the groundbot within speed/pos_gain);
	// LeaderDrive steers it with this behaviour's own law, at `speed`
	// without slowing down near a waypoint.
	Leader string `yaml:"leader" json:"leader"`
}

// How the platoon's leader drives (PlatoonParams.Leader).
const (
	// LeaderGoto hands every waypoint to the vehicle's goto.
	LeaderGoto = "goto"
	// LeaderDrive drives the leader with the platoon's steering law.
	LeaderDrive = "drive"
)

// Validate checks the parameters.
func (p *PlatoonParams) Validate() fields.Errors {
	bad := fields.Errors{}
	if len(p.Waypoints) < 2 {
		bad["waypoints"] = fmt.Sprintf("the leader needs at least 2 waypoints to loop through, got %d", len(p.Waypoints))
	}
	for name, v := range map[string]float64{"speed": p.Speed, "gap": p.Gap, "gap_gain": p.GapGain,
		"heading_gain": p.HeadGain, "max_speed": p.MaxSpeed, "accept": p.Accept} {
		if !(v > 0) {
			bad[name] = fmt.Sprintf("must be > 0, got %v", v)
		}
	}
	positive(bad, "period", p.Period)
	if !(p.MaxTurn >= 0) || math.IsInf(p.MaxTurn, 0) {
		bad["max_turn"] = fmt.Sprintf("must be a turn rate >= 0 rad/s (0: unlimited), got %v", p.MaxTurn)
	}
	if !(p.MinSpeed <= 0) || math.IsInf(p.MinSpeed, 0) {
		bad["min_speed"] = fmt.Sprintf("must be <= 0 m/s (0: never reverse), got %v", p.MinSpeed)
	}
	if p.Leader != LeaderGoto && p.Leader != LeaderDrive {
		bad["leader"] = fmt.Sprintf("must be %s or %s, got %q", LeaderGoto, LeaderDrive, p.Leader)
	}
	return bad
}

// Platoon is the netbots study's controller. The node with group index 0 leads and
// loops through the waypoints (by the vehicle's goto, or with leader:
// drive by SteerLaw at `speed`); node i > 0 chases its belief of node i-1
// of the same group with FollowLaw: v = v_pred + gap_gain*(dist - gap)
// and a heading P-controller. It reads beliefs only, never the network or
// the other robots' true state; without a fresh belief it stops.
type Platoon struct {
	p      *PlatoonParams
	leader bool
	pred   netsim.NodeID
	wp     int
	noInfo bool
	stale  uint64 // follower steps without a fresh belief
}

// platoonSpec is the platoon behaviour type (see Builtins).
var platoonSpec = agent.Spec{
	Name: "platoon",
	Doc: "Leader-follower platoon (the netbots study): group index 0 loops through `waypoints` at `speed`; index i chases its belief of index i-1 " +
		"holding `gap` m with v = v_pred + gap_gain*(dist - gap) and a heading P-controller; it stops when the belief is missing or stale. Needs a beacon on the same vehicles. " +
		"The speed is clipped to [`min_speed`, `max_speed`] (times cos(heading error) first with `cos_speed`), the turn rate to ±`max_turn` (0: unclipped); " +
		"`leader`: goto (the vehicle's goto per waypoint, slowing near it) or drive (the same steering law at `speed`, no slowing).",
	Vehicle: true,
	Params: func() agent.Params {
		return &PlatoonParams{Speed: 0.5, Gap: 1.0, GapGain: 1.2, HeadGain: 2.0, MaxSpeed: 1.0,
			Accept: 0.2, Period: 10 * sim.Millisecond, Leader: LeaderGoto}
	},
	New: func(p agent.Params) agent.Behavior { return &Platoon{p: p.(*PlatoonParams)} },
}

// Start finds the predecessor.
func (pl *Platoon) Start(ctx *agent.Context) error {
	ref := ctx.Ref()
	pl.leader = ref.Index == 0
	if !pl.leader {
		ids := ctx.Group(ref.Group)
		pl.pred = ids[ref.Index-1]
	} else if pl.p.Leader == LeaderGoto {
		pl.cmd(ctx)
	} else {
		pl.lead(ctx)
	}
	return nil
}

// Schedule returns the controller period.
func (pl *Platoon) Schedule() (sim.Duration, sim.Duration) { return pl.p.Period, 0 }

func (pl *Platoon) cmd(ctx *agent.Context) {
	ctx.Command(vehicle.Command{Kind: vehicle.CmdGoto, Pos: pl.p.Waypoints[pl.wp], Speed: pl.p.Speed, Yaw: nan})
}

// Step runs the leader's waypoint loop or the follower law.
func (pl *Platoon) Step(ctx *agent.Context) {
	tel := ctx.Telemetry()
	if pl.leader {
		if pl.p.Leader == LeaderDrive {
			pl.lead(ctx)
			return
		}
		if tel.Pos.Sub(pl.p.Waypoints[pl.wp]).NormXY() < pl.p.Accept {
			pl.wp = (pl.wp + 1) % len(pl.p.Waypoints)
			pl.cmd(ctx)
		}
		return
	}
	b, ok := ctx.Beliefs().Get(ctx.Now(), pl.pred)
	if !ok {
		pl.stale++
		if !pl.noInfo {
			pl.noInfo = true
			ctx.Event("belief_lost", fmt.Sprintf("%d", pl.pred))
		}
		ctx.Command(vehicle.Command{Kind: vehicle.CmdDrive})
		return
	}
	if pl.noInfo {
		pl.noInfo = false
		ctx.Event("belief_ok", fmt.Sprintf("%d", pl.pred))
	}
	v, w := FollowLaw(pl.p, tel.Pos, tel.Yaw, b.Pos, b.V)
	ctx.Command(vehicle.Command{Kind: vehicle.CmdDrive, V: v, Omega: w})
}

// lead steers the leader (leader: drive) to its current waypoint, moving
// on to the next one within `accept` of it.
func (pl *Platoon) lead(ctx *agent.Context) {
	tel := ctx.Telemetry()
	if tel.Pos.Sub(pl.p.Waypoints[pl.wp]).NormXY() < pl.p.Accept {
		pl.wp = (pl.wp + 1) % len(pl.p.Waypoints)
	}
	v, w := SteerLaw(pl.p, tel.Pos, tel.Yaw, pl.p.Waypoints[pl.wp], pl.p.Speed)
	ctx.Command(vehicle.Command{Kind: vehicle.CmdDrive, V: v, Omega: w})
}

// FollowLaw is the netbots study's follower controller: with the predecessor
// (believed) at predPos moving at predV, a follower at pos heading yaw drives
// at v = predV + gap_gain*(dist - gap) and steers towards the predecessor
// by SteerLaw.
func FollowLaw(p *PlatoonParams, pos geom.Vec3, yaw float64, predPos geom.Vec3, predV float64) (v, omega float64) {
	dx, dy := predPos.X-pos.X, predPos.Y-pos.Y
	dist := math.Sqrt(dx*dx + dy*dy)
	return SteerLaw(p, pos, yaw, predPos, predV+p.GapGain*(dist-p.Gap))
}

// SteerLaw drives a robot at pos heading yaw towards target at speed v:
// it turns at heading_gain times the heading error, clipped to
// ±max_turn (when > 0), and drives at v (times the cosine of the heading
// error with cos_speed) clipped to [min_speed, max_speed].
func SteerLaw(p *PlatoonParams, pos geom.Vec3, yaw float64, target geom.Vec3, v float64) (speed, omega float64) {
	herr := geom.WrapAngle(math.Atan2(target.Y-pos.Y, target.X-pos.X) - yaw)
	if p.CosSpeed {
		v *= math.Cos(herr)
	}
	omega = p.HeadGain * herr
	if p.MaxTurn > 0 {
		omega = math.Max(-p.MaxTurn, math.Min(p.MaxTurn, omega))
	}
	return math.Max(p.MinSpeed, math.Min(p.MaxSpeed, v)), omega
}

// Finish reports how many follower steps found no fresh belief of the
// predecessor (the follower stood still).
func (pl *Platoon) Finish(ctx *agent.Context) map[string]any {
	if pl.leader {
		return map[string]any{"leader": true}
	}
	return map[string]any{"stale_steps": pl.stale}
}
