package mujoco

import (
	"fmt"
	"math"
	"path/filepath"

	"skyloop/fields"
	"skyloop/geom"
	"skyloop/sim"
	"skyloop/vehicle"
)

// Kind is the scenario name of MJCF robots.
const Kind = "mujoco"

// RobotParams configure a group of robots read from an MJCF file: which
// body is the vehicle, and which two velocity actuators drive it as a
// differential-drive robot (their ctrl is a wheel speed, rad/s).
type RobotParams struct {
	// Model is the MJCF file of one robot, relative to the scenario's
	// directory.
	Model string `yaml:"model" json:"model"`
	// Body names the body whose pose and motion are the vehicle's.
	Body string `yaml:"body" json:"body"`
	// Left and Right name the wheels' velocity actuators.
	Left  string `yaml:"left" json:"left"`
	Right string `yaml:"right" json:"right"`
	// WheelRadius and Track are the wheel radius and the distance between
	// the wheels, m, for the drive controller.
	WheelRadius float64 `yaml:"wheel_radius" json:"wheel_radius"`
	Track       float64 `yaml:"track" json:"track"`
	// MaxWheelSpeed limits the wheel speed commands, rad/s.
	MaxWheelSpeed float64 `yaml:"max_wheel_speed" json:"max_wheel_speed"`
	// MaxSpeed, HeadingGain, PosGain and AcceptRadius tune goto as for the
	// groundbot.
	MaxSpeed     float64 `yaml:"max_speed" json:"max_speed"`
	HeadingGain  float64 `yaml:"heading_gain" json:"heading_gain"`
	PosGain      float64 `yaml:"pos_gain" json:"pos_gain"`
	AcceptRadius float64 `yaml:"accept_radius" json:"accept_radius"`
	// Telemetry names the model's sensors the vehicle's telemetry comes
	// from instead of Body's pose and motion (each optional).
	Telemetry SensorMap `yaml:"telemetry" json:"telemetry"`
	// Radius is the bounding radius for separation checks, m.
	Radius        float64      `yaml:"radius" json:"radius"`
	PhysicsPeriod sim.Duration `yaml:"physics_period" json:"physics_period"`
	ControlPeriod sim.Duration `yaml:"control_period" json:"control_period"`

	// lib is the library the robots need (UseLibrary).
	lib Library
}

// UseLibrary sets the MuJoCo library that Validate checks is there and
// ValidateFiles reads the model file with (the registry's; Absent() when
// unset).
func (p *RobotParams) UseLibrary(l Library) { p.lib = l }

// library returns the library set by UseLibrary, or Absent().
func (p *RobotParams) library() Library {
	if p.lib == nil {
		return Absent()
	}
	return p.lib
}

// SensorMap names MJCF sensors, in world coordinates, that stand in for
// the body's pose and motion in the vehicle's telemetry: what a robot's own
// instruments report (a GPS antenna's site, say) rather than its body's
// origin.
type SensorMap struct {
	// Position is a 3-value sensor (framepos of a site or body), m.
	Position string `yaml:"position" json:"position"`
	// Velocity is a 3-value sensor (framelinvel), m/s.
	Velocity string `yaml:"velocity" json:"velocity"`
	// Orientation is a 4-value sensor (framequat, w x y z); its yaw is the
	// vehicle's heading.
	Orientation string `yaml:"orientation" json:"orientation"`
}

// DefaultRobotParams returns the defaults: a small wheeled robot's
// controller settings and MuJoCo's 2 ms step; the model, body and
// actuators must be given.
func DefaultRobotParams() RobotParams {
	return RobotParams{WheelRadius: 0.05, Track: 0.3, MaxWheelSpeed: 20, MaxSpeed: 0.5, HeadingGain: 2, PosGain: 1,
		AcceptRadius: 0.1, Radius: 0.3, PhysicsPeriod: 2 * sim.Millisecond, ControlPeriod: 2 * sim.Millisecond}
}

