package vehicle

import "skyloop/sim"

// Remote is a Controller that runs outside skyloop's process, such as real
// flight firmware (PX4 SITL) talking to the simulator over a socket. Its
// control step is split in two so that every vehicle's firmware computes
// at the same time: the engine first calls Send on every remote-controlled
// vehicle due at t, in vehicle order, and only then runs the control steps,
// in which Control waits for the firmware's answer to what Send handed it.
// A run with remote controllers is as fast as the slowest firmware, and
// stepping vehicles in parallel overlaps the waits.
type Remote interface {
	Controller
	// Send hands the controller the readings of the control step at t;
	// Control(t, ...) follows before the next Send. It must not block on
	// the other process's answer.
	Send(t sim.Time, s *Sensors)
	// Err returns why the controller cannot go on (the firmware exited,
	// stopped answering or sent garbage), or nil. The engine checks it
	// after every control step and ends the run with it.
	Err() error
}

// RemoteControlled is implemented by vehicles whose controller may be a
// Remote (Composed does).
type RemoteControlled interface {
	// Remote reports whether the vehicle's controller is a Remote.
	Remote() bool
	// Send reads the sensors at t and hands them to the remote
	// controller (the first half of the control step at t).
	Send(t sim.Time)
	// Err returns the remote controller's failure, or nil.
	Err() error
}
