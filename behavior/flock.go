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

// FlockParams configure the flock behaviour.
type FlockParams struct {
	Radius      float64      `yaml:"radius" json:"radius"`               // neighbours within this distance count for alignment and cohesion, m
	Spacing     float64      `yaml:"spacing" json:"spacing"`             // separation acts on neighbours closer than this, m
	Separation  float64      `yaml:"separation" json:"separation"`       // weight: m/s per m of intrusion, summed over neighbours
	Alignment   float64      `yaml:"alignment" json:"alignment"`         // weight on (neighbours' mean velocity - own velocity)
	Cohesion    float64      `yaml:"cohesion" json:"cohesion"`           // weight on (neighbours' centroid - own position), 1/s
	Migrate     geom.Vec3    `yaml:"migrate" json:"migrate"`             // the flock's migration velocity, m/s (world frame)
	MaxSpeed    float64      `yaml:"max_speed" json:"max_speed"`         // speed limit, m/s
	Altitude    float64      `yaml:"altitude" json:"altitude"`           // centre of the altitude band, m
	AltBand     float64      `yaml:"altitude_band" json:"altitude_band"` // half-width of the band, m
	AltGain     float64      `yaml:"altitude_gain" json:"altitude_gain"` // vertical return speed per m outside the band, 1/s
	Extrapolate bool         `yaml:"extrapolate" json:"extrapolate"`     // move beliefs on by their velocity times their age
	Period      sim.Duration `yaml:"period" json:"period"`               // controller period
}

// Validate checks the parameters.
func (p *FlockParams) Validate() fields.Errors {
	bad := fields.Errors{}
	for name, v := range map[string]float64{"radius": p.Radius, "spacing": p.Spacing, "max_speed": p.MaxSpeed, "altitude_gain": p.AltGain} {
		if !(v > 0) || math.IsInf(v, 0) {
			bad[name] = fmt.Sprintf("must be > 0, got %v", v)
		}
	}
	for name, v := range map[string]float64{"separation": p.Separation, "alignment": p.Alignment, "cohesion": p.Cohesion, "altitude_band": p.AltBand} {
		if !(v >= 0) || math.IsInf(v, 0) {
			bad[name] = fmt.Sprintf("must be >= 0, got %v", v)
		}
	}
	if p.MaxSpeed > vehicle.MaxCommandSpeed {
		bad["max_speed"] = fmt.Sprintf("must be at most %v m/s, got %v", float64(vehicle.MaxCommandSpeed), p.MaxSpeed)
	}
	if !p.Migrate.IsFinite() || p.Migrate.Norm() > vehicle.MaxCommandSpeed {
		bad["migrate"] = fmt.Sprintf("must be a finite velocity of at most %v m/s, got %v", float64(vehicle.MaxCommandSpeed), p.Migrate)
	}
	if math.IsNaN(p.Altitude) || math.Abs(p.Altitude) > vehicle.MaxWorldZ {
		bad["altitude"] = fmt.Sprintf("must be a plausible altitude, got %v", p.Altitude)
	}
	positive(bad, "period", p.Period)
	return bad
}

// Flock is Reynolds flocking for multirotors over the network: every
// member of the group steers by its beliefs of the others (the beacon's
// receiver rules apply: stale beliefs are withheld, duplicates and
// out-of-order updates dropped), never by their true states. Each step it
// takes the neighbours whose (extrapolated) believed position lies within
// `radius`, in id order, and commands the velocity
//
//	migrate
//	+ separation * sum over neighbours closer than spacing of (spacing - d) * (away from it)
//	+ alignment * (neighbours' mean velocity - own velocity)
//	+ cohesion * (neighbours' centroid - own position)
//	+ altitude_gain * (distance back into the altitude band, vertical)
//
// capped at max_speed. Without neighbours it flies the migration velocity
// alone (events belief_lost when the last neighbour is lost, belief_ok
// when one is back).
type Flock struct {
	p       *FlockParams
	self    netsim.NodeID
	members []netsim.NodeID
	alone   bool   // the last step found no neighbour after some had been found
	met     bool   // some neighbour has been found
	nbSum   uint64 // neighbours counted over all steps
	steps   uint64
	lonely  uint64 // steps without neighbours
}

