package mavlink

import (
	"fmt"

	"github.com/bluenviron/gomavlib/v3/pkg/dialects/common"
)

// PX4 main modes (custom_mode bits 16-23) and auto sub-modes (bits
// 24-31), from PX4's px4_custom_mode.h.
const (
	MainManual     = 1
	MainAltctl     = 2
	MainPosctl     = 3
	MainAuto       = 4
	MainAcro       = 5
	MainOffboard   = 6
	MainStabilized = 7

	SubReady    = 1
	SubTakeoff  = 2
	SubLoiter   = 3
	SubMission  = 4
	SubRTL      = 5
	SubLand     = 6
	SubFollow   = 8
	SubPrecland = 9
)

// FlightMode is a PX4 flight mode: a main mode and, for auto, a sub-mode.
type FlightMode struct {
	Main, Sub uint8
}

// Flight modes the simulated vehicle reports.
var (
	ModeHold     = FlightMode{MainAuto, SubLoiter}
	ModeTakeoff  = FlightMode{MainAuto, SubTakeoff}
	ModeMission  = FlightMode{MainAuto, SubMission}
	ModeRTL      = FlightMode{MainAuto, SubRTL}
	ModeLand     = FlightMode{MainAuto, SubLand}
	ModeOffboard = FlightMode{MainOffboard, 0}
	ModePosctl   = FlightMode{MainPosctl, 0}
	ModeAltctl   = FlightMode{MainAltctl, 0}
)

// Custom returns the heartbeat's custom_mode value.
func (m FlightMode) Custom() uint32 { return uint32(m.Main)<<16 | uint32(m.Sub)<<24 }

// ModeFromCustom decodes a custom_mode value.
func ModeFromCustom(c uint32) FlightMode {
	return FlightMode{Main: uint8(c >> 16), Sub: uint8(c >> 24)}
}

var mainNames = map[uint8]string{MainManual: "MANUAL", MainAltctl: "ALTCTL", MainPosctl: "POSCTL", MainAuto: "AUTO",
	MainAcro: "ACRO", MainOffboard: "OFFBOARD", MainStabilized: "STABILIZED"}
var subNames = map[uint8]string{SubReady: "READY", SubTakeoff: "TAKEOFF", SubLoiter: "LOITER", SubMission: "MISSION",
	SubRTL: "RTL", SubLand: "LAND", SubFollow: "FOLLOW_TARGET", SubPrecland: "PRECLAND"}

// String returns PX4's name for the mode, e.g. AUTO.LOITER.
func (m FlightMode) String() string {
	main, ok := mainNames[m.Main]
	if !ok {
		return fmt.Sprintf("mode(%d,%d)", m.Main, m.Sub)
	}
	if m.Main != MainAuto {
		return main
	}
	if sub, ok := subNames[m.Sub]; ok {
		return main + "." + sub
	}
	return fmt.Sprintf("AUTO.%d", m.Sub)
}

// baseMode returns the heartbeat's base_mode flags for the mode.
func (m FlightMode) baseMode(armed bool) common.MAV_MODE_FLAG {
	f := common.MAV_MODE_FLAG_CUSTOM_MODE_ENABLED | common.MAV_MODE_FLAG_STABILIZE_ENABLED
	switch m.Main {
	case MainAuto:
		f |= common.MAV_MODE_FLAG_AUTO_ENABLED | common.MAV_MODE_FLAG_GUIDED_ENABLED
	case MainOffboard:
		f |= common.MAV_MODE_FLAG_GUIDED_ENABLED
	case MainPosctl:
		f |= common.MAV_MODE_FLAG_MANUAL_INPUT_ENABLED | common.MAV_MODE_FLAG_GUIDED_ENABLED
	case MainAltctl:
		f |= common.MAV_MODE_FLAG_MANUAL_INPUT_ENABLED
	}
	if armed {
		f |= common.MAV_MODE_FLAG_SAFETY_ARMED
	}
	return f
}

// copterModes are ArduCopter's mode numbers (the heartbeat's custom_mode)
// and names, from ArduCopter/mode.h (enum class Mode::Number).
var copterModes = map[uint32]string{0: "STABILIZE", 1: "ACRO", 2: "ALT_HOLD", 3: "AUTO", 4: "GUIDED", 5: "LOITER",
	6: "RTL", 7: "CIRCLE", 9: "LAND", 11: "DRIFT", 13: "SPORT", 14: "FLIP", 15: "AUTOTUNE", 16: "POSHOLD", 17: "BRAKE",
	18: "THROW", 19: "AVOID_ADSB", 20: "GUIDED_NOGPS", 21: "SMART_RTL", 22: "FLOWHOLD", 23: "FOLLOW", 24: "ZIGZAG",
	25: "SYSTEMID", 26: "AUTOROTATE", 27: "AUTO_RTL", 28: "TURTLE"}

// ModeName returns the name of a heartbeat's custom_mode as the autopilot
// that sent it calls it: PX4's main and sub mode (AUTO.LOITER), or
// ArduCopter's mode (GUIDED); another autopilot's, or an unknown number,
// as the number.
func ModeName(ap common.MAV_AUTOPILOT, custom uint32) string {
	switch ap {
	case common.MAV_AUTOPILOT_PX4:
		return ModeFromCustom(custom).String()
	case common.MAV_AUTOPILOT_ARDUPILOTMEGA:
		if n, ok := copterModes[custom]; ok {
			return n
		}
	}
	return fmt.Sprintf("mode(%d)", custom)
}

// autopilotName names the firmware family of a heartbeat's autopilot type
// as the firmware controllers name themselves in events ("PX4",
// "ArduPilot"), or by its number.
func autopilotName(ap common.MAV_AUTOPILOT) string {
	switch ap {
	case common.MAV_AUTOPILOT_PX4:
		return "PX4"
	case common.MAV_AUTOPILOT_ARDUPILOTMEGA:
		return "ArduPilot"
	}
	return fmt.Sprintf("autopilot(%d)", ap)
}
