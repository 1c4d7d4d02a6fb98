// Package pointmass is the cheapest vehicle kind: a 3D kinematic point with
// velocity and acceleration limits, flown by a position controller that
// brakes in time to stop at its target. It is meant for very large swarms
// where the network, not the airframe, is under study.
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
// and the empirical energy model of SPEC.md D (0.1164 J/m, 0.0173 J/deg).
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

// Vehicle is a point-mass vehicle with its autopilot.
type Vehicle struct {
	p    *Params
	S    State
	mode vehicle.Mode
	home geom.Vec3

	pending    vehicle.Command
	hasPending bool

	target    geom.Vec3 // goto / hold / takeoff target
	targetYaw float64
	speedLim  float64
	velSP     geom.Vec3 // output of the position loop, input of the physics
	rtlStage  int
	arrived   bool
	wantYaw   float64 // heading the physics turns towards, set by Control
	velCmd    geom.Vec3
	driveV    float64
	driveW    float64
}

// limit clips a velocity to the horizontal and vertical speed limits.
func (v *Vehicle) limit(sp geom.Vec3) geom.Vec3 {
	p := v.p
	if h := math.Sqrt(sp.X*sp.X + sp.Y*sp.Y); h > p.MaxSpeed {
		sp.X, sp.Y = sp.X*p.MaxSpeed/h, sp.Y*p.MaxSpeed/h
	}
	sp.Z = math.Max(-p.MaxDescent, math.Min(p.MaxClimb, sp.Z))
	return sp
}

// New returns a vehicle at pos with the shared parameters p. A vehicle
// spawned on the ground (z <= 0) starts landed and idle; one spawned in the
// air starts holding its position.
func New(p *Params, pos geom.Vec3, yaw float64) *Vehicle {
	v := &Vehicle{p: p, S: State{Pos: pos, Yaw: yaw}, home: pos, target: pos, targetYaw: yaw, wantYaw: yaw}
	if pos.Z > 0 {
		v.mode = vehicle.ModeHold
	} else {
		v.S.Pos.Z = 0
		v.mode = vehicle.ModeIdle
	}
	return v
}

// Kind returns "pointmass".
func (v *Vehicle) Kind() string { return Kind }

// Timing returns the physics and control periods.
func (v *Vehicle) Timing() vehicle.Timing {
	return vehicle.Timing{Physics: v.p.PhysicsPeriod, Control: v.p.ControlPeriod}
}

// Radius returns the bounding radius.
func (v *Vehicle) Radius() float64 { return v.p.Radius }

// Estimate returns the true state: this kind has no estimator.
func (v *Vehicle) Estimate() vehicle.Telemetry { return v.Telemetry() }

// Command queues c for the next control step.
func (v *Vehicle) Command(c vehicle.Command) { v.pending, v.hasPending = c, true }

// Telemetry reports the true state.
func (v *Vehicle) Telemetry() vehicle.Telemetry {
	return vehicle.Telemetry{
		Pos: v.S.Pos, Vel: v.S.Vel, Yaw: v.S.Yaw, YawRate: v.S.YawRate,
		Mode: v.mode, Armed: v.mode != vehicle.ModeDisarmed, Landed: v.landed(),
		Energy: v.S.Energy, Distance: v.S.Distance,
		Target: v.target, HasTarget: v.mode == vehicle.ModeGoto || v.mode == vehicle.ModeTakeoff || v.mode == vehicle.ModeHold,
	}
}

func (v *Vehicle) landed() bool { return v.S.Pos.Z <= 1e-3 && v.S.Vel.Z <= 1e-3 }

func (v *Vehicle) setMode(t sim.Time, m vehicle.Mode, ev *vehicle.Events) {
	if m == v.mode {
		return
	}
	ev.Add(t, "mode", v.mode.String()+"->"+m.String())
	v.mode = m
}

func (v *Vehicle) apply(t sim.Time, c vehicle.Command, ev *vehicle.Events) {
	v.arrived = false
	v.speedLim = 0
	switch c.Kind {
	case vehicle.CmdArm:
		if v.mode == vehicle.ModeDisarmed {
			v.setMode(t, vehicle.ModeIdle, ev)
		}
	case vehicle.CmdDisarm:
		if v.landed() {
			v.setMode(t, vehicle.ModeDisarmed, ev)
		} else {
			ev.Add(t, "rejected", "disarm in the air")
		}
	case vehicle.CmdTakeoff:
		v.target = geom.Vec3{X: v.S.Pos.X, Y: v.S.Pos.Y, Z: c.Alt}
		v.targetYaw = v.S.Yaw
		v.setMode(t, vehicle.ModeTakeoff, ev)
	case vehicle.CmdHold:
		v.target, v.targetYaw = v.S.Pos, v.S.Yaw
		v.setMode(t, vehicle.ModeHold, ev)
	case vehicle.CmdGoto:
		v.target, v.speedLim = c.Pos, c.Speed
		if v.target.Z < 0 {
			v.target.Z = 0
		}
		v.targetYaw = c.Yaw
		v.setMode(t, vehicle.ModeGoto, ev)
	case vehicle.CmdVelocity:
		v.velCmd = c.Vel
		v.setMode(t, vehicle.ModeVelocity, ev)
	case vehicle.CmdDrive:
		v.driveV, v.driveW = c.V, c.Omega
		v.setMode(t, vehicle.ModeDrive, ev)
	case vehicle.CmdLand:
		v.setMode(t, vehicle.ModeLand, ev)
	case vehicle.CmdRTL:
		v.rtlStage = 0
		v.target = geom.Vec3{X: v.home.X, Y: v.home.Y, Z: math.Max(v.S.Pos.Z, 1)}
		v.setMode(t, vehicle.ModeRTL, ev)
	}
}

