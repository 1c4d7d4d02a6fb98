package behavior

import (
	"fmt"
	"math"

	"skyloop/agent"
	"skyloop/fields"
	"skyloop/geom"
	"skyloop/plan"
	"skyloop/sim"
	"skyloop/vehicle"
)

// CoverageParams configure the coverage behaviour: the area (a grid of
// square cells with obstacle cells), the planner, and how the plan is
// flown.
type CoverageParams struct {
	// Origin is the area's corner of least x and y, m.
	Origin [2]float64 `yaml:"origin" json:"origin"`
	// Area is the area's size along x and y, m: whole multiples of Cell.
	Area [2]float64 `yaml:"area" json:"area"`
	// Cell is the side of a grid cell, m.
	Cell float64 `yaml:"cell" json:"cell"`
	// Obstacles are the blocked cells, [column, row] from the origin.
	Obstacles [][2]int `yaml:"obstacles" json:"obstacles"`
	// Start is the cell the plan starts from, [column, row].
	Start [2]int `yaml:"start" json:"start"`
	// EnergyPerM and EnergyPerDeg are the planning energy model, J per
	// metre flown and per degree turned.
	EnergyPerM   float64 `yaml:"energy_per_m" json:"energy_per_m"`
	EnergyPerDeg float64 `yaml:"energy_per_deg" json:"energy_per_deg"`
	// Energy names a planning energy model instead (plan.EnergyModels:
	// spec, or one calibrated for a preset by skyloop calibrate, such as
	// iris); when set it replaces EnergyPerM and EnergyPerDeg.
	Energy string `yaml:"energy" json:"energy"`
	// Altitude is the flight height, m.
	Altitude float64 `yaml:"altitude" json:"altitude"`
	// Planner is turn-aware (plan.TurnAware) or dls (plan.DLS).
	Planner string `yaml:"planner" json:"planner"`
	// Restarts is the turn-aware search's number of local searches.
	Restarts int `yaml:"restarts" json:"restarts"`
	// PlanSeed seeds the turn-aware search's restarts; the plan does not
	// depend on the run's seed.
	PlanSeed uint64 `yaml:"plan_seed" json:"plan_seed"`
	// Depth is DLS's depth limit in cells (0: none).
	Depth int `yaml:"depth" json:"depth"`
	// Tour is closed (the plan returns to the start cell, as the paper's
	// paths do) or open (it ends at its last new cell).
	Tour string `yaml:"tour" json:"tour"`
	// Speed is the flight speed, m/s (0: the vehicle's limit).
	Speed float64 `yaml:"speed" json:"speed"`
	// Accept is the arrival radius at each turn point, m.
	Accept float64 `yaml:"accept" json:"accept"`
	// CoverRadius is how close (horizontally, m) the flown track must
	// pass to a cell's centre for the cell to count as covered: the
	// camera footprint's half-width less the cell's. 0 means a quarter of
	// the cell: a footprint 1.5 cells wide (15 m at 10 m altitude, a 74
	// degree field of view, for 10 m cells) images the whole cell from
	// anywhere within it.
	CoverRadius float64 `yaml:"cover_radius" json:"cover_radius"`
	// ThroughCentres flies through the centre of every planned cell, as
	// the paper's drone does, instead of only through the turn points:
	// each centre must be reached within CoverRadius before the next
	// counts (a centre passed farther off is flown back to), and at each
	// turn point the vehicle slows until it moves at most TurnSpeed off
	// the next leg before it turns, so that it does not cut the corner.
	ThroughCentres bool `yaml:"through_centres" json:"through_centres"`
	// TurnSpeed is, with ThroughCentres, the largest speed off the next
	// leg at which the vehicle may turn at a turn point, m/s.
	TurnSpeed float64 `yaml:"turn_speed" json:"turn_speed"`
	// Period is how often progress is checked.
	Period sim.Duration `yaml:"period" json:"period"`
	// Final is what follows the last cell: hold, land or rtl.
	Final string `yaml:"final" json:"final"`
}

