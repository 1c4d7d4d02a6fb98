package mavlink

import (
	"fmt"
	"math"
	"sort"

	"github.com/bluenviron/gomavlib/v3/pkg/dialects/common"

	"skyloop/autopilot/px4like"
	"skyloop/sim"
)

// Endpoint settings that PX4 keeps as parameters; they live in the
// endpoint (mission logic and data-link failsafe), not in the autopilot.
type endpointParams struct {
	AccRad     float64      // NAV_ACC_RAD: waypoint acceptance radius, m
	AltRad     float64      // NAV_MC_ALT_RAD: vertical acceptance, m
	TakeoffAlt float64      // MIS_TAKEOFF_ALT: default takeoff altitude, m
	DLLossT    sim.Duration // COM_DL_LOSS_T: data-link loss time
	DLLAct     int32        // NAV_DLL_ACT: 0 off, 1 hold, 2 return, 3 land
}

// defaultEndpointParams returns PX4's defaults.
func defaultEndpointParams() endpointParams {
	return endpointParams{AccRad: 2, AltRad: 0.8, TakeoffAlt: 2.5, DLLossT: 10 * sim.Second}
}

// param is one entry of the parameter protocol: a PX4 name bound to an
// autopilot field or an endpoint setting.
type param struct {
	name string
	typ  common.MAV_PARAM_TYPE
	// ap is set for autopilot parameters, ep for endpoint ones.
	ap  func(p *px4like.Params) *float64
	apd func(p *px4like.Params) *sim.Duration
	ep  func(e *endpointParams) *float64
	epd func(e *endpointParams) *sim.Duration
	epi func(e *endpointParams) *int32
	min float64 // lowest accepted value
	max float64 // highest accepted value
}

func f(name string, get func(p *px4like.Params) *float64, lo, hi float64) param {
	return param{name: name, typ: common.MAV_PARAM_TYPE_REAL32, ap: get, min: lo, max: hi}
}

// paramTable lists the parameters, sorted by name as PX4 sends them.
var paramTable = func() []param {
	big := math.Inf(1)
	t := []param{
		f("MPC_XY_VEL_MAX", func(p *px4like.Params) *float64 { return &p.XYVelMax }, 0, 20),
		f("MPC_XY_CRUISE", func(p *px4like.Params) *float64 { return &p.XYCruise }, 0, 20),
		f("MPC_Z_VEL_MAX_UP", func(p *px4like.Params) *float64 { return &p.ZVelMaxUp }, 0.5, 8),
		f("MPC_Z_VEL_MAX_DN", func(p *px4like.Params) *float64 { return &p.ZVelMaxDown }, 0.5, 4),
		f("MPC_TKO_SPEED", func(p *px4like.Params) *float64 { return &p.TakeoffSpd }, 1, 5),
		f("MPC_LAND_SPEED", func(p *px4like.Params) *float64 { return &p.LandSpeed }, 0.6, 3),
		f("MPC_ACC_HOR", func(p *px4like.Params) *float64 { return &p.AccHor }, 2, 15),
		f("MPC_ACC_UP_MAX", func(p *px4like.Params) *float64 { return &p.AccUp }, 2, 15),
		f("MPC_ACC_DOWN_MAX", func(p *px4like.Params) *float64 { return &p.AccDown }, 2, 15),
		f("MPC_TILTMAX_AIR", func(p *px4like.Params) *float64 { return &p.TiltMax }, 20, 89),
		f("MPC_THR_MIN", func(p *px4like.Params) *float64 { return &p.ThrMin }, 0.05, 0.5),
		f("MPC_XY_P", func(p *px4like.Params) *float64 { return &p.XYP }, 0, 2),
		f("MPC_Z_P", func(p *px4like.Params) *float64 { return &p.ZP }, 0.1, 1.5),
		f("MPC_XY_VEL_P_ACC", func(p *px4like.Params) *float64 { return &p.XYVelP }, 1.2, 5),
		f("MPC_XY_VEL_I_ACC", func(p *px4like.Params) *float64 { return &p.XYVelI }, 0, 60),
		f("MPC_XY_VEL_D_ACC", func(p *px4like.Params) *float64 { return &p.XYVelD }, 0.1, 2),
		f("MPC_Z_VEL_P_ACC", func(p *px4like.Params) *float64 { return &p.ZVelP }, 2, 15),
		f("MPC_Z_VEL_I_ACC", func(p *px4like.Params) *float64 { return &p.ZVelI }, 0.2, 3),
		f("MPC_Z_VEL_D_ACC", func(p *px4like.Params) *float64 { return &p.ZVelD }, 0, 2),
		f("MC_ROLL_P", func(p *px4like.Params) *float64 { return &p.RollP }, 0, 12),
		f("MC_PITCH_P", func(p *px4like.Params) *float64 { return &p.PitchP }, 0, 12),
		f("MC_YAW_P", func(p *px4like.Params) *float64 { return &p.YawP }, 0, 5),
		f("MC_ROLLRATE_P", func(p *px4like.Params) *float64 { return &p.RollRateP }, 0.01, 0.5),
		f("MC_ROLLRATE_I", func(p *px4like.Params) *float64 { return &p.RollRateI }, 0, big),
		f("MC_ROLLRATE_D", func(p *px4like.Params) *float64 { return &p.RollRateD }, 0, 0.01),
		f("MC_PITCHRATE_P", func(p *px4like.Params) *float64 { return &p.PitchRateP }, 0.01, 0.6),
		f("MC_PITCHRATE_I", func(p *px4like.Params) *float64 { return &p.PitchRateI }, 0, big),
		f("MC_PITCHRATE_D", func(p *px4like.Params) *float64 { return &p.PitchRateD }, 0, 0.01),
		f("MC_YAWRATE_P", func(p *px4like.Params) *float64 { return &p.YawRateP }, 0, 0.6),
		f("MC_YAWRATE_I", func(p *px4like.Params) *float64 { return &p.YawRateI }, 0, big),
		f("MC_YAWRATE_D", func(p *px4like.Params) *float64 { return &p.YawRateD }, 0, big),
		f("MC_ROLLRATE_MAX", func(p *px4like.Params) *float64 { return &p.RollRateMax }, 0, 1800),
		f("MC_PITCHRATE_MAX", func(p *px4like.Params) *float64 { return &p.PitchRateMax }, 0, 1800),
		f("MC_YAWRATE_MAX", func(p *px4like.Params) *float64 { return &p.YawRateMax }, 0, 1800),
		f("RTL_RETURN_ALT", func(p *px4like.Params) *float64 { return &p.RTLAlt }, 0, 150),
		{name: "COM_OF_LOSS_T", typ: common.MAV_PARAM_TYPE_REAL32, apd: func(p *px4like.Params) *sim.Duration { return &p.FailsafeTimeout }, min: 0, max: 60},
		{name: "COM_DISARM_LAND", typ: common.MAV_PARAM_TYPE_REAL32, apd: func(p *px4like.Params) *sim.Duration { return &p.DisarmDelay }, min: 0, max: 20},
		{name: "COM_DISARM_PRFLT", typ: common.MAV_PARAM_TYPE_REAL32, apd: func(p *px4like.Params) *sim.Duration { return &p.DisarmPreflight }, min: 0, max: 20},
		{name: "NAV_ACC_RAD", typ: common.MAV_PARAM_TYPE_REAL32, ep: func(e *endpointParams) *float64 { return &e.AccRad }, min: 0.05, max: 200},
		{name: "NAV_MC_ALT_RAD", typ: common.MAV_PARAM_TYPE_REAL32, ep: func(e *endpointParams) *float64 { return &e.AltRad }, min: 0.05, max: 200},
		{name: "MIS_TAKEOFF_ALT", typ: common.MAV_PARAM_TYPE_REAL32, ep: func(e *endpointParams) *float64 { return &e.TakeoffAlt }, min: 0, max: 1000},
		{name: "COM_DL_LOSS_T", typ: common.MAV_PARAM_TYPE_REAL32, epd: func(e *endpointParams) *sim.Duration { return &e.DLLossT }, min: 5, max: 300},
		{name: "NAV_DLL_ACT", typ: common.MAV_PARAM_TYPE_INT32, epi: func(e *endpointParams) *int32 { return &e.DLLAct }, min: 0, max: 3},
	}
	sort.Slice(t, func(i, j int) bool { return t[i].name < t[j].name })
	return t
}()

