// Package groundbot is a differential-drive ground robot: a box chassis on
// two velocity-driven wheels and passive casters, stepped every 2 ms by
// default. The wheels follow their speed commands through a first-order
// motor lag with an acceleration limit; the chassis moves by the unicycle
// kinematics of the two wheels (no slip; the casters carry weight only).
//
// The robot's natural input is a pair of wheel speed commands; it has no
// instruments. Its drive controller (package autopilot/groundbotctl) turns
// drive, velocity and goto commands into them, driving on the exact pose
// (vehicle.Sensors.Truth); the two share this package's parameter block
// and are joined only by vehicle.Sensors and vehicle.Actuators, into the
// kind of package kind/groundbot. MuJoCoPhysics (mujoco.go) is the same
// robot as a rigid body in a MuJoCo world.
package groundbot

import (
	"fmt"
	"math"

	"skyloop/fields"
	"skyloop/geom"
	"skyloop/sim"
	"skyloop/vehicle"
)

// Kind is the scenario name of this vehicle kind.
const Kind = "groundbot"

// Params are the static parameters shared by every robot of a group.
type Params struct {
	// Preset names the parameter set the scenario's values override
	// (Presets; default classic).
	Preset        string       `yaml:"preset" json:"preset"`
	Length        float64      `yaml:"length" json:"length"`                   // chassis box length, m
	Width         float64      `yaml:"width" json:"width"`                     // chassis box width, m
	Height        float64      `yaml:"height" json:"height"`                   // chassis box height, m
	Mass          float64      `yaml:"mass" json:"mass"`                       // kg
	WheelRadius   float64      `yaml:"wheel_radius" json:"wheel_radius"`       // m
	Track         float64      `yaml:"track" json:"track"`                     // distance between the driven wheels, m
	MaxWheelSpeed float64      `yaml:"max_wheel_speed" json:"max_wheel_speed"` // rad/s
	MaxWheelAccel float64      `yaml:"max_wheel_accel" json:"max_wheel_accel"` // rad/s^2
	MotorTau      float64      `yaml:"motor_tau" json:"motor_tau"`             // wheel speed time constant, s
	MaxSpeed      float64      `yaml:"max_speed" json:"max_speed"`             // goto cruise speed, m/s
	HeadingGain   float64      `yaml:"heading_gain" json:"heading_gain"`       // goto heading P gain, 1/s
	PosGain       float64      `yaml:"pos_gain" json:"pos_gain"`               // goto speed P gain, 1/s
	AcceptRadius  float64      `yaml:"accept_radius" json:"accept_radius"`     // arrival radius, m
	RollingCoeff  float64      `yaml:"rolling_coeff" json:"rolling_coeff"`     // rolling resistance coefficient
	BasePower     float64      `yaml:"base_power" json:"base_power"`           // electronics power, W
	DriveEff      float64      `yaml:"drive_eff" json:"drive_eff"`             // motor+gear efficiency (0,1]
	PhysicsPeriod sim.Duration `yaml:"physics_period" json:"physics_period"`
	ControlPeriod sim.Duration `yaml:"control_period" json:"control_period"`
	// Physics is native (this package's kinematic model) or mujoco (a
	// rigid body in MuJoCo; needs libmujoco2.2.2).
	Physics string `yaml:"physics" json:"physics"`
	// MuJoCo holds the parameters only the MuJoCo model uses.
	MuJoCo MuJoCoParams `yaml:"mujoco" json:"mujoco"`
}

// Presets returns the names of the robot presets, the default first:
// classic (DefaultParams) and netbots (NetbotsParams).
func Presets() []string { return []string{PresetClassic, PresetNetbots} }

// Robot presets (Params.Preset).
const (
	// PresetClassic is DefaultParams: skyloop's warehouse robot.
	PresetClassic = "classic"
	// PresetNetbots is NetbotsParams: the robot of the netbots paper, in
	// MuJoCo.
	PresetNetbots = "netbots"
)

// Preset returns the parameters of a named preset, and whether it exists.
func Preset(name string) (Params, bool) {
	switch name {
	case PresetClassic:
		return DefaultParams(), true
	case PresetNetbots:
		return NetbotsParams(), true
	}
	return Params{}, false
}

