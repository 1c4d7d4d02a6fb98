package mujoco

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"skyloop/geom"
	"skyloop/sim"
	"skyloop/vehicle"
)

// Part is one robot's share of a World: its MJCF, and what it does once
// the model is compiled and after every step.
type Part interface {
	// MJCF returns the robot's bodies (placed inside <worldbody>) and
	// actuators (inside <actuator>), with names unique in the world.
	MJCF() (bodies, actuators string)
	// Bind looks the robot's bodies, joints and actuators up in the
	// compiled model. The world calls it again whenever the robot moves
	// to another model (it came near another robot, or left it), with
	// the robot's state, and what the last step computed of it, copied
	// over: only the indices change.
	Bind(m *Model) error
	// Stepped is called after every step of dt seconds.
	Stepped(m *Model, dt float64)
}

// HeadPart is a Part whose model has sections shared by every copy
// (compiler settings, defaults, assets), written once per key.
type HeadPart interface {
	Part
	Head() (key, text string)
}

// SectionsPart is a Part with more sections than bodies and actuators
// (tendons, equality constraints, contact pairs, sensors), each written
// whole.
type SectionsPart interface {
	Part
	Sections() string
}

// World is the MuJoCo physics of every robot of a run: a ground plane at
// z = 0, the scenario's obstacles as static boxes, and the robots' parts.
// It implements vehicle.World.
//
// Robots that do not touch are independent: each is stepped in a MuJoCo
// model of its own (the floor, the obstacles and that robot), because
// MuJoCo 2.2.2 solves the constraints of a model as one problem (one line
// search step, one convergence test and one warm-start choice for all its
// contacts), so robots sharing a model change each other's motion by
// rounding, and a sensitive controller grows that into centimetres.
// Robots whose bounding boxes come within MergeGap of each other (more
// when they move fast) are moved, state and all, into one model for as
// long as they stay near, so that they push each other as before; they
// get their own models back when they are twice as far apart.
type World struct {
	lib    Library
	period sim.Duration
	parts  []Part
	errs   []error
	boxes  []geom.Box // the obstacles with a volume
	head   string     // the shared MJCF sections
	// statics is the number of the world body's geoms: the floor and
	// the obstacles, first in every model.
	statics int

	solo   []*Model // each part's own model
	size   []span   // each part's share of a model
	at     []span   // where each part is in its group's model
	in     []*group // each part's group
	groups []*group // the models stepped, in the order of their first part

	// proximity, per part: bounding box, how far it moved in the last
	// step, and whether it has an unbounded geom (a plane)
	lo, hi    []geom.Vec3
	move      []float64
	unbounded []bool
	order     []int // parts by lo.X
	root      []int // union-find of the parts near each other
	merges    int
}

// span counts (or locates) a part's bodies, coordinates, degrees of
// freedom, actuators, activations, geoms and sensor values in a model.
type span struct{ body, q, v, u, a, geom, sensor int }

func (s span) add(t span) span {
	return span{s.body + t.body, s.q + t.q, s.v + t.v, s.u + t.u, s.a + t.a, s.geom + t.geom, s.sensor + t.sensor}
}

// group is robots stepped in one model.
type group struct {
	parts []int // ascending
	m     *Model
	// shared: m holds several parts and is freed with the group (a
	// single part's group uses its own model, kept for the run).
	shared bool
}

// MergeGap is the distance between two robots' bounding boxes (each
// geom's bounding sphere, widened by its contact margin) below which they
// are stepped in one MuJoCo model, m; to it are added four times the
// distance both moved in the last step.
const MergeGap = 0.05

// Fail records a problem found while the robots were put in the world
// (a model file that cannot be read, say); Build reports it.
func (w *World) Fail(err error) { w.errs = append(w.errs, err) }

// WorldIn returns the run's MuJoCo world from worlds, making it (with
// this library and step) for the first robot that asks: every MuJoCo robot
// of a run, of any group or kind, lives in this one world.
func WorldIn(worlds *vehicle.Worlds, lib Library, period sim.Duration) *World {
	return worlds.Get(Kind, func() vehicle.World { return NewWorld(lib, period) }).(*World)
}

