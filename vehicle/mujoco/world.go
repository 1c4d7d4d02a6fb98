package mujoco

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"

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
	// compiled model.
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

// World is one MuJoCo model for every robot of a run: a ground plane at
// z = 0, the scenario's obstacles as static boxes, and the robots' parts.
// It implements vehicle.World.
type World struct {
	period sim.Duration
	parts  []Part
	model  *Model
	errs   []error
}

// Fail records a problem found while the robots were put in the world
// (a model file that cannot be read, say); Build reports it.
func (w *World) Fail(err error) { w.errs = append(w.errs, err) }

// WorldIn returns the run's MuJoCo world from worlds, making it (with
// this step) for the first robot that asks: every MuJoCo robot of a run,
// of any group or kind, lives in this one world.
func WorldIn(worlds *vehicle.Worlds, period sim.Duration) *World {
	return worlds.Get(Kind, func() vehicle.World { return NewWorld(period) }).(*World)
}

// NewWorld returns an empty world stepped every period (MuJoCo's time
// step).
func NewWorld(period sim.Duration) *World { return &World{period: period} }

// Add puts a robot in the world; call it before Build.
func (w *World) Add(p Part) { w.parts = append(w.parts, p) }

// Parts returns the number of robots in the world.
func (w *World) Parts() int { return len(w.parts) }

// Period returns the time step.
func (w *World) Period() sim.Duration { return w.period }

// Model returns the compiled model (nil before Build).
func (w *World) Model() *Model { return w.model }

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

// MJCF returns the world's model text with the given obstacles.
func (w *World) MJCF(obstacles []geom.Box) ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "<mujoco model=\"skyloop\">\n  <option timestep=\"%s\" jacobian=\"sparse\"/>\n", num(w.period.Seconds()))
	heads := map[string]bool{}
	var first string
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
			return nil, fmt.Errorf("robots of two MJCF models (%s and %s) in one run: their defaults and assets would clash; use one model", first, key)
		}
		heads[key], first = true, key
		b.WriteString(text)
	}
	b.WriteString("  <worldbody>\n")
	b.WriteString("    <geom name=\"floor\" type=\"plane\" size=\"0 0 1\" friction=\"1 0.005 0.0001\"/>\n")
	for i, o := range obstacles {
		c, h := o.Min.Add(o.Max).Scale(0.5), o.Max.Sub(o.Min).Scale(0.5)
		fmt.Fprintf(&b, "    <geom name=\"obstacle_%d\" type=\"box\" pos=\"%s\" size=\"%s\"/>\n", i, Vec(c.X, c.Y, c.Z), Vec(h.X, h.Y, h.Z))
	}
	var act, more bytes.Buffer
	for _, p := range w.parts {
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
	return b.Bytes(), nil
}

// Build compiles the world and binds its parts. Obstacles with no volume
// are skipped.
func (w *World) Build(obstacles []geom.Box) error {
	if w.model != nil {
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
	var boxes []geom.Box
	for _, o := range obstacles {
		if d := o.Max.Sub(o.Min); d.X > 0 && d.Y > 0 && d.Z > 0 {
			boxes = append(boxes, o)
		}
	}
	text, err := w.MJCF(boxes)
	if err != nil {
		return err
	}
	m, err := LoadXML(text, "")
	if err != nil {
		return err
	}
	if ts := m.Timestep(); ts != w.period.Seconds() {
		m.Close()
		return fmt.Errorf("internal error: MuJoCo time step %v s, want %v", ts, w.period.Seconds())
	}
	for _, p := range w.parts {
		if err := p.Bind(m); err != nil {
			m.Close()
			return err
		}
	}
	w.model = m
	return nil
}

// Step advances the world by one time step; it fails when the state is
// no longer finite (the simulation diverged).
func (w *World) Step(t sim.Time) error {
	m := w.model
	m.Step()
	for i, q := range m.Qpos {
		if math.IsNaN(q) || math.IsInf(q, 0) {
			return fmt.Errorf("MuJoCo diverged at %v: qpos[%d] = %v (a time step too large for the model's stiffness or gains?)", sim.Duration(t), i, q)
		}
	}
	dt := w.period.Seconds()
	for _, p := range w.parts {
		p.Stepped(m, dt)
	}
	return nil
}

// Close frees the model.
func (w *World) Close() {
	if w.model != nil {
		w.model.Close()
		w.model = nil
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