// Validate checks the parameters and that MuJoCo is there; ValidateFiles
// checks the model file (it is relative to the scenario's directory).
func (p *RobotParams) Validate() fields.Errors {
	bad := fields.Errors{}
	for name, v := range map[string]string{"model": p.Model, "body": p.Body, "left": p.Left, "right": p.Right} {
		if v == "" {
			bad[name] = "missing"
		}
	}
	for name, v := range map[string]float64{"wheel_radius": p.WheelRadius, "track": p.Track, "max_wheel_speed": p.MaxWheelSpeed,
		"max_speed": p.MaxSpeed, "heading_gain": p.HeadingGain, "pos_gain": p.PosGain, "accept_radius": p.AcceptRadius, "radius": p.Radius} {
		if !(v > 0) || math.IsInf(v, 0) {
			bad[name] = fmt.Sprintf("must be a positive number, got %v", v)
		}
	}
	if p.PhysicsPeriod <= 0 {
		bad["physics_period"] = fmt.Sprintf("must be positive, got %v", p.PhysicsPeriod)
	}
	if p.ControlPeriod <= 0 {
		bad["control_period"] = fmt.Sprintf("must be positive, got %v", p.ControlPeriod)
	}
	if err := p.library().Load(); err != nil {
		bad["model"] = err.Error()
	}
	return bad
}

// ValidateFiles reads the model file (relative paths from dir, the
// scenario's directory) as the run will: it must be a regular MJCF file of
// within the library's caps whose asset files are regular files within
// the caps too (see Library.ReadRobot), with the body and the actuators the
// parameters name.
func (p *RobotParams) ValidateFiles(dir string) fields.Errors {
	if p.Model == "" {
		return nil // reported by Validate
	}
	m, err := p.library().ReadRobot(modelPath(p.Model, dir))
	switch {
	case err != nil:
		return fields.Errors{"model": err.Error()}
	case !m.HasBody(p.Body):
		return fields.Errors{"body": fmt.Sprintf("%s: no body %q (params.body)", m.Path, p.Body)}
	case !m.HasActuator(p.Left) || !m.HasActuator(p.Right):
		key := "left"
		if m.HasActuator(p.Left) {
			key = "right"
		}
		return fields.Errors{key: fmt.Sprintf("%s: no actuators %q and %q (params.left, params.right)", m.Path, p.Left, p.Right)}
	}
	return nil
}

// modelPath returns where a model named in a scenario in dir is.
func modelPath(model, dir string) string {
	if !filepath.IsAbs(model) && dir != "" {
		return filepath.Join(dir, model)
	}
	return model
}

// Robots are the robots of one group: the model read once, and the world
// they are put in.
type Robots struct {
	p     *RobotParams
	w     *World
	model *RobotModel
}

// NewRobots reads the group's model (relative paths from dir) for robots
// in w; a problem is recorded in the world, which reports it when built.
func NewRobots(p *RobotParams, w *World, dir string) *Robots {
	path := modelPath(p.Model, dir)
	rs := &Robots{p: p, w: w}
	m, err := w.lib.ReadRobot(path)
	switch {
	case err != nil:
		w.Fail(err)
	case !m.HasBody(p.Body):
		w.Fail(fmt.Errorf("%s: no body %q (params.body)", path, p.Body))
	case !m.HasActuator(p.Left) || !m.HasActuator(p.Right):
		w.Fail(fmt.Errorf("%s: no actuators %q and %q (params.left, params.right)", path, p.Left, p.Right))
	default:
		rs.model = m
	}
	return rs
}

// RobotPhysics is one MJCF robot in a world. It implements
// vehicle.Physics: Step hands the wheel speed commands to the robot's
// velocity actuators, and the world's step moves it.
type RobotPhysics struct {
	rs     *Robots
	prefix string
	spawn  geom.Vec3
	yaw0   float64

	body        Body
	left, right int
	m           *Model
	// sensor addresses in SensorData for telemetry (-1: from the body)
	sPos, sVel, sQuat int

	// pos is the body's position less its height in the model (zOff,
	// measured when first bound).
	bound                     bool
	zOff                      float64
	pos, vel                  geom.Vec3
	yaw, yawRate, v, distance float64
	// energy is the mechanical work of the wheel actuators, J.
	energy float64
}