// Validate checks the parameters and that the grid and start make sense.
func (p *CoverageParams) Validate() fields.Errors {
	bad := fields.Errors{}
	if !(p.Cell > 0) || math.IsInf(p.Cell, 0) {
		bad["cell"] = fmt.Sprintf("must be a positive number of metres, got %v", p.Cell)
	} else {
		for i, a := range p.Area {
			n := a / p.Cell
			if !(a > 0) || math.IsInf(a, 0) || math.Abs(n-math.Round(n)) > 1e-9 || n > 10000 {
				bad["area"] = fmt.Sprintf("%s size %v m must be a positive whole multiple of the %v m cell (at most 10000 cells)", "xy"[i:i+1], a, p.Cell)
			}
		}
	}
	for i, o := range p.Origin {
		if math.IsNaN(o) || math.Abs(o) > vehicle.MaxWorldXY {
			bad["origin"] = fmt.Sprintf("%s %v is not a position within %g m", "xy"[i:i+1], o, float64(vehicle.MaxWorldXY))
		}
	}
	if _, ok := bad["area"]; !ok && bad["cell"] == "" {
		g := p.grid()
		for i, o := range p.Obstacles {
			if c := (plan.Cell{Col: o[0], Row: o[1]}); c.Col < 0 || c.Row < 0 || c.Col >= g.Cols || c.Row >= g.Rows {
				bad[fmt.Sprintf("obstacles[%d]", i)] = fmt.Sprintf("cell %v is outside the %dx%d grid", o, g.Cols, g.Rows)
			}
		}
		if err := g.Validate(plan.Cell{Col: p.Start[0], Row: p.Start[1]}); err != nil {
			bad["start"] = err.Error()
		}
	}
	if !(p.EnergyPerM > 0) || math.IsInf(p.EnergyPerM, 0) {
		bad["energy_per_m"] = fmt.Sprintf("must be a positive number of joules, got %v", p.EnergyPerM)
	}
	if p.Energy != "" {
		if _, err := plan.EnergyModel(p.Energy); err != nil {
			bad["energy"] = err.Error()
		}
	}
	if !(p.EnergyPerDeg >= 0) || math.IsInf(p.EnergyPerDeg, 0) {
		bad["energy_per_deg"] = fmt.Sprintf("must be a number of joules >= 0, got %v", p.EnergyPerDeg)
	}
	if !(p.Altitude > 0) || p.Altitude > vehicle.MaxWorldZ {
		bad["altitude"] = fmt.Sprintf("must be > 0 m, got %v", p.Altitude)
	}
	switch p.Planner {
	case "turn-aware", "dls":
	default:
		bad["planner"] = fmt.Sprintf("must be turn-aware or dls, got %q", p.Planner)
	}
	if p.Tour != "closed" && p.Tour != "open" {
		bad["tour"] = fmt.Sprintf("must be closed or open, got %q", p.Tour)
	}
	if p.Restarts < 1 || p.Restarts > 10000 {
		bad["restarts"] = fmt.Sprintf("must be 1..10000, got %d", p.Restarts)
	}
	if p.Depth < 0 {
		bad["depth"] = fmt.Sprintf("must be >= 0, got %d", p.Depth)
	}
	if p.Speed < 0 || p.Speed > vehicle.MaxCommandSpeed {
		bad["speed"] = fmt.Sprintf("must be 0..%g m/s, got %v", float64(vehicle.MaxCommandSpeed), p.Speed)
	}
	if !(p.Accept > 0) {
		bad["accept"] = fmt.Sprintf("must be > 0, got %v", p.Accept)
	}
	if !(p.TurnSpeed > 0) || p.TurnSpeed > vehicle.MaxCommandSpeed {
		bad["turn_speed"] = fmt.Sprintf("must be > 0 and at most %g m/s, got %v", float64(vehicle.MaxCommandSpeed), p.TurnSpeed)
	}
	if !(p.CoverRadius >= 0) || (p.Cell > 0 && p.CoverRadius > p.Cell/2) {
		bad["cover_radius"] = fmt.Sprintf("must be 0 (a quarter of the cell) or a radius up to half the %v m cell, got %v", p.Cell, p.CoverRadius)
	}
	positive(bad, "period", p.Period)
	checkFinal(bad, p.Final)
	return bad
}

