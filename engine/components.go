package engine

import (
	"sort"
	"strings"

	"skyloop/geom"
	"skyloop/netsim"
	"skyloop/netsim/ideal"
	"skyloop/netsim/impair"
	"skyloop/vehicle"
	"skyloop/vehicle/groundbot"
	"skyloop/vehicle/pointmass"
)

// validator is implemented by every component parameter struct.
type validator interface {
	Validate() map[string]string
}

// kindSpec is a vehicle kind as scenarios name it.
type kindSpec struct {
	// stepNs is a rough cost of one physics+control step, used to decide
	// whether stepping vehicles in parallel pays off.
	stepNs float64
	params func() validator
	timing func(p validator) vehicle.Timing
	new    func(p validator, pos geom.Vec3, yaw float64) vehicle.Vehicle
}

var kinds = map[string]kindSpec{
	pointmass.Kind: {
		stepNs: 40,
		params: func() validator { p := pointmass.DefaultParams(); return &p },
		timing: func(p validator) vehicle.Timing {
			q := p.(*pointmass.Params)
			return vehicle.Timing{Physics: q.PhysicsPeriod, Control: q.ControlPeriod}
		},
		new: func(p validator, pos geom.Vec3, yaw float64) vehicle.Vehicle {
			return pointmass.New(p.(*pointmass.Params), pos, yaw)
		},
	},
	groundbot.Kind: {
		stepNs: 30,
		params: func() validator { p := groundbot.DefaultParams(); return &p },
		timing: func(p validator) vehicle.Timing {
			q := p.(*groundbot.Params)
			return vehicle.Timing{Physics: q.PhysicsPeriod, Control: q.ControlPeriod}
		},
		new: func(p validator, pos geom.Vec3, yaw float64) vehicle.Vehicle {
			return groundbot.New(p.(*groundbot.Params), pos, yaw)
		},
	},
}

// backendSpec is a network backend as scenarios name it.
type backendSpec struct {
	params func() validator
	new    func(p validator, seed uint64, tr netsim.Tracer) (netsim.Backend, error)
}

var backends = map[string]backendSpec{
	"ideal": {
		params: func() validator { return &noParams{} },
		new: func(p validator, seed uint64, tr netsim.Tracer) (netsim.Backend, error) {
			return ideal.New(tr), nil
		},
	},
	"impair": {
		params: func() validator { p := impair.DefaultParams(); return &p },
		new: func(p validator, seed uint64, tr netsim.Tracer) (netsim.Backend, error) {
			return impair.New(*p.(*impair.Params), seed, tr)
		},
	},
}

// noParams is the parameter set of components without parameters.
type noParams struct{}

func (*noParams) Validate() map[string]string { return nil }

func names[V any](m map[string]V) string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return strings.Join(ks, ", ")
}

// sortedKeys returns the keys of a validation result in order, so errors
// come out the same way every time.
func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func reportInvalid(errorf func(path, format string, args ...any), base string, bad map[string]string) {
	for _, k := range sortedKeys(bad) {
		errorf(base+"."+k, "%s", bad[k])
	}
}
