// Package groundbotctl is the ground robot's drive controller: it turns
// drive, velocity and goto commands into wheel speed commands, driving on
// the exact pose of the robot of package vehicle/groundbot (the robot has
// no instruments). It sees the robot only through the sensor/actuator
// boundary of package vehicle, and shares the robot's parameter block;
// package kind/groundbot joins the two into the groundbot kind, and the
// engine's mujoco kind drives MJCF robots with it.
package groundbotctl

import (
	"math"

	"skyloop/geom"
	"skyloop/sim"
	"skyloop/vehicle"
	"skyloop/vehicle/groundbot"
)

// Controller is a robot's drive controller: drive (body speed and turn
// rate), velocity (drive along a planar velocity, turning towards it) and
// goto, out as wheel speed commands. It drives on the exact pose of
// vehicle.Sensors.Truth. It implements vehicle.Controller.
type Controller struct {
	p    *groundbot.Params
	mode vehicle.Mode
	home geom.Vec3
	pose vehicle.Pose // the last reading

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

// NewController returns the controller of a robot spawned at pos heading
// yaw, idle. Home is pos.
func NewController(p *groundbot.Params, pos geom.Vec3, yaw float64) *Controller {
	return &Controller{p: p, mode: vehicle.ModeIdle, home: pos, pose: vehicle.Pose{Pos: pos, Yaw: yaw}}
}

// Period returns the control period.
func (v *Controller) Period() sim.Duration { return v.p.ControlPeriod }

// Command queues c for the next control step.
func (v *Controller) Command(c vehicle.Command) { v.pending, v.hasPending = c, true }

// Status adds the mode, arming state and target to tel.
func (v *Controller) Status(tel vehicle.Telemetry) vehicle.Telemetry {
	tel.Mode, tel.Armed = v.mode, v.mode != vehicle.ModeDisarmed
	tel.Target, tel.HasTarget = v.target, v.mode == vehicle.ModeGoto
	return tel
}

// Estimate returns tel as it is: the controller drives on the exact pose.
func (v *Controller) Estimate(tel vehicle.Telemetry) vehicle.Telemetry { return tel }

func (v *Controller) setMode(t sim.Time, m vehicle.Mode, ev *vehicle.Events) {
	if m == v.mode {
		return
	}
	ev.Add(t, "mode", vehicle.ModeChange(v.mode, m))
	v.mode = m
}

func (v *Controller) apply(t sim.Time, c vehicle.Command, ev *vehicle.Events) {
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
func (v *Controller) Control(t sim.Time, s *vehicle.Sensors, a *vehicle.Actuators, ev *vehicle.Events) {
	v.pose = s.Truth
	v.control(t, ev)
	a.WheelL, a.WheelR = v.wlCmd, v.wrCmd
}

// control applies a pending command and sets the wheel commands.
func (v *Controller) control(t sim.Time, ev *vehicle.Events) {
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
			herr := geom.WrapAngle(math.Atan2(v.velCmd.Y, v.velCmd.X) - v.pose.Yaw)
			bv = math.Min(sp, p.MaxWheelSpeed*p.WheelRadius) * math.Max(0, math.Cos(herr))
			bw = p.HeadingGain * herr
		}
	case vehicle.ModeGoto:
		dx, dy := v.target.X-v.pose.Pos.X, v.target.Y-v.pose.Pos.Y
		d := math.Sqrt(dx*dx + dy*dy)
		if d < p.AcceptRadius {
			if !v.arrived {
				v.arrived = true
				ev.Addf(t, "arrived", "%.2f %.2f", v.target.X, v.target.Y)
			}
			break
		}
		herr := geom.WrapAngle(math.Atan2(dy, dx) - v.pose.Yaw)
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
func (v *Controller) setWheels(bv, bw float64) {
	p := v.p
	wr := (bv + bw*p.Track/2) / p.WheelRadius
	wl := (bv - bw*p.Track/2) / p.WheelRadius
	if m := math.Max(math.Abs(wr), math.Abs(wl)); m > p.MaxWheelSpeed {
		wr *= p.MaxWheelSpeed / m
		wl *= p.MaxWheelSpeed / m
	}
	v.wrCmd, v.wlCmd = wr, wl
}