// NewWorld returns an empty world whose models lib compiles, stepped
// every period (MuJoCo's time step); a nil lib is Absent().
func NewWorld(lib Library, period sim.Duration) *World {
	if lib == nil {
		lib = Absent()
	}
	return &World{lib: lib, period: period}
}

// Add puts a robot in the world; call it before Build.
func (w *World) Add(p Part) { w.parts = append(w.parts, p) }

// Parts returns the number of robots in the world.
func (w *World) Parts() int { return len(w.parts) }

// Period returns the time step.
func (w *World) Period() sim.Duration { return w.period }

// Groups returns the robots (by their order of Add) stepped together in
// one MuJoCo model, one slice per model; a robot alone is a group of one.
func (w *World) Groups() [][]int {
	out := make([][]int, len(w.groups))
	for i, g := range w.groups {
		out[i] = append([]int(nil), g.parts...)
	}
	return out
}

// Merges returns how many times robots were put in one model since Build.
func (w *World) Merges() int { return w.merges }

// num formats a number exactly and compactly for MJCF.
func num(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// Vec formats numbers separated by spaces, for MJCF attributes.
func Vec(v ...float64) string {
	var b []byte
	for i, x := range v {
		if i > 0 {
			b = append(b, ' ')
		}
		b = strconv.AppendFloat(b, x, 'g', -1, 64)
	}
	return string(b)
}

// heads returns the parts' shared MJCF sections, written once.
func (w *World) heads() (string, error) {
	heads := map[string]bool{}
	var first string
	var b strings.Builder
	for _, p := range w.parts {
		hp, ok := p.(HeadPart)
		if !ok {
			continue
		}
		key, text := hp.Head()
		if heads[key] {
			continue
		}
		if len(heads) > 0 {
			return "", fmt.Errorf("robots of two MJCF models (%s and %s) in one run: their defaults and assets would clash; use one model", first, key)
		}
		heads[key], first = true, key
		b.WriteString(text)
	}
	return b.String(), nil
}

// mjcf returns the model text of the floor, the obstacles and the given
// parts (indices, ascending).
func (w *World) mjcf(parts []int) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "<mujoco model=\"skyloop\">\n  <option timestep=\"%s\" jacobian=\"sparse\"/>\n", num(w.period.Seconds()))
	b.WriteString(w.head)
	b.WriteString("  <worldbody>\n")
	b.WriteString("    <geom name=\"floor\" type=\"plane\" size=\"0 0 1\" friction=\"1 0.005 0.0001\"/>\n")
	for i, o := range w.boxes {
		c, h := o.Min.Add(o.Max).Scale(0.5), o.Max.Sub(o.Min).Scale(0.5)
		fmt.Fprintf(&b, "    <geom name=\"obstacle_%d\" type=\"box\" pos=\"%s\" size=\"%s\"/>\n", i, Vec(c.X, c.Y, c.Z), Vec(h.X, h.Y, h.Z))
	}
	var act, more bytes.Buffer
	for _, i := range parts {
		p := w.parts[i]
		bodies, actuators := p.MJCF()
		b.WriteString(bodies)
		act.WriteString(actuators)
		if sp, ok := p.(SectionsPart); ok {
			more.WriteString(sp.Sections())
		}
	}
	b.WriteString("  </worldbody>\n")
	if act.Len() > 0 {
		b.WriteString("  <actuator>\n")
		b.Write(act.Bytes())
		b.WriteString("  </actuator>\n")
	}
	b.Write(more.Bytes())
	b.WriteString("</mujoco>\n")
	return b.Bytes()
}

// compile compiles the model of the given parts.
func (w *World) compile(parts []int) (*Model, error) {
	m, err := w.lib.Compile(w.mjcf(parts))
	if err != nil {
		return nil, err
	}
	if ts := m.Timestep(); ts != w.period.Seconds() {
		m.Close()
		return nil, fmt.Errorf("internal error: MuJoCo time step %v s, want %v", ts, w.period.Seconds())
	}
	return m, nil
}