// New puts one robot in the world at pos heading yaw; n numbers it among
// the world's robots.
func (rs *Robots) New(n int, pos geom.Vec3, yaw float64) *RobotPhysics {
	ph := &RobotPhysics{rs: rs, prefix: fmt.Sprintf("mjcf%d_", n), spawn: pos, yaw0: yaw, pos: pos, yaw: yaw}
	rs.w.Add(ph)
	return ph
}

// MJCF returns the robot's copy of the model.
func (ph *RobotPhysics) MJCF() (bodies, actuators string) {
	if ph.rs.model == nil {
		return "", ""
	}
	b, a, _, err := ph.rs.model.Instance(ph.prefix, ph.spawn, ph.yaw0)
	if err != nil {
		return "", ""
	}
	return b, a
}

// Sections returns the robot's tendons, equality constraints, contact
// pairs and sensors.
func (ph *RobotPhysics) Sections() string {
	if ph.rs.model == nil {
		return ""
	}
	_, _, s, _ := ph.rs.model.Instance(ph.prefix, ph.spawn, ph.yaw0)
	return s
}

// Head returns the model's shared sections, keyed by its file.
func (ph *RobotPhysics) Head() (key, text string) {
	if ph.rs.model == nil {
		return "", ""
	}
	return ph.rs.model.Path, ph.rs.model.Head()
}

// Bind finds the robot's body and wheel actuators in m (again when the
// robot moves to another model of the world).
func (ph *RobotPhysics) Bind(m *Model) error {
	if ph.rs.model == nil {
		return fmt.Errorf("internal error: MJCF robot without a model")
	}
	if _, _, _, err := ph.rs.model.Instance(ph.prefix, ph.spawn, ph.yaw0); err != nil {
		return err
	}
	ph.body = Body{ID: m.ID(ObjBody, ph.prefix+ph.rs.p.Body)}
	ph.left, ph.right = m.ID(ObjActuator, ph.prefix+ph.rs.p.Left), m.ID(ObjActuator, ph.prefix+ph.rs.p.Right)
	if ph.body.ID < 0 || ph.left < 0 || ph.right < 0 {
		return fmt.Errorf("internal error: robot %s not found in the MuJoCo model", ph.prefix)
	}
	ph.m = m
	ph.sPos, ph.sVel, ph.sQuat = -1, -1, -1
	for _, s := range []struct {
		name, key string
		dim       int
		adr       *int
	}{{ph.rs.p.Telemetry.Position, "position", 3, &ph.sPos}, {ph.rs.p.Telemetry.Velocity, "velocity", 3, &ph.sVel},
		{ph.rs.p.Telemetry.Orientation, "orientation", 4, &ph.sQuat}} {
		if s.name == "" {
			continue
		}
		id := m.ID(ObjSensor, ph.prefix+s.name)
		if id < 0 {
			return fmt.Errorf("%s: no sensor %q (params.telemetry.%s)", ph.rs.model.Path, s.name, s.key)
		}
		if d := m.SensorDim(id); d != s.dim {
			return fmt.Errorf("%s: sensor %q gives %d values; params.telemetry.%s needs %d (%s)", ph.rs.model.Path, s.name, d, s.key, s.dim,
				map[string]string{"position": "framepos", "velocity": "framelinvel", "orientation": "framequat"}[s.key])
		}
		*s.adr = m.SensorAdr(id)
	}
	if !ph.bound {
		// The height in the model is measured once, at the spawn pose;
		// later binds (the robot moved to another model of the world)
		// keep it.
		ph.zOff = ph.rawPos(m).Z - ph.spawn.Z
		ph.bound = true
	}
	ph.pos, ph.yaw = ph.ground(m), ph.heading(m)
	return nil
}

// rawPos returns the position the telemetry comes from, in the model.
func (ph *RobotPhysics) rawPos(m *Model) geom.Vec3 {
	if a := ph.sPos; a >= 0 {
		return geom.V(m.SensorData[a], m.SensorData[a+1], m.SensorData[a+2])
	}
	return ph.body.Pos(m)
}

// heading returns the yaw the telemetry comes from.
func (ph *RobotPhysics) heading(m *Model) float64 {
	if a := ph.sQuat; a >= 0 {
		d := m.SensorData[a : a+4]
		return geom.Quat{W: d[0], X: d[1], Y: d[2], Z: d[3]}.Yaw()
	}
	return ph.body.Quat(m).Yaw()
}