// paramIndex returns the index of the named parameter, or -1.
func paramIndex(name string) int {
	i := sort.Search(len(paramTable), func(i int) bool { return paramTable[i].name >= name })
	if i < len(paramTable) && paramTable[i].name == name {
		return i
	}
	return -1
}

// available reports whether parameter p exists for a vehicle (autopilot
// parameters need a tunable autopilot).
func (p *param) available(tunable bool) bool {
	return tunable || p.ep != nil || p.epd != nil || p.epi != nil
}

// get returns the parameter's value.
func (p *param) get(ap *px4like.Params, ep *endpointParams) float64 {
	switch {
	case p.ap != nil:
		return *p.ap(ap)
	case p.apd != nil:
		return p.apd(ap).Seconds()
	case p.ep != nil:
		return *p.ep(ep)
	case p.epd != nil:
		return p.epd(ep).Seconds()
	default:
		return float64(*p.epi(ep))
	}
}

// set stores v, checking its range.
func (p *param) set(ap *px4like.Params, ep *endpointParams, v float64) error {
	if math.IsNaN(v) || v < p.min || v > p.max {
		return fmt.Errorf("%s must be in [%g, %g], got %g", p.name, p.min, p.max, v)
	}
	switch {
	case p.ap != nil:
		*p.ap(ap) = v
	case p.apd != nil:
		*p.apd(ap) = sim.Duration(math.Round(v * 1e9))
	case p.ep != nil:
		*p.ep(ep) = v
	case p.epd != nil:
		*p.epd(ep) = sim.Duration(math.Round(v * 1e9))
	default:
		if v != math.Trunc(v) {
			return fmt.Errorf("%s is an integer, got %g", p.name, v)
		}
		*p.epi(ep) = int32(v)
	}
	return nil
}

// wire encodes a value for PARAM_VALUE: floats as they are, integers
// byte-wise in the float field (PX4's PARAM_ENCODE_BYTEWISE).
func (p *param) wire(v float64) float32 {
	if p.typ == common.MAV_PARAM_TYPE_INT32 {
		return math.Float32frombits(uint32(int32(v)))
	}
	return float32(v)
}

// unwire decodes a PARAM_SET value of type typ.
func unwire(typ common.MAV_PARAM_TYPE, v float32) float64 {
	if typ == common.MAV_PARAM_TYPE_INT32 {
		return float64(int32(math.Float32bits(v)))
	}
	return float64(v)
}
