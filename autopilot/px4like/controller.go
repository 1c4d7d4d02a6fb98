package px4like

import (
	"fmt"
	"math"

	"skyloop/geom"
	"skyloop/sim"
	"skyloop/vehicle"
	"skyloop/vehicle/multirotor"
)

// Group is what every controller of a group derives once from the
// parameters and the airframe it flies: the mixer's allocation matrix and
// the torque authority, as PX4 derives them from its CA_ROTOR parameters.
type Group struct {
	// Params are the group's parameters (a vehicle's SetParams replaces
	// only its own copy).
	Params   *Params
	airframe *multirotor.Params
	n        int
	alloc    [multirotor.MaxRotors][4]float64 // per-rotor share of [thrust, tx, ty, tz]
	tauRef   geom.Vec3                        // N m per unit of normalised torque
	fmax     float64                          // one rotor's maximum thrust, N
	thrHover float64
}

// NewGroup prepares a group's controllers for the airframe af; both
// parameter sets must be valid.
func NewGroup(ap *Params, af *multirotor.Params) *Group {
	p := af
	sh := &Group{Params: ap, airframe: af, n: len(p.Rotors), fmax: p.MaxRotorThrust()}
	sh.thrHover = ap.ThrHover
	if sh.thrHover == 0 {
		sh.thrHover = p.HoverThrust()
	}
	// Effectiveness E (4 x n): thrust, roll, pitch and yaw torque per newton
	// of rotor thrust; allocation = pseudo-inverse E^T (E E^T)^-1.
	var e [4][multirotor.MaxRotors]float64
	var sy, sx float64
	for i, r := range p.Rotors {
		e[0][i], e[1][i], e[2][i], e[3][i] = 1, r.Y, -r.X, -float64(r.Dir)*p.MomentConst
		sy += math.Abs(r.Y)
		sx += math.Abs(r.X)
	}
	var eet [4][4]float64
	for a := 0; a < 4; a++ {
		for b := 0; b < 4; b++ {
			for i := 0; i < sh.n; i++ {
				eet[a][b] += e[a][i] * e[b][i]
			}
		}
	}
	inv := invert4(eet)
	for i := 0; i < sh.n; i++ {
		for b := 0; b < 4; b++ {
			for a := 0; a < 4; a++ {
				sh.alloc[i][b] += e[a][i] * inv[a][b]
			}
		}
	}
	// Torque authority around hover: half of every rotor's range, on its lever.
	half := sh.fmax / 2
	sh.tauRef = geom.V(sy*half, sx*half, float64(sh.n)*p.MomentConst*half)
	return sh
}

// invert4 inverts a 4x4 matrix by Gauss-Jordan elimination with pivoting.
func invert4(m [4][4]float64) [4][4]float64 {
	var inv [4][4]float64
	for i := range inv {
		inv[i][i] = 1
	}
	for c := 0; c < 4; c++ {
		p := c
		for r := c + 1; r < 4; r++ {
			if math.Abs(m[r][c]) > math.Abs(m[p][c]) {
				p = r
			}
		}
		m[c], m[p] = m[p], m[c]
		inv[c], inv[p] = inv[p], inv[c]
		d := m[c][c]
		for k := 0; k < 4; k++ {
			m[c][k] /= d
			inv[c][k] /= d
		}
		for r := 0; r < 4; r++ {
			if r != c {
				f := m[r][c]
				for k := 0; k < 4; k++ {
					m[r][k] -= f * m[c][k]
					inv[r][k] -= f * inv[c][k]
				}
			}
		}
	}
	return inv
}