// grid returns the area as a plan.Grid.
func (p *CoverageParams) grid() *plan.Grid {
	g := &plan.Grid{Cols: int(math.Round(p.Area[0] / p.Cell)), Rows: int(math.Round(p.Area[1] / p.Cell)),
		Size: p.Cell, Blocked: map[plan.Cell]bool{}, Energy: p.energy()}
	for _, o := range p.Obstacles {
		g.Blocked[plan.Cell{Col: o[0], Row: o[1]}] = true
	}
	return g
}

// coverRadius returns the radius within which a pass covers a cell.
func (p *CoverageParams) coverRadius() float64 {
	if p.CoverRadius > 0 {
		return p.CoverRadius
	}
	return p.Cell / 4
}

// energy returns the planning energy model: the named one if Energy is
// set (Validate has checked the name), else EnergyPerM and EnergyPerDeg.
func (p *CoverageParams) energy() plan.Energy {
	if p.Energy != "" {
		if m, err := plan.EnergyModel(p.Energy); err == nil {
			return m.Energy
		}
	}
	return plan.Energy{PerMetre: p.EnergyPerM, PerDegree: p.EnergyPerDeg}
}

// Plan computes the coverage plan the parameters describe.
func (p *CoverageParams) Plan() (plan.Plan, error) {
	g, start := p.grid(), plan.Cell{Col: p.Start[0], Row: p.Start[1]}
	tour := plan.Closed
	if p.Tour == "open" {
		tour = plan.Open
	}
	if p.Planner == "dls" {
		return plan.DLS(g, start, p.Depth, tour)
	}
	return plan.TurnAware(g, start, p.PlanSeed, p.Restarts, tour)
}

// DefaultCoverageParams returns the coverage defaults: 10 m cells at 10 m
// altitude, the turn-aware planner with 20 restarts, a closed tour, 5 m/s,
// land at the end. The area is empty: a scenario must give it.
func DefaultCoverageParams() CoverageParams {
	return CoverageParams{Cell: 10, EnergyPerM: plan.JoulesPerMetre, EnergyPerDeg: plan.JoulesPerDegree, Altitude: 10, Planner: "turn-aware", Restarts: 20, PlanSeed: 1, Tour: "closed",
		Speed: 5, Accept: 0.5, TurnSpeed: 0.5, Period: 20 * sim.Millisecond, Final: "land"}
}

// TurnPoints returns the points a vehicle flies through to follow pl at
// the parameters' altitude: the centres of the cells where the path turns
// or ends, the start cell first (cells in a straight line between them
// are flown over).
func (p *CoverageParams) TurnPoints(pl plan.Plan) []geom.Vec3 {
	var out []geom.Vec3
	for i, cell := range pl.Path {
		if turnsAt(pl.Path, i) {
			out = append(out, p.centre(cell))
		}
	}
	return out
}

// centre returns the centre of cell at the flight altitude.
func (p *CoverageParams) centre(cell plan.Cell) geom.Vec3 {
	return geom.Vec3{X: p.Origin[0] + (float64(cell.Col)+0.5)*p.Cell, Y: p.Origin[1] + (float64(cell.Row)+0.5)*p.Cell, Z: p.Altitude}
}

// turnsAt reports whether the path starts, ends or changes heading at
// its i-th cell.
func turnsAt(path []plan.Cell, i int) bool {
	if i == 0 || i == len(path)-1 {
		return true
	}
	a, cell, b := path[i-1], path[i], path[i+1]
	d1 := plan.Cell{Col: cell.Col - a.Col, Row: cell.Row - a.Row}
	d2 := plan.Cell{Col: b.Col - cell.Col, Row: b.Row - cell.Row}
	return d1.Col*d2.Row != d1.Row*d2.Col || d1.Col*d2.Col+d1.Row*d2.Row <= 0
}