// flockSpec is the flock behaviour type (see Builtins).
var flockSpec = agent.Spec{
	Name: "flock",
	Doc: "Reynolds flocking for multirotors, from beliefs only: neighbours of the group within `radius` m (believed positions moved on by their velocity times their age if `extrapolate`) " +
		"steer the vehicle by separation (weight `separation`, from those closer than `spacing` m), alignment (weight `alignment`, to their mean velocity), cohesion (weight `cohesion`, to their centroid), " +
		"plus the migration velocity `migrate` and an altitude band (`altitude` +- `altitude_band` m, `altitude_gain`); speed capped at `max_speed`. Needs a beacon (format 3d) on the same vehicles.",
	Vehicle: true,
	Params: func() agent.Params {
		return &FlockParams{Radius: 15, Spacing: 5, Separation: 4, Alignment: 0.5, Cohesion: 0.1, Migrate: geom.V(2, 0, 0),
			MaxSpeed: 6, Altitude: 10, AltBand: 1, AltGain: 1, Extrapolate: true, Period: 50 * sim.Millisecond}
	},
	New: func(p agent.Params) agent.Behavior { return &Flock{p: p.(*FlockParams)} },
}

// Start finds the other members of the group.
func (f *Flock) Start(ctx *agent.Context) error {
	f.self = ctx.ID()
	for _, id := range ctx.Group(ctx.Ref().Group) {
		if id != f.self {
			f.members = append(f.members, id)
		}
	}
	return nil
}

// Schedule returns the controller period.
func (f *Flock) Schedule() (sim.Duration, sim.Duration) { return f.p.Period, 0 }

// Step applies the rules to the current beliefs.
func (f *Flock) Step(ctx *agent.Context) {
	now := ctx.Now()
	tel := ctx.Telemetry()
	p := f.p
	bs := ctx.Beliefs()
	var sep, velSum, posSum geom.Vec3
	n := 0
	for _, id := range f.members {
		b, ok := bs.Get(now, id)
		if !ok {
			continue
		}
		pos := b.Pos
		if p.Extrapolate {
			pos = pos.Add(b.Vel.Scale(max(now.Sub(b.TGen).Seconds(), 0)))
		}
		d := pos.Dist(tel.Pos)
		if d > p.Radius {
			continue
		}
		n++
		velSum = velSum.Add(b.Vel)
		posSum = posSum.Add(pos)
		if d < p.Spacing {
			var away geom.Vec3
			if d > 1e-9 {
				away = tel.Pos.Sub(pos).Scale(1 / d)
			} else if f.self < id { // on top of each other: split by id
				away = geom.V(-1, 0, 0)
			} else {
				away = geom.V(1, 0, 0)
			}
			sep = sep.Add(away.Scale(p.Spacing - d))
		}
	}
	f.steps++
	f.nbSum += uint64(n)
	v := p.Migrate
	if n > 0 {
		inv := 1 / float64(n)
		v = v.Add(sep.Scale(p.Separation)).
			Add(velSum.Scale(inv).Sub(tel.Vel).Scale(p.Alignment)).
			Add(posSum.Scale(inv).Sub(tel.Pos).Scale(p.Cohesion))
		if f.alone {
			ctx.Event("belief_ok", fmt.Sprintf("%d neighbours", n))
		}
		f.alone, f.met = false, true
	} else {
		f.lonely++
		if !f.alone && f.met {
			f.alone = true
			ctx.Event("belief_lost", "no neighbour")
		}
	}
	if z := tel.Pos.Z; z > p.Altitude+p.AltBand {
		v.Z += p.AltGain * (p.Altitude + p.AltBand - z)
	} else if z < p.Altitude-p.AltBand {
		v.Z += p.AltGain * (p.Altitude - p.AltBand - z)
	}
	ctx.Command(vehicle.Command{Kind: vehicle.CmdVelocity, Vel: v.ClampNorm(p.MaxSpeed), Yaw: nan})
}

// Finish reports the mean number of neighbours per step and the steps
// without any.
func (f *Flock) Finish(ctx *agent.Context) map[string]any {
	mean := 0.0
	if f.steps > 0 {
		mean = float64(f.nbSum) / float64(f.steps)
	}
	return map[string]any{"neighbours_mean": math.Round(mean*1e3) / 1e3, "steps": f.steps, "steps_alone": f.lonely}
}