// Stepped reads the body's pose after a world step and derives its
// velocity, forward speed, turn rate and distance.
func (ph *RobotPhysics) Stepped(m *Model, dt float64) {
	pos, yaw := ph.ground(m), ph.heading(m)
	ph.vel = pos.Sub(ph.pos).Scale(1 / dt)
	if a := ph.sVel; a >= 0 {
		ph.vel = geom.V(m.SensorData[a], m.SensorData[a+1], m.SensorData[a+2])
	}
	ph.yawRate = geom.WrapAngle(yaw-ph.yaw) / dt
	ph.distance += math.Hypot(pos.X-ph.pos.X, pos.Y-ph.pos.Y)
	ph.pos, ph.yaw = pos, yaw
	ph.v = ph.vel.X*math.Cos(yaw) + ph.vel.Y*math.Sin(yaw)
	// Mechanical power at the wheels, counted whether the motor drives or
	// brakes (no regeneration); motor and gear losses are not modelled.
	ph.energy += (math.Abs(m.ActuatorForce[ph.left]*m.ActuatorVelocity[ph.left]) +
		math.Abs(m.ActuatorForce[ph.right]*m.ActuatorVelocity[ph.right])) * dt
}

// ground returns the telemetry's position less its height in the model.
func (ph *RobotPhysics) ground(m *Model) geom.Vec3 {
	p := ph.rawPos(m)
	p.Z -= ph.zOff
	return p
}

// Kind returns "mujoco".
func (ph *RobotPhysics) Kind() string { return Kind }

// Period returns the physics period, the world's step.
func (ph *RobotPhysics) Period() sim.Duration { return ph.rs.p.PhysicsPeriod }

// Radius returns the configured bounding radius.
func (ph *RobotPhysics) Radius() float64 { return ph.rs.p.Radius }

// Pos returns the body's position less its height in the model file (so
// a robot modelled at rest on z = 0 reports the ground's height).
func (ph *RobotPhysics) Pos() geom.Vec3 { return ph.pos }

// Motion returns the position, velocity and heading.
func (ph *RobotPhysics) Motion() vehicle.Motion {
	return vehicle.Motion{Pos: ph.pos, Vel: ph.vel, Yaw: ph.yaw}
}

// Telemetry returns the body's true state.
func (ph *RobotPhysics) Telemetry() vehicle.Telemetry {
	return vehicle.Telemetry{Pos: ph.pos, Vel: ph.vel, Yaw: ph.yaw, YawRate: ph.yawRate, Landed: true, Distance: ph.distance, Energy: ph.energy}
}

// Sense gives the exact pose.
func (ph *RobotPhysics) Sense(t sim.Time, s *vehicle.Sensors) {
	s.Truth = vehicle.Pose{Pos: ph.pos, Speed: ph.v, Yaw: ph.yaw, YawRate: ph.yawRate}
	s.Contact = true
}

// Step sets the wheel actuators' speed commands, clipped to
// max_wheel_speed.
func (ph *RobotPhysics) Step(t sim.Time, a *vehicle.Actuators, ev *vehicle.Events) {
	lim := ph.rs.p.MaxWheelSpeed
	ph.m.Ctrl[ph.left] = max(-lim, min(lim, a.WheelL))
	ph.m.Ctrl[ph.right] = max(-lim, min(lim, a.WheelR))
}

// ForwardSpeed returns the signed speed along the heading.
func (ph *RobotPhysics) ForwardSpeed() float64 { return ph.v }

// RobotVehicle is an MJCF robot driven by a controller.
type RobotVehicle struct {
	*vehicle.Composed
	// Phys is the robot in the world.
	Phys *RobotPhysics
}

// NewRobotVehicle joins a robot and its controller.
func NewRobotVehicle(ph *RobotPhysics, c vehicle.Controller) *RobotVehicle {
	return &RobotVehicle{Composed: vehicle.Compose(ph, c), Phys: ph}
}

// ForwardSpeed returns the signed speed along the heading.
func (v *RobotVehicle) ForwardSpeed() float64 { return v.Phys.v }
