package firmware

import (
	"fmt"

	"skyloop/engine"
	"skyloop/fields"
	"skyloop/geom"
	"skyloop/kind/multirotor"
	"skyloop/sim"
	"skyloop/vehicle"
)

// Params are a bridge's parameters (the `px4:` or `ardupilot:` block of a
// multirotor group's params).
type Params interface {
	fields.Validator
	// LockstepPeriod returns the period of one exchange with the firmware.
	LockstepPeriod() sim.Duration
}

// Stack describes a flight stack flying the multirotor kind; Spec makes
// it a controller the engine knows.
type Stack[P Params] struct {
	// Name is the value of `controller:` (px4-sitl).
	Name string
	// Key is the key of the group's params holding P (px4).
	Key string
	// Doc is the paragraph `skyloop components` shows.
	Doc string
	// Params returns new parameters with their defaults.
	Params func() P
	// Defaults, when set, adjusts the multirotor's defaults for the stack.
	Defaults func(c *multirotor.Config)
	// Check, when set, reports what the stack cannot fly among the
	// multirotor's parameters (keys relative to the group's params).
	// Spec checks the lockstep period itself.
	Check func(c *multirotor.Config, p P, bad fields.Errors)
	// New returns the controller of vehicle id named name, starting at pos
	// heading yaw.
	New func(c *multirotor.Config, p P, id int, name string, pos geom.Vec3, yaw float64) vehicle.Controller
}

// Spec returns the engine's controller spec: the stack's checks plus a
// lockstep period that is a whole number of physics periods.
func (s Stack[P]) Spec() engine.ControllerSpec {
	spec := engine.ControllerSpec{
		Kind:   multirotor.Kind,
		Name:   s.Name,
		Key:    s.Key,
		Doc:    s.Doc,
		Params: func() fields.Validator { return s.Params() },
		Check: func(kind, ctrl fields.Validator) fields.Errors {
			c, p := kind.(*multirotor.Config), ctrl.(P)
			bad := fields.Errors{}
			if s.Check != nil {
				s.Check(c, p, bad)
			}
			if period := p.LockstepPeriod(); period%c.PhysicsPeriod != 0 {
				bad[s.Key+".period"] = fmt.Sprintf("must be a multiple of physics_period %v, got %v", c.PhysicsPeriod, period)
			}
			return bad
		},
		Period: func(ctrl fields.Validator) sim.Duration { return ctrl.(P).LockstepPeriod() },
		NewGroup: func(kind, ctrl fields.Validator) func(int, string, geom.Vec3, float64) vehicle.Controller {
			c, p := kind.(*multirotor.Config), ctrl.(P)
			return func(id int, name string, pos geom.Vec3, yaw float64) vehicle.Controller {
				return s.New(c, p, id, name, pos, yaw)
			}
		},
	}
	if s.Defaults != nil {
		spec.Defaults = func(kind fields.Validator) { s.Defaults(kind.(*multirotor.Config)) }
	}
	return spec
}
