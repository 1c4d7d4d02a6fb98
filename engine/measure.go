package engine

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"

	"skyloop/behavior"
	"skyloop/fields"
	"skyloop/geom"
	"skyloop/metrics"
	"skyloop/sim"
	"skyloop/vehicle"
)

// Measures (the scenario's measures section) watch the vehicles' true
// states at every tick, beside the world checks, for figures that need
// more than the network metrics: the netbots platoon study's gap error, say. They
// run in the "measure" phase at the start of each tick t > 0, seeing the
// state at the end of the tick before, and once more on the final state;
// their results go to summary.json under measures.<name>.

// measure is one configured measure.
type measure interface {
	name() string
	// open creates the measure's files through file (which returns a nil
	// writer when the run writes no files).
	open(file func(name string) (io.Writer, error)) error
	observe(t sim.Time)
	result() any
	// finish writes the measure's end-of-run files through file.
	finish(file func(name string) (io.Writer, error)) error
}

// measureSpec is a measure type as scenarios name it.
type measureSpec struct {
	params func() validator
	// check records what the decoded parameters p ask that the run does
	// not have (a group, a period off the tick) at path; it reports
	// whether all is well.
	check func(d *decoding, p validator, path string) bool
	// new builds the measure from checked parameters.
	new func(r *Run, p validator, name string) (measure, error)
}

// coreMeasures are the measure types every registry made by Core has.
var coreMeasures = map[string]measureSpec{
	"platoon": {
		params: func() validator { p := metrics.DefaultPlatoonParams(); return &platoonParams{PlatoonParams: p} },
		check:  checkPlatoon,
		new:    newPlatoonMeasure,
	},
	"formation": {
		params: func() validator {
			return &formationParams{FormationParams: metrics.DefaultFormationParams(),
				FormationGeometry: behavior.FormationGeometry{Shape: "line", Spacing: 10}}
		},
		check: checkFormation,
		new:   newFormationMeasure,
	},
}

// formationParams are the formation measure's parameters: the group, mode
// and sampling, and the slots (the formation behaviour's geometry; in
// flock mode only spacing counts).
type formationParams struct {
	Name                       string `yaml:"name" json:"name"`
	metrics.FormationParams    `yaml:",inline"`
	behavior.FormationGeometry `yaml:",inline"`
}

func (p *formationParams) Validate() fields.Errors {
	bad := p.FormationParams.Validate()
	for k, v := range p.FormationGeometry.Validate() {
		bad[k] = v
	}
	return bad
}

// platoonParams are the platoon measure's parameters with its name.
type platoonParams struct {
	Name                  string `yaml:"name" json:"name"`
	metrics.PlatoonParams `yaml:",inline"`
}

var fileNameOK = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

func (p *platoonParams) Validate() fields.Errors {
	bad := p.PlatoonParams.Validate()
	if p.File != "" && (!fileNameOK.MatchString(p.File) || !strings.HasSuffix(p.File, ".csv")) {
		bad["file"] = fmt.Sprintf("%q: want a plain file name ending in .csv, or \"\" for none", p.File)
	}
	return bad
}

// measures checks the scenario's measures, which Parse decoded, against
// the run: their groups and periods.
func (d *decoding) measures() {
	sc, c := d.sc, d.c
	var eff []any
	for i, m := range sc.MeasureParams {
		ms, ok := c.reg.measures[m.Type]
		if !ok || m.Params == nil {
			continue // reported by Parse
		}
		path := fmt.Sprintf("measures[%d]", i)
		p := m.Params
		switch pp := p.(type) {
		case *platoonParams:
			pp.Name = m.Name
		case *formationParams:
			pp.Name = m.Name
		}
		if ms.check(d, p, path) {
			c.measures = append(c.measures, measureConfig{spec: ms, name: m.Name, params: p})
		}
		eff = append(eff, map[string]any{"type": m.Type, "params": p})
	}
	if len(sc.Measures) > 0 {
		c.effective["measures"] = eff
	}
}

// groupIDs returns the node ids of the vehicles of group name, in index
// order.
func groupIDs(nodes []nodeState, name string, vehicles int) []int {
	var ids []int
	for i := range nodes[:vehicles] {
		if nodes[i].ref.Group == name {
			ids = append(ids, i)
		}
	}
	return ids
}

// groupSize returns the number of vehicles placed in groups called name.
func (c *Config) groupSize(name string) int {
	n := 0
	for _, g := range c.groups {
		if g.name == name {
			n += len(g.points)
		}
	}
	return n
}

// measurePhase observes the measures at tick t.
func (r *Run) measurePhase(t sim.Time) error {
	if t > 0 {
		for _, m := range r.measures {
			m.observe(t)
		}
	}
	return nil
}

// platoonMeasure feeds metrics.Platoon with a vehicle group's planar states.
type platoonMeasure struct {
	r      *Run
	nm     string
	m      *metrics.Platoon
	ids    []int // vehicles of the group, in index order
	pos    []geom.Vec3
	states []metrics.Planar
	csv    io.Writer // nil: no per-sample file
	row    []byte
}

func checkPlatoon(d *decoding, p validator, path string) bool {
	pp := p.(*platoonParams)
	found := false
	for _, g := range d.sc.Vehicles {
		found = found || g.Name == pp.Group
	}
	if !found {
		d.errorf(path+".group", "no vehicle group %q", pp.Group)
		return false
	}
	if tick := d.c.tick; pp.Sample%tick != 0 || pp.Warmup%tick != 0 {
		d.errorf(path+".sample", "sample %v and warmup %v must be multiples of the tick %v", pp.Sample, pp.Warmup, tick)
		return false
	}
	return true
}

