// Package px4like is a PX4-like flight controller for the multirotor
// physics of package vehicle/multirotor: a complementary-filter position
// estimator fed by the IMU, AHRS, GPS and barometer readings, the PX4
// control cascade (position P -> velocity PID -> acceleration to thrust
// vector and attitude -> quaternion attitude P -> body-rate PID -> mixer
// with saturation handling, out as normalised motor commands), flight
// modes, the link-loss failsafe, and the land detector. It sees the vehicle
// only through vehicle.Sensors and vehicle.Actuators, as the real PX4 does
// through its simulator interface.
//
// Gains and limits default to PX4's multicopter defaults (the parameter
// names are given with each field); the rate controller's normalised torque
// is mapped to newtons-metres with the airframe's own torque authority, so
// the same gains fly the Iris and the Crazyflie presets.
package px4like

import (
	"fmt"
	"math"

	"skyloop/fields"
	"skyloop/sim"
)

// Params configure the controller. The instruments' rates and noise,
// which scenarios set in the same `autopilot:` block, are
// multirotor.SensorParams.
type Params struct {
	// Position and velocity control (mc_pos_control).
	XYP         float64 `yaml:"xy_p" json:"xy_p"`                   // MPC_XY_P
	ZP          float64 `yaml:"z_p" json:"z_p"`                     // MPC_Z_P
	XYVelP      float64 `yaml:"xy_vel_p" json:"xy_vel_p"`           // MPC_XY_VEL_P_ACC
	XYVelI      float64 `yaml:"xy_vel_i" json:"xy_vel_i"`           // MPC_XY_VEL_I_ACC
	XYVelD      float64 `yaml:"xy_vel_d" json:"xy_vel_d"`           // MPC_XY_VEL_D_ACC
	ZVelP       float64 `yaml:"z_vel_p" json:"z_vel_p"`             // MPC_Z_VEL_P_ACC
	ZVelI       float64 `yaml:"z_vel_i" json:"z_vel_i"`             // MPC_Z_VEL_I_ACC
	ZVelD       float64 `yaml:"z_vel_d" json:"z_vel_d"`             // MPC_Z_VEL_D_ACC
	XYVelMax    float64 `yaml:"xy_vel_max" json:"xy_vel_max"`       // MPC_XY_VEL_MAX, m/s
	XYCruise    float64 `yaml:"xy_cruise" json:"xy_cruise"`         // MPC_XY_CRUISE, m/s (goto speed)
	ZVelMaxUp   float64 `yaml:"z_vel_max_up" json:"z_vel_max_up"`   // MPC_Z_VEL_MAX_UP, m/s
	ZVelMaxDown float64 `yaml:"z_vel_max_dn" json:"z_vel_max_dn"`   // MPC_Z_VEL_MAX_DN, m/s
	AccHor      float64 `yaml:"acc_hor" json:"acc_hor"`             // MPC_ACC_HOR, m/s^2 (setpoint slew)
	AccUp       float64 `yaml:"acc_up" json:"acc_up"`               // MPC_ACC_UP_MAX, m/s^2
	AccDown     float64 `yaml:"acc_down" json:"acc_down"`           // MPC_ACC_DOWN_MAX, m/s^2
	TiltMax     float64 `yaml:"tilt_max" json:"tilt_max"`           // MPC_TILTMAX_AIR, deg
	ThrHover    float64 `yaml:"thr_hover" json:"thr_hover"`         // MPC_THR_HOVER; 0 = from the airframe
	ThrMin      float64 `yaml:"thr_min" json:"thr_min"`             // MPC_THR_MIN
	TakeoffSpd  float64 `yaml:"takeoff_speed" json:"takeoff_speed"` // MPC_TKO_SPEED, m/s
	LandSpeed   float64 `yaml:"land_speed" json:"land_speed"`       // MPC_LAND_SPEED, m/s
	RTLAlt      float64 `yaml:"rtl_alt" json:"rtl_alt"`             // RTL_RETURN_ALT, m above home
	Accept      float64 `yaml:"accept" json:"accept"`               // arrival radius for goto events, m
	// WPNav is how a goto flies to its target: px4 (the default, also
	// written ""): the position P law capped by the speed that still
	// stops at the target, the setpoint slewed at acc_hor; arducopter:
	// ArduCopter 3.5's straight waypoint segment (AC_WPNav, which the
	// UB-ANC experiments flew): an intermediate target runs
	// along the track, accelerating and slowing down at twice wp_accel
	// and held within the position controller's leash, and the vehicle
	// follows it with the square-root position controller at wp_accel
	// (AC_PosControl). docs/calibration.md compares the turns.
	WPNav string `yaml:"wp_nav" json:"wp_nav,omitempty"`
	// WPAccel is the arducopter segment's acceleration, WPNAV_ACCEL in
	// m/s^2; 0 is Copter 3.5's default, 1 m/s^2 (100 cm/s^2).
	WPAccel float64 `yaml:"wp_accel" json:"wp_accel,omitempty"`

	// Attitude and rate control (mc_att_control, mc_rate_control).
	RollP        float64 `yaml:"roll_p" json:"roll_p"`               // MC_ROLL_P
	PitchP       float64 `yaml:"pitch_p" json:"pitch_p"`             // MC_PITCH_P
	YawP         float64 `yaml:"yaw_p" json:"yaw_p"`                 // MC_YAW_P
	RollRateP    float64 `yaml:"rollrate_p" json:"rollrate_p"`       // MC_ROLLRATE_P
	RollRateI    float64 `yaml:"rollrate_i" json:"rollrate_i"`       // MC_ROLLRATE_I
	RollRateD    float64 `yaml:"rollrate_d" json:"rollrate_d"`       // MC_ROLLRATE_D
	PitchRateP   float64 `yaml:"pitchrate_p" json:"pitchrate_p"`     // MC_PITCHRATE_P
	PitchRateI   float64 `yaml:"pitchrate_i" json:"pitchrate_i"`     // MC_PITCHRATE_I
	PitchRateD   float64 `yaml:"pitchrate_d" json:"pitchrate_d"`     // MC_PITCHRATE_D
	YawRateP     float64 `yaml:"yawrate_p" json:"yawrate_p"`         // MC_YAWRATE_P
	YawRateI     float64 `yaml:"yawrate_i" json:"yawrate_i"`         // MC_YAWRATE_I
	YawRateD     float64 `yaml:"yawrate_d" json:"yawrate_d"`         // MC_YAWRATE_D
	RateIntLim   float64 `yaml:"rate_int_lim" json:"rate_int_lim"`   // MC_RR_INT_LIM
	RollRateMax  float64 `yaml:"rollrate_max" json:"rollrate_max"`   // MC_ROLLRATE_MAX, deg/s
	PitchRateMax float64 `yaml:"pitchrate_max" json:"pitchrate_max"` // MC_PITCHRATE_MAX, deg/s
	YawRateMax   float64 `yaml:"yawrate_max" json:"yawrate_max"`     // MC_YAWRATE_MAX, deg/s
	IdleSpeed    float64 `yaml:"idle_speed" json:"idle_speed"`       // armed idle rotor speed, fraction of max

	// Failsafe: no offboard setpoint or ground-station heartbeat for
	// Timeout (once a link existed) -> hold at the braking point; still
	// none Delay later -> Action (land or rtl). 0 disables it.
	FailsafeTimeout sim.Duration `yaml:"failsafe_timeout" json:"failsafe_timeout"` // COM_OF_LOSS_T
	FailsafeDelay   sim.Duration `yaml:"failsafe_delay" json:"failsafe_delay"`
	FailsafeAction  string       `yaml:"failsafe_action" json:"failsafe_action"`
	// FailsafeGoto is what a link loss does to a goto in progress: hold
	// (PX4: the failsafe interrupts it) or finish (fly on to the target,
	// whose path was planned clear of the other vehicles, and start the
	// failsafe there, like PX4's COM_DLL_EXCEPT for missions).
	FailsafeGoto string       `yaml:"failsafe_goto" json:"failsafe_goto"`
	DisarmDelay  sim.Duration `yaml:"disarm_delay" json:"disarm_delay"` // COM_DISARM_LAND
	// DisarmPreflight disarms a vehicle armed on the ground that does not
	// take off within this time; 0 never does (COM_DISARM_PRFLT).
	DisarmPreflight sim.Duration `yaml:"disarm_preflight" json:"disarm_preflight"`

	// Complementary-filter gains (per GPS update).
	EstPosGain float64 `yaml:"est_pos_gain" json:"est_pos_gain"`
	EstVelGain float64 `yaml:"est_vel_gain" json:"est_vel_gain"`

	// Loop rates, as multiples of the control period (1 ms by default).
	ControlPeriod sim.Duration `yaml:"control_period" json:"control_period"` // rate loop
	AttEvery      int          `yaml:"att_every" json:"att_every"`           // attitude loop: every n rate steps
	PosEvery      int          `yaml:"pos_every" json:"pos_every"`           // position loop: every n rate steps
}