// Controller is one multirotor's flight controller. It implements
// vehicle.Controller.
type Controller struct {
	sh *Group
	ap *Params

	mode   vehicle.Mode
	home   geom.Vec3
	cmds   []vehicle.Command // commands queued for the next control step
	tick   int64
	dt     float64
	armed  bool
	landed bool // the gear switch at the last control step

	// estimator
	estPos, estVel geom.Vec3
	estAcc         geom.Vec3 // low-passed world acceleration from the IMU
	estAtt         geom.Quat
	gyro           geom.Vec3

	// setpoints and controller state
	posSP     geom.Vec3
	yawSP     float64
	speedLim  float64
	velCmd    geom.Vec3 // offboard velocity setpoint
	velSP     geom.Vec3 // slewed velocity setpoint
	velInt    geom.Vec3
	thrust    float64 // collective thrust, normalised
	attSP     geom.Quat
	rateSP    geom.Vec3
	rateInt   geom.Vec3
	prevGyro  geom.Vec3
	torque    geom.Vec3 // normalised torque command
	arrived   bool
	rtlStage  int
	landSince sim.Time
	landMaybe bool
	idleSince sim.Time
	idlePre   bool // idle since arming, not since a landing
	hasTarget bool
	wp        wpSegment // the arducopter goto's segment (wp_nav: arducopter)

	// failsafe
	linkSeen  bool
	lastLink  sim.Time
	lastVelSP sim.Time
	fsStage   int
	fsSince   sim.Time
}

// New returns the controller of a multirotor spawned at pos heading yaw:
// on the ground and disarmed when pos.Z <= 0 (the physics' rule), else
// hovering (armed, holding position, at the hover thrust). Its estimate
// starts at the spawn point, and home is the spawn point on the ground.
func New(sh *Group, pos geom.Vec3, yaw float64) *Controller {
	ap := sh.Params
	v := &Controller{sh: sh, ap: ap, dt: ap.ControlPeriod.Seconds(), cmds: make([]vehicle.Command, 0, 4)}
	v.landed = pos.Z <= 0
	if v.landed {
		pos.Z = 0
	}
	att := geom.FromEuler(0, 0, yaw)
	v.home = pos
	v.estPos, v.estAtt = pos, att
	v.posSP, v.yawSP, v.attSP = pos, yaw, att
	v.mode = vehicle.ModeDisarmed
	if !v.landed {
		// Spawned in the air: start hovering.
		v.armed, v.mode, v.hasTarget = true, vehicle.ModeHold, true
		v.thrust = sh.thrHover
	}
	return v
}

// Period returns the control period (the rate loop runs with the physics;
// slower loops are decimated inside Control).
func (v *Controller) Period() sim.Duration { return v.ap.ControlPeriod }

// Params returns the vehicle's controller parameters.
func (v *Controller) Params() Params { return *v.ap }

// SetParams replaces this vehicle's controller parameters (the group's
// stay as they are), as a ground station's parameter writes do. Loop
// periods cannot change in flight. The new values apply from the next
// control step.
func (v *Controller) SetParams(p Params) error {
	if err := p.Validate().Err("autopilot parameter"); err != nil {
		return err
	}
	old := v.ap
	if p.ControlPeriod != old.ControlPeriod || p.AttEvery != old.AttEvery || p.PosEvery != old.PosEvery {
		return fmt.Errorf("loop periods cannot change during a run")
	}
	if p.ThrHover != old.ThrHover {
		return fmt.Errorf("thr_hover cannot change during a run")
	}
	v.ap = &p
	return nil
}

// Mode returns the flight mode.
func (v *Controller) Mode() vehicle.Mode { return v.mode }

// Command queues c for the next control step; several commands in one tick
// apply in order.
func (v *Controller) Command(c vehicle.Command) { v.cmds = append(v.cmds, c) }

// Status adds the mode, arming state, collective thrust and target to tel.
func (v *Controller) Status(tel vehicle.Telemetry) vehicle.Telemetry {
	tel.Mode, tel.Armed, tel.Throttle = v.mode, v.armed, v.thrust
	tel.Target, tel.HasTarget = v.posSP, v.hasTarget
	return tel
}

// Estimate puts the estimated position, velocity and attitude, and the
// gyro's body rates, in tel.
func (v *Controller) Estimate(tel vehicle.Telemetry) vehicle.Telemetry {
	roll, pitch, yaw := v.estAtt.Euler()
	tel.Pos, tel.Vel = v.estPos, v.estVel
	tel.Roll, tel.Pitch, tel.Yaw = roll, pitch, yaw
	tel.RollRate, tel.PitchRate, tel.YawRate = v.gyro.X, v.gyro.Y, v.gyro.Z
	return tel
}

func (v *Controller) setMode(t sim.Time, m vehicle.Mode, ev *vehicle.Events) {
	if m == v.mode {
		return
	}
	ev.Add(t, "mode", vehicle.ModeChange(v.mode, m))
	v.mode = m
	v.arrived = false
}

