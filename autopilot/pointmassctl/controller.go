// Package pointmassctl is the point mass's position controller: it flies
// the kinematic point of package vehicle/pointmass on its exact pose and
// brakes in time to stop at its target. It sees the vehicle only through
// the sensor/actuator boundary of package vehicle; package kind/pointmass
// joins the two into the point-mass kind.
package pointmassctl

import (
	"math"

	"skyloop/geom"
	"skyloop/sim"
	"skyloop/vehicle"
	"skyloop/vehicle/pointmass"
)

// Controller is a point mass's position controller: takeoff, hold, goto
// (braking in time to stop at the target), velocity, drive, land and RTL.
// It flies on the exact pose of vehicle.Sensors.Truth and commands a
// velocity setpoint and a heading (or turn rate). It implements
// vehicle.Controller.
type Controller struct {
	p    *pointmass.Params
	mode vehicle.Mode
	home geom.Vec3
	pose vehicle.Pose // the last reading
	// landed is the ground contact of the last reading.
	landed bool

	pending    vehicle.Command
	hasPending bool

	target    geom.Vec3 // goto / hold / takeoff target
	targetYaw float64
	speedLim  float64
	velSP     geom.Vec3 // output of the position loop, input of the physics
	rtlStage  int
	arrived   bool
	wantYaw   float64 // heading the physics turns towards
	velCmd    geom.Vec3
	driveV    float64
	driveW    float64
}

// limit clips a velocity to the horizontal and vertical speed limits.
func (v *Controller) limit(sp geom.Vec3) geom.Vec3 {
	p := v.p
	if h := math.Sqrt(sp.X*sp.X + sp.Y*sp.Y); h > p.MaxSpeed {
		sp.X, sp.Y = sp.X*p.MaxSpeed/h, sp.Y*p.MaxSpeed/h
	}
	sp.Z = math.Max(-p.MaxDescent, math.Min(p.MaxClimb, sp.Z))
	return sp
}

// NewController returns the controller of a point mass spawned at pos
// heading yaw: idle on the ground when pos.Z <= 0, else holding pos. Home
// is pos.
func NewController(p *pointmass.Params, pos geom.Vec3, yaw float64) *Controller {
	v := &Controller{p: p, home: pos, target: pos, targetYaw: yaw, wantYaw: yaw}
	v.pose = vehicle.Pose{Pos: pos, Yaw: yaw}
	if pos.Z > 0 {
		v.mode = vehicle.ModeHold
	} else {
		v.pose.Pos.Z = 0
		v.landed = true
		v.mode = vehicle.ModeIdle
	}
	return v
}

// Period returns the control period.
func (v *Controller) Period() sim.Duration { return v.p.ControlPeriod }

// Command queues c for the next control step.
func (v *Controller) Command(c vehicle.Command) { v.pending, v.hasPending = c, true }

// Status adds the mode, arming state and target to tel.
func (v *Controller) Status(tel vehicle.Telemetry) vehicle.Telemetry {
	tel.Mode, tel.Armed = v.mode, v.mode != vehicle.ModeDisarmed
	tel.Target = v.target
	tel.HasTarget = v.mode == vehicle.ModeGoto || v.mode == vehicle.ModeTakeoff || v.mode == vehicle.ModeHold
	return tel
}

// Estimate returns tel as it is: the controller flies on the exact pose.
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
	v.speedLim = 0
	switch c.Kind {
	case vehicle.CmdArm:
		if v.mode == vehicle.ModeDisarmed {
			v.setMode(t, vehicle.ModeIdle, ev)
		}
	case vehicle.CmdDisarm:
		if v.landed {
			v.setMode(t, vehicle.ModeDisarmed, ev)
		} else {
			ev.Add(t, "rejected", "disarm in the air")
		}
	case vehicle.CmdTakeoff:
		v.target = geom.Vec3{X: v.pose.Pos.X, Y: v.pose.Pos.Y, Z: c.Alt}
		v.targetYaw = v.pose.Yaw
		v.setMode(t, vehicle.ModeTakeoff, ev)
	case vehicle.CmdHold:
		v.target, v.targetYaw = v.pose.Pos, v.pose.Yaw
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
		v.target = geom.Vec3{X: v.home.X, Y: v.home.Y, Z: math.Max(v.pose.Pos.Z, 1)}
		v.setMode(t, vehicle.ModeRTL, ev)
	}
}

// Control runs the position loop: it turns the current mode and target into
// a velocity setpoint and a heading for the physics.
func (v *Controller) Control(t sim.Time, s *vehicle.Sensors, a *vehicle.Actuators, ev *vehicle.Events) {
	v.pose, v.landed = s.Truth, s.Contact
	if v.hasPending {
		v.hasPending = false
		v.apply(t, v.pending, ev)
	}
	v.control(t, ev)
	v.setHeading()
	a.Vel, a.Yaw = v.velSP, v.wantYaw
	a.TurnByRate, a.TurnRate = v.mode == vehicle.ModeDrive, v.driveW
}

// control runs the mode logic and sets the velocity setpoint.
func (v *Controller) control(t sim.Time, ev *vehicle.Events) {
	p := v.p
	switch v.mode {
	case vehicle.ModeDisarmed, vehicle.ModeIdle:
		v.velSP = geom.Vec3{}
	case vehicle.ModeVelocity:
		v.velSP = v.limit(v.velCmd)
	case vehicle.ModeDrive:
		// Forward speed along the heading; the heading turns at the commanded
		// rate in Step.
		c, s := math.Cos(v.pose.Yaw), math.Sin(v.pose.Yaw)
		v.velSP = v.limit(geom.Vec3{X: v.driveV * c, Y: v.driveV * s})
	case vehicle.ModeLand:
		v.velSP = geom.Vec3{Z: -p.MaxDescent}
		if v.landed {
			ev.Add(t, "touchdown", "")
			v.setMode(t, vehicle.ModeDisarmed, ev)
			v.velSP = geom.Vec3{}
		}
	default: // takeoff, hold, goto, rtl: position control towards target
		v.velSP = v.track(v.target)
		dist := v.target.Sub(v.pose.Pos).Norm()
		if dist < p.AcceptRadius && v.pose.Vel.Norm() < 0.5 && !v.arrived {
			v.arrived = true
			switch v.mode {
			case vehicle.ModeTakeoff:
				v.setMode(t, vehicle.ModeHold, ev)
			case vehicle.ModeGoto:
				ev.Addf(t, "arrived", "%.2f %.2f %.2f", v.target.X, v.target.Y, v.target.Z)
			case vehicle.ModeRTL:
				v.setMode(t, vehicle.ModeLand, ev)
			}
		}
	}
}

// setHeading points the vehicle along its horizontal velocity setpoint
// when moving, else at the goto yaw, else keeps the current heading (in
// drive mode the physics turns at the commanded rate instead).
func (v *Controller) setHeading() {
	v.wantYaw = v.pose.Yaw
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
func (v *Controller) track(target geom.Vec3) geom.Vec3 {
	p := v.p
	e := target.Sub(v.pose.Pos)
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
