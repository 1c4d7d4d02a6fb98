// Package pointmass is the physics of the cheapest vehicle kind: a 3D
// kinematic point with velocity and acceleration limits. It is meant for
// very large swarms where the network, not the airframe, is under study.
//
// The point's natural input is a velocity setpoint with a heading (or turn
// rate) setpoint, which it tracks within its acceleration and yaw-rate
// limits; it has no instruments. Its controller (package
// autopilot/pointmassctl) flies on the exact pose (vehicle.Sensors.Truth);
// the two share this package's parameter block (the limits bound both the
// physics and the controller's setpoints) and are joined only by
// vehicle.Sensors and vehicle.Actuators, into the kind of package
// kind/pointmass.
package pointmass

import (
	"fmt"
	"math"

	"skyloop/fields"
	"skyloop/geom"
	"skyloop/sim"
	"skyloop/vehicle"
)

// Kind is the scenario name of this vehicle kind.
const Kind = "pointmass"

// Params are the static parameters shared by every vehicle of a group.
type Params struct {
	MaxSpeed      float64      `yaml:"max_speed" json:"max_speed"`           // horizontal speed limit, m/s
	MaxClimb      float64      `yaml:"max_climb" json:"max_climb"`           // upward speed limit, m/s
	MaxDescent    float64      `yaml:"max_descent" json:"max_descent"`       // downward speed limit, m/s
	MaxAccel      float64      `yaml:"max_accel" json:"max_accel"`           // acceleration limit (3D norm), m/s^2
	PosGain       float64      `yaml:"pos_gain" json:"pos_gain"`             // position P gain, 1/s
	YawRateMax    float64      `yaml:"yaw_rate_max" json:"yaw_rate_max"`     // deg/s
	AcceptRadius  float64      `yaml:"accept_radius" json:"accept_radius"`   // arrival radius for events, m
	Radius        float64      `yaml:"radius" json:"radius"`                 // bounding radius, m
	PhysicsPeriod sim.Duration `yaml:"physics_period" json:"physics_period"` // integration step
	ControlPeriod sim.Duration `yaml:"control_period" json:"control_period"` // position loop period
	EnergyPerM    float64      `yaml:"energy_per_m" json:"energy_per_m"`     // planning energy model, J/m
	EnergyPerDeg  float64      `yaml:"energy_per_deg" json:"energy_per_deg"` // planning energy model, J/deg turned
}

