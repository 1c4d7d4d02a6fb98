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

// FormationGeometry says where the members of a leader-follower formation
// fly relative to the leader (group index 0). Offsets are in the world
// frame (x east, y north, z up), where the formation keeps its orientation
// while the leader turns; the formation behaviour's frame: heading reads
// them instead in the tracked vehicle's heading frame (x forward, y left,
// z up), so that the formation turns with it. The shape is
// laid out along the direction Heading (forward) and its right-hand side:
//
//   - line: follower k abreast of the leader, k*spacing to its right;
//   - column: follower k k*spacing behind the leader;
//   - echelon: follower k k*spacing behind-right of the leader, at 45 deg;
//   - vee: odd followers on the behind-left arm, even ones on the
//     behind-right arm, at 45 deg, spacing between neighbours on an arm.
//
// Offsets, when given, list follower 1..n-1's offsets explicitly (3D) and
// replace the shape.
type FormationGeometry struct {
	Shape   string      `yaml:"shape" json:"shape"`     // line, column, echelon or vee
	Spacing float64     `yaml:"spacing" json:"spacing"` // m between neighbouring slots
	Heading float64     `yaml:"heading" json:"heading"` // deg counter-clockwise from east: the formation's forward direction
	Offsets []geom.Vec3 `yaml:"offsets" json:"offsets"` // explicit offsets of followers 1..n-1 (m, world frame); replace shape
}

// Validate checks the geometry's fields.
func (g *FormationGeometry) Validate() fields.Errors {
	bad := fields.Errors{}
	if len(g.Offsets) > 0 {
		for i, o := range g.Offsets {
			if !o.IsFinite() || math.Abs(o.X) > vehicle.MaxWorldXY || math.Abs(o.Y) > vehicle.MaxWorldXY || math.Abs(o.Z) > vehicle.MaxWorldZ {
				bad["offsets"] = fmt.Sprintf("offset %d %v is not a plausible finite offset", i, o)
			}
		}
	} else {
		switch g.Shape {
		case "line", "column", "echelon", "vee":
		default:
			bad["shape"] = fmt.Sprintf("must be line, column, echelon or vee (or give offsets), got %q", g.Shape)
		}
	}
	if !(g.Spacing > 0) || g.Spacing > vehicle.MaxWorldXY {
		bad["spacing"] = fmt.Sprintf("must be > 0 m, got %v", g.Spacing)
	}
	if math.IsNaN(g.Heading) || math.IsInf(g.Heading, 0) {
		bad["heading"] = "must be a finite number"
	}
	return bad
}

// Slots returns the offsets of n formation members from the leader: slot 0
// (the leader's) is zero. It fails when explicit offsets cover fewer than
// n-1 followers.
func (g *FormationGeometry) Slots(n int) ([]geom.Vec3, error) {
	out := make([]geom.Vec3, max(n, 0))
	if len(g.Offsets) > 0 {
		if len(g.Offsets) < n-1 {
			return nil, fmt.Errorf("offsets lists %d followers, the group has %d", len(g.Offsets), n-1)
		}
		copy(out[1:], g.Offsets)
		return out, nil
	}
	h := g.Heading * math.Pi / 180
	fwd := geom.V(math.Cos(h), math.Sin(h), 0)
	right := geom.V(math.Sin(h), -math.Cos(h), 0)
	s := g.Spacing
	for k := 1; k < n; k++ {
		fk := float64(k)
		switch g.Shape {
		case "line":
			out[k] = right.Scale(fk * s)
		case "column":
			out[k] = fwd.Scale(-fk * s)
		case "echelon":
			out[k] = fwd.Scale(-1).Add(right).Scale(fk * s / math.Sqrt2)
		case "vee":
			m := float64((k + 1) / 2)
			side := right
			if k%2 == 1 {
				side = right.Scale(-1)
			}
			out[k] = fwd.Scale(-1).Add(side).Scale(m * s / math.Sqrt2)
		}
	}
	return out, nil
}

