package autopilot

import (
	"fmt"
	"math"
	"math/rand/v2"

	"skyloop/fields"
	"skyloop/geom"
	"skyloop/sim"
	"skyloop/vehicle"
	"skyloop/vehicle/multirotor"
)

// Kind is the scenario name of the multirotor vehicle kind.
const Kind = "multirotor"

// Config is a multirotor group's parameters in a scenario: the airframe
// (a preset with overrides) and the autopilot.
type Config struct {
	multirotor.Params `yaml:",inline"`
	Autopilot         Params `yaml:"autopilot" json:"autopilot"`
}

// Validate checks airframe and autopilot parameters.
func (c *Config) Validate() fields.Errors {
	bad := c.Params.Validate()
	for k, v := range c.Autopilot.Validate() {
		bad["autopilot."+k] = v
	}
	if c.Params.PhysicsPeriod > 0 && c.Autopilot.ControlPeriod > 0 && c.Autopilot.ControlPeriod != c.Params.PhysicsPeriod {
		bad["autopilot.control_period"] = fmt.Sprintf("the rate loop runs with the physics: must equal physics_period %v, got %v",
			c.Params.PhysicsPeriod, c.Autopilot.ControlPeriod)
	}
	return bad
}

// Shared is what every vehicle of a group derives once from its Config.
type Shared struct {
	Cfg      *Config
	Model    *multirotor.Model
	n        int
	alloc    [multirotor.MaxRotors][4]float64 // per-rotor share of [thrust, tx, ty, tz]
	tauRef   geom.Vec3                        // N m per unit of normalised torque
	fmax     float64                          // one rotor's maximum thrust, N
	thrHover float64
}