// Build compiles every robot's own model and binds the robots; robots
// that start near each other are then put in one model. Obstacles with no
// volume are skipped.
func (w *World) Build(obstacles []geom.Box) error {
	if w.solo != nil {
		return fmt.Errorf("internal error: MuJoCo world built twice")
	}
	if len(w.errs) > 0 {
		return errors.Join(w.errs...)
	}
	for _, p := range w.parts {
		if pp, ok := p.(interface{ Period() sim.Duration }); ok && pp.Period() != w.period {
			return fmt.Errorf("the robots in one MuJoCo world step together: physics periods %v and %v differ", w.period, pp.Period())
		}
	}
	for _, o := range obstacles {
		if d := o.Max.Sub(o.Min); d.X > 0 && d.Y > 0 && d.Z > 0 {
			w.boxes = append(w.boxes, o)
		}
	}
	head, err := w.heads()
	if err != nil {
		return err
	}
	w.head, w.statics = head, 1+len(w.boxes)
	n := len(w.parts)
	w.solo, w.size, w.at, w.in = make([]*Model, n), make([]span, n), make([]span, n), make([]*group, n)
	w.lo, w.hi, w.move, w.unbounded = make([]geom.Vec3, n), make([]geom.Vec3, n), make([]float64, n), make([]bool, n)
	w.order, w.root = make([]int, n), make([]int, n)
	base := span{body: 1, geom: w.statics}
	for i, p := range w.parts {
		m, err := w.compile([]int{i})
		if err != nil {
			w.Close()
			return err
		}
		w.solo[i] = m
		w.size[i] = span{body: m.NBody() - 1, q: m.NQ(), v: m.NV(), u: m.NU(), a: m.NA(), geom: m.NGeom() - w.statics, sensor: m.NSensorData()}
		for g := 0; g < m.NGeom(); g++ {
			// The part's geoms follow the world's; a part whose geoms
			// do not (static bodies fused into the world) is kept with
			// every other, as is one with a plane.
			if (g < w.statics) != (m.GeomBody(g) == 0) || (g >= w.statics && m.GeomRbound[g] == 0) {
				w.unbounded[i] = true
			}
		}
		w.at[i], w.order[i] = base, i
		w.in[i] = &group{parts: []int{i}, m: m}
		w.groups = append(w.groups, w.in[i])
		if err := p.Bind(m); err != nil {
			w.Close()
			return err
		}
	}
	w.bound(true)
	if err := w.regroup(); err != nil {
		w.Close()
		return err
	}
	return nil
}

// Step advances the world by one time step; it fails when the state is
// no longer finite (the simulation diverged).
func (w *World) Step(t sim.Time) error {
	for _, g := range w.groups {
		m := g.m
		m.Step()
		for i, q := range m.Qpos {
			if math.IsNaN(q) || math.IsInf(q, 0) {
				return fmt.Errorf("MuJoCo diverged at %v: qpos[%d] = %v of robots %v (a time step too large for the model's stiffness or gains?)", sim.Duration(t), i, q, g.parts)
			}
		}
		// MuJoCo drops what does not fit and carries on (robots fall
		// through the floor): stop instead.
		if m.Warnings(WarnContactFull) > 0 || m.Warnings(WarnConstraintFull) > 0 {
			return fmt.Errorf("MuJoCo at %v: robots %v, in one MuJoCo model since they are near each other, make more than the %d contacts (or %d constraint rows, floor contacts included) a model holds, and MuJoCo dropped the rest: fewer robots side by side, or fewer contact geoms per robot",
				sim.Duration(t), g.parts, m.NConMax(), m.NJMax())
		}
	}
	dt := w.period.Seconds()
	for i, p := range w.parts {
		p.Stepped(w.in[i].m, dt)
	}
	w.bound(false)
	return w.regroup()
}

// bound finds every part's bounding box in its model (as of the last
// step's positions), and how far it moved since the last call.
func (w *World) bound(first bool) {
	for i := range w.parts {
		m, at, sz := w.in[i].m, w.at[i], w.size[i]
		lo, hi := geom.V(math.Inf(1), math.Inf(1), math.Inf(1)), geom.V(math.Inf(-1), math.Inf(-1), math.Inf(-1))
		for g := at.geom; g < at.geom+sz.geom; g++ {
			r := m.GeomRbound[g] + m.GeomMargin[g]
			c := m.GeomXpos[3*g : 3*g+3]
			lo = geom.V(min(lo.X, c[0]-r), min(lo.Y, c[1]-r), min(lo.Z, c[2]-r))
			hi = geom.V(max(hi.X, c[0]+r), max(hi.Y, c[1]+r), max(hi.Z, c[2]+r))
		}
		if !first && sz.geom > 0 {
			a, b := lo.Sub(w.lo[i]), hi.Sub(w.hi[i])
			w.move[i] = max(math.Abs(a.X), math.Abs(a.Y), math.Abs(a.Z), math.Abs(b.X), math.Abs(b.Y), math.Abs(b.Z))
		}
		w.lo[i], w.hi[i] = lo, hi
	}
}