// FormationParams configure the formation behaviour.
type FormationParams struct {
	FormationGeometry `yaml:",inline" json:",inline"`
	Waypoints         []geom.Vec3  `yaml:"waypoints" json:"waypoints"`     // the leader's route
	Relative          bool         `yaml:"relative" json:"relative"`       // waypoints are offsets from the leader's start
	Loop              bool         `yaml:"loop" json:"loop"`               // the leader starts its route over after the last point
	Speed             float64      `yaml:"speed" json:"speed"`             // leader speed, m/s
	Accept            float64      `yaml:"accept" json:"accept"`           // leader waypoint arrival radius, m
	Start             sim.Duration `yaml:"start" json:"start"`             // when the leader sets off (followers take their slots before)
	Ramp              sim.Duration `yaml:"ramp" json:"ramp"`               // the leader's speed limit grows from 0 to speed over this time after start (0: at once)
	Follow            string       `yaml:"follow" json:"follow"`           // whose belief a follower tracks: leader or predecessor
	Gain              float64      `yaml:"gain" json:"gain"`               // follower position gain, 1/s
	MaxSpeed          float64      `yaml:"max_speed" json:"max_speed"`     // follower speed limit, m/s
	Extrapolate       bool         `yaml:"extrapolate" json:"extrapolate"` // move the belief on by its velocity times its age
	Period            sim.Duration `yaml:"period" json:"period"`           // controller period
	// Frame says how a follower reads its slot: world (the offsets are
	// world-frame, the default), heading (the offsets are in the tracked
	// vehicle's heading frame, turned with its believed course) or tow
	// (the follower keeps the distance |offset| from the tracked vehicle
	// along the line between them, like a towed body: a chain that turns
	// with its leader).
	Frame string `yaml:"frame" json:"frame"`
	// HeadingSpeed is the believed horizontal speed, m/s, below which the
	// tracked vehicle's course is not read from its velocity: the last one
	// is held (before it first moves that fast, its believed yaw counts).
	HeadingSpeed float64 `yaml:"heading_speed" json:"heading_speed"`
}

// Frames of the formation behaviour's offsets (FormationParams.Frame).
const (
	FrameWorld   = "world"
	FrameHeading = "heading"
	FrameTow     = "tow"
)

// Validate checks the parameters.
func (p *FormationParams) Validate() fields.Errors {
	bad := p.FormationGeometry.Validate()
	checkRoute(bad, p.Waypoints, p.Speed, p.Accept)
	for _, w := range p.Waypoints {
		if !w.IsFinite() {
			bad["waypoints"] = "must be finite"
		}
	}
	switch p.Follow {
	case "leader", "predecessor":
	default:
		bad["follow"] = fmt.Sprintf("must be leader or predecessor, got %q", p.Follow)
	}
	if !(p.Gain > 0) || math.IsInf(p.Gain, 0) {
		bad["gain"] = fmt.Sprintf("must be > 0, got %v", p.Gain)
	}
	if !(p.MaxSpeed > 0) || p.MaxSpeed > vehicle.MaxCommandSpeed {
		bad["max_speed"] = fmt.Sprintf("must be in (0, %v] m/s, got %v", float64(vehicle.MaxCommandSpeed), p.MaxSpeed)
	}
	nonNegative(bad, "start", p.Start)
	nonNegative(bad, "ramp", p.Ramp)
	positive(bad, "period", p.Period)
	switch p.Frame {
	case FrameWorld, FrameHeading:
	case FrameTow:
		if p.Follow != "predecessor" {
			bad["frame"] = fmt.Sprintf("tow makes a chain: it needs follow: predecessor, got follow: %q", p.Follow)
		}
	default:
		bad["frame"] = fmt.Sprintf("must be world, heading or tow, got %q", p.Frame)
	}
	if !(p.HeadingSpeed > 0) || p.HeadingSpeed > vehicle.MaxCommandSpeed {
		bad["heading_speed"] = fmt.Sprintf("must be in (0, %v] m/s, got %v", float64(vehicle.MaxCommandSpeed), p.HeadingSpeed)
	}
	return bad
}

// Formation is a 3D leader-follower formation for multirotors. The node
// with group index 0 leads: it holds its position until `start`, then
// flies through the waypoints (looping if asked). Follower k keeps the
// slot leader + slot_k (FormationGeometry): it reads its belief of the
// leader (or, with follow: predecessor, of follower k-1, aiming at that
// belief + slot_k - slot_{k-1}), moves the believed position on by the
// believed velocity times the belief's age, and commands the believed
// velocity plus gain times its distance to the slot, capped at max_speed.
// It reads beliefs only, never the other vehicles' true states; without a
// fresh belief it holds its position (events belief_lost, belief_ok).
//
// With frame: heading the slot offset is turned by the tracked vehicle's
// course, the direction of its believed horizontal velocity; below
// heading_speed (hovering, stopping at a corner) the last course is held,
// and until the tracked vehicle first moves that fast its believed yaw
// stands in. With frame: tow the follower only keeps its distance |slot_k -
// slot_tracked| from the tracked vehicle (TowLaw): it flies along the line
// between them, so a column towed by its predecessors turns with the
// leader, cutting its corners a little more at every link.
type Formation struct {
	p      *FormationParams
	leader bool
	target netsim.NodeID // whose belief the follower tracks
	rel    geom.Vec3     // the follower's slot relative to the tracked node
	// The tracked vehicle's believed course (frame heading).
	course    float64
	courseSet bool    // course comes from a velocity, not a yaw
	dist      float64 // |rel|: the tow length (frame tow)
	route     []geom.Vec3
	wp        int
	flying    bool // the leader has set off
	done      bool // the leader finished its route
	noInfo    bool
	beliefSteps,
	staleSteps uint64
}