// Coverage plans a coverage path over a grid area (UB-ANC's coverage
// planning experiment) and
// flies it: it goes to the start cell's centre, then through the plan's
// cells, stopping only where the path turns (cells in a straight line are
// flown over in one leg), facing the direction of travel. It reports the
// plan's figures and the flight's: distance, flight time, average speed,
// the physics model's energy, the planning model's energy of the path
// actually flown, and the cells flown over.
type Coverage struct {
	p    *CoverageParams
	g    *plan.Grid
	plan plan.Plan
	legs []geom.Vec3 // turn points (with ThroughCentres: every cell's centre), the start cell first
	// stop marks the legs where the path turns (with ThroughCentres; the
	// others are flown over on the way to the next turn point).
	stop []bool
	idx  int
	// aim is the leg the last goto went to (-1: none yet); carrot is set
	// while the gotos go to a point ahead on the line to it instead.
	aim    int
	carrot bool
	// carrotAt is the last carrot commanded.
	carrotAt geom.Vec3
	// The flight, from arrival over the start cell to the last point.
	// track holds the positions where turn points were reached.
	started, done  bool
	t0, t1         sim.Time
	e0, d0, e1, d1 float64
	track          trackTurns
	seen           []bool // cells flown over, row-major
	over           int
	// check measures how close the flown track passed to every cell's
	// centre.
	check coverCheck
	truth truer // the vehicle's true position, when it gives it
}

// AreaUser is implemented by behaviour parameters that survey a grid: the
// engine hands them the scenario's top-level coverage area before it
// decodes the behaviour's own parameters, which override it field by
// field.
type AreaUser interface {
	UseArea(origin, area [2]float64, cell float64, obstacles [][2]int)
}

// UseArea takes the scenario's coverage area as the grid.
func (p *CoverageParams) UseArea(origin, area [2]float64, cell float64, obstacles [][2]int) {
	p.Origin, p.Area, p.Cell = origin, area, cell
	p.Obstacles = append([][2]int(nil), obstacles...)
}

// coverageSpec is the coverage behaviour type (see Builtins).
var coverageSpec = agent.Spec{
	Name: "coverage",
	Doc: "Energy-aware coverage (UB-ANC's coverage planning): plans a path over the free cells of a grid `area` (`cell` m squares from `origin`, " +
		"`obstacles` as [col, row]) from `start`, with the `turn-aware` planner (least `energy_per_m` J/m + `energy_per_deg` J/deg, 0.1164 and 0.0173 by default, or the named model `energy`: spec or one calibrated for a preset by `skyloop calibrate`, e.g. iris; 2-opt and Or-opt local search " +
		"from `restarts` seeded restarts) or `dls` (depth-limited search, backtracking straight to the next cell), as a `closed` tour back to `start` or an `open` path, and flies it at `altitude` and `speed` (through every cell's centre with `through_centres`, slowing to `turn_speed` " +
		"off the next leg at each turn); reports the planned and flown distance, turns, energy, flight time and average speed, and the " +
		"planned cells whose centre the flown track passed within `cover_radius` (0: a quarter cell).",
	Vehicle: true,
	Params: func() agent.Params {
		p := DefaultCoverageParams()
		return &p
	},
	New: func(p agent.Params) agent.Behavior { return &Coverage{p: p.(*CoverageParams)} },
}

// Start plans the path and heads for the start cell.
func (c *Coverage) Start(ctx *agent.Context) error {
	pl, err := c.p.Plan()
	if err != nil {
		return fmt.Errorf("coverage plan: %w", err)
	}
	c.plan, c.g = pl, c.p.grid()
	c.seen = make([]bool, c.g.Cols*c.g.Rows)
	c.check = newCoverCheck(c.g, c.p.Origin)
	if v, ok := agent.Capability[truer](ctx); ok {
		c.truth = v
	}
	if c.p.ThroughCentres {
		for i, cell := range pl.Path {
			c.legs = append(c.legs, c.p.centre(cell))
			c.stop = append(c.stop, turnsAt(pl.Path, i))
		}
	} else {
		c.legs = c.p.TurnPoints(pl)
	}
	c.aim = -1
	ctx.Event("coverage_plan", fmt.Sprintf("%s: %d cells, %.1f m, %d turns, %.1f J", c.p.Planner, pl.Covered, pl.Distance, pl.Turns, pl.Energy))
	c.send(ctx)
	return nil
}