// DefaultParams returns a small warehouse robot (TurtleBot-like size): a
// 0.4 x 0.3 x 0.15 m, 8 kg chassis on 5 cm wheels 0.3 m apart, 1 m/s top
// speed, 2 ms physics and control steps (the netbots
// study's step). It is the classic
// preset.
func DefaultParams() Params {
	return Params{
		Preset: PresetClassic,
		Length: 0.4, Width: 0.3, Height: 0.15, Mass: 8,
		WheelRadius: 0.05, Track: 0.3,
		MaxWheelSpeed: 20, MaxWheelAccel: 40, MotorTau: 0.05,
		MaxSpeed: 0.5, HeadingGain: 2.0, PosGain: 1.0, AcceptRadius: 0.1,
		RollingCoeff: 0.02, BasePower: 2, DriveEff: 0.7,
		PhysicsPeriod: 2 * sim.Millisecond, ControlPeriod: 2 * sim.Millisecond,
		Physics: PhysicsNative, MuJoCo: DefaultMuJoCoParams(),
	}
}

// Validate checks the parameters, returning one message per bad field keyed
// by the field's YAML name.
func (p *Params) Validate() fields.Errors {
	bad := fields.Errors{}
	pos := func(name string, v float64) {
		if !(v > 0) || math.IsInf(v, 0) {
			bad[name] = fmt.Sprintf("must be a positive number, got %v", v)
		}
	}
	pos("length", p.Length)
	pos("width", p.Width)
	pos("height", p.Height)
	pos("mass", p.Mass)
	pos("wheel_radius", p.WheelRadius)
	pos("track", p.Track)
	pos("max_wheel_speed", p.MaxWheelSpeed)
	pos("max_wheel_accel", p.MaxWheelAccel)
	pos("motor_tau", p.MotorTau)
	pos("max_speed", p.MaxSpeed)
	pos("heading_gain", p.HeadingGain)
	pos("pos_gain", p.PosGain)
	pos("accept_radius", p.AcceptRadius)
	if p.DriveEff <= 0 || p.DriveEff > 1 {
		bad["drive_eff"] = fmt.Sprintf("must be in (0, 1], got %v", p.DriveEff)
	}
	if !(p.RollingCoeff >= 0) {
		bad["rolling_coeff"] = fmt.Sprintf("must be >= 0, got %v", p.RollingCoeff)
	}
	if !(p.BasePower >= 0) {
		bad["base_power"] = fmt.Sprintf("must be >= 0, got %v", p.BasePower)
	}
	if p.PhysicsPeriod <= 0 {
		bad["physics_period"] = fmt.Sprintf("must be positive, got %v", p.PhysicsPeriod)
	}
	if p.ControlPeriod <= 0 {
		bad["control_period"] = fmt.Sprintf("must be positive, got %v", p.ControlPeriod)
	}
	switch p.Physics {
	case PhysicsNative:
	case PhysicsMuJoCo:
		p.validateMuJoCo(bad)
	default:
		bad["physics"] = fmt.Sprintf("must be %s or %s, got %q", PhysicsNative, PhysicsMuJoCo, p.Physics)
	}
	if p.MaxSpeed > p.MaxWheelSpeed*p.WheelRadius {
		bad["max_speed"] = fmt.Sprintf("%.3g m/s exceeds what the wheels can do (max_wheel_speed*wheel_radius = %.3g m/s)",
			p.MaxSpeed, p.MaxWheelSpeed*p.WheelRadius)
	}
	return bad
}

// State is the dynamic state of one robot.
type State struct {
	X, Y, Theta float64 // pose: m, m, rad (counter-clockwise from east)
	WL, WR      float64 // wheel speeds, rad/s
	V, Omega    float64 // body speed (m/s) and turn rate (rad/s) from the wheels
	Energy      float64 // J
	Distance    float64 // m
}

// Physics is one robot. It implements vehicle.Physics.
type Physics struct {
	p *Params
	// S is the dynamic state.
	S     State
	z     float64 // height of the ground it drives on, m
	alpha float64 // motor lag factor per step
}

