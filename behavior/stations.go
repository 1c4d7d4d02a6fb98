package behavior

import (
	"fmt"

	"skyloop/agent"
	"skyloop/fields"
	"skyloop/geom"
	"skyloop/sim"
	"skyloop/vehicle"
)

// StationsParams configure the stations behaviour.
type StationsParams struct {
	Points   []geom.Vec3  `yaml:"points" json:"points"`
	Relative bool         `yaml:"relative" json:"relative"` // points are offsets from the start position
	Dwell    sim.Duration `yaml:"dwell" json:"dwell"`       // time from one departure to the next
	Speed    float64      `yaml:"speed" json:"speed"`       // m/s; 0 uses the vehicle's limit
	Accept   float64      `yaml:"accept" json:"accept"`     // arrival radius, m
	Period   sim.Duration `yaml:"period" json:"period"`     // how often arrival is checked
	Final    string       `yaml:"final" json:"final"`       // after the last station: hold, land or rtl
}

// Validate checks the parameters.
func (p *StationsParams) Validate() fields.Errors {
	bad := fields.Errors{}
	checkRoute(bad, p.Points, p.Speed, p.Accept)
	positive(bad, "period", p.Period)
	positive(bad, "dwell", p.Dwell)
	if p.Period > 0 && p.Dwell > 0 && p.Dwell%p.Period != 0 {
		bad["dwell"] = fmt.Sprintf("must be a whole number of periods (%v), got %v", p.Period, p.Dwell)
	}
	checkFinal(bad, p.Final)
	return bad
}

// Stations moves the vehicle through a list of points on a clock: it
// leaves for point i at i*dwell, whether or not it has reached point i-1,
// and stays at each point until the next departure. It reports when it
// reached and left every point (summary.json: stations), so that what the
// vehicle did at each point can be told apart from what it did on the way,
// such as the packets of UB-ANC's node-to-node experiment.
type Stations struct {
	p      *StationsParams
	pts    []geom.Vec3
	idx    int
	visits []stationVisit
	done   bool
}

// stationVisit is one point's record in summary.json.
type stationVisit struct {
	Point    geom.Vec3 `json:"point"`
	ArriveNs int64     `json:"arrive_ns"` // -1: never reached
	LeaveNs  int64     `json:"leave_ns"`  // departure for the next point; -1: not left before the end
}

// stationsSpec is the stations behaviour type (see Builtins).
var stationsSpec = agent.Spec{
	Name: "stations",
	Doc: "Moves the vehicle on a clock: it leaves for point i of `points` (absolute, or offsets from the start if `relative`) at i*`dwell` and stays there " +
		"until the next departure; then `final` (hold, land, rtl). summary.json lists when each point was reached and left.",
	Vehicle: true,
	Params: func() agent.Params {
		return &StationsParams{Accept: 0.1, Period: 100 * sim.Millisecond, Final: "hold"}
	},
	New: func(p agent.Params) agent.Behavior { return &Stations{p: p.(*StationsParams)} },
}

// Start resolves relative points and leaves for the first one.
func (s *Stations) Start(ctx *agent.Context) error {
	start := ctx.Telemetry().Pos
	s.pts = make([]geom.Vec3, len(s.p.Points))
	for i, pt := range s.p.Points {
		if s.p.Relative {
			pt = pt.Add(start)
		}
		s.pts[i] = pt
	}
	s.visits = make([]stationVisit, len(s.pts))
	for i := range s.visits {
		s.visits[i] = stationVisit{Point: s.pts[i], ArriveNs: -1, LeaveNs: -1}
	}
	s.leave(ctx)
	return nil
}

// Schedule returns the check period.
func (s *Stations) Schedule() (sim.Duration, sim.Duration) { return s.p.Period, 0 }

// leave commands the vehicle to the current point.
func (s *Stations) leave(ctx *agent.Context) {
	ctx.Command(vehicle.Command{Kind: vehicle.CmdGoto, Pos: s.pts[s.idx], Speed: s.p.Speed, Yaw: nan})
}

// Step records the arrival at the current point and leaves for the next
// one when its departure time has come.
func (s *Stations) Step(ctx *agent.Context) {
	if s.done {
		return
	}
	now := ctx.Now()
	if now >= sim.Time(s.p.Dwell)*sim.Time(s.idx+1) {
		s.visits[s.idx].LeaveNs = int64(now)
		s.idx++
		if s.idx == len(s.pts) {
			s.done = true
			ctx.Event("mission_done", "")
			if c, ok := finalCommand(s.p.Final); ok {
				ctx.Command(c)
			}
			return
		}
		s.leave(ctx)
	}
	if v := &s.visits[s.idx]; v.ArriveNs < 0 && ctx.Telemetry().Pos.Dist(s.pts[s.idx]) <= s.p.Accept {
		v.ArriveNs = int64(now)
		ctx.Event("station", fmt.Sprintf("%d", s.idx))
	}
}

// Finish reports every point with the times it was reached and left
// (nanoseconds; -1 when never reached, or when not left before the end of
// the run).
func (s *Stations) Finish(ctx *agent.Context) map[string]any {
	return map[string]any{"stations": append([]stationVisit(nil), s.visits...)}
}