// Schedule returns the check period.
func (c *Coverage) Schedule() (sim.Duration, sim.Duration) { return c.p.Period, 0 }

// send heads for the current leg or, with ThroughCentres, for the turn
// point that ends the straight run the current leg is on (the centres on
// the way are flown over without slowing).
func (c *Coverage) send(ctx *agent.Context) {
	aim := c.idx
	if c.p.ThroughCentres {
		for aim < len(c.legs)-1 && !c.stop[aim] {
			aim++
		}
	}
	c.goTo(ctx, aim)
}

// goTo commands a goto to leg i, facing the way there.
func (c *Coverage) goTo(ctx *agent.Context, i int) {
	c.aim, c.carrot = i, false
	to := c.legs[i]
	d := to.Sub(ctx.Telemetry().Pos)
	yaw := nan
	if d.NormXY() > c.p.Accept {
		yaw = math.Atan2(d.Y, d.X)
	}
	ctx.Command(vehicle.Command{Kind: vehicle.CmdGoto, Pos: to, Speed: c.p.Speed, Yaw: yaw})
}

// Step follows the flight and moves to the next turn point on arrival.
func (c *Coverage) Step(ctx *agent.Context) {
	if c.done {
		return
	}
	tel := ctx.Telemetry()
	if c.started {
		c.check.add(c.truePos(tel))
		col := int(math.Floor((tel.Pos.X - c.p.Origin[0]) / c.p.Cell))
		row := int(math.Floor((tel.Pos.Y - c.p.Origin[1]) / c.p.Cell))
		if col >= 0 && row >= 0 && col < c.g.Cols && row < c.g.Rows && !c.seen[row*c.g.Cols+col] {
			c.seen[row*c.g.Cols+col] = true
			c.over++
		}
	}
	if !c.reached(ctx, tel) {
		c.follow(ctx, tel)
		return
	}
	if !c.started {
		c.started, c.t0, c.e0, c.d0 = true, ctx.Now(), tel.Energy, tel.Distance
		c.check.add(c.truePos(tel))
		ctx.Event("coverage_start", "")
	}
	if !c.p.ThroughCentres || c.stop[c.idx] {
		c.track.add(tel.Pos)
	}
	c.idx++
	if c.idx == len(c.legs) {
		c.done, c.t1, c.e1, c.d1 = true, ctx.Now(), tel.Energy, tel.Distance
		ctx.Event("coverage_done", fmt.Sprintf("%.1f s", sim.Duration(c.t1-c.t0).Seconds()))
		if cmd, ok := finalCommand(c.p.Final); ok {
			ctx.Command(cmd)
		}
		return
	}
	if !c.p.ThroughCentres || c.aim < c.idx {
		c.send(ctx)
	}
	c.follow(ctx, tel)
}

// follow keeps the vehicle on the straight line of its run, with
// ThroughCentres, as ArduCopter's waypoint navigation tracks the segment
// between waypoints: while the run's end is more than a cell away it
// commands a goto to the point one cell ahead of the vehicle's projection
// on the line (a carrot), renewed when that point has moved half a cell,
// so a cross-track error is steered out within a cell or two instead of
// over the whole run; the last cell is a goto to the run's end, where the
// autopilot brakes. (Renewed every step, the goto would restart an
// ArduCopter-like autopilot's waypoint segment every period, and from the
// vehicle's current speed each time: the drone crawled.)
func (c *Coverage) follow(ctx *agent.Context, tel vehicle.Telemetry) {
	if !c.p.ThroughCentres || c.idx == 0 || c.aim < c.idx || (c.aim == c.idx && !c.stop[c.idx]) {
		return // no line yet, or flying back to a centre passed
	}
	a, b := c.legs[c.idx-1], c.legs[c.aim]
	ab := b.Sub(a)
	ab.Z = 0
	l := ab.Norm()
	if l < 1e-9 {
		return
	}
	u := ab.Scale(1 / l)
	along := tel.Pos.Sub(a)
	along.Z = 0
	t := along.Dot(u) + c.p.Cell
	if t >= l {
		if c.carrot {
			c.carrot = false
			c.goTo(ctx, c.aim)
		}
		return
	}
	to := a.Add(u.Scale(t))
	to.Z = c.p.Altitude
	if c.carrot && to.Sub(c.carrotAt).Dot(u) < c.p.Cell/2 {
		return // the last carrot is still at least half a cell ahead
	}
	c.carrot, c.carrotAt = true, to
	ctx.Command(vehicle.Command{Kind: vehicle.CmdGoto, Pos: to, Speed: c.p.Speed, Yaw: math.Atan2(u.Y, u.X)})
}