func (v *Controller) arm(t sim.Time, ev *vehicle.Events) {
	if !v.armed {
		v.armed = true
		v.velInt, v.rateInt = geom.Vec3{}, geom.Vec3{}
		ev.Add(t, "arm", "")
		if v.mode == vehicle.ModeDisarmed {
			v.setMode(t, vehicle.ModeIdle, ev)
			// Armed on the ground and never taking off: disarm after the
			// preflight delay (PX4 COM_DISARM_PRFLT).
			v.idleSince, v.idlePre = t, true
		}
	}
}

func (v *Controller) disarm(t sim.Time, ev *vehicle.Events) {
	if v.armed {
		v.armed = false
		ev.Add(t, "disarm", "")
		v.setMode(t, vehicle.ModeDisarmed, ev)
		v.hasTarget = false
	}
}

// apply carries out one command.
func (v *Controller) apply(t sim.Time, c vehicle.Command, ev *vehicle.Events) {
	switch c.Kind {
	case vehicle.CmdHeartbeat:
		v.linkSeen, v.lastLink = true, t
		if v.fsStage != 0 {
			v.fsStage = 0
			ev.Add(t, "failsafe", "link restored")
		}
		return
	case vehicle.CmdArm:
		v.arm(t, ev)
	case vehicle.CmdDisarm:
		if v.landed || !v.armed {
			v.disarm(t, ev)
		} else {
			ev.Add(t, "rejected", "disarm in the air")
		}
	case vehicle.CmdTakeoff:
		v.arm(t, ev)
		v.posSP = geom.V(v.estPos.X, v.estPos.Y, v.home.Z+c.Alt)
		v.yawSP, v.speedLim, v.hasTarget = v.estAtt.Yaw(), 0, true
		v.setMode(t, vehicle.ModeTakeoff, ev)
	case vehicle.CmdHold:
		if !v.armed {
			return
		}
		v.posSP, v.yawSP, v.hasTarget = v.stopPoint(), v.estAtt.Yaw(), true
		v.setMode(t, vehicle.ModeHold, ev)
	case vehicle.CmdGoto:
		v.arm(t, ev)
		v.posSP, v.speedLim, v.hasTarget = c.Pos, c.Speed, true
		v.posSP.Z = max(v.posSP.Z, v.home.Z)
		if v.ap.WPNav == "arducopter" {
			v.wp.active = v.wp.active && v.mode == vehicle.ModeGoto
			v.wpStart(v.posSP, v.gotoSpeed())
		}
		v.yawSP = v.estAtt.Yaw()
		if !math.IsNaN(c.Yaw) {
			v.yawSP = c.Yaw
		}
		v.setMode(t, vehicle.ModeGoto, ev)
		v.arrived = false
	case vehicle.CmdVelocity, vehicle.CmdDrive:
		v.arm(t, ev)
		v.velCmd = c.Vel
		if c.Kind == vehicle.CmdDrive {
			y := v.estAtt.Yaw()
			v.velCmd = geom.V(c.V*math.Cos(y), c.V*math.Sin(y), 0)
		}
		v.lastVelSP, v.hasTarget = t, false
		v.setMode(t, vehicle.ModeVelocity, ev)
	case vehicle.CmdLand:
		if !v.armed {
			return
		}
		stop := v.stopPoint()
		v.posSP, v.hasTarget = geom.V(stop.X, stop.Y, v.home.Z), true
		v.landMaybe = false
		v.setMode(t, vehicle.ModeLand, ev)
	case vehicle.CmdRTL:
		if !v.armed {
			return
		}
		v.rtlStage = 0
		v.setMode(t, vehicle.ModeRTL, ev)
	}
	if v.fsStage != 0 && c.Kind != vehicle.CmdHeartbeat {
		// A fresh command from the operator ends the failsafe.
		v.fsStage = 0
	}
}

