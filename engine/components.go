package engine

import (
	"math/rand/v2"
	"sort"
	"strings"

	"skyloop/autopilot"
	"skyloop/fields"
	"skyloop/geom"
	"skyloop/vehicle"
	"skyloop/vehicle/groundbot"
	"skyloop/vehicle/multirotor"
	"skyloop/vehicle/pointmass"
)

// validator is implemented by every component parameter struct.
type validator interface {
	Validate() fields.Errors
}

// kindSpec is a vehicle kind as scenarios name it.
type kindSpec struct {
	// stepNs is a rough cost of one physics+control step, used to decide
	// whether stepping vehicles in parallel pays off.
	stepNs float64
	params func() validator
	// presets, when set, lists named parameter sets; the scenario picks one
	// with `preset:` (default presets[0]) and overrides fields on top.
	presets []string
	preset  func(name string) validator
	timing  func(p validator) vehicle.Timing
	// newGroup prepares what a group shares and returns the constructor of
	// its vehicles, which composes a physics model and a controller;
	// stream(purpose) gives the vehicle's random stream for one purpose
	// ("turbulence", "sensors"), keyed by (seed, purpose, vehicle id).
	newGroup func(p validator) func(pos geom.Vec3, yaw float64, stream func(purpose string) *rand.Rand) vehicle.Vehicle
}

var kinds = map[string]kindSpec{
	pointmass.Kind: {
		stepNs: 40,
		params: func() validator { p := pointmass.DefaultParams(); return &p },
		timing: func(p validator) vehicle.Timing {
			q := p.(*pointmass.Params)
			return vehicle.Timing{Physics: q.PhysicsPeriod, Control: q.ControlPeriod}
		},
		newGroup: func(p validator) func(geom.Vec3, float64, func(string) *rand.Rand) vehicle.Vehicle {
			return func(pos geom.Vec3, yaw float64, _ func(string) *rand.Rand) vehicle.Vehicle {
				return pointmass.New(p.(*pointmass.Params), pos, yaw)
			}
		},
	},
	autopilot.Kind: {
		stepNs:  400,
		presets: multirotor.Presets(),
		preset: func(name string) validator {
			c, _ := autopilot.PresetConfig(name)
			return &c
		},
		params: func() validator { c, _ := autopilot.PresetConfig("iris"); return &c },
		timing: func(p validator) vehicle.Timing {
			c := p.(*autopilot.Config)
			return vehicle.Timing{Physics: c.PhysicsPeriod, Control: c.Autopilot.ControlPeriod}
		},
		newGroup: func(p validator) func(geom.Vec3, float64, func(string) *rand.Rand) vehicle.Vehicle {
			sh := autopilot.NewShared(p.(*autopilot.Config))
			return func(pos geom.Vec3, yaw float64, stream func(string) *rand.Rand) vehicle.Vehicle {
				return autopilot.New(sh, pos, yaw, stream("turbulence"), stream("sensors"))
			}
		},
	},
	groundbot.Kind: {
		stepNs: 30,
		params: func() validator { p := groundbot.DefaultParams(); return &p },
		timing: func(p validator) vehicle.Timing {
			q := p.(*groundbot.Params)
			return vehicle.Timing{Physics: q.PhysicsPeriod, Control: q.ControlPeriod}
		},
		newGroup: func(p validator) func(geom.Vec3, float64, func(string) *rand.Rand) vehicle.Vehicle {
			return func(pos geom.Vec3, yaw float64, _ func(string) *rand.Rand) vehicle.Vehicle {
				return groundbot.New(p.(*groundbot.Params), pos, yaw)
			}
		},
	},
}

// noParams is the parameter set of components without parameters.
type noParams struct{}

func (*noParams) Validate() fields.Errors { return nil }

func names[V any](m map[string]V) string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return strings.Join(ks, ", ")
}
