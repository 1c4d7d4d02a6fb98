package behavior

import (
	"fmt"

	"skyloop/agent"
	"skyloop/fields"
	"skyloop/geom"
	"skyloop/sim"
	"skyloop/vehicle"
)

// WaypointsParams configure the waypoints behaviour.
type WaypointsParams struct {
	Points   []geom.Vec3  `yaml:"points" json:"points"`
	Relative bool         `yaml:"relative" json:"relative"` // points are offsets from the start position
	Speed    float64      `yaml:"speed" json:"speed"`       // m/s; 0 uses the vehicle's limit
	Hold     sim.Duration `yaml:"hold" json:"hold"`         // time to stay at each point
	Loop     bool         `yaml:"loop" json:"loop"`         // start over after the last point
	Accept   float64      `yaml:"accept" json:"accept"`     // arrival radius, m
	Period   sim.Duration `yaml:"period" json:"period"`     // how often progress is checked
	Final    string       `yaml:"final" json:"final"`       // after the last point: hold, land or rtl
}

// Validate checks the parameters.
func (p *WaypointsParams) Validate() fields.Errors {
	bad := fields.Errors{}
	checkRoute(bad, p.Points, p.Speed, p.Accept)
	nonNegative(bad, "hold", p.Hold)
	positive(bad, "period", p.Period)
	checkFinal(bad, p.Final)
	return bad
}

func checkFinal(bad fields.Errors, f string) {
	switch f {
	case "hold", "land", "rtl":
	default:
		bad["final"] = fmt.Sprintf("must be hold, land or rtl, got %q", f)
	}
}

// finalCommand returns the command for a mission's final action; "hold"
// needs none, since the vehicle keeps holding at its last target.
func finalCommand(f string) (vehicle.Command, bool) {
	switch f {
	case "land":
		return vehicle.Command{Kind: vehicle.CmdLand}, true
	case "rtl":
		return vehicle.Command{Kind: vehicle.CmdRTL}, true
	}
	return vehicle.Command{}, false
}

// Waypoints flies the own vehicle through a list of points using the native
// vehicle API (no network involved).
type Waypoints struct {
	p       *WaypointsParams
	pts     []geom.Vec3
	idx     int
	arrived sim.Time
	atPoint bool
	done    bool
}

// waypointsSpec is the waypoints behaviour type (see Builtins).
var waypointsSpec = agent.Spec{
	Name:    "waypoints",
	Doc:     "Flies or drives the vehicle through `points` (absolute, or offsets from the start if `relative`), holding `hold` at each, optionally looping; then `final` (hold, land, rtl). Uses the vehicle directly, not the network.",
	Vehicle: true,
	Params: func() agent.Params {
		return &WaypointsParams{Accept: 0.5, Period: 100 * sim.Millisecond, Final: "hold"}
	},
	New: func(p agent.Params) agent.Behavior { return &Waypoints{p: p.(*WaypointsParams)} },
}

// Start resolves relative points and sends the first target.
func (w *Waypoints) Start(ctx *agent.Context) error {
	start := ctx.Telemetry().Pos
	w.pts = make([]geom.Vec3, len(w.p.Points))
	for i, pt := range w.p.Points {
		if w.p.Relative {
			pt = pt.Add(start)
		}
		w.pts[i] = pt
	}
	w.send(ctx)
	return nil
}

// Schedule returns the check period.
func (w *Waypoints) Schedule() (sim.Duration, sim.Duration) { return w.p.Period, 0 }

func (w *Waypoints) send(ctx *agent.Context) {
	ctx.Command(vehicle.Command{Kind: vehicle.CmdGoto, Pos: w.pts[w.idx], Speed: w.p.Speed, Yaw: nan})
}

// Step advances to the next point once the current one is reached and held.
func (w *Waypoints) Step(ctx *agent.Context) {
	if w.done {
		return
	}
	tel := ctx.Telemetry()
	if !w.atPoint {
		if tel.Pos.Dist(w.pts[w.idx]) > w.p.Accept {
			return
		}
		w.atPoint, w.arrived = true, ctx.Now()
		ctx.Event("waypoint", fmt.Sprintf("%d", w.idx))
	}
	if ctx.Now().Sub(w.arrived) < w.p.Hold {
		return
	}
	w.atPoint = false
	w.idx++
	if w.idx == len(w.pts) {
		if !w.p.Loop {
			w.done = true
			ctx.Event("mission_done", "")
			if c, ok := finalCommand(w.p.Final); ok {
				ctx.Command(c)
			}
			return
		}
		w.idx = 0
	}
	w.send(ctx)
}

// checkRoute checks what the behaviours that fly through points share: at
// least one point, a speed >= 0 and an arrival radius > 0.
func checkRoute(bad fields.Errors, points []geom.Vec3, speed, accept float64) {
	if len(points) == 0 {
		bad["points"] = "needs at least one point"
	}
	if speed < 0 {
		bad["speed"] = fmt.Sprintf("must be >= 0, got %v", speed)
	}
	if !(accept > 0) {
		bad["accept"] = fmt.Sprintf("must be > 0, got %v", accept)
	}
}