// DefaultParams returns PX4's multicopter defaults where PX4 has one
// (the values of PX4's parameter files: MPC_*, MC_*, MIS_*) and documented
// choices elsewhere.
func DefaultParams() Params {
	return Params{
		XYP: 0.95, ZP: 1.0,
		XYVelP: 1.8, XYVelI: 0.4, XYVelD: 0.2,
		ZVelP: 4.0, ZVelI: 2.0, ZVelD: 0,
		XYVelMax: 12, XYCruise: 5, ZVelMaxUp: 3, ZVelMaxDown: 1.5,
		AccHor: 3, AccUp: 4, AccDown: 3,
		TiltMax: 45, ThrHover: 0, ThrMin: 0.12,
		TakeoffSpd: 1.5, LandSpeed: 0.7, RTLAlt: 10, Accept: 0.3,
		RollP: 4, PitchP: 4, YawP: 2.8,
		RollRateP: 0.15, RollRateI: 0.2, RollRateD: 0.003,
		PitchRateP: 0.15, PitchRateI: 0.2, PitchRateD: 0.003,
		YawRateP: 0.2, YawRateI: 0.1, YawRateD: 0,
		RateIntLim:  0.3,
		RollRateMax: 220, PitchRateMax: 220, YawRateMax: 200,
		IdleSpeed:       0.15,
		FailsafeTimeout: sim.Second, FailsafeDelay: 5 * sim.Second, FailsafeAction: "land", FailsafeGoto: "hold",
		DisarmDelay: 2 * sim.Second, DisarmPreflight: 10 * sim.Second,
		EstPosGain: 0.3, EstVelGain: 0.5,
		ControlPeriod: 2 * sim.Millisecond, AttEvery: 2, PosEvery: 10,
	}
}