// formationSpec is the formation behaviour type (see Builtins).
var formationSpec = agent.Spec{
	Name: "formation",
	Doc: "3D leader-follower formation for multirotors: group index 0 sets off at `start` through `waypoints` (offsets from its start if `relative`, looping if `loop`) at `speed`; " +
		"follower k holds the slot leader + offset k, the offsets (world frame) laid out by `shape` (line, column, echelon, vee) with `spacing` m along `heading` deg, or listed in `offsets`. " +
		"A follower tracks its belief of the leader (`follow: leader`) or of follower k-1 (`predecessor`), moved on by the believed velocity times the belief's age (`extrapolate`), " +
		"its offset read in the world frame (`frame: world`), in the tracked vehicle's heading frame (`heading`: x along its believed course, held below `heading_speed`), or as a tow (`tow`: the follower keeps |offset| from that vehicle along the line between them, a chain that turns with its leader), " +
		"commanding that velocity plus `gain` times its distance to the slot (at most `max_speed`); without a fresh belief it holds its position. Needs a beacon (format 3d) on the same vehicles.",
	Vehicle: true,
	Params: func() agent.Params {
		return &FormationParams{FormationGeometry: FormationGeometry{Shape: "line", Spacing: 10}, Loop: true, Speed: 3, Accept: 1,
			Start: 5 * sim.Second, Follow: "leader", Gain: 2, MaxSpeed: 8, Extrapolate: true, Period: 50 * sim.Millisecond,
			Frame: FrameWorld, HeadingSpeed: 0.5}
	},
	New: func(p agent.Params) agent.Behavior { return &Formation{p: p.(*FormationParams)} },
}

// Start resolves the route (leader) or the tracked node and slot
// (followers).
func (f *Formation) Start(ctx *agent.Context) error {
	ref := ctx.Ref()
	ids := ctx.Group(ref.Group)
	slots, err := f.p.Slots(len(ids))
	if err != nil {
		return fieldErr("offsets", err.Error())
	}
	f.leader = ref.Index == 0
	if f.leader {
		start := ctx.Telemetry().Pos
		f.route = make([]geom.Vec3, len(f.p.Waypoints))
		for i, w := range f.p.Waypoints {
			if f.p.Relative {
				w = w.Add(start)
			}
			f.route[i] = w
		}
		return nil
	}
	k := ref.Index
	ref0 := 0
	if f.p.Follow == "predecessor" {
		ref0 = k - 1
	}
	f.target = ids[ref0]
	f.rel = slots[k].Sub(slots[ref0])
	f.dist = f.rel.Norm()
	return nil
}

// Schedule returns the controller period.
func (f *Formation) Schedule() (sim.Duration, sim.Duration) { return f.p.Period, 0 }

// Step flies the leader's route or the follower law.
func (f *Formation) Step(ctx *agent.Context) {
	if f.leader {
		f.lead(ctx)
		return
	}
	now := ctx.Now()
	b, ok := ctx.Beliefs().Get(now, f.target)
	if !ok {
		f.staleSteps++
		if !f.noInfo {
			f.noInfo = true
			ctx.Event("belief_lost", fmt.Sprintf("%d", f.target))
			ctx.Command(vehicle.Command{Kind: vehicle.CmdHold})
		}
		return
	}
	f.beliefSteps++
	if f.noInfo {
		f.noInfo = false
		ctx.Event("belief_ok", fmt.Sprintf("%d", f.target))
	}
	tel := ctx.Telemetry()
	age := 0.0
	if f.p.Extrapolate {
		age = max(now.Sub(b.TGen).Seconds(), 0)
	}
	var v geom.Vec3
	switch f.p.Frame {
	case FrameWorld:
		v = FormationLaw(tel.Pos, b.Pos, b.Vel, age, f.rel, f.p.Gain, f.p.MaxSpeed)
	case FrameHeading:
		f.follow(&b)
		v = FormationLaw(tel.Pos, b.Pos, b.Vel, age, TurnXY(f.rel, f.course), f.p.Gain, f.p.MaxSpeed)
	case FrameTow:
		v = TowLaw(tel.Pos, b.Pos.Add(b.Vel.Scale(age)), b.Vel, f.dist, f.p.Gain, f.p.MaxSpeed)
	}
	ctx.Command(vehicle.Command{Kind: vehicle.CmdVelocity, Vel: v, Yaw: nan})
}