// NewPhysics returns a robot at pos heading yaw (rad), stopped.
func NewPhysics(p *Params, pos geom.Vec3, yaw float64) *Physics {
	return &Physics{
		p: p, S: State{X: pos.X, Y: pos.Y, Theta: yaw}, z: pos.Z,
		alpha: 1 - math.Exp(-p.PhysicsPeriod.Seconds()/p.MotorTau),
	}
}

// Kind returns "groundbot".
func (ph *Physics) Kind() string { return Kind }

// Period returns the physics period.
func (ph *Physics) Period() sim.Duration { return ph.p.PhysicsPeriod }

// Radius returns half the chassis diagonal.
func (ph *Physics) Radius() float64 { return 0.5 * math.Hypot(ph.p.Length, ph.p.Width) }

// Pos returns the position.
func (ph *Physics) Pos() geom.Vec3 { return geom.Vec3{X: ph.S.X, Y: ph.S.Y, Z: ph.z} }

// vel returns the world-frame velocity.
func (ph *Physics) vel() geom.Vec3 {
	c, s := math.Cos(ph.S.Theta), math.Sin(ph.S.Theta)
	return geom.Vec3{X: ph.S.V * c, Y: ph.S.V * s}
}

// Motion returns the position, velocity and heading.
func (ph *Physics) Motion() vehicle.Motion {
	return vehicle.Motion{Pos: ph.Pos(), Vel: ph.vel(), Yaw: ph.S.Theta}
}

// Telemetry returns the true state.
func (ph *Physics) Telemetry() vehicle.Telemetry {
	return vehicle.Telemetry{Pos: ph.Pos(), Vel: ph.vel(), Yaw: ph.S.Theta, YawRate: ph.S.Omega,
		Landed: true, Energy: ph.S.Energy, Distance: ph.S.Distance}
}

// Sense gives the exact pose (the robot has no instruments), with the
// speed along the heading rather than a world-frame velocity (see
// vehicle.Pose), and ground contact, always.
func (ph *Physics) Sense(t sim.Time, s *vehicle.Sensors) {
	s.Truth = vehicle.Pose{Pos: ph.Pos(), Speed: ph.S.V, Yaw: ph.S.Theta, YawRate: ph.S.Omega}
	s.Contact = true
}

// Step moves the wheels towards their commands a.WheelL and a.WheelR
// (first-order lag, clipped to MaxWheelAccel) and integrates the pose with
// the midpoint rule.
func (ph *Physics) Step(t sim.Time, a *vehicle.Actuators, ev *vehicle.Events) {
	p := ph.p
	s := &ph.S
	dt := p.PhysicsPeriod.Seconds()
	maxDw := p.MaxWheelAccel * dt
	s.WL += clamp((a.WheelL-s.WL)*ph.alpha, maxDw)
	s.WR += clamp((a.WheelR-s.WR)*ph.alpha, maxDw)
	vPrev := s.V
	s.V = p.WheelRadius * (s.WR + s.WL) / 2
	s.Omega = p.WheelRadius * (s.WR - s.WL) / p.Track
	mid := s.Theta + s.Omega*dt/2
	s.X += s.V * math.Cos(mid) * dt
	s.Y += s.V * math.Sin(mid) * dt
	s.Theta = geom.WrapAngle(s.Theta + s.Omega*dt)
	s.Distance += math.Abs(s.V) * dt
	// Electrical power: electronics + (rolling resistance + acceleration) / efficiency.
	mech := p.RollingCoeff*p.Mass*9.81*math.Abs(s.V) + nonneg(p.Mass*(s.V-vPrev)/dt*s.V)
	s.Energy += (p.BasePower + mech/p.DriveEff) * dt
}

// clamp limits x to [-lim, lim] for lim >= 0. It returns exactly what
// math.Max(-lim, math.Min(lim, x)) returns for every x (NaN and signed
// zeros included; TestClampMatchesMinMax checks it) without their two
// calls, which the compiler cannot inline.
func clamp(x, lim float64) float64 {
	if x > lim {
		return lim
	}
	if x < -lim {
		return -lim
	}
	return x
}

// nonneg returns exactly what math.Max(0, x) returns (see clamp): x when
// it is positive or NaN, else +0.
func nonneg(x float64) float64 {
	if x > 0 || x != x {
		return x
	}
	return 0
}