// DefaultParams returns the defaults: multirotor-like limits close to PX4's
// (MPC_XY_CRUISE 5 m/s, MPC_Z_VEL_MAX_UP/DN 3/1.5 m/s, MPC_ACC_HOR 3 m/s^2)
// and UB-ANC's empirical planning energy model (0.1164 J/m, 0.0173 J/deg;
// docs/calibration.md).
func DefaultParams() Params {
	return Params{
		MaxSpeed:      5,
		MaxClimb:      3,
		MaxDescent:    1.5,
		MaxAccel:      3,
		PosGain:       1,
		YawRateMax:    90,
		AcceptRadius:  0.3,
		Radius:        0.3,
		PhysicsPeriod: sim.Millisecond,
		ControlPeriod: 10 * sim.Millisecond,
		EnergyPerM:    0.1164,
		EnergyPerDeg:  0.0173,
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
	pos("max_speed", p.MaxSpeed)
	pos("max_climb", p.MaxClimb)
	pos("max_descent", p.MaxDescent)
	pos("max_accel", p.MaxAccel)
	pos("pos_gain", p.PosGain)
	pos("yaw_rate_max", p.YawRateMax)
	pos("accept_radius", p.AcceptRadius)
	pos("radius", p.Radius)
	if p.PhysicsPeriod <= 0 {
		bad["physics_period"] = fmt.Sprintf("must be positive, got %v", p.PhysicsPeriod)
	}
	if p.ControlPeriod <= 0 {
		bad["control_period"] = fmt.Sprintf("must be positive, got %v", p.ControlPeriod)
	}
	if !(p.EnergyPerM >= 0) {
		bad["energy_per_m"] = fmt.Sprintf("must be >= 0, got %v", p.EnergyPerM)
	}
	if !(p.EnergyPerDeg >= 0) {
		bad["energy_per_deg"] = fmt.Sprintf("must be >= 0, got %v", p.EnergyPerDeg)
	}
	return bad
}

// State is the dynamic state of one point-mass vehicle.
type State struct {
	Pos, Vel geom.Vec3
	Yaw      float64
	YawRate  float64
	Energy   float64
	Distance float64
}

// Physics is one point mass. It implements vehicle.Physics.
type Physics struct {
	p *Params
	// S is the dynamic state.
	S State
}

// NewPhysics returns a point mass at pos heading yaw, at rest; a point
// spawned below the ground starts on it.
func NewPhysics(p *Params, pos geom.Vec3, yaw float64) *Physics {
	ph := &Physics{p: p, S: State{Pos: pos, Yaw: yaw}}
	if pos.Z <= 0 {
		ph.S.Pos.Z = 0
	}
	return ph
}

// Kind returns "pointmass".
func (ph *Physics) Kind() string { return Kind }

// Period returns the physics period.
func (ph *Physics) Period() sim.Duration { return ph.p.PhysicsPeriod }

// Radius returns the bounding radius.
func (ph *Physics) Radius() float64 { return ph.p.Radius }

// Pos returns the position.
func (ph *Physics) Pos() geom.Vec3 { return ph.S.Pos }

// Motion returns the position, velocity and heading.
func (ph *Physics) Motion() vehicle.Motion {
	return vehicle.Motion{Pos: ph.S.Pos, Vel: ph.S.Vel, Yaw: ph.S.Yaw}
}

// landed reports whether the point rests on the ground.
func (ph *Physics) landed() bool { return ph.S.Pos.Z <= 1e-3 && ph.S.Vel.Z <= 1e-3 }

// Telemetry returns the true state.
func (ph *Physics) Telemetry() vehicle.Telemetry {
	return vehicle.Telemetry{Pos: ph.S.Pos, Vel: ph.S.Vel, Yaw: ph.S.Yaw, YawRate: ph.S.YawRate,
		Landed: ph.landed(), Energy: ph.S.Energy, Distance: ph.S.Distance}
}

// Sense gives the exact pose and ground contact; the point has no
// instruments.
func (ph *Physics) Sense(t sim.Time, s *vehicle.Sensors) {
	s.Truth = vehicle.Pose{Pos: ph.S.Pos, Vel: ph.S.Vel, Yaw: ph.S.Yaw, YawRate: ph.S.YawRate}
	s.Contact = ph.landed()
}

// Step integrates one physics period with semi-implicit Euler: the
// velocity moves towards the setpoint a.Vel at no more than MaxAccel, then
// the position follows the new velocity; the heading turns towards a.Yaw
// (or at a.TurnRate) at no more than YawRateMax.
func (ph *Physics) Step(t sim.Time, a *vehicle.Actuators, ev *vehicle.Events) {
	p := ph.p
	s := &ph.S
	dt := p.PhysicsPeriod.Seconds()
	dv := a.Vel.Sub(s.Vel).ClampNorm(p.MaxAccel * dt)
	s.Vel = s.Vel.Add(dv)
	step := s.Vel.Scale(dt)
	s.Pos = s.Pos.Add(step)
	if s.Pos.Z < 0 {
		s.Pos.Z = 0
		if s.Vel.Z < 0 {
			s.Vel.Z = 0
		}
	}
	dist := step.Norm()
	s.Distance += dist
	maxTurn := p.YawRateMax * math.Pi / 180 * dt
	var turn float64
	if a.TurnByRate {
		turn = clamp(a.TurnRate*dt, maxTurn)
	} else {
		turn = clamp(geom.WrapAngle(a.Yaw-s.Yaw), maxTurn)
	}
	s.Yaw = geom.WrapAngle(s.Yaw + turn)
	s.YawRate = turn / dt
	s.Energy += p.EnergyPerM*dist + p.EnergyPerDeg*math.Abs(turn)*180/math.Pi
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
