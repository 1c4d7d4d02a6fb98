package ardupilot

import (
	"fmt"

	"skyloop/fields"
	"skyloop/firmware"
	"skyloop/geom"
	"skyloop/kind/multirotor"
	"skyloop/vehicle"
)

// Name is the controller's name in scenarios (controller: ardupilot-sitl).
const Name = "ardupilot-sitl"

// Spec makes ArduCopter SITL a controller of the multirotor kind:
// `params: {preset: iris, controller: ardupilot-sitl, ardupilot: {...}}`.
var Spec = firmware.Stack[*Params]{
	Name: Name,
	Key:  "ardupilot",
	Doc: "Real ArduPilot firmware (ArduCopter SITL) flies the multirotor over ArduPilot's JSON physics interface: it sends its servo " +
		"outputs on UDP 9002+10i each step and skyloop answers with the state (IMU, NED position and velocity, attitude), in lockstep. " +
		"ArduCopter is launched per vehicle (instance = node id, SYSID_THISMAV = id+1, MAVLink on TCP 5760+10i) from `ardupilot.dir` " +
		"or SKYLOOP_ARDUPILOT_DIR, with its eeprom and logs under procs/. Command it over MAVLink: the mavlink behaviour relays its " +
		"primary link through the simulated network.",
	Params: func() *Params { p := DefaultParams(); return &p },
	Check: func(c *multirotor.Config, _ *Params, bad fields.Errors) {
		if n := len(c.Rotors); n != 4 {
			bad["rotors"] = fmt.Sprintf("ArduCopter's quad-X flies 4 rotors in its order (front-right, rear-left, front-left, rear-right), got %d", n)
		}
	},
	New: func(c *multirotor.Config, p *Params, id int, name string, pos geom.Vec3, yaw float64) vehicle.Controller {
		return New(p, id, name, len(c.Rotors), pos, yaw)
	},
}.Spec()