// Validate checks the parameters, returning field -> message.
func (p *Params) Validate() fields.Errors {
	bad := fields.Errors{}
	nonneg := func(name string, v float64) {
		if !(v >= 0) || math.IsInf(v, 0) {
			bad[name] = fmt.Sprintf("must be >= 0, got %v", v)
		}
	}
	pos := func(name string, v float64) {
		if !(v > 0) || math.IsInf(v, 0) {
			bad[name] = fmt.Sprintf("must be > 0, got %v", v)
		}
	}
	for name, v := range map[string]float64{"xy_p": p.XYP, "z_p": p.ZP, "xy_vel_p": p.XYVelP, "z_vel_p": p.ZVelP,
		"xy_vel_max": p.XYVelMax, "xy_cruise": p.XYCruise, "z_vel_max_up": p.ZVelMaxUp, "z_vel_max_dn": p.ZVelMaxDown,
		"acc_hor": p.AccHor, "acc_up": p.AccUp, "acc_down": p.AccDown, "takeoff_speed": p.TakeoffSpd, "land_speed": p.LandSpeed,
		"accept": p.Accept, "roll_p": p.RollP, "pitch_p": p.PitchP, "yaw_p": p.YawP, "rollrate_p": p.RollRateP,
		"pitchrate_p": p.PitchRateP, "yawrate_p": p.YawRateP, "rollrate_max": p.RollRateMax, "pitchrate_max": p.PitchRateMax,
		"yawrate_max": p.YawRateMax, "est_pos_gain": p.EstPosGain, "est_vel_gain": p.EstVelGain} {
		pos(name, v)
	}
	for name, v := range map[string]float64{"xy_vel_i": p.XYVelI, "xy_vel_d": p.XYVelD, "z_vel_i": p.ZVelI, "z_vel_d": p.ZVelD,
		"rollrate_i": p.RollRateI, "rollrate_d": p.RollRateD, "pitchrate_i": p.PitchRateI, "pitchrate_d": p.PitchRateD,
		"yawrate_i": p.YawRateI, "yawrate_d": p.YawRateD, "rate_int_lim": p.RateIntLim, "rtl_alt": p.RTLAlt} {
		nonneg(name, v)
	}
	if !(p.TiltMax > 0 && p.TiltMax < 90) {
		bad["tilt_max"] = fmt.Sprintf("must be in (0, 90) degrees, got %v", p.TiltMax)
	}
	if !(p.ThrHover >= 0 && p.ThrHover < 1) {
		bad["thr_hover"] = fmt.Sprintf("must be in [0, 1) (0 = from the airframe), got %v", p.ThrHover)
	}
	if !(p.ThrMin >= 0 && p.ThrMin < 0.5) {
		bad["thr_min"] = fmt.Sprintf("must be in [0, 0.5), got %v", p.ThrMin)
	}
	if !(p.IdleSpeed >= 0 && p.IdleSpeed < 1) {
		bad["idle_speed"] = fmt.Sprintf("must be in [0, 1), got %v", p.IdleSpeed)
	}
	if p.EstPosGain > 1 || p.EstVelGain > 2 {
		bad["est_pos_gain"] = "estimator gains must stay below 1 (position) and 2 (velocity)"
	}
	if p.FailsafeTimeout < 0 || p.FailsafeDelay < 0 || p.DisarmDelay < 0 || p.DisarmPreflight < 0 {
		bad["failsafe_timeout"] = "failsafe_timeout, failsafe_delay, disarm_delay and disarm_preflight must be >= 0"
	}
	switch p.WPNav {
	case "", "px4", "arducopter":
	default:
		bad["wp_nav"] = fmt.Sprintf("must be px4 or arducopter, got %q", p.WPNav)
	}
	if !(p.WPAccel == 0 || p.WPAccel >= 0.5 && p.WPAccel <= 5) {
		bad["wp_accel"] = fmt.Sprintf("must be 0 (the default, 1 m/s^2) or 0.5..5 m/s^2 (WPNAV_ACCEL's range), got %v", p.WPAccel)
	}
	if p.FailsafeAction != "land" && p.FailsafeAction != "rtl" {
		bad["failsafe_action"] = fmt.Sprintf("must be land or rtl, got %q", p.FailsafeAction)
	}
	if p.FailsafeGoto != "hold" && p.FailsafeGoto != "finish" {
		bad["failsafe_goto"] = fmt.Sprintf("must be hold or finish, got %q", p.FailsafeGoto)
	}
	if p.ControlPeriod <= 0 {
		bad["control_period"] = fmt.Sprintf("must be positive, got %v", p.ControlPeriod)
	}
	if p.AttEvery < 1 || p.PosEvery < 1 {
		bad["att_every"] = "att_every and pos_every must be >= 1"
	}
	return bad
}