// gap returns the distance between two parts' bounding boxes along the
// axis where they are farthest apart (0 when they overlap): never more
// than the distance between them.
func (w *World) gap(a, b int) float64 {
	la, ha, lb, hb := w.lo[a], w.hi[a], w.lo[b], w.hi[b]
	return max(0, lb.X-ha.X, la.X-hb.X, lb.Y-ha.Y, la.Y-hb.Y, lb.Z-ha.Z, la.Z-hb.Z)
}

// reach returns the gap below which parts a and b belong in one model:
// MergeGap and four steps of their motion, doubled while they are in one
// model (so that robots at the threshold do not switch back and forth).
func (w *World) reach(a, b int) float64 {
	r := MergeGap + 4*(w.move[a]+w.move[b])
	if w.in[a] == w.in[b] {
		r *= 2
	}
	return r
}

func (w *World) find(i int) int {
	for w.root[i] != i {
		w.root[i] = w.root[w.root[i]]
		i = w.root[i]
	}
	return i
}

// union joins the sets of a and b; a set's root is its smallest part.
func (w *World) union(a, b int) {
	ra, rb := w.find(a), w.find(b)
	if ra < rb {
		w.root[rb] = ra
	} else {
		w.root[ra] = rb
	}
}

// regroup puts the parts that are near each other (transitively) in one
// model, and parts near no other in their own; it costs a sweep over the
// parts sorted by x when nothing changes, and compiles a model when parts
// come together.
func (w *World) regroup() error {
	n := len(w.parts)
	if n == 0 {
		return nil
	}
	// Insertion sort: the order changes little from step to step.
	o := w.order
	for i := 1; i < n; i++ {
		for j := i; j > 0 && w.lo[o[j]].X < w.lo[o[j-1]].X; j-- {
			o[j], o[j-1] = o[j-1], o[j]
		}
	}
	var fastest float64
	anyUnbounded := -1
	for i := range w.root {
		w.root[i] = i
		fastest = max(fastest, w.move[i])
		if w.unbounded[i] {
			if anyUnbounded >= 0 {
				w.union(anyUnbounded, i)
			}
			anyUnbounded = i
		}
	}
	if anyUnbounded >= 0 {
		for i := range w.root {
			w.union(anyUnbounded, i)
		}
	}
	far := 2 * (MergeGap + 8*fastest)
	for k, a := range o {
		for _, b := range o[k+1:] {
			if w.lo[b].X-w.hi[a].X > far {
				break
			}
			if w.gap(a, b) < w.reach(a, b) {
				w.union(a, b)
			}
		}
	}
	same := true
	for i := range w.root {
		if w.find(i) != w.in[i].parts[0] {
			same = false
			break
		}
	}
	if same {
		return nil
	}
	return w.rebuild()
}