// reached reports whether the vehicle has reached the current leg: within
// the arrival radius of it or, with ThroughCentres, of a turn point once
// it moves at most TurnSpeed off the next leg, and within CoverRadius of a
// centre flown over. A centre passed farther off than that is flown back
// to before the flight goes on.
func (c *Coverage) reached(ctx *agent.Context, tel vehicle.Telemetry) bool {
	at := c.legs[c.idx]
	if !c.p.ThroughCentres {
		return tel.Pos.Dist(at) <= c.p.Accept
	}
	off := at.Sub(tel.Pos)
	off.Z = 0
	if c.stop[c.idx] {
		if tel.Pos.Dist(at) > c.p.Accept {
			return false
		}
		if c.idx == len(c.legs)-1 {
			return true
		}
		// The velocity that does not carry the vehicle along the next leg.
		u := c.legs[c.idx+1].Sub(at)
		u.Z = 0
		u = u.Scale(1 / max(u.Norm(), 1e-9))
		v := tel.Vel
		v.Z = 0
		along := max(v.Dot(u), 0)
		return v.Sub(u.Scale(along)).Norm() <= c.p.TurnSpeed
	}
	if off.Norm() <= c.p.coverRadius() {
		return true
	}
	// Passed the centre (it lies behind, along the run) without coming
	// close enough: fly back to it.
	run := at.Sub(c.legs[c.idx-1])
	run.Z = 0
	if off.Dot(run) < 0 && c.aim != c.idx {
		ctx.Event("coverage_back", fmt.Sprintf("cell centre %.1f %.1f passed %.2f m off", at.X, at.Y, off.Norm()))
		c.goTo(ctx, c.idx)
	}
	return false
}

// Finish reports the plan and the flight (the flight's figures only when
// the vehicle finished the plan).
func (c *Coverage) Finish(ctx *agent.Context) map[string]any {
	pl := c.plan
	path := make([][2]int, len(pl.Path))
	for i, cell := range pl.Path {
		path[i] = [2]int{cell.Col, cell.Row}
	}
	out := map[string]any{
		"planner": c.p.Planner,
		"grid":    map[string]any{"cols": c.g.Cols, "rows": c.g.Rows, "cell_m": c.p.Cell, "origin": c.p.Origin, "obstacles": c.p.Obstacles},
		"planned": map[string]any{"tour": c.p.Tour, "cells": pl.Covered, "free_cells": len(c.g.Free()), "crossings": pl.Crossings, "distance_m": round3(pl.Distance),
			"turns": pl.Turns, "turn_deg": round3(pl.TurnDeg), "energy_j": round3(pl.Energy), "path": path},
		"complete": c.done,
		"covered":  c.check.result(pl.Path, c.p.coverRadius(), c.truth != nil),
	}
	if c.done {
		secs := sim.Duration(c.t1 - c.t0).Seconds()
		dist := c.d1 - c.d0
		out["flown"] = map[string]any{"distance_m": round3(dist), "time_s": round3(secs), "avg_speed_mps": round3(dist / max(secs, 1e-9)),
			"energy_j": round3(c.e1 - c.e0), "turn_deg": round3(c.track.deg),
			"planning_energy_j": round3(c.p.energy().Of(dist, c.track.deg)), "cells_flown_over": c.over}
	}
	return out
}

// truer is implemented by vehicles that give their true position (the
// one vehicles.csv records).
type truer interface{ Pos() geom.Vec3 }

