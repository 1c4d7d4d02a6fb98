package px4sitl

import (
	"fmt"

	"skyloop/fields"
	"skyloop/firmware"
	"skyloop/geom"
	"skyloop/kind/multirotor"
	"skyloop/vehicle"
)

// Name is the controller's name in scenarios (controller: px4-sitl).
const Name = "px4-sitl"

// Spec makes PX4 SITL a controller of the multirotor kind:
// `params: {preset: iris, controller: px4-sitl, px4: {...}}`.
var Spec = firmware.Stack[*Params]{
	Name: Name,
	Key:  "px4",
	Doc: "Real PX4 firmware (SITL) flies the multirotor: skyloop is its simulator on TCP 4560+i (HIL_SENSOR, HIL_GPS, " +
		"HIL_STATE_QUATERNION out; HIL_ACTUATOR_CONTROLS in), in lockstep at 250 Hz. PX4 is launched per vehicle " +
		"(instance = node id, MAV_SYS_ID = id+1) from `px4.dir` or SKYLOOP_PX4_DIR, with its working directory and logs " +
		"under procs/. Command it over MAVLink: the mavlink behaviour relays its ground-station link through the simulated network.",
	Params: func() *Params { p := DefaultParams(); return &p },
	Defaults: func(c *multirotor.Config) {
		// PX4 flags exactly constant readings as stale: its magnetometer
		// needs noise (PX4's own simulators use about this much).
		c.Autopilot.MagNoise = 0.002
	},
	Check: func(c *multirotor.Config, p *Params, bad fields.Errors) {
		if n := len(c.Rotors); n != 4 && p.Airframe == 10016 {
			bad["rotors"] = fmt.Sprintf("PX4 airframe 10016 (Iris) flies 4 rotors in its order (front-right, rear-left, front-left, rear-right), got %d", n)
		}
		if c.MaxRotorSpeed > 0 && p.IdleRotorSpeed >= c.MaxRotorSpeed {
			bad["px4.idle_rotor_speed"] = fmt.Sprintf("must be below max_rotor_speed %v rad/s, got %v", c.MaxRotorSpeed, p.IdleRotorSpeed)
		}
		for _, f := range []struct {
			name string
			v    float64
		}{{"accel_noise", c.Autopilot.AccelNoise}, {"gyro_noise", c.Autopilot.GyroNoise}, {"mag_noise", c.Autopilot.MagNoise}, {"baro_noise", c.Autopilot.BaroNoise}} {
			if f.v == 0 {
				bad["autopilot."+f.name] = "must be > 0 for PX4, which flags exactly constant readings as stale"
			}
		}
	},
	New: func(c *multirotor.Config, p *Params, id int, name string, _ geom.Vec3, _ float64) vehicle.Controller {
		return New(p, id, name, len(c.Rotors), p.IdleRotorSpeed/c.MaxRotorSpeed)
	},
}.Spec()