// Control runs one step of the flight stack: commands, estimator,
// failsafe and modes, then the position (every PosEvery steps), attitude
// (every AttEvery) and rate loops and the mixer, whose motor commands go
// to a.
func (v *Controller) Control(t sim.Time, s *vehicle.Sensors, a *vehicle.Actuators, ev *vehicle.Events) {
	v.landed = s.Contact
	for _, c := range v.cmds {
		v.apply(t, c, ev)
	}
	v.cmds = v.cmds[:0]
	v.estimate(s)
	v.failsafe(t, ev)
	ap := v.ap
	if v.tick%int64(ap.PosEvery) == 0 {
		v.modes(t, ev)
		v.positionLoop(float64(ap.PosEvery) * v.dt)
	}
	if v.tick%int64(ap.AttEvery) == 0 {
		v.attitudeLoop()
	}
	v.rateLoop()
	v.mix(a)
	v.tick++
}

// estimate runs the complementary filter: IMU prediction every step, GPS
// and barometer corrections when they bring a new sample. The attitude is
// the AHRS's (a well-tuned attitude filter).
func (v *Controller) estimate(s *vehicle.Sensors) {
	ap := v.ap
	v.gyro = s.IMU.Gyro
	v.estAtt = s.AHRS.Att
	if v.landed && !v.armed {
		// At rest on the ground the estimate settles on the truth (as an
		// EKF does before arming).
		v.estPos, v.estVel = s.Truth.Pos, geom.Vec3{}
		return
	}
	acc := v.estAtt.Rotate(s.IMU.Accel)
	acc.Z -= multirotor.Gravity
	v.estAcc = v.estAcc.Add(acc.Sub(v.estAcc).Scale(0.05)) // ~20 ms low-pass for the D term
	v.estVel = v.estVel.Add(acc.Scale(v.dt))
	v.estPos = v.estPos.Add(v.estVel.Scale(v.dt))
	if s.GPS.New {
		v.estPos = v.estPos.Add(s.GPS.Pos.Sub(v.estPos).Scale(ap.EstPosGain))
		v.estVel = v.estVel.Add(s.GPS.Vel.Sub(v.estVel).Scale(ap.EstVelGain))
	}
	if s.Baro.New {
		v.estPos.Z += (s.Baro.Alt - v.estPos.Z) * 0.1
	}
}

// failsafe handles link loss: no ground-station heartbeat (once one was
// heard) or, in offboard velocity mode, no velocity setpoint for
// FailsafeTimeout -> hold; FailsafeDelay later -> land or return.
func (v *Controller) failsafe(t sim.Time, ev *vehicle.Events) {
	ap := v.ap
	if ap.FailsafeTimeout <= 0 || !v.armed || v.landed && v.mode != vehicle.ModeVelocity {
		return
	}
	lost := false
	var why string
	if v.linkSeen && t.Sub(v.lastLink) > ap.FailsafeTimeout {
		lost, why = true, "ground-station heartbeat lost"
	}
	if v.mode == vehicle.ModeVelocity && t.Sub(v.lastVelSP) > ap.FailsafeTimeout {
		lost, why = true, "offboard setpoints lost"
	}
	switch {
	case v.fsStage == 0 && lost && v.mode == vehicle.ModeGoto && ap.FailsafeGoto == "finish" && !v.arrived:
		// The goto's path was planned clear of the other vehicles: stopping
		// on it would put this vehicle in the way of those behind it (they
		// lose the link at the same place), so it flies on to its target
		// and the failsafe starts there.
		v.fsStage = fsFinishing
		ev.Add(t, "failsafe", why+": finishing the goto")
	case v.fsStage == fsFinishing && (v.mode != vehicle.ModeGoto || v.arrived):
		v.fsStage, v.fsSince = 1, t
		ev.Add(t, "failsafe", why+": hold")
		v.holdHere(t, ev)
	case v.fsStage == 0 && lost:
		v.fsStage, v.fsSince = 1, t
		ev.Add(t, "failsafe", why+": hold")
		v.holdHere(t, ev)
	case v.fsStage == 1 && t.Sub(v.fsSince) > ap.FailsafeDelay:
		v.fsStage = 2
		ev.Add(t, "failsafe", "still no link: "+ap.FailsafeAction)
		if ap.FailsafeAction == "rtl" {
			v.rtlStage = 0
			v.setMode(t, vehicle.ModeRTL, ev)
		} else {
			v.posSP = geom.V(v.estPos.X, v.estPos.Y, v.home.Z)
			v.landMaybe = false
			v.setMode(t, vehicle.ModeLand, ev)
		}
	}
}

