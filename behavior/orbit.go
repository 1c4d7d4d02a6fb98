package behavior

import (
	"fmt"
	"math"

	"skyloop/agent"
	"skyloop/fields"
	"skyloop/geom"
	"skyloop/sim"
	"skyloop/vehicle"
)

// OrbitParams configure the orbit behaviour.
type OrbitParams struct {
	Center    geom.Vec3    `yaml:"center" json:"center"`         // the circle's centre as an offset from the start position
	Radius    float64      `yaml:"radius" json:"radius"`         // m
	Speed     float64      `yaml:"speed" json:"speed"`           // along the circle, m/s
	Phase     float64      `yaml:"phase" json:"phase"`           // deg counter-clockwise from east: where on the circle the vehicle is at `start`
	PhaseStep float64      `yaml:"phase_step" json:"phase_step"` // deg added to phase per index in the group
	Clockwise bool         `yaml:"clockwise" json:"clockwise"`
	Start     sim.Duration `yaml:"start" json:"start"`   // when the circling starts; before, the vehicle goes to its starting point
	Gain      float64      `yaml:"gain" json:"gain"`     // position gain on the circling reference, 1/s
	Period    sim.Duration `yaml:"period" json:"period"` // command period
}

// Validate checks the parameters.
func (p *OrbitParams) Validate() fields.Errors {
	bad := fields.Errors{}
	finite := func(name string, v float64) bool {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			bad[name] = "must be a finite number"
			return false
		}
		return true
	}
	if finite("radius", p.Radius) && !(p.Radius > 0) {
		bad["radius"] = fmt.Sprintf("must be > 0 m, got %v", p.Radius)
	}
	if finite("speed", p.Speed) && p.Speed < 0 {
		bad["speed"] = fmt.Sprintf("must be >= 0 m/s, got %v", p.Speed)
	}
	finite("phase", p.Phase)
	finite("phase_step", p.PhaseStep)
	if finite("gain", p.Gain) && !(p.Gain > 0) {
		bad["gain"] = fmt.Sprintf("must be > 0, got %v", p.Gain)
	}
	for _, c := range []float64{p.Center.X, p.Center.Y, p.Center.Z} {
		finite("center", c)
	}
	nonNegative(bad, "start", p.Start)
	positive(bad, "period", p.Period)
	return bad
}

// Orbit flies the vehicle around a horizontal circle at constant speed. It
// tracks a reference point that moves along the circle on the clock (so
// that vehicles of a group keep their phases exactly), commanding the
// reference's velocity plus gain times the position error; the circle's
// altitude is the centre's.
type Orbit struct {
	p      *OrbitParams
	center geom.Vec3
	phase0 float64 // rad
	omega  float64 // rad/s, signed
	errSum float64
	errMax float64
	n      int
}

// orbitSpec is the orbit behaviour type (see Builtins).
var orbitSpec = agent.Spec{
	Name: "orbit",
	Doc: "Circles at `speed` on a horizontal circle of `radius` around `center` (an offset from the start position), counter-clockwise unless `clockwise`, " +
		"starting at `start` from angle `phase` + group index * `phase_step` (deg from east); the vehicle tracks a reference point that moves on the clock.",
	Vehicle: true,
	Params: func() agent.Params {
		return &OrbitParams{Radius: 20, Speed: 5, Gain: 1, Period: 100 * sim.Millisecond}
	},
	New: func(p agent.Params) agent.Behavior { return &Orbit{p: p.(*OrbitParams)} },
}

// Start fixes the centre and the starting angle.
func (o *Orbit) Start(ctx *agent.Context) error {
	o.center = ctx.Telemetry().Pos.Add(o.p.Center)
	o.phase0 = (o.p.Phase + float64(ctx.Ref().Index)*o.p.PhaseStep) * math.Pi / 180
	o.omega = o.p.Speed / o.p.Radius
	if o.p.Clockwise {
		o.omega = -o.omega
	}
	o.Step(ctx)
	return nil
}

// Schedule returns the command period.
func (o *Orbit) Schedule() (sim.Duration, sim.Duration) { return o.p.Period, 0 }

// reference returns the reference point and its velocity at t.
func (o *Orbit) reference(t sim.Time) (geom.Vec3, geom.Vec3) {
	a, w := o.phase0, 0.0
	if el := t.Sub(sim.Time(o.p.Start)); el >= 0 {
		a += o.omega * el.Seconds()
		w = o.omega
	}
	c, s := math.Cos(a), math.Sin(a)
	pos := o.center.Add(geom.Vec3{X: o.p.Radius * c, Y: o.p.Radius * s})
	vel := geom.Vec3{X: -w * o.p.Radius * s, Y: w * o.p.Radius * c}
	return pos, vel
}

// Step commands the reference velocity plus the position correction.
func (o *Orbit) Step(ctx *agent.Context) {
	pos, vel := o.reference(ctx.Now())
	cur := ctx.Telemetry().Pos
	e := pos.Sub(cur)
	if ctx.Now() >= sim.Time(o.p.Start) {
		d := e.Norm()
		o.errSum += d
		o.errMax = max(o.errMax, d)
		o.n++
	}
	ctx.Command(vehicle.Command{Kind: vehicle.CmdVelocity, Vel: vel.Add(e.Scale(o.p.Gain)), Yaw: nan})
}

// Finish reports how closely the vehicle followed its reference point
// from the start of the circling: mean and largest distance, m.
func (o *Orbit) Finish(ctx *agent.Context) map[string]any {
	mean := 0.0
	if o.n > 0 {
		mean = o.errSum / float64(o.n)
	}
	return map[string]any{"track_err_mean_m": math.Round(mean*1e4) / 1e4, "track_err_max_m": math.Round(o.errMax*1e4) / 1e4}
}