// Control runs the position loop: it turns the current mode and target into
// a velocity setpoint for the physics.
func (v *Vehicle) Control(t sim.Time, ev *vehicle.Events) {
	if v.hasPending {
		v.hasPending = false
		v.apply(t, v.pending, ev)
	}
	p := v.p
	defer v.setHeading()
	switch v.mode {
	case vehicle.ModeDisarmed, vehicle.ModeIdle:
		v.velSP = geom.Vec3{}
	case vehicle.ModeVelocity:
		v.velSP = v.limit(v.velCmd)
	case vehicle.ModeDrive:
		// Forward speed along the heading; the heading turns at the commanded
		// rate in Step.
		c, s := math.Cos(v.S.Yaw), math.Sin(v.S.Yaw)
		v.velSP = v.limit(geom.Vec3{X: v.driveV * c, Y: v.driveV * s})
	case vehicle.ModeLand:
		v.velSP = geom.Vec3{Z: -p.MaxDescent}
		if v.landed() {
			ev.Add(t, "touchdown", "")
			v.setMode(t, vehicle.ModeDisarmed, ev)
			v.velSP = geom.Vec3{}
		}
	default: // takeoff, hold, goto, rtl: position control towards target
		v.velSP = v.track(v.target)
		dist := v.target.Sub(v.S.Pos).Norm()
		if dist < p.AcceptRadius && v.S.Vel.Norm() < 0.5 && !v.arrived {
			v.arrived = true
			switch v.mode {
			case vehicle.ModeTakeoff:
				v.setMode(t, vehicle.ModeHold, ev)
			case vehicle.ModeGoto:
				ev.Add(t, "arrived", fmtVec(v.target))
			case vehicle.ModeRTL:
				v.setMode(t, vehicle.ModeLand, ev)
			}
		}
	}
}

// setHeading points the vehicle along its horizontal velocity setpoint
// when moving, else at the goto yaw, else keeps the current heading.
func (v *Vehicle) setHeading() {
	v.wantYaw = v.S.Yaw
	if v.mode == vehicle.ModeDrive {
		return // Step turns at the commanded rate
	}
	if h2 := v.velSP.X*v.velSP.X + v.velSP.Y*v.velSP.Y; h2 > 0.04 {
		v.wantYaw = math.Atan2(v.velSP.Y, v.velSP.X)
	} else if v.mode == vehicle.ModeGoto && !math.IsNaN(v.targetYaw) {
		v.wantYaw = v.targetYaw
	}
}

// track returns the velocity setpoint that brings the vehicle to target:
// proportional far away, limited by the braking distance so it decelerates
// smoothly, and clipped to the speed limits.
func (v *Vehicle) track(target geom.Vec3) geom.Vec3 {
	p := v.p
	e := target.Sub(v.S.Pos)
	d := e.Norm()
	if d < 1e-9 {
		return geom.Vec3{}
	}
	vmax := p.MaxSpeed
	if v.speedLim > 0 && v.speedLim < vmax {
		vmax = v.speedLim
	}
	s := math.Min(p.PosGain*d, math.Sqrt(1.6*p.MaxAccel*d))
	sp := e.Scale(s / d)
	if h := math.Sqrt(sp.X*sp.X + sp.Y*sp.Y); h > vmax {
		sp.X, sp.Y = sp.X*vmax/h, sp.Y*vmax/h
	}
	sp.Z = math.Max(-p.MaxDescent, math.Min(p.MaxClimb, sp.Z))
	return sp
}

// Step integrates one physics period with semi-implicit Euler: the
// velocity moves towards the setpoint at no more than MaxAccel, then the
// position follows the new velocity.
func (v *Vehicle) Step(t sim.Time, ev *vehicle.Events) {
	p := v.p
	dt := p.PhysicsPeriod.Seconds()
	dv := v.velSP.Sub(v.S.Vel).ClampNorm(p.MaxAccel * dt)
	v.S.Vel = v.S.Vel.Add(dv)
	step := v.S.Vel.Scale(dt)
	v.S.Pos = v.S.Pos.Add(step)
	if v.S.Pos.Z < 0 {
		v.S.Pos.Z = 0
		if v.S.Vel.Z < 0 {
			v.S.Vel.Z = 0
		}
	}
	dist := step.Norm()
	v.S.Distance += dist
	maxTurn := p.YawRateMax * math.Pi / 180 * dt
	var turn float64
	if v.mode == vehicle.ModeDrive {
		turn = math.Max(-maxTurn, math.Min(maxTurn, v.driveW*dt))
	} else {
		turn = math.Max(-maxTurn, math.Min(maxTurn, geom.WrapAngle(v.wantYaw-v.S.Yaw)))
	}
	v.S.Yaw = geom.WrapAngle(v.S.Yaw + turn)
	v.S.YawRate = turn / dt
	v.S.Energy += p.EnergyPerM*dist + p.EnergyPerDeg*math.Abs(turn)*180/math.Pi
}

func fmtVec(p geom.Vec3) string { return fmt.Sprintf("%.2f %.2f %.2f", p.X, p.Y, p.Z) }