// fsFinishing is the failsafe stage of a vehicle that lost the link during
// a goto and flies on to its target first (failsafe_goto: finish).
const fsFinishing = -1

// holdHere switches to hold at the point where the vehicle can stop: the
// target when it has arrived at it, else its braking point.
func (v *Controller) holdHere(t sim.Time, ev *vehicle.Events) {
	sp := v.stopPoint()
	if v.mode == vehicle.ModeGoto && v.arrived {
		sp = v.posSP
	}
	v.posSP, v.yawSP, v.hasTarget = sp, v.estAtt.Yaw(), true
	v.setMode(t, vehicle.ModeHold, ev)
}

// stopPoint returns where the vehicle comes to rest when it brakes now as
// the position loop lets it (80% of the acceleration limits): its position
// plus the braking distance along its velocity, as PX4's hold does
// (navigator's calculate_breaking_stop). Holding at the position of the
// moment instead makes a moving vehicle overshoot by that distance and fly
// back, through whatever followed it.
func (v *Controller) stopPoint() geom.Vec3 {
	ap := v.ap
	p := v.estPos
	if s := v.estVel.NormXY(); s > 1e-3 {
		d := s * s / (2 * 0.8 * ap.AccHor)
		p.X += v.estVel.X / s * d
		p.Y += v.estVel.Y / s * d
	}
	vz := v.estVel.Z
	p.Z += math.Copysign(vz*vz/(2*0.8*ap.AccDown), vz)
	return p
}

// modes runs the mode logic at the position-loop rate: arrivals, RTL
// stages, the land detector and auto-disarm.
func (v *Controller) modes(t sim.Time, ev *vehicle.Events) {
	ap := v.ap
	switch v.mode {
	case vehicle.ModeTakeoff:
		if math.Abs(v.estPos.Z-v.posSP.Z) < 0.2 && math.Abs(v.estVel.Z) < 0.3 {
			ev.Addf(t, "takeoff_done", "%.2f", v.estPos.Z)
			v.setMode(t, vehicle.ModeHold, ev)
		}
	case vehicle.ModeGoto:
		if !v.arrived && v.estPos.Dist(v.posSP) < ap.Accept && v.estVel.Norm() < 0.5 {
			v.arrived = true
			ev.Addf(t, "arrived", "%.2f %.2f %.2f", v.posSP.X, v.posSP.Y, v.posSP.Z)
		}
	case vehicle.ModeRTL:
		alt := max(v.home.Z+ap.RTLAlt, v.estPos.Z)
		switch v.rtlStage {
		case 0: // brake and climb
			stop := v.stopPoint()
			v.posSP = geom.V(stop.X, stop.Y, alt)
			v.hasTarget = true
			v.rtlStage = 1
		case 1:
			if math.Abs(v.estPos.Z-v.posSP.Z) < 0.5 {
				v.posSP = geom.V(v.home.X, v.home.Y, v.posSP.Z)
				v.rtlStage = 2
			}
		case 2:
			if v.estPos.Sub(v.posSP).NormXY() < 1 {
				v.posSP = geom.V(v.home.X, v.home.Y, v.home.Z)
				v.landMaybe = false
				v.setMode(t, vehicle.ModeLand, ev)
			}
		}
	case vehicle.ModeLand:
		// Land detector: near the ground, no vertical motion although the
		// controller asks to descend.
		near := v.estPos.Z-v.home.Z < 0.3 || v.landed
		if near && math.Abs(v.estVel.Z) < 0.15 {
			if !v.landMaybe {
				v.landMaybe, v.landSince = true, t
			} else if t.Sub(v.landSince) >= 300*sim.Millisecond {
				ev.Addf(t, "touchdown", "%.2f %.2f", v.estPos.X, v.estPos.Y)
				v.setMode(t, vehicle.ModeIdle, ev)
				v.idleSince, v.idlePre, v.hasTarget = t, false, false
			}
		} else {
			v.landMaybe = false
		}
	case vehicle.ModeIdle:
		delay := ap.DisarmDelay
		if v.idlePre {
			delay = ap.DisarmPreflight
		}
		if v.armed && v.landed && delay > 0 && t.Sub(v.idleSince) >= delay {
			v.disarm(t, ev)
		}
	}
}