// NewShared prepares a group's shared model; cfg must be valid.
func NewShared(cfg *Config) *Shared {
	p := &cfg.Params
	sh := &Shared{Cfg: cfg, Model: multirotor.NewModel(p), n: len(p.Rotors), fmax: p.MaxRotorThrust()}
	sh.thrHover = cfg.Autopilot.ThrHover
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

// Multirotor is one multirotor: physics, sensors, estimator and autopilot.
// It implements vehicle.Vehicle.
type Multirotor struct {
	sh  *Shared
	ap  *Params
	S   multirotor.State
	rng *rand.Rand

	mode  vehicle.Mode
	home  geom.Vec3
	cmds  []vehicle.Command // commands queued for the next control step
	tick  int64
	dt    float64
	cmdW  [multirotor.MaxRotors]float64
	armed bool

	// estimator
	estPos, estVel geom.Vec3
	estAcc         geom.Vec3 // low-passed world acceleration from the IMU
	estAtt         geom.Quat
	gyro           geom.Vec3
	gpsEvery       int64
	baroEvery      int64

	// setpoints and controller state
	posSP     geom.Vec3
	yawSP     float64
	speedLim  float64
	velCmd    geom.Vec3 // offboard velocity setpoint
	velSP     geom.Vec3 // slewed velocity setpoint
	velInt    geom.Vec3
	prevVel   geom.Vec3
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

	// failsafe
	linkSeen  bool
	lastLink  sim.Time
	lastVelSP sim.Time
	fsStage   int
	fsSince   sim.Time
}

// New returns a multirotor at pos heading yaw, on the ground and disarmed
// when pos.Z <= 0, else hovering (armed, holding position).
func New(sh *Shared, pos geom.Vec3, yaw float64, rng *rand.Rand) *Multirotor {
	ap := &sh.Cfg.Autopilot
	v := &Multirotor{sh: sh, ap: ap, rng: rng, dt: ap.ControlPeriod.Seconds(), cmds: make([]vehicle.Command, 0, 4)}
	v.S = sh.Model.Init(pos, yaw)
	v.home = v.S.Pos
	v.estPos, v.estAtt = v.S.Pos, v.S.Att
	v.posSP, v.yawSP, v.attSP = v.S.Pos, yaw, v.S.Att
	v.gpsEvery = max(1, int64(ap.GPSPeriod/ap.ControlPeriod))
	v.baroEvery = max(1, int64(ap.BaroPeriod/ap.ControlPeriod))
	v.mode = vehicle.ModeDisarmed
	if !v.S.Landed {
		// Spawned in the air: start hovering at the hover speed.
		v.armed, v.mode, v.hasTarget = true, vehicle.ModeHold, true
		w := sh.Cfg.MaxRotorSpeed * math.Sqrt(sh.thrHover)
		for i := 0; i < sh.n; i++ {
			v.S.Rotor[i], v.cmdW[i] = w, w
		}
		v.thrust = sh.thrHover
	}
	return v
}

// Kind returns "multirotor".
func (v *Multirotor) Kind() string { return Kind }

// Timing returns the physics and control periods (the rate loop runs with
// the physics; slower loops are decimated inside Control).
func (v *Multirotor) Timing() vehicle.Timing {
	return vehicle.Timing{Physics: v.sh.Cfg.PhysicsPeriod, Control: v.ap.ControlPeriod}
}

// Radius returns the distance from the centre to the farthest rotor tip.
func (v *Multirotor) Radius() float64 {
	r := 0.0
	for _, ro := range v.sh.Cfg.Rotors {
		r = math.Max(r, math.Hypot(ro.X, ro.Y))
	}
	return r + v.sh.Cfg.PropRadius
}

// Params returns the vehicle's autopilot parameters.
func (v *Multirotor) Params() Params { return *v.ap }

// SetParams replaces this vehicle's autopilot parameters (the group's stay
// as they are), as a ground station's parameter writes do. Loop periods and
// sensor rates cannot change in flight. The new values apply from the next
// control step.
func (v *Multirotor) SetParams(p Params) error {
	if err := p.Validate().Err("autopilot parameter"); err != nil {
		return err
	}
	old := v.ap
	if p.ControlPeriod != old.ControlPeriod || p.AttEvery != old.AttEvery || p.PosEvery != old.PosEvery ||
		p.GPSPeriod != old.GPSPeriod || p.BaroPeriod != old.BaroPeriod {
		return fmt.Errorf("loop periods and sensor rates cannot change during a run")
	}
	if p.ThrHover != old.ThrHover {
		return fmt.Errorf("thr_hover cannot change during a run")
	}
	v.ap = &p
	return nil
}

// Mode returns the flight mode.
func (v *Multirotor) Mode() vehicle.Mode { return v.mode }

// Command queues c for the next control step; several commands in one tick
// apply in order.
func (v *Multirotor) Command(c vehicle.Command) { v.cmds = append(v.cmds, c) }

func (v *Multirotor) tel(pos, vel geom.Vec3, att geom.Quat, rate geom.Vec3) vehicle.Telemetry {
	roll, pitch, yaw := att.Euler()
	return vehicle.Telemetry{
		Pos: pos, Vel: vel, Yaw: yaw, YawRate: rate.Z, Roll: roll, Pitch: pitch,
		RollRate: rate.X, PitchRate: rate.Y, Throttle: v.thrust,
		Mode: v.mode, Armed: v.armed, Landed: v.S.Landed,
		Energy: v.S.Energy, Distance: v.S.Distance,
		BatteryV: v.S.Voltage, BatteryA: v.S.Current, BatteryRemaining: v.S.Remaining(&v.sh.Cfg.Params),
		PressurePa: multirotor.Pressure(v.S.Pos.Z),
		Target:     v.posSP, HasTarget: v.hasTarget,
	}
}

// Telemetry returns the true state.
func (v *Multirotor) Telemetry() vehicle.Telemetry {
	return v.tel(v.S.Pos, v.S.Vel, v.S.Att, v.S.Omega)
}

// Estimate returns the autopilot's estimate of its state.
func (v *Multirotor) Estimate() vehicle.Telemetry {
	return v.tel(v.estPos, v.estVel, v.estAtt, v.gyro)
}

// Step integrates the physics over one period.
func (v *Multirotor) Step(t sim.Time, ev *vehicle.Events) {
	v.sh.Model.Step(&v.S, &v.cmdW, v.rng)
}

func (v *Multirotor) setMode(t sim.Time, m vehicle.Mode, ev *vehicle.Events) {
	if m == v.mode {
		return
	}
	ev.Add(t, "mode", v.mode.String()+"->"+m.String())
	v.mode = m
	v.arrived = false
}

func (v *Multirotor) arm(t sim.Time, ev *vehicle.Events) {
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

func (v *Multirotor) disarm(t sim.Time, ev *vehicle.Events) {
	if v.armed {
		v.armed = false
		ev.Add(t, "disarm", "")
		v.setMode(t, vehicle.ModeDisarmed, ev)
		v.hasTarget = false
	}
}

// apply carries out one command.
func (v *Multirotor) apply(t sim.Time, c vehicle.Command, ev *vehicle.Events) {
	switch c.Kind {
	case vehicle.CmdHeartbeat:
		v.linkSeen, v.lastLink = true, t
		if v.fsStage > 0 {
			v.fsStage = 0
			ev.Add(t, "failsafe", "link restored")
		}
		return
	case vehicle.CmdArm:
		v.arm(t, ev)
	case vehicle.CmdDisarm:
		if v.S.Landed || !v.armed {
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
		v.posSP, v.yawSP, v.hasTarget = v.estPos, v.estAtt.Yaw(), true
		v.setMode(t, vehicle.ModeHold, ev)
	case vehicle.CmdGoto:
		v.arm(t, ev)
		v.posSP, v.speedLim, v.hasTarget = c.Pos, c.Speed, true
		v.posSP.Z = math.Max(v.posSP.Z, v.home.Z)
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
		v.posSP, v.hasTarget = geom.V(v.estPos.X, v.estPos.Y, v.home.Z), true
		v.landMaybe = false
		v.setMode(t, vehicle.ModeLand, ev)
	case vehicle.CmdRTL:
		if !v.armed {
			return
		}
		v.rtlStage = 0
		v.setMode(t, vehicle.ModeRTL, ev)
	}
	if v.fsStage > 0 && c.Kind != vehicle.CmdHeartbeat {
		// A fresh command from the operator ends the failsafe.
		v.fsStage = 0
	}
}

// Control runs one step of the flight stack: commands, sensors and
// estimator, failsafe and modes, then the position (every PosEvery steps),
// attitude (every AttEvery) and rate loops and the mixer.
func (v *Multirotor) Control(t sim.Time, ev *vehicle.Events) {
	for _, c := range v.cmds {
		v.apply(t, c, ev)
	}
	v.cmds = v.cmds[:0]
	v.estimate()
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
	v.mix()
	v.tick++
}

// estimate runs the sensors and the complementary filter: IMU prediction
// every step, GPS and barometer corrections at their rates. The attitude
// estimate is the truth with small noise (a well-tuned AHRS).
func (v *Multirotor) estimate() {
	ap, r := v.ap, v.rng
	n := func(s float64) float64 {
		if s == 0 {
			return 0
		}
		return s * r.NormFloat64()
	}
	v.gyro = v.S.Omega.Add(geom.V(n(ap.GyroNoise), n(ap.GyroNoise), n(ap.GyroNoise)))
	if ap.AttNoise > 0 {
		v.estAtt = v.S.Att.Mul(geom.FromEuler(n(ap.AttNoise), n(ap.AttNoise), n(ap.AttNoise)))
	} else {
		v.estAtt = v.S.Att
	}
	if v.S.Landed && !v.armed {
		// At rest on the ground the estimate settles on the truth (as an
		// EKF does before arming).
		v.estPos, v.estVel = v.S.Pos, geom.Vec3{}
		return
	}
	f := v.S.SpecificForce.Add(geom.V(n(ap.AccelNoise), n(ap.AccelNoise), n(ap.AccelNoise)))
	acc := v.estAtt.Rotate(f)
	acc.Z -= multirotor.Gravity
	v.estAcc = v.estAcc.Add(acc.Sub(v.estAcc).Scale(0.05)) // ~20 ms low-pass for the D term
	v.estVel = v.estVel.Add(acc.Scale(v.dt))
	v.estPos = v.estPos.Add(v.estVel.Scale(v.dt))
	if v.tick%v.gpsEvery == 0 {
		gp := v.S.Pos.Add(geom.V(n(ap.GPSNoise), n(ap.GPSNoise), n(ap.GPSNoiseZ)))
		gv := v.S.Vel.Add(geom.V(n(ap.GPSVelNoise), n(ap.GPSVelNoise), n(ap.GPSVelNoise)))
		v.estPos = v.estPos.Add(gp.Sub(v.estPos).Scale(ap.EstPosGain))
		v.estVel = v.estVel.Add(gv.Sub(v.estVel).Scale(ap.EstVelGain))
	}
	if v.tick%v.baroEvery == 0 {
		alt := v.S.Pos.Z + n(ap.BaroNoise)
		v.estPos.Z += (alt - v.estPos.Z) * 0.1
	}
}

// failsafe handles link loss: no ground-station heartbeat (once one was
// heard) or, in offboard velocity mode, no velocity setpoint for
// FailsafeTimeout -> hold; FailsafeDelay later -> land or return.
func (v *Multirotor) failsafe(t sim.Time, ev *vehicle.Events) {
	ap := v.ap
	if ap.FailsafeTimeout <= 0 || !v.armed || v.S.Landed && v.mode != vehicle.ModeVelocity {
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
	case v.fsStage == 0 && lost:
		v.fsStage, v.fsSince = 1, t
		ev.Add(t, "failsafe", why+": hold")
		v.posSP, v.yawSP, v.hasTarget = v.estPos, v.estAtt.Yaw(), true
		v.setMode(t, vehicle.ModeHold, ev)
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

// modes runs the mode logic at the position-loop rate: arrivals, RTL
// stages, the land detector and auto-disarm.
func (v *Multirotor) modes(t sim.Time, ev *vehicle.Events) {
	ap := v.ap
	switch v.mode {
	case vehicle.ModeTakeoff:
		if math.Abs(v.estPos.Z-v.posSP.Z) < 0.2 && math.Abs(v.estVel.Z) < 0.3 {
			ev.Add(t, "takeoff_done", fmt.Sprintf("%.2f", v.estPos.Z))
			v.setMode(t, vehicle.ModeHold, ev)
		}
	case vehicle.ModeGoto:
		if !v.arrived && v.estPos.Dist(v.posSP) < ap.Accept && v.estVel.Norm() < 0.5 {
			v.arrived = true
			ev.Add(t, "arrived", fmt.Sprintf("%.2f %.2f %.2f", v.posSP.X, v.posSP.Y, v.posSP.Z))
		}
	case vehicle.ModeRTL:
		alt := math.Max(v.home.Z+ap.RTLAlt, v.estPos.Z)
		switch v.rtlStage {
		case 0: // climb
			v.posSP = geom.V(v.estPos.X, v.estPos.Y, alt)
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
		near := v.estPos.Z-v.home.Z < 0.3 || v.S.Landed
		if near && math.Abs(v.estVel.Z) < 0.15 {
			if !v.landMaybe {
				v.landMaybe, v.landSince = true, t
			} else if t.Sub(v.landSince) >= 300*sim.Millisecond {
				ev.Add(t, "touchdown", fmt.Sprintf("%.2f %.2f", v.estPos.X, v.estPos.Y))
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
		if v.armed && v.S.Landed && delay > 0 && t.Sub(v.idleSince) >= delay {
			v.disarm(t, ev)
		}
	}
}

// positionLoop: position P -> velocity setpoint (braking-aware, limited,
// slewed) -> velocity PID -> acceleration -> thrust vector and attitude
// setpoint.
func (v *Multirotor) positionLoop(dt float64) {
	ap := v.ap
	if !v.armed || v.mode == vehicle.ModeIdle || v.mode == vehicle.ModeDisarmed {
		v.velSP, v.velInt = geom.Vec3{}, geom.Vec3{}
		v.thrust = 0
		v.attSP = geom.FromEuler(0, 0, v.estAtt.Yaw())
		return
	}
	up, down := ap.ZVelMaxUp, ap.ZVelMaxDown
	hmax := math.Min(ap.XYCruise, ap.XYVelMax)
	if v.speedLim > 0 {
		hmax = math.Min(v.speedLim, ap.XYVelMax)
	}
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
		if d > 1e-9 {
			s := math.Min(ap.XYP*d, math.Sqrt(2*0.8*ap.AccHor*d))
			target.X, target.Y = e.X/d*s, e.Y/d*s
		}
		dz := math.Abs(e.Z)
		sz := math.Min(ap.ZP*dz, math.Sqrt(2*0.8*ap.AccDown*dz))
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
	target.Z = math.Max(-down, math.Min(up, target.Z))
	// Slew the setpoint with the acceleration limits.
	dv := target.Sub(v.velSP)
	dxy := math.Sqrt(dv.X*dv.X + dv.Y*dv.Y)
	if lim := ap.AccHor * dt; dxy > lim {
		dv.X, dv.Y = dv.X*lim/dxy, dv.Y*lim/dxy
	}
	dv.Z = math.Max(-ap.AccDown*dt, math.Min(ap.AccUp*dt, dv.Z))
	v.velSP = v.velSP.Add(dv)
	accFF := dv.Scale(1 / dt) // the setpoint's own acceleration, fed forward

	// Velocity PID, derivative on the measured acceleration.
	ev := v.velSP.Sub(v.estVel)
	dmeas := v.estAcc
	if !v.S.Landed {
		v.velInt = v.velInt.Add(ev.Scale(dt))
	}
	// Anti-windup: the integral never asks for more than the tilt or the
	// thrust range could give.
	ilimXY := multirotor.Gravity * math.Tan(ap.TiltMax*math.Pi/180) / math.Max(ap.XYVelI, 1e-9)
	ilimZ := multirotor.Gravity / math.Max(ap.ZVelI, 1e-9)
	v.velInt = geom.V(clamp(v.velInt.X, ilimXY), clamp(v.velInt.Y, ilimXY), clamp(v.velInt.Z, ilimZ))
	acc := geom.V(
		accFF.X+ap.XYVelP*ev.X+ap.XYVelI*v.velInt.X-ap.XYVelD*dmeas.X,
		accFF.Y+ap.XYVelP*ev.Y+ap.XYVelI*v.velInt.Y-ap.XYVelD*dmeas.Y,
		accFF.Z+ap.ZVelP*ev.Z+ap.ZVelI*v.velInt.Z-ap.ZVelD*dmeas.Z,
	)
	// Acceleration -> normalised thrust vector, tilt-limited.
	k := v.sh.thrHover / multirotor.Gravity
	thr := geom.V(acc.X*k, acc.Y*k, (acc.Z+multirotor.Gravity)*k)
	thr.Z = math.Max(thr.Z, ap.ThrMin)
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
	v.thrust = math.Max(ap.ThrMin, thr.Dot(v.estAtt.AxisZ()))
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
func (v *Multirotor) attitudeLoop() {
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
func (v *Multirotor) rateLoop() {
	ap := v.ap
	e := v.rateSP.Sub(v.gyro)
	dg := v.gyro.Sub(v.prevGyro).Scale(1 / v.dt)
	v.prevGyro = v.gyro
	if v.armed && !v.S.Landed {
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
func (v *Multirotor) mix() {
	sh := v.sh
	n := sh.n
	if !v.armed {
		for i := 0; i < n; i++ {
			v.cmdW[i] = 0
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
		lo, hi = math.Min(lo, rp[i]), math.Max(hi, rp[i])
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
			k := math.Max(0, (c-idle)/-lo)
			k = math.Min(1, k)
			for i := 0; i < n; i++ {
				rp[i] *= k
			}
		}
		c = math.Max(c, idle)
	}
	// Yaw: the largest share that keeps every rotor in range.
	k := 1.0
	for i := 0; i < n; i++ {
		x := c + rp[i]
		if y := yw[i]; y > 0 && x+y > 1 {
			k = math.Min(k, (1-x)/y)
		} else if y < 0 && x+y < idle {
			k = math.Min(k, (x-idle)/-y)
		}
	}
	k = math.Max(0, k)
	wmax := sh.Cfg.MaxRotorSpeed
	for i := 0; i < n; i++ {
		x := math.Max(idle, math.Min(1, c+rp[i]+k*yw[i]))
		v.cmdW[i] = wmax * math.Sqrt(x)
	}
}

func clamp(x, lim float64) float64 { return math.Max(-lim, math.Min(lim, x)) }

// PresetConfig returns an airframe preset with its autopilot tuning: PX4's
// defaults, adjusted where the airframe needs it (each adjustment says why).
func PresetConfig(name string) (Config, bool) {
	p, ok := multirotor.Preset(name)
	if !ok {
		return Config{}, false
	}
	c := Config{Params: p, Autopilot: DefaultParams()}
	if name == "crazyflie" {
		// A 27 g quad's rotor drag is about a fifth of its weight at 1 m/s
		// (gym-pybullet-drones' coefficients): a stronger vertical integral
		// cancels it during climbs (takeoff overshoot 2.8% instead of 4.4%,
		// settling 4.3 s instead of 8 s).
		c.Autopilot.ZVelI = 4
		// The same drag makes horizontal flight drag-limited: a stiffer
		// velocity loop and a 3 m/s cruise keep a 20 m goto's overshoot
		// under 1 m and its final error at centimetres (PX4's gains give
		// 1.6 m and 0.3 m).
		c.Autopilot.XYVelP, c.Autopilot.XYVelI, c.Autopilot.XYCruise = 3, 1, 3
	}
	return c, true
}
