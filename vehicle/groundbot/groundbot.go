// Package groundbot is a differential-drive ground robot: a box chassis on
// two velocity-driven wheels and passive casters, stepped every 2 ms by
// default. The wheels follow their speed commands through a first-order
// motor lag with an acceleration limit; the chassis moves by the unicycle
// kinematics of the two wheels (no slip; the casters carry weight only).
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
}

// DefaultParams returns a small warehouse robot (TurtleBot-like size): a
// 0.4 x 0.3 x 0.15 m, 8 kg chassis on 5 cm wheels 0.3 m apart, 1 m/s top
// speed, 2 ms physics and control steps (SPEC.md C).
func DefaultParams() Params {
	return Params{
		Length: 0.4, Width: 0.3, Height: 0.15, Mass: 8,
		WheelRadius: 0.05, Track: 0.3,
		MaxWheelSpeed: 20, MaxWheelAccel: 40, MotorTau: 0.05,
		MaxSpeed: 0.5, HeadingGain: 2.0, PosGain: 1.0, AcceptRadius: 0.1,
		RollingCoeff: 0.02, BasePower: 2, DriveEff: 0.7,
		PhysicsPeriod: 2 * sim.Millisecond, ControlPeriod: 2 * sim.Millisecond,
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

// Vehicle is a differential-drive robot with its drive controller.
type Vehicle struct {
	p     *Params
	S     State
	z     float64
	alpha float64 // motor lag factor per step
	mode  vehicle.Mode
	home  geom.Vec3

	pending    vehicle.Command
	hasPending bool

	target     geom.Vec3
	speedLim   float64
	cmdV, cmdW float64 // body command
	velCmd     geom.Vec3
	wlCmd      float64
	wrCmd      float64
	arrived    bool
}

// New returns a robot at pos heading yaw (rad), stopped and idle.
func New(p *Params, pos geom.Vec3, yaw float64) *Vehicle {
	return &Vehicle{
		p: p, S: State{X: pos.X, Y: pos.Y, Theta: yaw}, z: pos.Z,
		alpha: 1 - math.Exp(-p.PhysicsPeriod.Seconds()/p.MotorTau),
		mode:  vehicle.ModeIdle, home: pos,
	}
}

// Kind returns "groundbot".
func (v *Vehicle) Kind() string { return Kind }

// Timing returns the physics and control periods.
func (v *Vehicle) Timing() vehicle.Timing {
	return vehicle.Timing{Physics: v.p.PhysicsPeriod, Control: v.p.ControlPeriod}
}

// Radius returns half the chassis diagonal.
func (v *Vehicle) Radius() float64 { return 0.5 * math.Hypot(v.p.Length, v.p.Width) }

// Estimate returns the true state: this kind has no estimator.
func (v *Vehicle) Estimate() vehicle.Telemetry { return v.Telemetry() }

// Pos returns the position, without building a whole Telemetry.
func (v *Vehicle) Pos() geom.Vec3 { return geom.Vec3{X: v.S.X, Y: v.S.Y, Z: v.z} }

// ForwardSpeed returns the signed body speed along the heading, exactly
// (telemetry gives it only as a velocity vector, whose length differs from
// it in the last bits).
func (v *Vehicle) ForwardSpeed() float64 { return v.S.V }

// Command queues c for the next control step.
func (v *Vehicle) Command(c vehicle.Command) { v.pending, v.hasPending = c, true }

// Telemetry reports the true state.
func (v *Vehicle) Telemetry() vehicle.Telemetry {
	c, s := math.Cos(v.S.Theta), math.Sin(v.S.Theta)
	return vehicle.Telemetry{
		Pos: geom.Vec3{X: v.S.X, Y: v.S.Y, Z: v.z}, Vel: geom.Vec3{X: v.S.V * c, Y: v.S.V * s},
		Yaw: v.S.Theta, YawRate: v.S.Omega, Mode: v.mode, Armed: v.mode != vehicle.ModeDisarmed,
		Landed: true, Energy: v.S.Energy, Distance: v.S.Distance,
		Target: v.target, HasTarget: v.mode == vehicle.ModeGoto,
	}
}

func (v *Vehicle) setMode(t sim.Time, m vehicle.Mode, ev *vehicle.Events) {
	if m == v.mode {
		return
	}
	ev.Add(t, "mode", v.mode.String()+"->"+m.String())
	v.mode = m
}

func (v *Vehicle) apply(t sim.Time, c vehicle.Command, ev *vehicle.Events) {
	v.arrived = false
	switch c.Kind {
	case vehicle.CmdArm:
		if v.mode == vehicle.ModeDisarmed {
			v.setMode(t, vehicle.ModeIdle, ev)
		}
	case vehicle.CmdDisarm:
		v.setMode(t, vehicle.ModeDisarmed, ev)
	case vehicle.CmdHold, vehicle.CmdLand, vehicle.CmdTakeoff:
		v.setMode(t, vehicle.ModeHold, ev)
	case vehicle.CmdGoto:
		v.target, v.speedLim = c.Pos, c.Speed
		v.setMode(t, vehicle.ModeGoto, ev)
	case vehicle.CmdRTL:
		v.target, v.speedLim = v.home, 0
		v.setMode(t, vehicle.ModeGoto, ev)
	case vehicle.CmdDrive:
		v.cmdV, v.cmdW = c.V, c.Omega
		v.setMode(t, vehicle.ModeDrive, ev)
	case vehicle.CmdVelocity:
		// A planar velocity: drive along it, turning towards its heading
		// at every control step.
		v.velCmd = c.Vel
		v.setMode(t, vehicle.ModeVelocity, ev)
	}
}

// Control turns the mode into wheel speed commands.
func (v *Vehicle) Control(t sim.Time, ev *vehicle.Events) {
	if v.hasPending {
		v.hasPending = false
		v.apply(t, v.pending, ev)
	}
	p := v.p
	var bv, bw float64
	switch v.mode {
	case vehicle.ModeDrive:
		bv, bw = v.cmdV, v.cmdW
	case vehicle.ModeVelocity:
		sp := math.Sqrt(v.velCmd.X*v.velCmd.X + v.velCmd.Y*v.velCmd.Y)
		if sp > 1e-6 {
			herr := geom.WrapAngle(math.Atan2(v.velCmd.Y, v.velCmd.X) - v.S.Theta)
			bv = math.Min(sp, p.MaxWheelSpeed*p.WheelRadius) * math.Max(0, math.Cos(herr))
			bw = p.HeadingGain * herr
		}
	case vehicle.ModeGoto:
		dx, dy := v.target.X-v.S.X, v.target.Y-v.S.Y
		d := math.Sqrt(dx*dx + dy*dy)
		if d < p.AcceptRadius {
			if !v.arrived {
				v.arrived = true
				ev.Add(t, "arrived", fmt.Sprintf("%.2f %.2f", v.target.X, v.target.Y))
			}
			break
		}
		herr := geom.WrapAngle(math.Atan2(dy, dx) - v.S.Theta)
		vmax := p.MaxSpeed
		if v.speedLim > 0 && v.speedLim < vmax {
			vmax = v.speedLim
		}
		bv = math.Min(vmax, p.PosGain*d) * math.Max(0, math.Cos(herr))
		bw = p.HeadingGain * herr
	}
	v.setWheels(bv, bw)
}

// setWheels converts a body command to wheel speeds, scaling both wheels
// down together when one would exceed its limit so the path curvature is
// kept.
func (v *Vehicle) setWheels(bv, bw float64) {
	p := v.p
	wr := (bv + bw*p.Track/2) / p.WheelRadius
	wl := (bv - bw*p.Track/2) / p.WheelRadius
	if m := math.Max(math.Abs(wr), math.Abs(wl)); m > p.MaxWheelSpeed {
		wr *= p.MaxWheelSpeed / m
		wl *= p.MaxWheelSpeed / m
	}
	v.wrCmd, v.wlCmd = wr, wl
}

// Step moves the wheels towards their commands (first-order lag, clipped
// to MaxWheelAccel) and integrates the pose with the midpoint rule.
func (v *Vehicle) Step(t sim.Time, ev *vehicle.Events) {
	p := v.p
	dt := p.PhysicsPeriod.Seconds()
	maxDw := p.MaxWheelAccel * dt
	v.S.WL += math.Max(-maxDw, math.Min(maxDw, (v.wlCmd-v.S.WL)*v.alpha))
	v.S.WR += math.Max(-maxDw, math.Min(maxDw, (v.wrCmd-v.S.WR)*v.alpha))
	vPrev := v.S.V
	v.S.V = p.WheelRadius * (v.S.WR + v.S.WL) / 2
	v.S.Omega = p.WheelRadius * (v.S.WR - v.S.WL) / p.Track
	mid := v.S.Theta + v.S.Omega*dt/2
	v.S.X += v.S.V * math.Cos(mid) * dt
	v.S.Y += v.S.V * math.Sin(mid) * dt
	v.S.Theta = geom.WrapAngle(v.S.Theta + v.S.Omega*dt)
	v.S.Distance += math.Abs(v.S.V) * dt
	// Electrical power: electronics + (rolling resistance + acceleration) / efficiency.
	mech := p.RollingCoeff*p.Mass*9.81*math.Abs(v.S.V) + math.Max(0, p.Mass*(v.S.V-vPrev)/dt*v.S.V)
	v.S.Energy += (p.BasePower + mech/p.DriveEff) * dt
}