// truePos returns the vehicle's true position where the vehicle gives it,
// else its estimate: the coverage check measures the track actually flown,
// which the behaviour never steers by.
func (c *Coverage) truePos(tel vehicle.Telemetry) geom.Vec3 {
	if c.truth != nil {
		return c.truth.Pos()
	}
	return tel.Pos
}

// coverCheck keeps, for every cell of a grid, the closest horizontal
// approach of a track to the cell's centre. The track is the polyline
// through the positions added; each segment updates only the cells near
// it, so a step costs a few cells whatever the grid's size.
type coverCheck struct {
	g      *plan.Grid
	origin [2]float64
	best   []float64 // m, row-major; +Inf where the track never came near
	last   geom.Vec3
	have   bool
}

func newCoverCheck(g *plan.Grid, origin [2]float64) coverCheck {
	best := make([]float64, g.Cols*g.Rows)
	for i := range best {
		best[i] = math.Inf(1)
	}
	return coverCheck{g: g, origin: origin, best: best}
}

// add extends the track to p.
func (k *coverCheck) add(p geom.Vec3) {
	a := p
	if k.have {
		a = k.last
	}
	k.last, k.have = p, true
	s := k.g.Size
	// The cells whose centre lies within one cell of the segment: any
	// cell the segment could pass within half a cell of.
	c0 := int(math.Floor((min(a.X, p.X)-k.origin[0])/s)) - 1
	c1 := int(math.Floor((max(a.X, p.X)-k.origin[0])/s)) + 1
	r0 := int(math.Floor((min(a.Y, p.Y)-k.origin[1])/s)) - 1
	r1 := int(math.Floor((max(a.Y, p.Y)-k.origin[1])/s)) + 1
	c0, r0 = max(c0, 0), max(r0, 0)
	c1, r1 = min(c1, k.g.Cols-1), min(r1, k.g.Rows-1)
	for r := r0; r <= r1; r++ {
		for c := c0; c <= c1; c++ {
			centre := geom.Vec3{X: k.origin[0] + (float64(c)+0.5)*s, Y: k.origin[1] + (float64(r)+0.5)*s}
			if d := segmentDist(centre, a, p); d < k.best[r*k.g.Cols+c] {
				k.best[r*k.g.Cols+c] = d
			}
		}
	}
}

// result reports the check over the cells of path within radius: how many
// were covered, the ones missed (in path order, each once), and the
// farthest closest approach.
func (k *coverCheck) result(path []plan.Cell, radius float64, truth bool) map[string]any {
	seen := map[plan.Cell]bool{}
	missed := [][2]int{}
	covered, worst := 0, 0.0
	for _, c := range path {
		if seen[c] {
			continue
		}
		seen[c] = true
		d := k.best[c.Row*k.g.Cols+c.Col]
		worst = max(worst, d)
		if d <= radius {
			covered++
		} else {
			missed = append(missed, [2]int{c.Col, c.Row})
		}
	}
	track := "true"
	if !truth {
		track = "estimate"
	}
	out := map[string]any{"radius_m": round3(radius), "track": track, "planned": len(seen), "cells": covered, "missed": missed}
	if !math.IsInf(worst, 1) {
		out["worst_m"] = round3(worst)
	}
	return out
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// trackTurns sums the heading changes of the path flown through the turn
// points: the legs between the positions where the vehicle reached
// consecutive turn points (so the figure compares with the plan's turns,
// and position noise along a leg counts nothing).
type trackTurns struct {
	last    geom.Vec3
	heading float64
	have    bool // last is set
	hasHead bool // heading is set
	deg     float64
}

func (t *trackTurns) add(p geom.Vec3) {
	if !t.have {
		t.last, t.have = p, true
		return
	}
	dx, dy := p.X-t.last.X, p.Y-t.last.Y
	if dx*dx+dy*dy < 1e-6 {
		return
	}
	h := math.Atan2(dy, dx)
	if t.hasHead {
		t.deg += math.Abs(geom.WrapAngle(h-t.heading)) * 180 / math.Pi
	}
	t.heading, t.hasHead, t.last = h, true, p
}
