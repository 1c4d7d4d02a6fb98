package agent

import "skyloop/fields"

// Params is a behaviour's parameter struct, decoded from the scenario on top
// of its defaults: a fields.Validator, the one interface every component's
// parameters implement (field names in its errors are YAML names, dotted
// for nested fields).
type Params = fields.Validator

// Pacer is implemented by behaviour parameters that need the run paced to
// the wall clock (a bridge to programs that run on their own time, such as
// ROS 2 nodes): Pace returns the real-time factor the run gets when
// neither the scenario nor the command line sets one (0: no need).
type Pacer interface {
	Pace() float64
}

// Spec describes a behaviour type that scenario files can name.
type Spec struct {
	// Name is the value of `type:` in scenario files.
	Name string
	// Doc is a one-paragraph description for `skyloop behaviors` and docs.
	Doc string
	// Fixed reports whether the behaviour may run on a fixed node (one
	// without a vehicle); Vehicle whether it may run on a vehicle.
	Fixed, Vehicle bool
	// Internal marks a behaviour the engine adds by itself (the TAP
	// bridge of isolation: netns): scenarios cannot name it and Names
	// does not list it.
	Internal bool
	// Params returns a pointer to a new parameter struct with defaults.
	Params func() Params
	// New builds the behaviour for one node from validated parameters.
	New func(p Params) Behavior
}