func newPlatoonMeasure(r *Run, p validator, name string) (measure, error) {
	pp := p.(*platoonParams)
	ids := groupIDs(r.fleet.nodes, pp.Group, len(r.fleet.veh))
	return &platoonMeasure{r: r, nm: name, m: metrics.NewPlatoon(pp.PlatoonParams, len(ids)), ids: ids, pos: make([]geom.Vec3, len(ids)), states: make([]metrics.Planar, len(ids))}, nil
}

func (pm *platoonMeasure) name() string { return pm.nm }

func (pm *platoonMeasure) open(file func(name string) (io.Writer, error)) error {
	f := pm.m.Params().File
	if f == "" {
		return nil
	}
	w, err := file(f)
	if err != nil || w == nil {
		return err
	}
	pm.csv = w
	_, err = io.WriteString(w, "t_ns,id,x,y,theta,v,omega,gap_m\n")
	return err
}

func (pm *platoonMeasure) observe(t sim.Time) {
	for i, id := range pm.ids {
		pm.pos[i] = posOf(pm.r.fleet.veh[id])
	}
	if !pm.m.Observe(t, pm.pos) {
		return
	}
	for i, id := range pm.ids {
		pm.states[i] = planarOf(pm.r.fleet.veh[id])
	}
	pm.m.Sample(pm.states)
	if pm.csv == nil {
		return
	}
	for i, s := range pm.states {
		b := pm.row[:0]
		b = strconv.AppendInt(b, int64(t), 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(pm.ids[i]), 10)
		for _, f := range [...]struct {
			v    float64
			prec int
		}{{s.X, 4}, {s.Y, 4}, {s.Theta, 5}, {s.V, 4}, {s.Omega, 4}} {
			b = append(b, ',')
			b = strconv.AppendFloat(b, f.v, 'f', f.prec, 64)
		}
		b = append(b, ',')
		if i > 0 {
			a := pm.states[i-1]
			b = strconv.AppendFloat(b, math.Hypot(s.X-a.X, s.Y-a.Y), 'f', 4, 64)
		}
		b = append(b, '\n')
		pm.row = b
		// Write errors are kept by the run directory and reported when
		// it closes.
		pm.csv.Write(b)
	}
}

func (pm *platoonMeasure) result() any { return pm.m.Result() }

func (pm *platoonMeasure) finish(file func(name string) (io.Writer, error)) error {
	w, err := file(pm.nm + ".json")
	if err != nil || w == nil {
		return err
	}
	b, err := json.MarshalIndent(pm.m.Track(), "", "  ")
	if err != nil {
		return fmt.Errorf("encoding %s.json: %w", pm.nm, err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// formationMeasure feeds metrics.Formation with a vehicle group's true
// positions.
type formationMeasure struct {
	r   *Run
	nm  string
	m   *metrics.Formation
	ids []int
	pos []geom.Vec3
}

func checkFormation(d *decoding, p validator, path string) bool {
	fp := p.(*formationParams)
	n := d.c.groupSize(fp.Group)
	if n == 0 {
		d.errorf(path+".group", "no vehicle group %q", fp.Group)
		return false
	}
	if tick := d.c.tick; fp.Period%tick != 0 {
		d.errorf(path+".period", "%v must be a multiple of the tick %v", fp.Period, tick)
		return false
	}
	if _, err := fp.Slots(n); err != nil {
		d.errorf(path+".offsets", "%v", err)
		return false
	}
	return true
}

func newFormationMeasure(r *Run, p validator, name string) (measure, error) {
	fp := p.(*formationParams)
	ids := groupIDs(r.fleet.nodes, fp.Group, len(r.fleet.veh))
	slots, err := fp.Slots(len(ids))
	if err != nil {
		return nil, fmt.Errorf("measure %s: %w", name, err)
	}
	return &formationMeasure{r: r, nm: name, m: metrics.NewFormation(fp.FormationParams, len(ids), slots, fp.Spacing),
		ids: ids, pos: make([]geom.Vec3, len(ids))}, nil
}

func (fm *formationMeasure) name() string { return fm.nm }

func (fm *formationMeasure) open(func(name string) (io.Writer, error)) error { return nil }

func (fm *formationMeasure) observe(t sim.Time) {
	if int64(t)%int64(fm.m.Params().Period) != 0 {
		return
	}
	for i, id := range fm.ids {
		fm.pos[i] = posOf(fm.r.fleet.veh[id])
	}
	fm.m.Observe(t, fm.pos)
}

func (fm *formationMeasure) result() any { return fm.m.Result() }

func (fm *formationMeasure) finish(func(name string) (io.Writer, error)) error { return nil }

// forwardSpeeder is implemented by vehicles that know their signed speed
// along their heading exactly (ground robots).
type forwardSpeeder interface{ ForwardSpeed() float64 }

// poser is implemented by vehicles that give their position cheaply.
type poser interface{ Pos() geom.Vec3 }

// posOf returns a vehicle's true position.
func posOf(v vehicle.Vehicle) geom.Vec3 {
	if p, ok := v.(poser); ok {
		return p.Pos()
	}
	return v.Telemetry().Pos
}

// planarOf returns a vehicle's true planar state.
func planarOf(v vehicle.Vehicle) metrics.Planar {
	tel := v.Telemetry()
	p := metrics.Planar{X: tel.Pos.X, Y: tel.Pos.Y, Theta: tel.Yaw, Omega: tel.YawRate}
	if f, ok := v.(forwardSpeeder); ok {
		p.V = f.ForwardSpeed()
	} else {
		p.V = tel.Vel.NormXY()
		if tel.Vel.X*math.Cos(tel.Yaw)+tel.Vel.Y*math.Sin(tel.Yaw) < 0 {
			p.V = -p.V
		}
	}
	return p
}
