package engine

import (
	"fmt"
	"maps"
	"slices"

	"skyloop/agent"
	"skyloop/behavior"
	"skyloop/fields"
	"skyloop/netsim"
	"skyloop/netsim/ideal"
	"skyloop/netsim/impair"
	"skyloop/scenario"
	"skyloop/vehicle/mujoco"
)

// Registry is the set of component types runs are built from, by the names
// scenarios use: vehicle kinds, behaviours and network backends. It is an
// explicit value handed to Build (Options.Registry), not a global table
// filled by whichever packages a program happens to link: Core has the
// core's components, and skyloop/components adds the ones at the edges
// (ns-3, external agents and simulators, MAVLink, the TAP bridge).
type Registry struct {
	kinds       map[string]KindSpec
	behaviors   map[string]agent.Spec
	backends    map[string]netsim.BackendSpec
	controllers map[string]map[string]ControllerSpec // by kind, then name
	// measures are the measure types (measures: in scenarios). Only the
	// engine defines them: a measure reads the run's true states.
	measures map[string]measureSpec
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{kinds: map[string]KindSpec{}, behaviors: map[string]agent.Spec{}, backends: map[string]netsim.BackendSpec{},
		controllers: map[string]map[string]ControllerSpec{}, measures: map[string]measureSpec{}}
}

// AddController adds a controller that flies a vehicle kind instead of the
// kind's own (params: {controller: NAME}). It panics on a duplicate name
// for the kind, a programming error.
func (g *Registry) AddController(c ControllerSpec) {
	m := g.controllers[c.Kind]
	if m == nil {
		m = map[string]ControllerSpec{}
		g.controllers[c.Kind] = m
	}
	if _, dup := m[c.Name]; dup {
		panic(fmt.Sprintf("engine: controller %q of kind %q added twice", c.Name, c.Kind))
	}
	m[c.Name] = c
}

// Controller returns the controller called name that flies kind.
func (g *Registry) Controller(kind, name string) (ControllerSpec, bool) {
	c, ok := g.controllers[kind][name]
	return c, ok
}

// Controllers returns the added controllers of kind, by name.
func (g *Registry) Controllers(kind string) []ControllerSpec {
	var out []ControllerSpec
	for _, n := range slices.Sorted(maps.Keys(g.controllers[kind])) {
		out = append(out, g.controllers[kind][n])
	}
	return out
}

// Core returns a registry of the core's components: the pointmass,
// multirotor and groundbot kinds (and the MuJoCo kinds, which report that
// the program has no MuJoCo until UseMuJoCo gives it the library), the
// behaviours of package behavior, the measures, and the ideal and impair
// backends (wifi, whose captures need an encoder, comes with
// skyloop/components). Validate and Build use it when Options.Registry is
// nil.
func Core() *Registry {
	g := NewRegistry()
	for _, k := range coreKinds {
		g.AddKind(k)
	}
	for _, k := range mujocoKinds(nil) {
		g.AddKind(k)
	}
	for _, b := range behavior.Builtins() {
		g.AddBehavior(b)
	}
	for name, m := range coreMeasures {
		g.measures[name] = m
	}
	g.AddBackend(ideal.Spec)
	g.AddBackend(impair.Spec)
	return g
}

// UseMuJoCo gives the kinds that step in MuJoCo (mujoco, and groundbot
// with physics: mujoco) the library that loads MuJoCo and reads the
// robots' model files: skyloop/vehicle/mujoco/mjlib's, an edge, which
// skyloop/components gives. Without it (Core) they report that the program
// has no MuJoCo.
func (g *Registry) UseMuJoCo(lib mujoco.Library) {
	for _, k := range mujocoKinds(lib) {
		g.kinds[k.Name] = k
	}
}

// AddKind adds a vehicle kind. It panics on a duplicate name, a
// programming error.
func (g *Registry) AddKind(k KindSpec) {
	if _, dup := g.kinds[k.Name]; dup {
		panic(fmt.Sprintf("engine: vehicle kind %q added twice", k.Name))
	}
	g.kinds[k.Name] = k
}

// AddBehavior adds a behaviour type. It panics on a duplicate name.
func (g *Registry) AddBehavior(s agent.Spec) {
	if _, dup := g.behaviors[s.Name]; dup {
		panic(fmt.Sprintf("engine: behaviour %q added twice", s.Name))
	}
	g.behaviors[s.Name] = s
}

// AddBackend adds a network backend. It panics on a duplicate name.
func (g *Registry) AddBackend(s netsim.BackendSpec) {
	if _, dup := g.backends[s.Name]; dup {
		panic(fmt.Sprintf("engine: network backend %q added twice", s.Name))
	}
	g.backends[s.Name] = s
}

// Behavior returns the behaviour type called name (internal ones such as
// the TAP bridge included).
func (g *Registry) Behavior(name string) (agent.Spec, bool) {
	s, ok := g.behaviors[name]
	return s, ok
}

// Behaviors returns the behaviour types scenarios can name, by name.
func (g *Registry) Behaviors() []agent.Spec {
	var out []agent.Spec
	for _, n := range slices.Sorted(maps.Keys(g.behaviors)) {
		if s := g.behaviors[n]; !s.Internal {
			out = append(out, s)
		}
	}
	return out
}

// Backend returns the network backend called name.
func (g *Registry) Backend(name string) (netsim.BackendSpec, bool) {
	s, ok := g.backends[name]
	return s, ok
}

// BackendNames returns the backend names, sorted.
func (g *Registry) BackendNames() []string { return slices.Sorted(maps.Keys(g.backends)) }

// Kind returns the vehicle kind called name.
func (g *Registry) Kind(name string) (KindSpec, bool) {
	k, ok := g.kinds[name]
	return k, ok
}

// KindNames returns the vehicle kind names, sorted.
func (g *Registry) KindNames() []string { return slices.Sorted(maps.Keys(g.kinds)) }

// Schema returns the registry's component types as scenario.Parse needs
// them to decode a whole file: for every kind, controller, behaviour,
// backend and measure its parameters' constructor and what decoding must
// know. Pass it to scenario.Parse or scenario.Load, then check the
// scenario with Validate.
func (g *Registry) Schema() *scenario.Schema {
	s := &scenario.Schema{Kinds: map[string]scenario.KindSchema{}, Behaviors: map[string]scenario.BehaviorSchema{},
		Backends: map[string]scenario.BackendSchema{}, Measures: map[string]scenario.MeasureSchema{}}
	for name, k := range g.kinds {
		ks := scenario.KindSchema{Params: k.Params, Presets: k.Presets, Preset: k.Preset, Controller: k.Controller}
		for _, c := range g.Controllers(name) {
			ks.Controllers = append(ks.Controllers, scenario.ControllerSchema{Name: c.Name, Key: c.Key, Params: c.Params,
				Defaults: c.Defaults, Check: c.Check})
		}
		s.Kinds[name] = ks
	}
	for name, b := range g.behaviors {
		s.Behaviors[name] = scenario.BehaviorSchema{Params: func() fields.Validator { return b.Params() },
			Fixed: b.Fixed, Vehicle: b.Vehicle, Internal: b.Internal}
	}
	for name, b := range g.backends {
		s.Backends[name] = scenario.BackendSchema{Params: b.Params, OwnMode: b.OwnMode, Routes: b.Routes}
	}
	for name, m := range g.measures {
		s.Measures[name] = scenario.MeasureSchema{Params: m.params}
	}
	return s
}