// rebuild makes the groups of the union-find's sets: a set whose parts
// are a group already keeps it; a part alone goes back to its own model;
// parts together are compiled into a new model. Each moved part's state
// is copied over, and the part bound to its new model.
func (w *World) rebuild() error {
	n := len(w.parts)
	members := make([][]int, n)
	for i := 0; i < n; i++ {
		r := w.find(i)
		members[r] = append(members[r], i)
	}
	old := w.groups
	keep := map[*group]bool{}
	var groups []*group
	newIn := make([]*group, n)
	newAt := make([]span, n)
	for r, ps := range members {
		if len(ps) == 0 {
			continue
		}
		if g := w.in[r]; slicesEqual(g.parts, ps) {
			keep[g] = true
			groups = append(groups, g)
			for _, i := range ps {
				newIn[i], newAt[i] = g, w.at[i]
			}
			continue
		}
		g := &group{parts: ps}
		if len(ps) == 1 {
			g.m = w.solo[r]
		} else {
			m, err := w.compile(ps)
			if err != nil {
				return fmt.Errorf("MuJoCo: putting robots %v in one model: %w", ps, err)
			}
			g.m, g.shared = m, true
			w.merges++
		}
		at := span{body: 1, geom: w.statics}
		for _, i := range ps {
			newIn[i], newAt[i] = g, at
			at = at.add(w.size[i])
		}
		if want := at.add(span{body: -1, geom: -w.statics}); want != (span{body: g.m.NBody() - 1, q: g.m.NQ(), v: g.m.NV(), u: g.m.NU(), a: g.m.NA(), geom: g.m.NGeom() - w.statics, sensor: g.m.NSensorData()}) {
			if g.shared {
				g.m.Close()
			}
			return fmt.Errorf("internal error: the MuJoCo model of robots %v is not the sum of theirs", ps)
		}
		for _, i := range ps {
			copyPart(g.m, newAt[i], w.in[i].m, w.at[i], w.size[i])
		}
		g.m.SetTime(w.in[ps[0]].m.Time())
		groups = append(groups, g)
	}
	w.groups, w.in, w.at = groups, newIn, newAt
	for _, g := range groups {
		if keep[g] {
			continue
		}
		for _, i := range g.parts {
			if err := w.parts[i].Bind(g.m); err != nil {
				return err
			}
		}
	}
	for _, g := range old {
		if g.shared && !keep[g] {
			g.m.Close()
		}
	}
	return nil
}

func slicesEqual(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// copyPart copies a part's state, and what its robot reads of the last
// step (body poses, geom positions, sensor values, actuator forces and
// velocities), from src (where it is at sat) to dst (at dat): the next
// step of dst continues the part's motion as src's would have, and binding
// it to dst reads what it read from src.
func copyPart(dst *Model, dat span, src *Model, sat span, sz span) {
	copy(dst.Qpos[dat.q:dat.q+sz.q], src.Qpos[sat.q:])
	copy(dst.Qvel[dat.v:dat.v+sz.v], src.Qvel[sat.v:])
	copy(dst.QaccWarmstart[dat.v:dat.v+sz.v], src.QaccWarmstart[sat.v:])
	copy(dst.Act[dat.a:dat.a+sz.a], src.Act[sat.a:])
	copy(dst.Ctrl[dat.u:dat.u+sz.u], src.Ctrl[sat.u:])
	copy(dst.ActuatorForce[dat.u:dat.u+sz.u], src.ActuatorForce[sat.u:])
	copy(dst.ActuatorVelocity[dat.u:dat.u+sz.u], src.ActuatorVelocity[sat.u:])
	copy(dst.Xpos[3*dat.body:3*(dat.body+sz.body)], src.Xpos[3*sat.body:])
	copy(dst.Xquat[4*dat.body:4*(dat.body+sz.body)], src.Xquat[4*sat.body:])
	copy(dst.GeomXpos[3*dat.geom:3*(dat.geom+sz.geom)], src.GeomXpos[3*sat.geom:])
	copy(dst.SensorData[dat.sensor:dat.sensor+sz.sensor], src.SensorData[sat.sensor:])
}

// Close frees the models.
func (w *World) Close() {
	for _, g := range w.groups {
		if g.shared {
			g.m.Close()
		}
	}
	w.groups = nil
	for _, m := range w.solo {
		if m != nil {
			m.Close()
		}
	}
	for i := range w.solo {
		w.solo[i] = nil
	}
}

// Body is the pose and motion of one body of a compiled model.
type Body struct {
	ID int
}

// Pos returns the body's position.
func (b Body) Pos(m *Model) geom.Vec3 {
	p := m.Xpos[3*b.ID : 3*b.ID+3]
	return geom.Vec3{X: p[0], Y: p[1], Z: p[2]}
}

// Quat returns the body's orientation.
func (b Body) Quat(m *Model) geom.Quat {
	q := m.Xquat[4*b.ID : 4*b.ID+4]
	return geom.Quat{W: q[0], X: q[1], Y: q[2], Z: q[3]}
}
