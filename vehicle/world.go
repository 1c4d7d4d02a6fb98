package vehicle

import (
	"skyloop/geom"
	"skyloop/sim"
)

// World is physics that several vehicles share, such as one MuJoCo model
// holding every robot of a run so that they collide with each other. Its
// vehicles' Physics.Step only hand it their actuator commands; the run
// then steps the world once per period, after every vehicle's step of that
// tick, from one goroutine. Telemetry is read from the world's state.
type World interface {
	// Build makes the world once every vehicle is in it; obstacles are
	// the scenario's static boxes. It is called once, before the first
	// step.
	Build(obstacles []geom.Box) error
	// Period returns the world's step, the physics period of every vehicle
	// in it.
	Period() sim.Duration
	// Step advances the world by one period starting at t.
	Step(t sim.Time) error
	// Close frees what the world holds; it may be called more than once.
	Close()
}

// Worlds are a run's shared physics worlds, by name, in the order they
// were first asked for.
type Worlds struct {
	// Dir is the scenario's directory, where model files named by
	// relative paths are.
	Dir   string
	names []string
	by    map[string]World
}

// Get returns the world called name, made by make the first time.
func (w *Worlds) Get(name string, make func() World) World {
	if w.by == nil {
		w.by = map[string]World{}
	}
	if x, ok := w.by[name]; ok {
		return x
	}
	x := make()
	w.by[name] = x
	w.names = append(w.names, name)
	return x
}

// All returns the worlds in the order they were made.
func (w *Worlds) All() []World {
	out := make([]World, 0, len(w.names))
	for _, n := range w.names {
		out = append(out, w.by[n])
	}
	return out
}