// positionLoop: position P -> velocity setpoint (braking-aware, limited,
// slewed) -> velocity PID -> acceleration -> thrust vector and attitude
// setpoint.
func (v *Controller) positionLoop(dt float64) {
	ap := v.ap
	if !v.armed || v.mode == vehicle.ModeIdle || v.mode == vehicle.ModeDisarmed {
		v.velSP, v.velInt = geom.Vec3{}, geom.Vec3{}
		v.thrust = 0
		v.attSP = geom.FromEuler(0, 0, v.estAtt.Yaw())
		return
	}
	up, down := ap.ZVelMaxUp, ap.ZVelMaxDown
	hmax := v.gotoSpeed()
	var target geom.Vec3
	switch v.mode {
	case vehicle.ModeVelocity:
		target = v.velCmd
		hmax = ap.XYVelMax
	default:
		e := v.posSP.Sub(v.estPos)
		// Horizontal: P, capped by the speed that still lets the vehicle
		// stop at the target with 80% of the horizontal acceleration.
		d := e.NormXY()
		if v.mode == vehicle.ModeGoto && ap.WPNav == "arducopter" {
			target.X, target.Y = v.wpAdvance(dt, hmax)
		} else if d > 1e-9 {
			s := min(ap.XYP*d, math.Sqrt(2*0.8*ap.AccHor*d))
			target.X, target.Y = e.X/d*s, e.Y/d*s
		}
		dz := math.Abs(e.Z)
		sz := min(ap.ZP*dz, math.Sqrt(2*0.8*ap.AccDown*dz))
		target.Z = math.Copysign(sz, e.Z)
		if v.mode == vehicle.ModeTakeoff {
			up = ap.TakeoffSpd
		}
		if v.mode == vehicle.ModeLand {
			target.Z = -ap.LandSpeed
			if v.estPos.Z-v.home.Z > 5 {
				target.Z = -down // descend faster while high
			}
		}
	}
	if h := math.Sqrt(target.X*target.X + target.Y*target.Y); h > hmax {
		target.X, target.Y = target.X*hmax/h, target.Y*hmax/h
	}
	target.Z = max(-down, min(up, target.Z))
	// Slew the setpoint with the acceleration limits.
	dv := target.Sub(v.velSP)
	dxy := math.Sqrt(dv.X*dv.X + dv.Y*dv.Y)
	if lim := ap.AccHor * dt; dxy > lim {
		dv.X, dv.Y = dv.X*lim/dxy, dv.Y*lim/dxy
	}
	dv.Z = max(-ap.AccDown*dt, min(ap.AccUp*dt, dv.Z))
	v.velSP = v.velSP.Add(dv)
	accFF := dv.Scale(1 / dt) // the setpoint's own acceleration, fed forward

	// Velocity PID, derivative on the measured acceleration.
	ev := v.velSP.Sub(v.estVel)
	dmeas := v.estAcc
	if !v.landed {
		v.velInt = v.velInt.Add(ev.Scale(dt))
	}
	// Anti-windup: the integral never asks for more than the tilt or the
	// thrust range could give.
	ilimXY := multirotor.Gravity * math.Tan(ap.TiltMax*math.Pi/180) / max(ap.XYVelI, 1e-9)
	ilimZ := multirotor.Gravity / max(ap.ZVelI, 1e-9)
	v.velInt = geom.V(clamp(v.velInt.X, ilimXY), clamp(v.velInt.Y, ilimXY), clamp(v.velInt.Z, ilimZ))
	acc := geom.V(
		accFF.X+ap.XYVelP*ev.X+ap.XYVelI*v.velInt.X-ap.XYVelD*dmeas.X,
		accFF.Y+ap.XYVelP*ev.Y+ap.XYVelI*v.velInt.Y-ap.XYVelD*dmeas.Y,
		accFF.Z+ap.ZVelP*ev.Z+ap.ZVelI*v.velInt.Z-ap.ZVelD*dmeas.Z,
	)
	// Acceleration -> normalised thrust vector, tilt-limited.
	k := v.sh.thrHover / multirotor.Gravity
	thr := geom.V(acc.X*k, acc.Y*k, (acc.Z+multirotor.Gravity)*k)
	thr.Z = max(thr.Z, ap.ThrMin)
	maxH := thr.Z * math.Tan(ap.TiltMax*math.Pi/180)
	if h := math.Sqrt(thr.X*thr.X + thr.Y*thr.Y); h > maxH {
		thr.X, thr.Y = thr.X*maxH/h, thr.Y*maxH/h
	}
	mag := thr.Norm()
	if mag > 1 {
		thr = thr.Scale(1 / mag)
		mag = 1
	}
	if v.mode == vehicle.ModeLand && v.landMaybe {
		thr = geom.V(0, 0, ap.ThrMin) // settle on the ground
		mag = ap.ThrMin
	}
	v.attSP = attitudeFrom(thr.Scale(1/mag), v.yawSP)
	// Collective thrust: the part along the current body z (PX4).
	v.thrust = max(ap.ThrMin, thr.Dot(v.estAtt.AxisZ()))
}

