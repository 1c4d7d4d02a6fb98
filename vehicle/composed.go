package vehicle

import (
	"skyloop/geom"
	"skyloop/sim"
)

// Physics is one vehicle's physical model: its body, actuators and
// instruments. Kinds keep the parameters a group shares (one model for
// every vehicle of the group) apart from each vehicle's compact dynamic
// state; random streams, when the model needs them, live next to the state
// in the object that implements Physics, never inside the state value.
// Implementations must not allocate in Sense or Step.
type Physics interface {
	// Kind returns the kind name as scenarios spell it, e.g. "multirotor".
	Kind() string
	// Period returns the physics period, a whole multiple of the tick.
	Period() sim.Duration
	// Step integrates one physics period starting at t, with the actuator
	// commands held over the period.
	Step(t sim.Time, a *Actuators, ev *Events)
	// Sense fills s with what the instruments read at t. It is called once
	// per control step, just before the controller runs; noise comes from
	// the vehicle's own sensor stream.
	Sense(t sim.Time, s *Sensors)
	// Telemetry returns the true physical state: position, velocity,
	// attitude and rates, ground contact, energy, distance and the battery
	// and barometer readings the kind models (noise-free). The fields a
	// controller owns (Mode, Armed, Throttle, Target, HasTarget) are zero.
	Telemetry() Telemetry
	// Pos returns the true position, cheaply (for the network's position
	// updates).
	Pos() geom.Vec3
	// Motion returns the true position, velocity and heading, cheaply (for
	// the world checks).
	Motion() Motion
	// Radius returns the bounding radius (m) for separation checks.
	Radius() float64
}

// Controller is what flies a vehicle: it turns high-level commands and
// sensor readings into actuator commands, and keeps the mode logic and the
// state estimate. It sees the physics only through Sensors and Actuators.
// Implementations must not allocate in Control.
type Controller interface {
	// Period returns the control period, a whole multiple of the tick.
	Period() sim.Duration
	// Command queues c; it takes effect at the next Control call.
	Command(c Command)
	// Control runs one control step at t: it reads s, writes a, and
	// appends what happened (mode changes, arrivals) to ev.
	Control(t sim.Time, s *Sensors, a *Actuators, ev *Events)
	// Status returns tel with what the controller decides filled in:
	// Mode, Armed, Throttle, Target and HasTarget.
	Status(tel Telemetry) Telemetry
	// Estimate returns tel, which holds the physics' readings, with what
	// the controller estimates instead of measuring put in their place:
	// position, velocity, attitude and rates. A controller flying on the
	// exact pose returns tel as it is.
	Estimate(tel Telemetry) Telemetry
}

// Motion is the part of a vehicle's true state that the world checks
// need.
type Motion struct {
	Pos, Vel geom.Vec3
	Yaw      float64 // heading, rad, counter-clockwise from east
}

// Composed is a vehicle made of a physics model and a controller joined
// by the sensor/actuator boundary. It implements Vehicle: Control reads
// the sensors and runs the controller, which sets the actuators; Step
// integrates the physics with the actuators held since the last control
// step. It owns the Sensors and Actuators values, so it allocates nothing
// per step; Telemetry values go through the interfaces by value, so that
// they stay on the caller's stack.
type Composed struct {
	phys   Physics
	ctrl   Controller
	remote Remote // ctrl, when it runs in another process
	sent   bool   // the sensors of the coming control step were read and sent
	s      Sensors
	a      Actuators
}

// Compose joins p and c into a vehicle.
func Compose(p Physics, c Controller) *Composed {
	v := &Composed{phys: p, ctrl: c}
	v.remote, _ = c.(Remote)
	return v
}

// Remote reports whether the controller runs in another process (see
// Remote).
func (v *Composed) Remote() bool { return v.remote != nil }

// Send reads the sensors at t and hands them to a remote controller: the
// first half of the control step at t, which Control completes. It does
// nothing for a controller in this process.
func (v *Composed) Send(t sim.Time) {
	if v.remote == nil {
		return
	}
	v.phys.Sense(t, &v.s)
	v.remote.Send(t, &v.s)
	v.sent = true
}

// Err returns a remote controller's failure, or nil.
func (v *Composed) Err() error {
	if v.remote == nil {
		return nil
	}
	return v.remote.Err()
}

// Physics returns the vehicle's physics model.
func (v *Composed) Physics() Physics { return v.phys }

// Controller returns the vehicle's controller.
func (v *Composed) Controller() Controller { return v.ctrl }

// Sensors returns the readings of the last control step.
func (v *Composed) Sensors() *Sensors { return &v.s }

// Actuators returns the commands of the last control step.
func (v *Composed) Actuators() *Actuators { return &v.a }

// Kind returns the physics model's kind name.
func (v *Composed) Kind() string { return v.phys.Kind() }

// Timing returns the physics and control periods.
func (v *Composed) Timing() Timing {
	return Timing{Physics: v.phys.Period(), Control: v.ctrl.Period()}
}

// Command hands c to the controller.
func (v *Composed) Command(c Command) { v.ctrl.Command(c) }

// Control reads the sensors at t and runs one control step.
func (v *Composed) Control(t sim.Time, ev *Events) {
	if v.sent {
		v.sent = false // Send read the sensors at t
	} else {
		v.phys.Sense(t, &v.s)
		if v.remote != nil {
			v.remote.Send(t, &v.s)
		}
	}
	v.ctrl.Control(t, &v.s, &v.a, ev)
}

// Step integrates one physics period from t.
func (v *Composed) Step(t sim.Time, ev *Events) { v.phys.Step(t, &v.a, ev) }

// Telemetry returns the true state with the controller's mode and target.
func (v *Composed) Telemetry() Telemetry { return v.ctrl.Status(v.phys.Telemetry()) }

// Estimate returns the state as the controller estimates it, with the
// instruments' readings where it estimates nothing.
func (v *Composed) Estimate() Telemetry { return v.ctrl.Estimate(v.Telemetry()) }

// Pos returns the true position.
func (v *Composed) Pos() geom.Vec3 { return v.phys.Pos() }

// Motion returns the true position, velocity and heading.
func (v *Composed) Motion() Motion { return v.phys.Motion() }

// Radius returns the bounding radius.
func (v *Composed) Radius() float64 { return v.phys.Radius() }