// TowLaw is the follower's velocity command on a tow line: the aim point
// is dist from ref (the tracked vehicle) on the line from ref to pos, and
// the command is the component of refVel along that line plus gain times
// the distance from pos to the aim point, its norm capped at maxSpeed.
func TowLaw(pos, ref, refVel geom.Vec3, dist, gain, maxSpeed float64) geom.Vec3 {
	r := ref.Sub(pos)
	n := r.Norm()
	if !(n > 1e-9) {
		return geom.Vec3{}
	}
	u := r.Scale(1 / n)
	return u.Scale(u.Dot(refVel) + gain*(n-dist)).ClampNorm(maxSpeed)
}

// TurnXY turns v by yaw rad counter-clockwise about the vertical: an
// offset in a heading frame (x forward, y left) to the world frame.
func TurnXY(v geom.Vec3, yaw float64) geom.Vec3 {
	sn, cs := math.Sincos(yaw)
	return geom.Vec3{X: v.X*cs - v.Y*sn, Y: v.X*sn + v.Y*cs, Z: v.Z}
}

// follow updates the tracked vehicle's believed course from belief b: the
// direction of its horizontal velocity when that is at least
// heading_speed, else the last such direction, else its yaw.
func (f *Formation) follow(b *agent.State) {
	if math.Hypot(b.Vel.X, b.Vel.Y) >= f.p.HeadingSpeed {
		f.course, f.courseSet = math.Atan2(b.Vel.Y, b.Vel.X), true
	} else if !f.courseSet {
		f.course = b.Yaw
	}
}

// FormationLaw is the follower's velocity command: with the tracked node
// believed at pos ref moving at refVel, age seconds ago, the slot is
// ref + refVel*age + rel; the command is refVel plus gain times the
// distance from pos to the slot, its norm capped at maxSpeed.
func FormationLaw(pos, ref, refVel geom.Vec3, age float64, rel geom.Vec3, gain, maxSpeed float64) geom.Vec3 {
	slot := ref.Add(refVel.Scale(age)).Add(rel)
	return refVel.Add(slot.Sub(pos).Scale(gain)).ClampNorm(maxSpeed)
}

// lead holds until start, then flies the route.
func (f *Formation) lead(ctx *agent.Context) {
	if f.done || ctx.Now() < sim.Time(f.p.Start) {
		return
	}
	if !f.flying {
		f.flying = true
		ctx.Event("formation_start", "")
		f.goTo(ctx)
		return
	}
	if ctx.Telemetry().Pos.Dist(f.route[f.wp]) > f.p.Accept {
		if ctx.Now() <= sim.Time(f.p.Start+f.p.Ramp) {
			f.goTo(ctx) // a higher speed limit
		}
		return
	}
	f.wp++
	if f.wp == len(f.route) {
		if !f.p.Loop {
			f.done = true
			ctx.Event("mission_done", "")
			return
		}
		f.wp = 0
	}
	f.goTo(ctx)
}

// goTo sends the leader to its waypoint at speed, or during the ramp at
// the ramp's share of it (at least 1%: a goto speed of 0 has no limit).
func (f *Formation) goTo(ctx *agent.Context) {
	speed := f.p.Speed
	if since := ctx.Now().Sub(sim.Time(f.p.Start)); since < f.p.Ramp {
		speed *= max(float64(since)/float64(f.p.Ramp), 0.01)
	}
	ctx.Command(vehicle.Command{Kind: vehicle.CmdGoto, Pos: f.route[f.wp], Speed: speed, Yaw: nan})
}

// Finish reports, for a follower, how many steps found a fresh belief of
// the tracked node and how many held for want of one.
func (f *Formation) Finish(ctx *agent.Context) map[string]any {
	if f.leader {
		return map[string]any{"leader": true, "waypoint": f.wp, "done": f.done}
	}
	return map[string]any{"tracks": int(f.target), "belief_steps": f.beliefSteps, "stale_steps": f.staleSteps}
}