// gotoSpeed returns the horizontal speed limit of the position modes: the
// goto's speed when it gave one, else the cruise speed, within the
// maximum.
func (v *Controller) gotoSpeed() float64 {
	if v.speedLim > 0 {
		return min(v.speedLim, v.ap.XYVelMax)
	}
	return min(v.ap.XYCruise, v.ap.XYVelMax)
}

// attitudeFrom returns the attitude whose body z axis is z and whose
// heading is yaw.
func attitudeFrom(z geom.Vec3, yaw float64) geom.Quat {
	xc := geom.V(math.Cos(yaw), math.Sin(yaw), 0)
	y := z.Cross(xc)
	if n := y.Norm(); n > 1e-6 {
		y = y.Scale(1 / n)
	} else {
		y = geom.V(-math.Sin(yaw), math.Cos(yaw), 0)
	}
	x := y.Cross(z)
	return fromAxes(x, y, z)
}

// fromAxes converts a rotation matrix given by its columns to a quaternion.
func fromAxes(x, y, z geom.Vec3) geom.Quat {
	m00, m11, m22 := x.X, y.Y, z.Z
	tr := m00 + m11 + m22
	var q geom.Quat
	switch {
	case tr > 0:
		s := math.Sqrt(tr+1) * 2
		q = geom.Quat{W: s / 4, X: (y.Z - z.Y) / s, Y: (z.X - x.Z) / s, Z: (x.Y - y.X) / s}
	case m00 > m11 && m00 > m22:
		s := math.Sqrt(1+m00-m11-m22) * 2
		q = geom.Quat{W: (y.Z - z.Y) / s, X: s / 4, Y: (y.X + x.Y) / s, Z: (z.X + x.Z) / s}
	case m11 > m22:
		s := math.Sqrt(1+m11-m00-m22) * 2
		q = geom.Quat{W: (z.X - x.Z) / s, X: (y.X + x.Y) / s, Y: s / 4, Z: (z.Y + y.Z) / s}
	default:
		s := math.Sqrt(1+m22-m00-m11) * 2
		q = geom.Quat{W: (x.Y - y.X) / s, X: (z.X + x.Z) / s, Y: (z.Y + y.Z) / s, Z: s / 4}
	}
	return q.Normalize()
}

// attitudeLoop: quaternion attitude P -> body-rate setpoint.
func (v *Controller) attitudeLoop() {
	ap := v.ap
	qe := v.estAtt.Conj().Mul(v.attSP)
	if qe.W < 0 {
		qe = geom.Quat{W: -qe.W, X: -qe.X, Y: -qe.Y, Z: -qe.Z}
	}
	d2r := math.Pi / 180
	v.rateSP = geom.V(
		clamp(2*qe.X*ap.RollP, ap.RollRateMax*d2r),
		clamp(2*qe.Y*ap.PitchP, ap.PitchRateMax*d2r),
		clamp(2*qe.Z*ap.YawP, ap.YawRateMax*d2r),
	)
}

// rateLoop: body-rate PID -> normalised torque.
func (v *Controller) rateLoop() {
	ap := v.ap
	e := v.rateSP.Sub(v.gyro)
	dg := v.gyro.Sub(v.prevGyro).Scale(1 / v.dt)
	v.prevGyro = v.gyro
	if v.armed && !v.landed {
		lim := ap.RateIntLim
		v.rateInt = geom.V(
			clamp(v.rateInt.X+ap.RollRateI*e.X*v.dt, lim),
			clamp(v.rateInt.Y+ap.PitchRateI*e.Y*v.dt, lim),
			clamp(v.rateInt.Z+ap.YawRateI*e.Z*v.dt, lim),
		)
	} else {
		v.rateInt = geom.Vec3{}
	}
	v.torque = geom.V(
		clamp(ap.RollRateP*e.X+v.rateInt.X-ap.RollRateD*dg.X, 1),
		clamp(ap.PitchRateP*e.Y+v.rateInt.Y-ap.PitchRateD*dg.Y, 1),
		clamp(ap.YawRateP*e.Z+v.rateInt.Z-ap.YawRateD*dg.Z, 1),
	)
}

// mix allocates collective thrust and torques to the rotors, keeping roll
// and pitch authority first: roll/pitch differences are scaled down to fit
// the rotors' range, thrust gives way to them at the top (and they give way
// at the bottom, no "airmode"), and yaw gets what room is left.
func (v *Controller) mix(a *vehicle.Actuators) {
	sh := v.sh
	n := sh.n
	a.NumMotors = n
	if !v.armed {
		for i := 0; i < n; i++ {
			a.Motors[i] = 0
		}
		return
	}
	tau := v.torque.Mul(sh.tauRef)
	var rp, yw [multirotor.MaxRotors]float64
	lo, hi := math.Inf(1), math.Inf(-1)
	for i := 0; i < n; i++ {
		a := &sh.alloc[i]
		rp[i] = (a[1]*tau.X + a[2]*tau.Y) / sh.fmax
		yw[i] = a[3] * tau.Z / sh.fmax
		lo, hi = min(lo, rp[i]), max(hi, rp[i])
	}
	idle := v.ap.IdleSpeed * v.ap.IdleSpeed // thrust fraction at idle speed
	c := v.thrust
	if v.mode == vehicle.ModeIdle || v.mode == vehicle.ModeDisarmed {
		c = 0
	}
	span := 1 - idle
	if hi-lo > span {
		k := span / (hi - lo)
		for i := 0; i < n; i++ {
			rp[i] *= k
		}
		lo, hi = lo*k, hi*k
	}
	if c+hi > 1 {
		c = 1 - hi
	}
	if c+lo < idle {
		// Not enough thrust for the differences: shrink them.
		if lo < 0 {
			k := max(0, (c-idle)/-lo)
			k = min(1, k)
			for i := 0; i < n; i++ {
				rp[i] *= k
			}
		}
		c = max(c, idle)
	}
	// Yaw: the largest share that keeps every rotor in range.
	k := 1.0
	for i := 0; i < n; i++ {
		x := c + rp[i]
		if y := yw[i]; y > 0 && x+y > 1 {
			k = min(k, (1-x)/y)
		} else if y < 0 && x+y < idle {
			k = min(k, (x-idle)/-y)
		}
	}
	k = max(0, k)
	for i := 0; i < n; i++ {
		// x is the rotor's share of its maximum thrust; thrust grows with
		// the square of speed, and the command is a fraction of full speed.
		x := clampMotor(c+rp[i]+k*yw[i], idle)
		a.Motors[i] = math.Sqrt(x)
	}
}

// clamp limits x to [-lim, lim] for lim >= 0. It returns exactly what
// max(-lim, min(lim, x)) returns for every x (NaN and signed
// zeros included; TestClampMatchesMinMax checks it) without their two
// calls, which the compiler cannot inline: the rate loop clamps six values
// per step.
func clamp(x, lim float64) float64 {
	if x > lim {
		return lim
	}
	if x < -lim {
		return -lim
	}
	return x
}

// clampMotor limits a rotor's thrust share x to [idle, 1] for 0 <= idle <
// 1, exactly as max(idle, min(1, x)) does (see clamp).
func clampMotor(x, idle float64) float64 {
	if x > 1 {
		return 1
	}
	if x <= idle {
		return idle
	}
	return x
}
